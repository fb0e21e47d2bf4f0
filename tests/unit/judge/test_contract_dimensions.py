"""Probes drawn from the checkpoint and the whole tokenizer contract, per attempt (issue 11).

The toys (``contract_toys.py``) are one small checkpoint, clean or drifting in exactly one
declaration. Whether the installed transformers shows a drift is measured here directly, with
one transformers call against the tokenizers library or the declaration (``drift_shows``),
independently of the tool; the tool must then catch exactly that drift, naming the dimension
and the probe, and pass the clean checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat.ci.grid import load_reports, merge
from pytest_tokcompat.ci.markdown import render_markdown
from pytest_tokcompat.errors import MatrixError
from pytest_tokcompat.judge.chat import reference_chat
from pytest_tokcompat.judge.contract_truth import clean_up_tokenization, default_call_ids
from pytest_tokcompat.judge.declared import Declared, read_declared
from pytest_tokcompat.judge.loading import transformers_version
from pytest_tokcompat.judge.parity import Truth, check_parity, ground_truth, reference_tokenizer
from pytest_tokcompat.judge.probes import (
    PI_DIGITS,
    SPECIAL_BUDGET,
    SPECIAL_GROUP,
    VOCAB_TOP,
    WHITESPACE_PROBES,
    derive_probes,
    digit_runs,
    probe_texts,
)
from pytest_tokcompat.judge.static import special_tokens
from pytest_tokcompat.matrix.loader import parse_matrix
from tests.helpers.contract_toys import DRIFTS, RSTRIP_TOKEN, SPECIALS, contract_toy, with_chat_template
from tests.helpers.ladder import judge_folder
from tests.helpers.matrices import write_matrix

# drift -> (the dimension the tool must name, the kind of the probe it must name)
CAUGHT_AS = {
    "script": ("ids", "script"),
    "special_rstrip": ("special_text", "special"),
    "high_ids": ("ids", "vocab"),
    "digits": ("ids", "digits"),
    "default_call": ("default_call", "builtin"),
    "decode": ("decode", "builtin"),
    "chat_template": ("chat_template", None),
}
MEASURED = {
    # the drifts each release shows on these toys, measured with drift_shows() on each
    "4.57.6": {"special_rstrip", "default_call"},
    "5.5.4": {"script", "special_rstrip", "high_ids", "digits", "default_call"},
    "5.24.0": set(DRIFTS),
}
REASONING = [
    {"role": "user", "content": "What is 7*6?"},
    {"role": "assistant", "content": "42.", "reasoning_content": "six sevens"},
]


def _tokenizers(folder: Path) -> tuple[Any, Any]:
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder)), Tokenizer.from_file(str(folder / "tokenizer.json"))


def drift_shows(drift: str, folder: Path) -> bool:
    """Whether the installed transformers disagrees with the toy's declaration, by one direct call."""
    loaded, reference = _tokenizers(folder)

    def ids_differ(text: str) -> bool:
        return list(loaded.encode(text, add_special_tokens=False)) != reference.encode(text).ids

    if drift == "script":
        return ids_differ("नमस्ते दुनिया")
    if drift == "special_rstrip":
        return ids_differ(f"a {RSTRIP_TOKEN} b")
    if drift == "high_ids":
        return ids_differ(" quokka")
    if drift == "digits":
        return ids_differ("99")
    if drift == "default_call":
        return loaded("Hello world")["input_ids"][:1] != [SPECIALS.index("<s>")]
    if drift == "decode":
        return loaded.decode(reference.encode("a != b").ids) != "a!= b"
    if drift == "chat_template":
        return "<think>" in loaded.apply_chat_template(REASONING, tokenize=False)
    raise ValueError(drift)


def test_clean_toy_keeps_every_dimension_on_every_probe(tmp_path: Path) -> None:
    folder = contract_toy(tmp_path / "clean")
    judgement = judge_folder(folder)
    native = judgement.attempt("native")
    assert judgement.verdict == "native"
    assert native is not None and native.parity is not None and native.status == "ok"
    dimensions = native.parity.dimensions
    assert {name: result["status"] for name, result in dimensions.items()} == {
        "ids": "match",
        "special_text": "match",
        "default_call": "match",
        "special_tokens": "match",
        "decode": "match",
        "chat_template": "match",
    }
    assert dimensions["chat_template"]["checked"] == 8  # 4 conversations, with and without generation prompt
    assert dimensions["special_tokens"]["checked"] == 4  # bos, eos, pad, unk (declared as null)
    reference = reference_tokenizer(folder)
    texts = probe_texts((), special_tokens(folder, reference), derive_probes(folder, reference))
    assert native.parity.probe_counts == texts.counts()  # every probe of every kind was checked
    # the first corpus's four, then every declared token, SPECIAL_GROUP of them per text
    assert native.parity.probe_counts["special"] == 4 + math.ceil(len(SPECIALS) / SPECIAL_GROUP)
    assert native.parity.probe_counts["digits"] == 12
    assert native.parity.probe_counts["whitespace"] == len(WHITESPACE_PROBES)
    assert native.parity.probe_counts["script"] >= 3  # Devanagari letters, marks; CJK
    assert native.parity.probe_counts["vocab"] >= VOCAB_TOP
    record = native.to_json()
    assert record["dimensions"] == dimensions and record["probe_counts"] == native.parity.probe_counts


@pytest.mark.parametrize("drift", DRIFTS)
def test_each_drift_is_caught_with_its_dimension_and_probe(drift: str, tmp_path: Path) -> None:
    folder = contract_toy(tmp_path / drift, drift)
    shows = drift_shows(drift, folder)
    judgement = judge_folder(folder)
    native = judgement.attempt("native")
    assert native is not None and native.parity is not None
    if not shows:
        # this transformers honours the declaration: the tool must not invent a drift
        assert (judgement.verdict, native.status, native.parity.status) == ("native", "ok", "match")
        return
    dimension, kind = CAUGHT_AS[drift]
    result = native.parity.dimensions[dimension]
    assert result["status"] == "drift"
    if dimension == "ids":
        # wrong ids on ordinary text: no remedy by plain loading; the backend override loads the
        # checkpoint's tokenizer.json as it is and gives the ground truth
        assert native.status == "drift" and native.parity.dimension == "ids" and native.parity.kind == kind
        assert "ids" in native.detail and repr(native.parity.text) in native.detail
        backend = judgement.attempt("backend")
        assert backend is not None and backend.status == "ok", backend
        assert judgement.verdict == "backend"
        # the drift shows only where the derived probes look, never on the built-in corpus
        assert "builtin" not in result["drifts"]
        assert kind in result["drifts"]
    else:
        # right ids on ordinary text: the verdict is native, and the drift is a finding with its consequence
        assert (judgement.verdict, native.status) == ("native", "ok")
        assert native.parity.dimension == dimension and dimension in native.findings
        assert result.get("kind") == kind
        assert f"finding {dimension}" in native.parity.describe()
    if drift == "special_rstrip":
        assert RSTRIP_TOKEN in result["text"]
        assert SPECIALS.index(RSTRIP_TOKEN) >= 4
    if drift == "high_ids":
        low, size = map(
            int, re.fullmatch(r"ids? (\d+)(?:-\d+)? of (\d+)", native.parity.probe_source or "").groups()
        )
        assert low >= 0.9 * size, native.parity.probe_source
    if drift == "digits":
        assert native.parity.text == digit_runs()[8] and len(native.parity.text) == 9
        assert native.parity.dimensions["ids"]["drifts"]["digits"] == 1  # only the 9-digit run
    if drift == "default_call":
        bos = SPECIALS.index("<s>")
        assert native.parity.dimensions["default_call"]["expected"][:1] == [bos]
        assert native.parity.dimensions["default_call"]["actual"][:1] != [bos]
    if drift == "decode":
        assert result["call"] == "decode(ids)"
        assert "!= b" in result["text"]
    if drift == "chat_template":
        assert "reasoning" in result["text"]


def test_this_release_shows_the_measured_drifts(tmp_path: Path) -> None:
    version = transformers_version()
    if version not in MEASURED:
        pytest.skip(f"the toys' drifts were measured on {', '.join(MEASURED)}, not on {version}")
    shown = {drift for drift in DRIFTS if drift_shows(drift, contract_toy(tmp_path / drift, drift))}
    assert shown == MEASURED[version]


def test_derived_probes_are_deterministic_and_seeded_by_the_files(tmp_path: Path) -> None:
    first = contract_toy(tmp_path / "a")
    second = contract_toy(tmp_path / "b")
    probes = derive_probes(first, reference_tokenizer(first))
    assert probes == derive_probes(second, reference_tokenizer(second))  # same files, same probes
    config = json.loads((second / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["model_max_length"] = 8192  # one byte of a file changes the seed, and so the sample
    (second / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    reseeded = derive_probes(second, reference_tokenizer(second))
    assert [p for p in reseeded if p.kind == "vocab"] != [p for p in probes if p.kind == "vocab"]


def test_derived_probes_cover_every_special_token_the_whole_id_range_and_every_digit_length(
    tmp_path: Path,
) -> None:
    folder = contract_toy(tmp_path / "toy")
    reference = reference_tokenizer(folder)
    probes = derive_probes(folder, reference)
    specials = [p for p in probes if p.kind == "special"]
    assert len(specials) == math.ceil(len(SPECIALS) / SPECIAL_GROUP) and len(SPECIALS) <= SPECIAL_BUDGET
    for token in SPECIALS:  # each between words, glued in a word and at the start of a chat line
        assert any(f"Hello {token} world{token}x\n{token}user\n" in p.text for p in specials)
    size = reference.get_vocab_size(with_added_tokens=True)
    swept = {
        int(m.group(1)) for p in probes if p.kind == "vocab" for m in [re.match(r"ids? (\d+)", p.source)]
    }
    assert set(range(size - VOCAB_TOP, size)) <= swept  # the highest ids
    assert min(swept) < size // 8  # and the bottom of the range
    digits = [p.text for p in probes if p.kind == "digits"]
    assert [len(d) for d in digits] == list(range(1, 13))
    assert "".join(digits) == PI_DIGITS[: sum(range(1, 13))]
    assert {p.text for p in probes if p.kind == "whitespace"} == set(WHITESPACE_PROBES)
    scripts = [p for p in probes if p.kind == "script"]
    assert any("DEVANAGARI" in p.source for p in scripts) and any("CJK" in p.source for p in scripts)
    assert all(any(not c.isascii() for c in p.text) for p in scripts)


def _template_tokenizer(post_processor: dict[str, Any]) -> Any:
    from tokenizers import Tokenizer

    document = {
        "version": "1.0",
        "added_tokens": [
            {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
             "special": True}
            for i, t in enumerate(["<s>", "</s>"])
        ],
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": post_processor,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {"<s>": 0, "</s>": 1, "hi": 2, "there": 3}, "unk_token": "hi"},
    }  # fmt: skip
    return Tokenizer.from_str(json.dumps(document))


BOS_EOS_TEMPLATE = {
    "type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "</s>", "type_id": 0}}],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                       "</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}},
}  # fmt: skip


@pytest.mark.parametrize(
    ("post_processor", "add_bos", "add_eos", "expected"),
    [
        (BOS_EOS_TEMPLATE, None, None, [0, 2, 3, 1]),  # unset flags: tokenizer.json's template as it is
        (BOS_EOS_TEMPLATE, True, None, [0, 2, 3, 1]),
        (BOS_EOS_TEMPLATE, False, None, [2, 3, 1]),  # set to false: its BOS is removed
        (BOS_EOS_TEMPLATE, None, False, [0, 2, 3]),
        (None, True, None, [0, 2, 3]),  # set to true: BOS is added where the template has none
        (None, True, True, [0, 2, 3, 1]),
        (None, None, None, [2, 3]),
    ],
)
def test_default_call_ground_truth_applies_only_the_flags_the_file_sets(
    post_processor: dict[str, Any] | None, add_bos: bool | None, add_eos: bool | None, expected: list[int]
) -> None:
    reference = _template_tokenizer(post_processor)  # type: ignore[arg-type]
    declared = Declared(add_bos_token=add_bos, add_eos_token=add_eos, special_ids={"bos": 0, "eos": 1})
    assert default_call_ids(reference, "hi there", [2, 3], declared) == expected


def test_clean_up_is_the_documented_transformers_rule() -> None:
    assert (
        clean_up_tokenization("a != b , isn 't it ? I 'm here . do n't")
        == "a!= b, isn 't it? I'm here. don't"
    )


def _declared_template(template: str, tmp_path: Path) -> Declared:
    folder = tmp_path / "tpl"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": "IGNORED", "bos_token": "<s>", "eos_token": "</s>"}), encoding="utf-8"
    )
    (folder / "chat_template.jinja").write_text(template, encoding="utf-8")  # wins, as in transformers
    return read_declared(folder)


def test_reference_rendering_is_the_documented_sandbox(tmp_path: Path) -> None:
    template = (
        "{{ bos_token }}{% for m in messages %}{% generation %}{{ m | tojson }}{% endgeneration %}"
        "{% if m.content is none %}{{ raise_exception('content must not be null') }}{% endif %}{% endfor %}"
    )
    declared = _declared_template(template, tmp_path)
    assert declared.chat_template_source == "chat_template.jinja"
    expectations, problem = reference_chat(declared, None)
    assert problem is None
    by_name = {(e.conversation, e.add_generation_prompt): e for e in expectations}
    assert len(by_name) == 8
    rendered = by_name[("system+user", False)].rendered
    assert rendered is not None and rendered.startswith('<s>{"role": "system"') and "☕" in rendered
    rejected = by_name[("content-null", True)]
    assert rejected.rendered is None and rejected.error == "TemplateError: content must not be null"


def test_a_conversation_rejected_by_both_matches_and_by_one_drifts(tmp_path: Path) -> None:
    folder = with_chat_template(
        contract_toy(tmp_path / "toy"),
        "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('no system role') }}{% endif %}"
        "{{ m.role }}: {{ m.content if m.content is not none else '' }}\n{% endfor %}",
    )
    judgement = judge_folder(folder)
    chat = judgement.attempt("native").parity.dimensions["chat_template"]  # type: ignore[union-attr]
    assert (judgement.verdict, chat["status"], chat["checked"]) == ("native", "match", 8)
    # a reference that renders what the tokenizer rejects is a drift
    reference = reference_tokenizer(folder)
    texts = probe_texts(())
    truth = ground_truth(folder, texts, None, reference)
    assert truth is not None and truth.contract is not None
    rejected = next(e for e in truth.contract.chat if e.error)
    assert rejected.conversation == "system+user"
    rejected.error, rejected.rendered, rejected.ids = None, "system: You are a helpful assistant.\n", None
    parity = check_parity(_tokenizers(folder)[0], truth, texts)
    assert parity.status == "match" and parity.dimension == "chat_template"  # right ids: a finding
    assert parity.findings() == ["chat_template"]
    assert parity.dimensions["chat_template"]["actual"].startswith("rejected (TemplateError: no system role")


def test_parity_and_truth_are_plain_picklable_data(tmp_path: Path) -> None:
    folder = contract_toy(tmp_path / "toy", "default_call")
    reference = reference_tokenizer(folder)
    texts = probe_texts((), special_tokens(folder, reference), derive_probes(folder, reference))
    truth = ground_truth(folder, texts, None, reference)
    parity = check_parity(_tokenizers(folder)[0], truth, texts)
    assert pickle.loads(pickle.dumps(truth)) == truth
    assert pickle.loads(pickle.dumps(parity)) == parity
    assert json.loads(json.dumps(parity.to_json())) == parity.to_json()
    assert pickle.loads(pickle.dumps(texts)).kinds == texts.kinds
    # a child process hands the truth on as JSON (dataclasses.asdict): it comes back whole
    assert Truth.from_json(json.loads(json.dumps(dataclasses.asdict(truth)))) == truth


def test_an_acknowledged_dimension_is_reported_not_failed(tmp_path: Path) -> None:
    folder = contract_toy(tmp_path / "toy", "default_call")
    judgement = judge_folder(folder, acknowledged={"default_call": "serving stacks restore BOS themselves"})
    native = judgement.attempt("native")
    assert native is not None and native.parity is not None
    assert (judgement.verdict, native.status, native.parity.status) == ("native", "ok", "match")
    result = native.parity.dimensions["default_call"]
    assert result["status"] == "acknowledged" and result["reason"] == "serving stacks restore BOS themselves"
    assert "acknowledged drift: default_call" in native.parity.describe()
    assert native.findings == [] and judgement.findings == []
    # acknowledging another dimension does not excuse this one: a finding, the verdict unchanged
    other = judge_folder(folder, acknowledged={"decode": "unrelated"})
    assert (other.verdict, other.findings) == ("native", ["default_call"])


def test_golden_only_checkpoints_report_derived_probes_without_golden_ids_as_not_checked(
    tmp_path: Path,
) -> None:
    from tests.helpers import toys

    folder = toys.native_toy(tmp_path / "toy")
    (folder / "tokenizer.json").unlink()  # no tokenizer.json: golden ids only
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "GPT2Tokenizer"}), encoding="utf-8"
    )
    toy_files = toys._vocab_and_merges(toys.tokenizer_document())
    for name, content in toy_files.items():
        (folder / name).write_text(
            content if isinstance(content, str) else json.dumps(content), encoding="utf-8"
        )
    golden = toys.golden_for(probe_texts(), tmp_path / "golden", "toy")
    judgement = judge_folder(folder, golden_path=golden)
    parity = judgement.parity
    assert judgement.verdict == "native"
    assert parity.probe_counts == {"builtin": 19}
    assert parity.unchecked == {"digits": 12, "whitespace": len(WHITESPACE_PROBES)}
    assert parity.dimensions["default_call"]["status"] == "not-checked"


def test_matrix_key_acknowledge_is_validated(tmp_path: Path) -> None:
    good = textwrap.dedent(
        """\
        cases:
          - id: a
            repo: o/n
            expect: native
            acknowledge:
              ">=5.0":
                default_call: "5.x drops add_bos_token when tokenizer.json exists"
              "<5.0": {decode: "4.x skips additional special tokens"}
        """
    )
    case = parse_matrix(good, tmp_path / "m.yaml").cases[0]
    assert case.acknowledged_for("5.24.0") == {
        "default_call": "5.x drops add_bos_token when tokenizer.json exists (acknowledged for >=5.0)"
    }
    assert set(case.acknowledged_for("4.57.6")) == {"decode"}
    bad = textwrap.dedent(
        """\
        cases:
          - id: b
            repo: o/n
            expect: native
            acknowledge:
              ">=5.0": {ids: "no"}
              "<4": {chat_templat: "typo"}
              "=>5": {decode: "bad range"}
              "<3": {decode: ""}
          - id: c
            repo: o/n
            expect: native
            acknowledge: decode
        """
    )
    with pytest.raises(MatrixError) as raised:
        parse_matrix(bad, tmp_path / "m.yaml")
    message = str(raised.value)
    assert "m.yaml:6: case 'b': wrong ids cannot be acknowledged" in message
    assert (
        "m.yaml:7: case 'b': unknown contract dimension 'chat_templat'; use one of special_text, default_call"
        in message
    )
    assert "m.yaml:8: case 'b': bad version range in 'acknowledge'" in message
    assert "m.yaml:9: case 'b': the acknowledgement of 'decode' for '<3' has no reason" in message
    assert "m.yaml:13: case 'c': 'acknowledge' must be a map of version ranges" in message
    assert message.count("\n") == 4


def test_the_report_summary_and_grid_name_the_dimension(pytester: pytest.Pytester) -> None:
    root = pytester.path
    contract_toy(root / "matrix" / "clean")
    contract_toy(root / "matrix" / "bos", "default_call")
    contract_toy(root / "matrix" / "bos-known", "default_call")
    write_matrix(
        root / "matrix",
        textwrap.dedent("""\
        - id: clean
          snapshot: clean
          expect: native
        - id: bos
          snapshot: bos
          expect: native
        - id: bos-known
          snapshot: bos-known
          expect: native
          acknowledge: {"*": {default_call: "serving stacks restore BOS themselves"}}
        """),
    )
    result = pytester.runpytest("--tokcompat", "-p", "no:randomly", "--tokcompat-report", "reports/")
    # skipped: the alias item (no case of its model_type in this matrix)
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*findings the matrix does not acknowledge: default_call: token counts and model input*",
            "*finding default_call: * on 'Hello world': expected *",
            "*bos *| qwen3 *| native *| native ! | match ⚠default_call +declared_special_tokens *| plain AutoTokenizer",
            "*bos-known *| qwen3 *| native *| native *| match (ack: default_call) +declared_special_tokens *",
        ]
    )
    [path] = (root / "reports").glob("*.json")
    cases = {r["id"]: r for r in json.loads(path.read_text(encoding="utf-8"))["cases"]}
    native = cases["bos"]["attempts"][0]
    assert native["dimensions"]["default_call"]["status"] == "drift"
    assert native["dimensions"]["ids"]["status"] == "match"
    assert native["probe_counts"]["digits"] == 12 and native["probe_counts"]["builtin"] == 19
    grid = render_markdown(merge(load_reports([path])))
    assert "| bos | native ✗ +declared-bos/eos ⚠default_call |" in grid
    assert "| bos-known | native +declared-bos/eos [ack: default_call] |" in grid
    assert "| clean | native |" in grid


def test_special_tokens_beyond_the_budget_are_sampled_specials_first(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    decoder = {
        str(1000 + i): {"content": f"<|tok_{i}|>", "special": i < 50} for i in range(SPECIAL_BUDGET + 76)
    }
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"added_tokens_decoder": decoder}), encoding="utf-8"
    )
    probes = [p for p in derive_probes(folder) if p.kind == "special"]
    assert len(probes) == SPECIAL_BUDGET // SPECIAL_GROUP
    probed = set(re.findall(r"Hello (<\|tok_\d+\|>) world", " ".join(p.text for p in probes)))
    assert len(probed) == SPECIAL_BUDGET
    assert {f"<|tok_{i}|>" for i in range(50)} <= probed  # every token marked special is kept
    assert probes == [p for p in derive_probes(folder) if p.kind == "special"]  # the sample is seeded
