# ruff: noqa: F811 (the fixtures tests/project/test_bundled_checkpoints.py defines, imported by name)
"""End to end: The bundled checkpoints: each assembles from pinned, hash-checked package files, says what is real, and its golden ids come from an independent implementation of its own format.

The rest of this subject's tests, and the helpers these use, are in tests/project/test_bundled_checkpoints.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tokcompat.judge.parity import reference_tokenizer
from pytest_tokcompat.matrix.cases import Case
from tests.helpers.ladder import judge_folder
from tests.project.test_bundled_checkpoints import (  # noqa: F401 (fixtures)
    CASES,
    GOLDEN_FILES,
    KNOWN_DIVERGENCES,
    SNAPSHOT_CASES,
    AssembledSnapshots,
    assembled,
    golden_of,
    load_tool,
    manifest_of,
)


@pytest.mark.parametrize("case_id", SNAPSHOT_CASES)
def test_each_snapshot_assembles_with_every_file_its_manifest_names(
    assembled: AssembledSnapshots, case_id: str
) -> None:
    folder = assembled[case_id]
    manifest = manifest_of(case_id)
    present = {p.name for p in folder.iterdir()}
    assert {"config.json", *manifest["files"], *manifest.get("derived", {})} <= present
    assert {"tokenizer.json", "tokenizer.model", "tekken.json", "tiktoken.model"} & present, present
    for name in manifest.get("derived", {}):
        assert (folder / name).stat().st_size > 0, name


@pytest.mark.parametrize("case_id", GOLDEN_FILES)
def test_golden_ids_cover_every_probe_text_the_judge_asks_for(
    assembled: AssembledSnapshots, case_id: str
) -> None:
    common = load_tool("golden_common")
    target = common.subject(case_id)
    assert target.folder == assembled[case_id]
    missing = [text for text in target.texts if text not in golden_of(case_id)["ids"]]
    assert missing == [], f"re-run matrix/tools/record_all_golden.py: {missing[:3]}"


def test_the_sentencepiece_golden_ids_are_sentencepieces(assembled: AssembledSnapshots) -> None:
    tool = load_tool("record_sentencepiece_golden")
    folder = assembled["mistral-7b-v0.1"]
    truth = tool.SentencePieceTruth(
        folder / "tokenizer.model", json.loads((folder / "tokenizer_config.json").read_text())
    )
    golden = golden_of("mistral-7b-v0.1")
    assert golden["ids"]["Hello world"] == truth.processor.encode("Hello world") == [22557, 1526]
    for text, ids in golden["ids"].items():
        assert truth.encode(text) == ids, text
        assert truth.decode(ids) == golden["decoded"][text], text
    # the added-token rule: <s> is split out, and the text after it gets its own dummy-prefix space
    assert golden["ids"]["<s>Hello<s> world"] == [1, 22557, 1, *truth.processor.encode(" world")]
    assert golden["decoded"]["<s>Hello<s> world"] == "<s> Hello<s>  world"


def test_the_tekken_golden_ids_are_mistral_commons(assembled: AssembledSnapshots) -> None:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    tekkenizer = Tekkenizer.from_file(str(assembled["mistral-nemo-instruct-2407"] / "tekken.json"))
    golden = golden_of("mistral-nemo-instruct-2407")
    for text, ids in golden["ids"].items():
        assert tekkenizer.encode(text, bos=False, eos=False) == ids, text
        assert tekkenizer.decode(ids) == golden["decoded"][text], text


@pytest.mark.parametrize("case_id", ["llama-3.1-8b-instruct", "qwen3-0.6b"])
def test_the_judges_tokenizer_json_reference_gives_the_independent_golden_ids(
    assembled: AssembledSnapshots, case_id: str
) -> None:
    """Where the judge trusts a tokenizer.json (derived for Llama, real for Qwen3), tiktoken agrees with it on
    every probe the judge asks for, but the ones listed in KNOWN_DIVERGENCES (each with why)."""
    reference = reference_tokenizer(assembled[case_id])
    golden = golden_of(case_id)
    assert golden["implementation"]["name"] == "tiktoken"
    differing = {
        text: reference.encode(text, add_special_tokens=False).ids
        for text, ids in golden["ids"].items()
        if reference.encode(text, add_special_tokens=False).ids != ids
    }
    assert differing == KNOWN_DIVERGENCES.get(case_id, {})


def test_llama_golden_ids_are_tiktokens_over_metas_ranks(assembled: AssembledSnapshots) -> None:
    tool = load_tool("record_llama3_golden")
    folder = assembled["llama-3.1-8b-instruct"]
    encoding = tool.encoding(
        folder / "original_tokenizer.model", json.loads((folder / "tokenizer_config.json").read_text())
    )
    golden = golden_of("llama-3.1-8b-instruct")
    assert golden["ids"]["Hello world"] == [9906, 1917]
    for text, ids in golden["ids"].items():
        assert encoding.encode(text, allowed_special="all") == ids, text
    # the derived tokenizer.json keeps the hub file's BOS post-processor: the default call adds 128000
    assert reference_tokenizer(folder).encode("Hello world").ids == [128000, 9906, 1917]


@pytest.mark.parametrize("case_id", ["mistral-7b-v0.1", "mistral-nemo-instruct-2407"])
def test_a_golden_only_case_is_judged_offline_against_its_golden_ids(
    assembled: AssembledSnapshots, case_id: str
) -> None:
    case: Case = CASES[case_id]
    judgement = judge_folder(assembled[case_id], golden_path=case.golden_path)
    assert judgement.truth_source == f"golden ids in {case_id}.json"
    without = judge_folder(assembled[case_id], golden_path=None)
    assert without.truth_source is None and without.verdict == "not-checked"


def test_glm5_falls_back_offline_to_its_snapshot_and_says_whose_tokenizer_it_is(
    cache: Path, assembled: AssembledSnapshots
) -> None:
    from pytest_tokcompat.api import load_tokenizer
    from pytest_tokcompat.sources.checkpoint import Source

    result = load_tokenizer("zai-org/GLM-5")  # the hub cache is empty and the hub offline
    assert (result.source, result.case_id, result.verdict) == (Source.FALLBACK, "glm-5", "native")
    assert any("tokenizer.json is GLM-4.7-Flash's" in note for note in result.notes), result.notes
