"""Alarm to issue text: stable titles keyed on kind and subject, Markdown bodies, `tokcompat issue-text`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat.ci.grid import GridAlarm, load_reports, merge
from pytest_tokcompat.ci.issues_text import TITLE_LIMIT, TITLE_PREFIX, alarm_title, issue_texts
from pytest_tokcompat.cli import main
from tests.helpers.reportdata import alarm, case, not_checked, report, write


def grid_alarm(
    kind: str = "obsolete-alias", subject: str = "deepseek_v32", releases: tuple[str, ...] = ("5.11.0",)
) -> GridAlarm:
    return GridAlarm(
        kind,
        subject,
        releases[0],
        list(releases),
        f"transformers {releases[0]} registers {subject} natively: the {subject} alias is obsolete",
        f"record native_since='{releases[0]}' for {subject} in the alias registry",
    )


def test_title_names_kind_and_subject() -> None:
    assert alarm_title(grid_alarm()) == "tokcompat: deepseek_v32 alias obsolete"
    assert (
        alarm_title(grid_alarm("native-drift"))
        == "tokcompat: deepseek_v32 native registration gives wrong ids"
    )
    assert alarm_title(grid_alarm("unexpected-verdict", "qwen3-0.6b")) == (
        "tokcompat: qwen3-0.6b verdict differs from the matrix"
    )
    assert alarm_title(grid_alarm("some-new-kind", "x")) == "tokcompat: x some-new-kind"


def test_title_is_stable_across_nights() -> None:
    monday = issue_texts([grid_alarm(releases=("5.11.0",))])[0]
    tuesday = issue_texts([grid_alarm(releases=("5.11.0", "5.12.0"))])[0]
    next_week = issue_texts([grid_alarm(releases=("5.13.0",))])[0]
    assert monday.title == tuesday.title == next_week.title
    assert monday.key == tuesday.key == next_week.key == "obsolete-alias:deepseek_v32"
    assert "5.12.0" in tuesday.body and "5.12.0" not in monday.body


def test_kinds_of_one_subject_get_different_titles() -> None:
    texts = issue_texts([grid_alarm("obsolete-alias"), grid_alarm("native-drift")])
    assert len({text.title for text in texts}) == 2


def test_titles_are_one_line_and_bounded() -> None:
    title = alarm_title(grid_alarm("unexpected-verdict", "a\nb" + "x" * 400))
    assert "\n" not in title and len(title) <= TITLE_LIMIT and title.startswith(TITLE_PREFIX)


def test_body_says_what_first_release_all_releases_and_what_to_do() -> None:
    text = issue_texts([grid_alarm(releases=("5.11.0", "5.12.0", "5.13.0"))])[0]
    body = text.body
    for heading in ("### What", "### First release", "### All releases with this alarm", "### What to do"):
        assert heading in body
    assert "transformers 5.11.0" in body
    assert "5.11.0, 5.12.0, 5.13.0" in body
    assert "record native_since='5.11.0' for deepseek_v32" in body
    assert "tokcompat bisect" in body
    assert "<!-- tokcompat-key: obsolete-alias:deepseek_v32 -->" in body


def test_one_text_per_alarm_in_stable_order() -> None:
    alarms = [
        grid_alarm("unexpected-verdict", "zeta"),
        grid_alarm(),
        grid_alarm("unexpected-verdict", "alpha"),
    ]
    keys = [text.key for text in issue_texts(alarms)]
    assert keys == ["obsolete-alias:deepseek_v32", "unexpected-verdict:alpha", "unexpected-verdict:zeta"]
    assert [t.key for t in issue_texts(list(reversed(alarms)))] == keys
    assert issue_texts([grid_alarm(), grid_alarm()]) == issue_texts([grid_alarm()])


def test_from_merged_reports(tmp_path: Path) -> None:
    paths = [
        write(tmp_path, "a.json", report("5.10.4", [case("deepseek-v3.2-exp", "5.10.4", "alias")])),
        write(
            tmp_path,
            "b.json",
            report(
                "5.11.0",
                [case("deepseek-v3.2-exp", "5.11.0", "native", "alias")],
                [alarm("obsolete-alias", "deepseek_v32", "5.11.0")],
            ),
        ),
    ]
    texts = issue_texts(merge(load_reports(paths)).alarms)
    assert [t.title for t in texts] == [
        "tokcompat: deepseek_v32 alias obsolete",
        "tokcompat: deepseek-v3.2-exp verdict differs from the matrix",
    ]


def test_cli_prints_json_for_the_workflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path,
        "tf5110.json",
        report(
            "5.11.0",
            [case("qwen3-0.6b", "5.11.0", "broken", "native")],
            [alarm("obsolete-alias", "deepseek_v32", "5.11.0")],
        ),
    )
    assert main(["issue-text", str(path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["complete"], document["incomplete"]) == (True, [])
    data = document["issues"]
    assert [set(item) for item in data] == [{"key", "title", "body"}] * 2
    assert {item["key"] for item in data} == {"obsolete-alias:deepseek_v32", "unexpected-verdict:qwen3-0.6b"}
    assert all(item["title"].startswith("tokcompat: ") for item in data)


def test_cli_without_alarms_prints_no_issue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "r.json", report("5.11.0", [case("c", "5.11.0", "native")]))
    assert main(["issue-text", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"complete": True, "incomplete": [], "issues": []}


INCOMPLETE = {
    "interrupted (SIGINT, a killed worker)": lambda v: report(
        v, [case("c", v, "native"), not_checked("d")], complete=False, exit_status=2
    ),
    "partial (-k, node ids, --collect-only)": lambda v: report(
        v, [case("c", v, "native"), case("d", v, "native")], selection={"partial": True, "reason": "-k c"}
    ),
    "a not-checked case": lambda v: report(v, [case("c", v, "native"), not_checked("d", "hub offline")]),
    "a release without a record for a case": lambda v: report(v, [case("c", v, "native")]),
}


@pytest.mark.parametrize("make", INCOMPLETE.values(), ids=INCOMPLETE.keys())
def test_cli_says_an_incomplete_grid_is_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Callable[[str], dict[str, Any]]
) -> None:
    # 5.10.4 raised an alarm for d; 5.11.0 did not check d: the alarm is not gone, it is unchecked
    alarming = report("5.10.4", [case("c", "5.10.4", "native"), case("d", "5.10.4", "broken", "native")])
    paths = [write(tmp_path, "a.json", alarming), write(tmp_path, "b.json", make("5.11.0"))]
    assert main(["issue-text", *map(str, paths), "--json"]) == 3
    document = json.loads(capsys.readouterr().out)
    assert document["complete"] is False and document["incomplete"]
    assert [item["key"] for item in document["issues"]] == ["unexpected-verdict:d"]
    assert main(["issue-text", *map(str, paths)]) == 3
    assert capsys.readouterr().out.startswith("The grid is incomplete: close no issue on it. Why:\n- ")


def test_cli_plain_text_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "r.json", report("5.11.0", [], [alarm("native-drift", "glm", "5.11.0")]))
    assert main(["issue-text", str(path)]) == 0
    assert capsys.readouterr().out.startswith("# tokcompat: glm native registration gives wrong ids")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["issue-text", str(bad), "--json"]) == 2
    captured = capsys.readouterr()
    assert "not JSON" in captured.err and captured.out == ""
