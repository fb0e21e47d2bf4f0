"""A hub entry that is not in any cache, offline: one line per cell naming the entry, its line and the fix."""

from __future__ import annotations

import pytest

from pytest_tokcompat.ci.grid import load_reports, merge
from pytest_tokcompat.contract import library_versions
from pytest_tokcompat.judge.probes import probe_texts
from tests.helpers import toys

pytest_plugins = ["pytester"]

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_an_uncached_hub_entry_offline_is_one_clear_line_and_touches_no_other_row(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(pytester.path / "empty-hub-cache"))
    toys.native_toy(pytester.path / "native")
    toys.alias_toy(pytester.path / "alias")
    toys.golden_for(probe_texts(), pytester.path / "golden", "alias")
    pytester.makeconftest(toys.alias_conftest())
    matrix = pytester.path / "models.yaml"
    matrix.write_text(
        "version: 1\ncases:\n"
        "  - {id: native, snapshot: native, expect: native}\n"
        "  - {id: alias, snapshot: alias, expect: alias}\n"
        f"  - id: remote\n    repo: someone/absent-model\n    revision: {SHA}\n    expect: native\n"
    )
    result = pytester.runpytest(
        "--tokcompat",
        f"--tokcompat-matrix={matrix}",
        "-p",
        "no:randomly",
        "--tokcompat-report=reports",
        "-rs",
    )
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "thrown while requesting" not in output, "no retries, no traceback"
    grid = merge(load_reports(sorted((pytester.path / "reports").glob("*.json"))))
    release = str(library_versions()["transformers"])
    assert grid.rows["native"][release].verdict == "native"
    assert grid.rows["alias"][release].verdict == "alias"
    assert grid.rows[f"alias:{toys.TOY_ALIAS_TYPE}"][release].checked, "the alias row: judged as ever"
    assert not grid.rows["remote"][release].checked
    [line] = grid.incomplete
    assert line.startswith(f"transformers {release}: not checked: remote at {matrix}:5 (")
    assert (
        f"run `tokcompat check someone/absent-model --revision {SHA}` once where the hub is reachable" in line
    )
