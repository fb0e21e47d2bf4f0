"""End to end: `tokcompat check` and `tokcompat resolve`: exit statuses and the JSON record.

The rest of this subject's tests, and the helpers these use, are in tests/unit/cli/test_cli.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tokcompat.cli import main


def test_check_judges_a_bundled_case_offline_with_its_golden_ids(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Mistral Nemo's snapshot has only tekken.json: its ground truth is the golden ids mistral-common gave
    assert main(["check", "mistral-nemo-instruct-2407", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["id"], record["verdict"], record["expected"], record["status"]) == (
        "mistral-nemo-instruct-2407",
        "native",
        "native",
        "passed",
    )
    assert (
        record["parity"]["status"] == "match"
        and record["parity"]["source"] == "golden ids in mistral-nemo-instruct-2407.json"
    )
    assert (record["source"], record["matched_by"]) == ("snapshot", "id")


def test_check_of_an_assembled_folder_carries_its_cases_golden_ids(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_tokcompat.matrix.discovery import bundled_matrix
    from pytest_tokcompat.matrix.loader import load_matrix
    from pytest_tokcompat.sources.snapshots import materialize

    snapshot = load_matrix(bundled_matrix()).by_id("qwen3-0.6b").snapshot
    assert snapshot is not None
    assert main(["check", str(materialize(snapshot)), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["id"], record["verdict"], record["matched_by"]) == (
        "qwen3-0.6b",
        "native",
        "assembled folder",
    )
    assert record["parity"]["status"] == "match"


def test_check_text_adds_a_probe_text_and_without_golden_ids_it_is_not_checked(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["check", "mistral-nemo-instruct-2407", "--text", "a text no golden file holds", "--json"]) == 3
    )
    record = json.loads(capsys.readouterr().out)
    assert record["verdict"] == "not-checked" and record["parity"]["status"] == "not-checked"
    assert (
        "1 probe texts have no golden ids (first: 'a text no golden file holds')"
        in record["parity"]["reason"]
    )
