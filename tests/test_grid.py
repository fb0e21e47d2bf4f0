"""Merging the per-release reports into one grid, rendering it, and `tokcompat report` exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version
from reportdata import alarm, alias_record, case, report, write

from pytest_tokcompat.ci.grid import (
    MARK_CHANGED,
    MARK_DRIFT,
    MARK_UNEXPECTED,
    Grid,
    GridError,
    load_reports,
    merge,
    render,
    render_html,
    render_markdown,
)
from pytest_tokcompat.cli import main
from pytest_tokcompat.contract import SCHEMA_VERSION

MIB = 1024 * 1024


def grid_of(tmp_path: Path, documents: dict[str, dict[str, Any]]) -> Grid:
    paths = [write(tmp_path, name, document) for name, document in documents.items()]
    return merge(load_reports(paths))


def test_releases_in_version_order_not_text_order(tmp_path: Path) -> None:
    versions = ["5.10.4", "4.57.6", "5.11.0", "5.0.0", "5.9.0", "4.45.2", "5.2.0"]
    grid = grid_of(tmp_path, {f"tf{v}.json": report(v, [case("c", v, "native")]) for v in versions})
    assert grid.releases == ["4.45.2", "4.57.6", "5.0.0", "5.2.0", "5.9.0", "5.10.4", "5.11.0"]
    assert grid.sources["5.10.4"].endswith("tf5.10.4.json")


def test_missing_columns_stay_empty(tmp_path: Path) -> None:
    grid = grid_of(
        tmp_path,
        {
            "a.json": report("5.0.0", [case("old", "5.0.0", "alias"), case("both", "5.0.0", "native")]),
            "b.json": report("5.1.0", [case("both", "5.1.0", "native"), case("new", "5.1.0", "native")]),
        },
    )
    assert set(grid.rows) == {"old", "both", "new"}
    assert set(grid.rows["old"]) == {"5.0.0"} and set(grid.rows["new"]) == {"5.1.0"}
    markdown = render_markdown(grid)
    assert "| old | alias | — |" in markdown
    assert "| new | — | native |" in markdown
    data = json.loads(render(grid, "json"))
    assert set(data["rows"]["old"]) == {"5.0.0"}


def test_reports_of_one_release_are_one_column(tmp_path: Path) -> None:
    """The shards of `tokcompat grid --shard`: their records unite; the same record twice is one."""
    first = write(tmp_path, "a.json", report("5.11.0", [case("c", "5.11.0", "native")]))
    second = write(
        tmp_path, "b.json", report("5.11", [case("c", "5.11.0", "native"), case("d", "5.11", "alias")])
    )
    grid = merge(load_reports([first, second]))
    assert grid.releases == ["5.11.0"]
    assert {case_id: cells["5.11.0"].verdict for case_id, cells in grid.rows.items()} == {
        "c": "native",
        "d": "alias",
    }


def test_a_checked_record_wins_over_a_not_checked_one(tmp_path: Path) -> None:
    missing = case("c", "5.11.0", "native") | {"status": "not-checked", "verdict": None}
    first = write(tmp_path, "a.json", report("5.11.0", [missing]))
    second = write(tmp_path, "b.json", report("5.11.0", [case("c", "5.11.0", "alias")]))
    for order in ([first, second], [second, first]):
        assert merge(load_reports(order)).rows["c"]["5.11.0"].verdict == "alias"


def test_two_reports_that_judge_one_case_differently_are_an_error(tmp_path: Path) -> None:
    first = write(tmp_path, "tflatest.json", report("5.11.0", [case("c", "5.11.0", "native")]))
    second = write(tmp_path, "tf5110.json", report("5.11.0", [case("c", "5.11.0", "alias")]))
    with pytest.raises(GridError, match=r"both judge 'c' under transformers 5\.11\.0, differently"):
        load_reports([first, second])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema_version": 1, "cases": [', "not JSON"),
        ("", "not JSON"),
        ("[1, 2]", "not a tokcompat report"),
        ('{"cases": []}', "not a tokcompat report"),
    ],
)
def test_bad_json_is_an_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "tf500.json"
    path.write_text(text)
    with pytest.raises(GridError, match=message) as caught:
        load_reports([path])
    assert str(path) in str(caught.value)


def test_other_schema_version_is_an_error(tmp_path: Path) -> None:
    document = report("5.0.0", []) | {"schema_version": SCHEMA_VERSION + 1}
    path = write(tmp_path, "tf500.json", document)
    with pytest.raises(GridError, match=f"schema version {SCHEMA_VERSION + 1}"):
        load_reports([path])


@pytest.mark.parametrize("version", [None, 5.0, "five", ""])
def test_transformers_version_must_be_a_version_string(tmp_path: Path, version: object) -> None:
    path = write(tmp_path, "r.json", report("5.0.0", []) | {"transformers_version": version})
    with pytest.raises(GridError, match="is not a version"):
        load_reports([path])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cases": [{"kind": "case", "verdict": "native"}]}, "string 'id'"),
        ({"cases": {"c": {}}}, "'cases' must be a list"),
        ({"alarms": [{"kind": "obsolete-alias"}]}, "'alarms' must be a list"),
    ],
)
def test_damaged_records_are_an_error_not_a_crash(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    path = write(tmp_path, "r.json", report("5.0.0", []) | change)
    with pytest.raises(GridError, match=message):
        load_reports([path])


def test_no_report_and_missing_file_are_errors(tmp_path: Path) -> None:
    with pytest.raises(GridError, match="no report given"):
        load_reports([])
    with pytest.raises(GridError, match="cannot read it"):
        load_reports([tmp_path / "absent.json"])


def test_changed_since_previous_release(tmp_path: Path) -> None:
    history = {"4.57.6": "alias", "5.0.0": "alias", "5.10.4": "native", "5.11.0": "native"}
    documents = {
        f"{v}.json": report(
            v, [case("deepseek-v3.2-exp", v, verdict, "alias" if Version(v) < Version("5.1") else "native")]
        )
        for v, verdict in history.items()
    }
    documents["5.5.4.json"] = report("5.5.4", [])  # a column with no cell for the case
    grid = grid_of(tmp_path, documents)
    cells = grid.rows["deepseek-v3.2-exp"]
    assert {r: c.changed for r, c in cells.items()} == {
        "4.57.6": False,
        "5.0.0": False,
        "5.10.4": True,
        "5.11.0": False,
    }
    assert cells["5.10.4"].marks() == MARK_CHANGED
    assert f"native {MARK_CHANGED}" in render_markdown(grid)


def test_unexpected_and_drift_marks(tmp_path: Path) -> None:
    grid = grid_of(
        tmp_path,
        {
            "a.json": report("5.5.4", [case("qwen", "5.5.4", "broken", "native", drift=True)]),
            "b.json": report("5.6.0", [case("qwen", "5.6.0", "native")]),
        },
    )
    broken = grid.rows["qwen"]["5.5.4"]
    assert broken.unexpected and broken.drift
    assert broken.marks() == MARK_UNEXPECTED + MARK_DRIFT
    markdown = render_markdown(grid)
    assert f"broken {MARK_UNEXPECTED}{MARK_DRIFT} (expected native)" in markdown
    assert f"native {MARK_CHANGED}" in markdown


def test_alias_rows_show_the_alias_state_and_mark_alarms(tmp_path: Path) -> None:
    grid = grid_of(
        tmp_path,
        {
            "a.json": report("5.10.4", [alias_record("deepseek_v32", "5.10.4")]),
            "b.json": report("5.11.0", [alias_record("deepseek_v32", "5.11.0", "failed", "obsolete")]),
        },
    )
    cells = list(grid.rows["alias:deepseek_v32"].values())
    assert [c.verdict for c in cells] == ["needed", "obsolete"]
    assert [c.unexpected for c in cells] == [False, True]
    assert cells[1].changed


def test_alarms_first_release_and_all_releases(tmp_path: Path) -> None:
    obsolete = [alarm("obsolete-alias", "deepseek_v32", v) for v in ("5.11.0", "5.10.4", "5.12.0")]
    grid = grid_of(
        tmp_path,
        {
            "c.json": report("5.12.0", [], [obsolete[2]]),
            "a.json": report("5.10.4", [], [obsolete[1]]),
            "b.json": report("5.11.0", [], [obsolete[0], obsolete[0]]),
            "d.json": report("5.9.0", []),
        },
    )
    assert len(grid.alarms) == 1
    found = grid.alarms[0]
    assert (found.kind, found.subject, found.first_release) == ("obsolete-alias", "deepseek_v32", "5.10.4")
    assert found.releases == ["5.10.4", "5.11.0", "5.12.0"]
    assert "first in transformers 5.10.4" in render_markdown(grid)


def test_markdown_fits_the_job_summary() -> None:
    versions = [f"5.{minor}.0" for minor in range(13)]
    documents = {
        f"{v}.json": report(
            v,
            [case(f"case-{index:05d}-with-a-long-name", v, "alias", "native") for index in range(2500)],
        )
        for v in versions
    }
    grid = merge([(Path(name), document) for name, document in documents.items()])
    text = render_markdown(grid)
    assert len(text.encode()) < MIB
    assert "truncated" in text
    text.encode().decode("utf-8")  # still whole characters


def test_html_has_a_cell_per_release(tmp_path: Path) -> None:
    versions = ["4.57.6", "5.0.0", "5.11.0"]
    documents = {f"{v}.json": report(v, [case("c-one", v, "native")]) for v in versions}
    documents["5.0.0.json"]["cases"].append(case("c-<b>two</b>", "5.0.0", "alias"))
    grid = grid_of(tmp_path, documents)
    page = render_html(grid)
    rows = re.findall(r"<tr>(.*?)</tr>", page)
    assert rows[0].count("<th>") == len(versions) + 1
    for row in rows[1:]:
        assert row.count("<td") == len(versions)
    assert "<b>two</b>" not in page and "c-&lt;b&gt;two&lt;/b&gt;" in page


@pytest.fixture
def reports(tmp_path: Path) -> dict[str, Path]:
    return {
        "clean": write(tmp_path, "clean.json", report("5.0.0", [case("c", "5.0.0", "native")])),
        "clean2": write(tmp_path, "clean2.json", report("5.1.0", [case("c", "5.1.0", "native")])),
        "alarming": write(tmp_path, "alarm.json", report("5.2.0", [case("c", "5.2.0", "broken", "native")])),
        "bad": tmp_path / "bad.json",
    }


def test_report_exit_codes(reports: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    reports["bad"].write_text("{")
    assert main(["report", str(reports["clean"]), str(reports["clean2"])]) == 0
    assert "No alarms." in capsys.readouterr().out
    assert main(["report", str(reports["clean"]), str(reports["alarming"])]) == 1
    assert "### Alarms" in capsys.readouterr().out
    assert main(["report", str(reports["clean"]), str(reports["bad"])]) == 2
    assert "not JSON" in capsys.readouterr().err
    assert main(["report"]) == 2
    assert main(["report", str(reports["clean"]), "--format", "pdf"]) == 2


def test_report_formats_and_output(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(reports["clean"]), str(reports["alarming"]), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["releases"] == ["5.0.0", "5.2.0"] and data["alarms"][0]["first_release"] == "5.2.0"
    target = tmp_path / "grid.html"
    assert main(["report", str(reports["clean"]), "--format", "html", "--output", str(target)]) == 0
    assert target.read_text().startswith("<!doctype html>")
    assert capsys.readouterr().out == ""


def test_one_exit_rule_for_report_and_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unchecked = case("d", "5.1.0", "native") | {"status": "not-checked", "verdict": None, "alarms": []}
    clean = report("5.1.0", [case("c", "5.1.0", "native"), case("d", "5.1.0", "native")])
    holey = report("5.1.0", [case("c", "5.1.0", "native"), unchecked])
    alarming = report("5.1.0", [case("c", "5.1.0", "broken", "native"), unchecked])
    alias_only = report(
        "5.1.0",
        [case("c", "5.1.0", "native"), alias_record("x", "5.1.0", status="not-checked", state="not-checked")],
    )
    expected = {"clean": (0, []), "holey": (3, ["d"]), "alarming": (1, ["d"]), "alias_only": (0, [])}
    for name, document in {
        "clean": clean,
        "holey": holey,
        "alarming": alarming,
        "alias_only": alias_only,
    }.items():
        path = write(tmp_path, f"{name}.json", document)
        grid = merge(load_reports([path]))
        code, problems = expected[name]
        assert grid.exit_status() == code, name
        assert [reason.split(":")[0] for reason in grid.incomplete] == problems, name
        assert main(["report", str(path)]) == code
        capsys.readouterr()
