"""The issues job end to end: the workflow's own step script, `tokcompat issues-sync`, and a stand-in
`gh` on PATH that keeps the repository's issues in a file and records every call."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.paths import REPO
from tests.helpers.reportdata import alarm, alias_record, case, report, write

WORKFLOW = REPO / ".github" / "workflows" / "tokcompat-grid.yml"

FAKE_GH = """#!{python} -IS
import json, sys
from pathlib import Path
state_path = Path({state!r})
state = json.loads(state_path.read_text())
args = sys.argv[1:]
state["calls"].append(args)

def option(name):
    return args[args.index(name) + 1]

if args[:2] == ["issue", "list"]:
    assert option("--state") == "open" and option("--json") == "number,title,body", args
    print(json.dumps([{{k: i[k] for k in ("number", "title", "body")}} for i in state["issues"] if i["state"] == "open"]))
elif args[:2] == ["issue", "create"]:
    number = max([i["number"] for i in state["issues"]], default=0) + 1
    state["issues"].append({{"number": number, "title": option("--title"),
                            "body": Path(option("--body-file")).read_text(), "state": "open"}})
    print(f"https://github.invalid/o/r/issues/{{number}}")
elif args[:2] == ["issue", "edit"]:
    issue = next(i for i in state["issues"] if i["number"] == int(args[2]))
    issue["title"], issue["body"] = option("--title"), Path(option("--body-file")).read_text()
elif args[:2] == ["issue", "close"]:
    issue = next(i for i in state["issues"] if i["number"] == int(args[2]))
    issue["state"], issue["comment"] = "closed", option("--comment")
else:
    print("unknown gh call", args, file=sys.stderr)
    sys.exit(2)
state_path.write_text(json.dumps(state))
"""


class Repo:
    """The stand-in repository: its issues, and the gh calls made against it."""

    def __init__(self, folder: Path, issues: list[dict[str, Any]]) -> None:
        self.bin = folder / "bin"
        self.bin.mkdir()
        self.state = folder / "gh-state.json"
        self.state.write_text(json.dumps({"issues": issues, "calls": []}))
        gh = self.bin / "gh"
        gh.write_text(FAKE_GH.format(python=sys.executable, state=str(self.state)))
        gh.chmod(gh.stat().st_mode | stat.S_IXUSR)

    def load(self) -> dict[str, Any]:
        return json.loads(self.state.read_text())

    def calls(self, verb: str | None = None) -> list[list[str]]:
        return [c for c in self.load()["calls"] if verb is None or c[:2] == ["issue", verb]]

    def open_titles(self) -> list[str]:
        return sorted(i["title"] for i in self.load()["issues"] if i["state"] == "open")

    def reset_calls(self) -> None:
        state = self.load()
        state["calls"] = []
        self.state.write_text(json.dumps(state))


def step_script() -> str:
    document = yaml.safe_load(WORKFLOW.read_text())
    steps = document["jobs"]["issues"]["steps"]
    return next(step["run"] for step in steps if "issues-sync" in str(step.get("run", "")))


def night(tmp_path: Path, repo: Repo, reports: dict[str, dict[str, Any]], complete: str = "true") -> str:
    """One run of the issues job's step, in a folder holding the downloaded grid artifact."""
    work = tmp_path / "job"
    grid = work / "grid"
    if grid.exists():
        for old in grid.iterdir():
            old.unlink()
    grid.mkdir(parents=True, exist_ok=True)
    for name, document in reports.items():
        write(grid, name, document)
    write(
        grid, "grid.json", {"releases": [], "rows": {}}, valid=False
    )  # the merged grid travels in the same artifact
    environment = dict(os.environ)
    environment["PATH"] = os.pathsep.join(
        [str(repo.bin), str(Path(sys.executable).parent), environment["PATH"]]
    )
    environment.update({"COMPLETE": complete, "GH_TOKEN": "stand-in", "GH_REPO": "o/r"})
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", step_script()],
        cwd=work,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def alias_alarm_record(version: str) -> dict[str, Any]:
    record = alias_record("deepseek_v32", version, status="failed", state="obsolete")
    record["alarms"] = [
        alarm(
            "obsolete-alias",
            "deepseek_v32",
            version,
            "transformers registers deepseek_v32 natively and plain loading keeps parity",
            "record native_since",
        )
    ]
    return record


def reports_with(alias_alarm: bool, drifted: bool, not_checked: bool = False) -> dict[str, dict[str, Any]]:
    found = {}
    for version in ("5.10.4", "5.11.0"):
        records = [
            case("deepseek-v3", version, "broken" if drifted and version == "5.11.0" else "native", "native")
        ]
        if alias_alarm and version == "5.11.0":
            records.append(alias_alarm_record(version))
        else:
            records.append(alias_record("deepseek_v32", version))
        if not_checked and version == "5.11.0":
            records[0] = records[0] | {"status": "not-checked", "verdict": None, "alarms": []}
        found[f"transformers-{version}.json"] = report(version, records)
    return found


ALIAS_TITLE = "tokcompat: deepseek_v32 alias obsolete"
DRIFT_TITLE = "tokcompat: deepseek-v3 verdict differs from the matrix"
UNRELATED = {"number": 1, "title": "docs: typo", "body": "x", "state": "open"}


@pytest.mark.skipif(sys.platform == "win32", reason="the stand-in gh is a POSIX script")
def test_an_issue_is_found_by_its_key_even_when_its_title_was_edited(tmp_path: Path) -> None:
    from pytest_tokcompat.ci.issues_sync import run

    repo = Repo(tmp_path, [])
    reports = [write(tmp_path, n, d) for n, d in reports_with(alias_alarm=True, drifted=False).items()]
    lines: list[str] = []
    assert run(reports, gh=str(repo.bin / "gh"), out=lines.append) == 0
    state = repo.load()
    state["issues"][0]["title"] = "tokcompat: renamed by a maintainer"
    repo.state.write_text(json.dumps(state))
    repo.reset_calls()
    assert run(reports, gh=str(repo.bin / "gh"), out=lines.append) == 0
    assert repo.calls("create") == []
    assert [c[2:5] for c in repo.calls("edit")] == [["1", "--title", ALIAS_TITLE]]


def test_bad_reports_and_a_failing_gh(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_tokcompat.cli import main

    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["issues-sync", str(bad)]) == 2
    assert "not JSON" in capsys.readouterr().out
    good = [write(tmp_path, n, d) for n, d in reports_with(alias_alarm=True, drifted=False).items()]
    assert main(["issues-sync", *map(str, good), "--gh", str(tmp_path / "no-gh")]) == 1
    assert "not found" in capsys.readouterr().out
