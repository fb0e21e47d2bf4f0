"""Merging the per-release reports into one grid, rendering it, and `tokcompat report` exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_tokcompat import contract
from pytest_tokcompat.ci.grid import (
    MARK_CHANGED,
    MARK_DRIFT,
    MARK_NOT_CHECKED,
    MARK_UNEXPECTED,
    Grid,
    GridError,
    load_reports,
    merge,
)
from pytest_tokcompat.ci.markdown import render_markdown
from pytest_tokcompat.ci.render import render, render_html
from pytest_tokcompat.cli import main
from pytest_tokcompat.contract import SCHEMA_VERSION
from tests.helpers.reportdata import (
    alarm,
    alias_record,
    case,
    not_checked,
    report,
    report_schema_errors,
    write,
)

MIB = 1024 * 1024


def grid_of(tmp_path: Path, documents: dict[str, dict[str, Any]]) -> Grid:
    paths = [write(tmp_path, name, document) for name, document in documents.items()]
    return merge(load_reports(paths))


def test_releases_in_version_order_not_text_order(tmp_path: Path) -> None:
    versions = ["5.10.4", "4.57.6", "5.11.0", "5.0.0", "5.9.0", "4.45.2", "5.2.0"]
    grid = grid_of(tmp_path, {f"tf{v}.json": report(v, [case("c", v, "native")]) for v in versions})
    assert grid.releases == ["4.45.2", "4.57.6", "5.0.0", "5.2.0", "5.9.0", "5.10.4", "5.11.0"]
    assert [Path(source).name for source in grid.sources["5.10.4"]] == ["tf5.10.4.json"]
    assert grid.complete and grid.exit_status() == 0


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
    # a release without a record for a case: the grid cannot say all is well
    assert grid.incomplete == [
        "transformers 5.0.0: no record for new (its report does not have it): "
        "run the same matrix under every release",
        "transformers 5.1.0: no record for old (its report does not have it): "
        "run the same matrix under every release",
    ]
    assert data["complete"] is False and data["incomplete"] == grid.incomplete
    assert "**Incomplete grid**" in markdown and "- transformers 5.0.0: no record for new" in markdown
    assert grid.exit_status() == 3


def test_two_complete_reports_for_one_release_merge_into_one_column(tmp_path: Path) -> None:
    # tflatest and tfpre on the same release: both complete, both kept, one column
    older = report(
        "5.11.0", [case("c", "5.11.0", "alias", "native")], finished_at="2026-11-29T03:00:00+00:00"
    )
    newer = report("5.11.0", [case("c", "5.11.0", "native")], finished_at="2026-11-29T03:05:00+00:00")
    first = write(tmp_path, "transformers-5.11.0.json", newer)
    second = write(tmp_path, "transformers-5.11.0.run-2.json", older)
    grid = merge(load_reports([second, first]))
    assert grid.releases == ["5.11.0"]
    assert grid.rows["c"]["5.11.0"].verdict == "native", "the newer complete run is shown"
    assert grid.sources["5.11.0"] == [str(first), str(second)]
    assert grid.complete and grid.alarms == []
    assert any("c is native in" in note and "but alias in" in note for note in grid.notes)


def test_the_newest_complete_report_wins_by_time_not_by_spelling(tmp_path: Path) -> None:
    # 04:00+01:00 is 03:00 UTC: older than 03:05 UTC although it sorts later as text
    older = report(
        "5.11.0", [case("c", "5.11.0", "alias", "native")], finished_at="2026-11-29T04:00:00+01:00"
    )
    newer = report("5.11.0", [case("c", "5.11.0", "native")], finished_at="2026-11-29T03:05:00+00:00")
    partial = report(
        "5.11.0",
        [case("c", "5.11.0", "broken", "native")],
        selection={"partial": True, "reason": "-k c"},
        finished_at="2026-11-29T09:00:00+00:00",
    )
    paths = [
        write(tmp_path, f"{name}.json", doc) for name, doc in (("o", older), ("n", newer), ("p", partial))
    ]
    grid = merge(load_reports(paths))
    assert grid.rows["c"]["5.11.0"].verdict == "native", "a newer partial run never outranks a complete one"
    assert grid.incomplete == [
        f"{paths[2]}: the run selected part of the matrix (-k c): run the whole matrix"
    ]
    assert f"c is native in {paths[1]} but broken in {paths[2]}" in "\n".join(grid.notes)


def test_equal_versions_spelled_differently_are_one_release(tmp_path: Path) -> None:
    first = write(tmp_path, "a.json", report("5.0", [case("c", "5.0", "native")]))
    second = write(tmp_path, "b.json", report("5.0.0", [case("c", "5.0.0", "native")]))
    grid = merge(load_reports([first, second]))
    assert len(grid.releases) == 1 and len(grid.rows["c"]) == 1


def test_reports_of_one_release_are_one_column(tmp_path: Path) -> None:
    """The shards of `tokcompat grid --shard`: their records unite; the same record twice is one."""
    first = write(tmp_path, "a.json", report("5.11.0", [case("c", "5.11.0", "native")]))
    second = write(
        tmp_path, "b.json", report("5.11", [case("c", "5.11.0", "native"), case("d", "5.11", "alias")])
    )
    grid = merge(load_reports([first, second]))
    assert len(grid.releases) == 1
    (release,) = grid.releases
    assert {case_id: cells[release].verdict for case_id, cells in grid.rows.items()} == {
        "c": "native",
        "d": "alias",
    }


def test_a_checked_record_wins_over_a_not_checked_one(tmp_path: Path) -> None:
    missing = case("c", "5.11.0", "native") | {"status": "not-checked", "verdict": None}
    first = write(tmp_path, "a.json", report("5.11.0", [missing]))
    second = write(tmp_path, "b.json", report("5.11.0", [case("c", "5.11.0", "alias")]))
    for order in ([first, second], [second, first]):
        assert merge(load_reports(order)).rows["c"]["5.11.0"].verdict == "alias"


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
    for version in (SCHEMA_VERSION + 1, SCHEMA_VERSION - 1):
        document = report("5.0.0", []) | {"schema_version": version}
        path = write(tmp_path, "tf500.json", document, valid=False)
        with pytest.raises(
            GridError, match=f"schema version {version}, this tokcompat reads {SCHEMA_VERSION}"
        ):
            load_reports([path])


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (None, r"\$\.transformers_version: expected a string, got null"),
        (5.0, r"\$\.transformers_version: expected a string, got 5\.0"),
        ("five", "'five' is not a version"),
        ("", "'' is not a version"),
    ],
)
def test_transformers_version_must_be_a_version_string(tmp_path: Path, version: object, message: str) -> None:
    document = report("5.0.0", []) | {"transformers_version": version}
    path = write(tmp_path, "r.json", document, valid=isinstance(version, str))
    with pytest.raises(GridError, match=message):
        load_reports([path])


def _damaged(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    document = report("5.0.0", [case("c", "5.0.0", "native"), alias_record("deepseek_v32", "5.0.0")])
    change(document)
    return document


def _set(where: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set one field of the first case record (or of its first attempt: 'attempt.KEY')."""

    def change(document: dict[str, Any]) -> None:
        record = next(r for r in document["cases"] if r["kind"] == "case")
        if where.startswith("attempt."):
            record["attempts"][0][where.removeprefix("attempt.")] = value
        else:
            record[where] = value

    return change


DAMAGED = {
    "attempts not a list": (_set("attempts", 5), r"\$\.cases\[1\]\.attempts: expected an array, got 5"),
    "record without id": (
        lambda d: d["cases"][1].pop("id"),
        r"\$\.cases\[1\]: \"id\" is missing",
    ),
    "cases not a list": (
        lambda d: d.update(cases={"c": {}}),
        r"\$\.cases: expected an array, got \{",
    ),
    "alarm without action": (
        lambda d: d.update(alarms=[{"kind": "obsolete-alias"}]),
        r"\$\.alarms\[0\]: \"subject\" is missing",
    ),
    "unknown alarm kind": (
        lambda d: d.update(alarms=[dict(alarm("obsolete-alias", "x", "5.0.0"), kind="oops")]),
        r"\$\.alarms\[0\]\.kind: \"oops\" is not one of \"unexpected-verdict\"",
    ),
    "unknown attempt status": (
        _set("attempt.status", "exploded"),
        r"\$\.cases\[1\]\.attempts\[0\]\.status: \"exploded\" is not one of",
    ),
    "unknown verdict": (_set("verdict", "fine"), r"\$\.cases\[1\]\.verdict: \"fine\" is not one of"),
    "id with a newline": (
        _set("id", "qwen\n"),
        r"\$\.cases\[1\]\.id: \"qwen\\n\" is not allowed \(.*one line without control characters\)",
    ),
    "alias state under verdict": (
        lambda d: d["cases"][0].update(verdict="needed"),
        r"\$\.cases\[0\]\.verdict: \"needed\" is not allowed \(an alias record carries its lifecycle under 'state', not 'verdict'\)",
    ),
    "alias without state": (lambda d: d["cases"][0].pop("state"), r"\$\.cases\[0\]: \"state\" is missing"),
    "complete missing": (lambda d: d.pop("complete"), r"\$: \"complete\" is missing"),
    "exit status a string": (
        lambda d: d.update(exit_status="0"),
        r"\$\.exit_status: expected an integer, got \"0\"",
    ),
    "negative seconds": (_set("attempt.seconds", -1), r"attempts\[0\]\.seconds: -1 is less than 0"),
    "remote file without revision": (
        _set("remote_files_ran", [{"repo": "o/r", "file": "x.py"}]),
        r"remote_files_ran\[0\]: \"revision\" is missing",
    ),
    "selection without partial": (
        lambda d: d.update(selection={"reason": "-k x"}),
        r"\$\.selection: \"partial\" is missing",
    ),
}


@pytest.mark.parametrize(("change", "message"), DAMAGED.values(), ids=DAMAGED.keys())
def test_damaged_reports_are_one_line_errors_naming_file_and_path(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    document = _damaged(change)
    assert report_schema_errors(document), "jsonschema accepts it too: the schema misses this damage"
    path = write(tmp_path, "r.json", document, valid=False)
    with pytest.raises(GridError, match=message) as caught:
        load_reports([path])
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and "\n" not in text and "regenerate it" in text


def test_extra_fields_other_producers_add_are_accepted(tmp_path: Path) -> None:
    document = report("5.0.0", [case("c", "5.0.0", "native"), alias_record("deepseek_v32", "5.0.0")])
    record = document["cases"][1]
    record["attempts"][0].update(
        status="crashed",
        stdout="x" * 10,
        stderr=None,
        dimensions={"ids": "match", "decode": "match"},
        probe_counts={"builtin": 19, "special": 4},
        remote_files=[{"repo": "o/r", "revision": "a" * 40, "file": "tokenization.py"}, "local.py"],
    )
    record["remote_files_ran"] = [{"repo": None, "revision": None, "file": "tokenization_kimi.py"}]
    record["something_new"] = {"any": ["shape"]}
    document["upstream_watch"] = {"deepseek_v32": "registered"}
    document["selection"] = {"partial": False}
    grid = merge(load_reports([write(tmp_path, "r.json", document)]))
    assert grid.rows["c"]["5.0.0"].verdict == "native"


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
    versions = ["5.0.0", "5.1.0"]
    long_name = "-with-a-long-name-é" * 20  # two-byte characters, so the cut can fall inside one
    documents = {
        f"{v}.json": report(
            v, [case(f"case-{index:05d}{long_name}", v, "alias", "native") for index in range(1000)]
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


# --- reports that cannot lie: incomplete grids (issue 10) -----------------------------------


def _interrupted(version: str) -> dict[str, Any]:
    """What a SIGINT (or a dying worker) leaves: one case judged, the rest not checked, complete false."""
    return report(
        version,
        [case("a", version, "native"), not_checked("b"), not_checked("alias:deepseek_v32")],
        complete=False,
        exit_status=2,
    )


def test_an_interrupted_run_makes_the_grid_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [
        case("a", "5.0.0", "native"),
        case("b", "5.0.0", "native"),
        alias_record("deepseek_v32", "5.0.0"),
    ]
    clean = write(tmp_path, "a.json", report("5.0.0", records))
    interrupted = write(tmp_path, "b.json", _interrupted("5.1.0"))
    grid = merge(load_reports([clean, interrupted]))
    assert grid.incomplete == [
        f"{interrupted}: not every case ran (pytest exit status 2: interrupted, a worker died, or part of "
        "the matrix was selected): run the whole matrix under that release again",
        "transformers 5.1.0: not checked: b (did not run in this session (pytest exit status 2))",
    ]
    assert grid.alarms == [] and grid.exit_status() == 3
    cell = grid.rows["b"]["5.1.0"]
    assert (cell.verdict, cell.marks()) == ("not-checked", MARK_NOT_CHECKED)
    assert not grid.rows["alias:deepseek_v32"]["5.1.0"].checked
    markdown = render_markdown(grid)
    assert "No alarms." not in markdown and "No alarms in what was checked." in markdown
    assert markdown.index("**Incomplete grid**") < markdown.index("| case |")
    assert f"| b | native | not-checked {MARK_NOT_CHECKED} |" in markdown
    assert "Incomplete grid" in render_html(grid)
    assert main(["report", str(clean), str(interrupted)]) == 3
    captured = capsys.readouterr()
    assert "**Incomplete grid**" in captured.out
    assert captured.err == "tokcompat report: the grid is incomplete (2 reason(s), listed at its top)\n"


@pytest.mark.parametrize("reason", ["-k deepseek", "--collect-only", "node ids: models.yaml::a"])
def test_a_partial_run_makes_the_grid_incomplete(tmp_path: Path, reason: str) -> None:
    document = report("5.1.0", [case("a", "5.1.0", "native")], selection={"partial": True, "reason": reason})
    path = write(tmp_path, "r.json", document)
    grid = merge(load_reports([path]))
    assert grid.incomplete == [
        f"{path}: the run selected part of the matrix ({reason}): run the whole matrix"
    ]
    assert grid.exit_status() == 3
    assert main(["report", str(path)]) == 3


def test_a_not_checked_case_makes_the_grid_incomplete(tmp_path: Path) -> None:
    hub = "not checked: deepseek-ai/DeepSeek-V3.2-Exp is not cached and the hub is offline\nfix: download it"
    path = write(tmp_path, "r.json", report("5.1.0", [case("a", "5.1.0", "native"), not_checked("b", hub)]))
    grid = merge(load_reports([path]))
    assert grid.incomplete == [
        "transformers 5.1.0: not checked: b (not checked: deepseek-ai/DeepSeek-V3.2-Exp is not cached and "
        "the hub is offline)"
    ]
    assert main(["report", str(path)]) == 3


def test_an_alias_without_a_case_of_its_model_type_is_not_incompleteness(tmp_path: Path) -> None:
    # every matrix gets an item per registry alias; one with no case of its model_type is not checked
    alias = alias_record("deepseek_v32", "5.1.0", "not-checked", "not-checked")
    path = write(tmp_path, "r.json", report("5.1.0", [case("a", "5.1.0", "native"), alias]))
    grid = merge(load_reports([path]))
    assert grid.complete and main(["report", str(path)]) == 0


def test_alarms_win_over_incompleteness_and_both_are_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alarming = write(
        tmp_path,
        "a.json",
        report("5.0.0", [case("a", "5.0.0", "broken", "native"), case("b", "5.0.0", "native")]),
    )
    interrupted = write(tmp_path, "b.json", _interrupted("5.1.0"))
    assert main(["report", str(alarming), str(interrupted)]) == 1
    out = capsys.readouterr().out
    assert "**Incomplete grid**" in out and "### Alarms" in out


def test_a_failed_case_without_alarm_is_not_clean(tmp_path: Path) -> None:
    failed = contract.case_record(
        "a", "failed", "no expectation for transformers 5.1.0; add a range that covers it", expected=None
    )
    path = write(tmp_path, "r.json", report("5.1.0", [failed]))
    grid = merge(load_reports([path]))
    assert grid.alarms == [] and grid.unexpected == ["a under transformers 5.1.0"]
    assert main(["report", str(path)]) == 1


def test_not_checked_cells_do_not_count_as_changes(tmp_path: Path) -> None:
    documents = {
        "a.json": report("5.0.0", [case("a", "5.0.0", "native")]),
        "b.json": report("5.1.0", [not_checked("a", "offline")]),
        "c.json": report("5.2.0", [case("a", "5.2.0", "native")]),
    }
    cells = grid_of(tmp_path, documents).rows["a"]
    assert [cell.changed for cell in cells.values()] == [False, False, False]


# --- `tokcompat report`: bad input is exit 2 with one line, an input is never overwritten -------


def _one_line_error(capsys: pytest.CaptureFixture[str], *expected: str) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    for text in expected:
        assert text in captured.err
    return captured.err


MALFORMED = {
    "attempts: 5": lambda: json.dumps(_damaged(_set("attempts", 5))),
    "deeply nested": lambda: '{"schema_version": 2, "cases": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "nested below the recursion limit": lambda: json.dumps(
        report("5.0.0", []) | {"cases": json.loads("[" * 500 + "]" * 500)}
    ),
    "not JSON": lambda: "<html>502 Bad Gateway</html>",
    "NaN": lambda: json.dumps(_damaged(_set("attempt.seconds", float("nan")))),
    "not UTF-8": lambda: "\udcff",
    "wrong schema_version": lambda: json.dumps(report("5.0.0", []) | {"schema_version": 1}),
    "an array": lambda: "[]",
}


@pytest.mark.parametrize("command", ["report", "issue-text"])
@pytest.mark.parametrize("make", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_report_input_is_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[], str], command: str
) -> None:
    good = write(tmp_path, "good.json", report("5.1.0", [case("a", "5.1.0", "native")]))
    bad = tmp_path / "bad.json"
    bad.write_bytes(make().encode("utf-8", errors="surrogateescape"))
    assert main([command, str(good), str(bad)]) == 2
    _one_line_error(capsys, f"tokcompat {command}: {bad}: ")


def test_output_into_a_missing_folder_is_created(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "merged" / "deeper" / "grid.md"
    assert main(["report", str(reports["clean"]), "--output", str(target)]) == 0
    assert target.read_text().startswith("## tokcompat")
    assert capsys.readouterr().out == ""
    assert sorted(p.name for p in target.parent.iterdir()) == ["grid.html", "grid.json", "grid.md"], (
        "the grid's three forms side by side, no temporary file left behind"
    )


def test_output_equal_to_an_input_is_refused(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = reports["clean"].read_bytes()
    for spelling in (str(reports["clean"]), str(tmp_path / "." / reports["clean"].name)):
        assert main(["report", str(reports["clean"]), str(reports["clean2"]), "--output", spelling]) == 2
        _one_line_error(capsys, "is the input report", "never overwritten")
    link = tmp_path / "link.json"
    link.symlink_to(reports["clean2"])
    assert main(["report", str(reports["clean2"]), "--output", str(link)]) == 2
    _one_line_error(capsys, "is the input report")
    assert reports["clean"].read_bytes() == before
    assert json.loads(reports["clean2"].read_text())["schema_version"] == SCHEMA_VERSION


def test_output_that_cannot_be_written_is_exit_2(
    reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(reports["clean"]), "--output", str(tmp_path)]) == 2
    _one_line_error(capsys, "is a folder")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["report", str(reports["clean"]), "--output", str(blocker / "grid.md")]) == 2
    _one_line_error(capsys, f"--output {blocker / 'grid.md'}: cannot write it")


def test_a_folder_as_input_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    _one_line_error(capsys, "is a folder; pass the JSON files in it")


def test_the_ci_layer_imports_nothing_of_the_engine() -> None:
    code = (
        "import sys\n"
        "import pytest_tokcompat.ci.grid, pytest_tokcompat.ci.summary, pytest_tokcompat.ci.issues_text\n"
        "import pytest_tokcompat.cli as cli\n"
        "cli.build_parser()\n"
        "engine = ('judge', 'sources', 'pytest_plugin', 'api')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('transformers', 'tokenizers', 'jsonschema')\n"
        "             or (m.startswith('pytest_tokcompat.') and m.split('.')[1] in engine))\n"
        "print(bad)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"


def test_one_exit_rule_for_report_and_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unchecked = case("d", "5.1.0", "native") | {"status": "not-checked", "verdict": None, "alarms": []}
    clean = report("5.1.0", [case("c", "5.1.0", "native"), case("d", "5.1.0", "native")])
    holey = report("5.1.0", [case("c", "5.1.0", "native"), unchecked])
    alarming = report("5.1.0", [case("c", "5.1.0", "broken", "native"), unchecked])
    alias_only = report(
        "5.1.0",
        [case("c", "5.1.0", "native"), alias_record("x", "5.1.0", status="not-checked", state="not-checked")],
    )
    expected = {
        "clean": (0, []),
        "holey": (3, ["transformers 5.1.0"]),
        "alarming": (1, ["transformers 5.1.0"]),
        "alias_only": (0, []),
    }
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
