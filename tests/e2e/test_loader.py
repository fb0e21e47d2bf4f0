"""End to end: ``load_tokenizer()``: one verdict ladder for benchmark clients, offline, leaving no global state.

The rest of this subject's tests, and the helpers these use, are in tests/unit/api/test_loader.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import transformers

from pytest_tokcompat.api import (
    FALLBACK,
    HUB,
    SNAPSHOT,
    load_tokenizer,
)
from pytest_tokcompat.errors import NotReachable
from pytest_tokcompat.judge.parity import reference_tokenizer
from pytest_tokcompat.judge.probes import probe_texts
from pytest_tokcompat.matrix.discovery import bundled_matrix
from pytest_tokcompat.matrix.loader import load_matrix
from tests.helpers import hubcache


def test_native_from_the_hub_cache_matches_the_matrix_ground_truth(cache: Path) -> None:
    repo, commit = hubcache.add_bundled(cache, "deepseek-v3.2-exp")
    result = load_tokenizer(repo)
    assert (result.verdict, result.source, result.repo, result.case_id) == (
        "native",
        HUB,
        repo,
        "deepseek-v3.2-exp",
    )
    assert result.folder.name == commit
    reference = reference_tokenizer(result.folder)
    for text in probe_texts():
        assert (
            result.tokenizer.encode(text, add_special_tokens=False)
            == reference.encode(text, add_special_tokens=False).ids
        )
    assert result.judgement.parity.status == "match"


def test_a_served_name_loads_its_repo(cache: Path) -> None:
    repo, _ = hubcache.add_bundled(cache, "glm-5-nvfp4")
    result = load_tokenizer("glm-5")
    assert (result.verdict, result.source, result.repo, result.case_id) == (
        "native",
        HUB,
        repo,
        "glm-5-nvfp4",
    )
    assert any("served name of case 'glm-5-nvfp4'" in note for note in result.notes)
    assert any("also the id of case 'glm-5'" in note for note in result.notes)


def test_an_unreachable_hub_falls_back_to_a_faithful_bundled_snapshot_and_says_so(cache: Path) -> None:
    result = load_tokenizer("deepseek-ai/DeepSeek-V3.2-Exp")  # the cache is empty and the hub is offline
    assert (result.source, result.repo) == (FALLBACK, "deepseek-ai/DeepSeek-V3.2-Exp")
    assert result.verdict == hubcache.bundled_case("deepseek-v3.2-exp").expected_for(transformers.__version__)
    assert any(
        "the hub could not be reached" in note and "offline snapshot of case 'deepseek-v3.2-exp'" in note
        for note in result.notes
    )


def test_a_case_id_loads_the_case_as_the_matrix_runs_it_and_says_it_is_a_stand_in(cache: Path) -> None:
    result = load_tokenizer("kimi-k2-instruct", trust_remote_code=True)
    assert (result.verdict, result.source, result.case_id, result.stand_in) == (
        "auto_map",
        SNAPSHOT,
        "kimi-k2-instruct",
        True,
    )
    assert any("stand-in tokenizer data" in note for note in result.notes)
    snapshot = load_matrix(bundled_matrix()).by_id("kimi-k2-instruct").snapshot
    assert [(f["repo"], f["revision"], f["file"], f["folder"]) for f in result.remote_files_ran] == [
        (None, None, "configuration_deepseek.py", str(snapshot)),
        (None, None, "tokenization_kimi.py", str(snapshot)),
    ]
    assert result.record["id"] == "kimi-k2-instruct" and result.record["expected"] == "auto_map"
    with pytest.raises(NotReachable, match="stand-in tokenizer data"):  # by its repo: never the stand-in
        load_tokenizer("moonshotai/Kimi-K2-Instruct")
