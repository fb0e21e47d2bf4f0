"""Never a false pass: broken checkpoints, hanging remote code, oversized files, dying workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import transformers
from packaging.version import Version

from pytest_tokcompat.judge.evaluate import FAILED, evaluate
from pytest_tokcompat.judge.isolation import registry_fingerprint
from pytest_tokcompat.matrix.loader import parse_matrix
from pytest_tokcompat.request import Request
from pytest_tokcompat.settings import JudgeSettings, Limits
from tests.helpers import toys
from tests.helpers.ladder import judge_folder

pytest_plugins = ["pytester"]


def case_for(folder: Path, expect: str = "native", trust: bool = False) -> object:
    matrix_path = folder.parent / "models.yaml"
    text = f"cases:\n  - id: {folder.name}\n    snapshot: {folder.name}\n    expect: {expect}\n"
    text += "    trust_remote_code: true\n" if trust else ""
    matrix_path.write_text(text)
    return parse_matrix(text, matrix_path).cases[0]


def test_config_that_is_not_json_is_not_checked_with_the_file_named(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "bad-json")
    (folder / "config.json").write_text("{not json")
    outcome = evaluate(Request(case_for(folder)))
    assert (outcome.status, outcome.verdict) == (FAILED, "not-checked")
    assert "config.json is not valid JSON" in outcome.message and "re-download it" in outcome.message


def test_config_that_is_not_an_object_never_satisfies_expect_broken(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "list-config")
    (folder / "config.json").write_text("[1, 2]")
    outcome = evaluate(Request(case_for(folder, expect="broken")))
    assert (outcome.status, outcome.verdict) == (FAILED, "not-checked")
    assert (
        outcome.message.startswith("not checked: ") and "must hold a JSON object, not list" in outcome.message
    )


def test_config_without_model_type_is_judged_and_says_so(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "no-model-type")
    (folder / "config.json").write_text("{}")
    judgement = judge_folder(folder)
    assert judgement.model_type is None
    assert judgement.verdict == "native" and judgement.parity.ok  # tokenizer_config.json names the class


def test_truncated_tokenizer_json_is_not_checked(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "truncated")
    data = (folder / "tokenizer.json").read_bytes()
    (folder / "tokenizer.json").write_bytes(data[: len(data) // 2])
    outcome = evaluate(Request(case_for(folder, expect="broken")))
    assert (outcome.status, outcome.verdict) == (FAILED, "not-checked")
    assert outcome.message.startswith("not checked: ")
    assert "tokenizer.json is not a valid tokenizer.json" in outcome.message


def test_tokenizer_class_that_does_not_exist(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "no-such-class")
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "NoSuchTokenizer"}))
    judgement = judge_folder(folder)
    native = judgement.attempt("native")
    assert native is not None
    if Version(transformers.__version__).major < 5:  # transformers 4.x refuses the class
        assert judgement.verdict == "broken" and "NoSuchTokenizer" in (native.detail or "")
    else:  # transformers 5.x falls back to tokenizer.json, and parity proves it right
        assert judgement.verdict == "native" and judgement.parity.ok


def test_auto_map_naming_a_missing_file(tmp_path: Path) -> None:
    folder = toys.remote_toy(tmp_path / "missing-code")
    (folder / "tokenization_toy.py").unlink()
    judgement = judge_folder(folder, trust_remote_code=True)
    assert judgement.verdict == "backend"  # its tokenizer.json, loaded as it is, runs no code
    remote = judgement.attempt("auto_map")
    assert remote is not None and remote.status == "load-error"
    assert "tokenization_toy" in (remote.detail or "")


def test_remote_code_that_raises(tmp_path: Path) -> None:
    folder = toys.remote_toy(tmp_path / "raising")
    (folder / "tokenization_toy.py").write_text("raise RuntimeError('the remote code exploded')\n")
    judgement = judge_folder(folder, trust_remote_code=True)
    remote = judgement.attempt("auto_map")
    assert judgement.verdict == "backend"
    assert remote is not None and remote.detail == "RuntimeError: the remote code exploded"


def test_remote_code_that_hangs_is_stopped_and_reported(tmp_path: Path) -> None:
    folder = toys.remote_toy(tmp_path / "hanging")
    code = (folder / "tokenization_toy.py").read_text()
    reached = tmp_path / "reached"  # written by the remote code just before it sleeps
    hang = f"open({str(reached)!r}, 'w').close()\nimport time\ntime.sleep(120)\n"
    (folder / "tokenization_toy.py").write_text(hang + code)
    judgement = judge_folder(folder, trust_remote_code=True, limits=Limits(load_timeout=0.5))
    remote = judgement.attempt("auto_map")
    assert judgement.verdict == "not-checked", "a remedy the judge could not finish is not a broken one"
    assert remote is not None and remote.status == "timeout"
    assert reached.is_file(), "the limit struck before the remote code ran: this tested a slow load instead"
    assert "longer than 0.5 s" in (remote.detail or "")
    assert "the auto_map attempt could not be judged" in (judgement.parity.reason or "")


def test_tokenizer_file_over_the_size_cap_is_refused_and_not_checked(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "huge")
    outcome = evaluate(
        Request(case_for(folder, expect="broken"), settings=JudgeSettings(limits=Limits(max_file_mb=0.001)))
    )
    assert (outcome.status, outcome.verdict) == (FAILED, "not-checked")
    assert "over the 0.001 MB cap" in outcome.message and "--tokcompat-max-file-mb" in outcome.message


def _unjudgeable_matrix(root: Path) -> Path:
    """Three checkpoints that all expect broken: big (over 1 MB), truncated, and a plain one."""
    big = toys.native_toy(root / "big")
    (big / "tokenizer.json").write_text((big / "tokenizer.json").read_text() + " " * (1536 * 1024))
    truncated = toys.native_toy(root / "truncated")
    data = (truncated / "tokenizer.json").read_bytes()
    (truncated / "tokenizer.json").write_bytes(data[: len(data) // 2])
    toys.native_toy(root / "plain")
    matrix = root / "models.yaml"
    matrix.write_text(
        "cases:\n"
        + "".join(
            f"  - {{id: {name}, snapshot: {name}, expect: broken}}\n"
            for name in ("big", "truncated", "plain")
        )
    )
    return matrix


@pytest.mark.parametrize(
    ("option", "not_checked"),
    [
        (
            "--tokcompat-max-file-mb=1",
            {"big": "over the 1 MB cap", "truncated": "not a valid tokenizer.json"},
        ),
        (
            "--tokcompat-load-timeout=0.001",
            {"big": "took longer than 0.001 s", "plain": "took longer than 0.001 s"},
        ),
    ],
    ids=["size-cap", "judge-timeout"],
)
def test_expect_broken_never_passes_on_what_was_not_checked(
    pytester: pytest.Pytester, option: str, not_checked: dict[str, str]
) -> None:
    matrix = _unjudgeable_matrix(pytester.path)
    result = pytester.runpytest(
        "--tokcompat",
        f"--tokcompat-matrix={matrix}",
        "--tokcompat-report=report.json",
        "-p",
        "no:randomly",
        option,
    )
    records = {r["id"]: r for r in json.loads((pytester.path / "report.json").read_text())["cases"]}
    for case_id, reason in not_checked.items():
        assert (records[case_id]["status"], records[case_id]["verdict"]) == ("failed", "not-checked")
        assert "not checked: " in records[case_id]["message"] and reason in records[case_id]["message"]
    result.assert_outcomes(failed=3, skipped=1)
    result.stdout.fnmatch_lines(["*not checked: *"])


def test_an_attempt_that_fails_half_way_leaves_no_registration(tmp_path: Path) -> None:
    import pytest_tokcompat.matrix.aliases as aliases

    folder = toys.alias_toy(tmp_path / "half-way")
    (folder / "merges.txt").write_text("#version: 0.2\nthis is not a merge line at all\n")
    toy = aliases.Alias(
        toys.TOY_ALIAS_TYPE, "transformers.models.gpt2.configuration_gpt2.GPT2Config", "gpt2", "x"
    )
    before = registry_fingerprint()
    judgement = judge_folder(folder, registry={toy.model_type: toy})
    alias = judgement.attempt("alias")
    assert (
        alias is not None
        and alias.status == "load-error"
        and "Merges text file invalid" in (alias.detail or "")
    )
    assert registry_fingerprint() == before


def test_a_tokenizer_that_loads_but_cannot_encode_is_no_remedy(tmp_path: Path) -> None:
    folder = toys.remote_toy(tmp_path / "cannot-encode")
    code = (folder / "tokenization_toy.py").read_text()
    code += (
        "\n    def encode(self, *args, **kwargs):\n"
        "        raise RuntimeError('encode is broken in this checkpoint')\n"
    )
    (folder / "tokenization_toy.py").write_text(code)
    judgement = judge_folder(folder, trust_remote_code=True)
    remote = judgement.attempt("auto_map")
    assert judgement.verdict == "backend"
    assert remote is not None and remote.status == "encode-error"
    assert remote.detail == "RuntimeError: encode is broken in this checkpoint"
