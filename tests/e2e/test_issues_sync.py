"""End to end: The issues job end to end: the workflow's own step script, `tokcompat issues-sync`, and a stand-in `gh` on PATH that keeps the repository's issues in a file and records every call.

The rest of this subject's tests, and the helpers these use, are in tests/unit/ci/test_issues_sync.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers.reportdata import case, report
from tests.unit.ci.test_issues_sync import (
    ALIAS_TITLE,
    DRIFT_TITLE,
    UNRELATED,
    Repo,
    alias_alarm_record,
    night,
    reports_with,
)


# the workflow's step, through bash and the `tokcompat issues-sync` command, five nights
@pytest.mark.skipif(sys.platform == "win32", reason="the stand-in gh is a POSIX script")
def test_open_update_close_and_no_close_on_an_incomplete_grid(tmp_path: Path) -> None:
    repo = Repo(tmp_path, [dict(UNRELATED)])

    # Night 1: two alarms, two issues opened.
    night(tmp_path, repo, reports_with(alias_alarm=True, drifted=True))
    assert [c[2:4] for c in repo.calls("create")] == [["--title", ALIAS_TITLE], ["--title", DRIFT_TITLE]]
    assert repo.open_titles() == sorted(["docs: typo", ALIAS_TITLE, DRIFT_TITLE])
    bodies = {i["title"]: i["body"] for i in repo.load()["issues"]}
    assert "<!-- tokcompat-key: obsolete-alias:deepseek_v32 -->" in bodies[ALIAS_TITLE]

    # Night 2: the same alarms; one now also stands under a new release: that issue is updated.
    repo.reset_calls()
    newer = reports_with(alias_alarm=True, drifted=True)
    newer["transformers-5.12.0.json"] = report(
        "5.12.0", [case("deepseek-v3", "5.12.0", "broken", "native"), alias_alarm_record("5.12.0")]
    )
    out = night(tmp_path, repo, newer)
    assert repo.calls("create") == []
    edited = repo.calls("edit")
    assert len(edited) == 2 and {c[2] for c in edited} == {"2", "3"}
    assert "5.12.0" in {i["title"]: i["body"] for i in repo.load()["issues"]}[ALIAS_TITLE]
    assert "2 updated" in out

    # Night 3: unchanged alarms are left alone (no edit), nothing is closed.
    repo.reset_calls()
    night(tmp_path, repo, newer)
    assert repo.calls("edit") == [] and repo.calls("close") == [] and repo.calls("create") == []

    # Night 4: the grid is incomplete (a not-checked cell) and the drift alarm is gone: nothing closed.
    repo.reset_calls()
    out = night(tmp_path, repo, reports_with(alias_alarm=True, drifted=False, not_checked=True))
    assert repo.calls("close") == []
    assert DRIFT_TITLE in repo.open_titles()
    assert "the grid is incomplete" in out and "no issue will be closed" in out

    # Night 5: a complete grid, but the merge job saw a shard fail (COMPLETE=false): nothing closed.
    repo.reset_calls()
    out = night(tmp_path, repo, reports_with(alias_alarm=True, drifted=False), complete="false")
    assert repo.calls("close") == []
    assert "--incomplete was given" in out and DRIFT_TITLE in repo.open_titles()

    # Night 6: complete, and the drift is gone: its issue is closed; the unrelated issue is never touched.
    repo.reset_calls()
    night(tmp_path, repo, reports_with(alias_alarm=True, drifted=False))
    closed = repo.calls("close")
    assert [c[2] for c in closed] == ["3"]
    assert repo.open_titles() == sorted(["docs: typo", ALIAS_TITLE])
    assert all(c[2] != "1" for c in repo.calls() if c[1] in ("edit", "close"))
