"""A matrix run whose opted-in checkpoint rewrites its own tokenizer.json: the case fails as not-checked,
even where it expects ``broken``, and the report says why; with the check off it would pass as broken."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_tokcompat.judge import pristine
from tests.helpers import toys
from tests.helpers.matrices import run_plugin, write_matrix
from tests.unit.judge.test_pristine import ONLY_FAIL, REWRITE_THEN_FAIL
from tests.unit.judge.test_pristine import subreaper as subreaper  # autouse: no read-only mount holds here

pytest_plugins = ["pytester"]


def run(pytester: pytest.Pytester) -> tuple[pytest.RunResult, dict[str, dict[str, Any]], bytes, bytes]:
    """The two cases judged by the plugin: its result, the report's records, tokenizer.json before and after."""
    root = pytester.path
    toys.hostile_remote_toy(
        root / "rewrites", REWRITE_THEN_FAIL.format(path=str(root / "rewrites" / "tokenizer.json"))
    )
    toys.hostile_remote_toy(root / "fails", ONLY_FAIL)
    original = (root / "rewrites" / "tokenizer.json").read_bytes()
    matrix = write_matrix(
        root,
        "  - {id: rewrites, snapshot: rewrites, expect: broken, trust_remote_code: true}\n"
        "  - {id: fails, snapshot: fails, expect: backend, trust_remote_code: true}\n",
    )
    result = run_plugin(pytester, matrix, "--tokcompat-report=report.json")
    report = json.loads((root / "report.json").read_text(encoding="utf-8"))
    cases = {record["id"]: record for record in report["cases"] if record["kind"] == "case"}
    return result, cases, original, (root / "rewrites" / "tokenizer.json").read_bytes()


def test_the_case_is_not_checked_never_broken_and_the_report_says_why(pytester: pytest.Pytester) -> None:
    result, cases, before, after = run(pytester)
    assert after == before  # put back byte for byte
    assert cases["rewrites"]["verdict"] == "not-checked" and cases["rewrites"]["status"] == "failed"
    assert cases["fails"]["verdict"] == "backend" and cases["fails"]["status"] == "passed"  # control
    result.stdout.fnmatch_lines(["*not checked: attempt auto_map changed tokenizer.json of the checkpoint*"])


def test_control_with_the_check_off_the_rewrite_passes_as_broken(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pristine, "CHECKED", False)
    _, cases, _, tokenizer_json = run(pytester)
    assert (
        cases["rewrites"]["verdict"] == "broken" and cases["rewrites"]["status"] == "passed"
    )  # a false pass
    assert tokenizer_json == b"{}"
