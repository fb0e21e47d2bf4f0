"""`tokcompat grid` and `tokcompat bisect` for real: tox-uv environments, the package index, no stand-ins.

Slow (environments are built; uv's own package cache makes a repeat cheap), so marked e2e and few.
tokcompat's caches go to the test's tmp folder; uv keeps using its package cache.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_gridrun import user_matrix
from upstream import new_commit, stand_in_upstream

pytestmark = pytest.mark.e2e
BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent


def environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(
        TOKCOMPAT_GRID_CACHE=str(tmp_path / "tokcompat-cache"),
        TOKCOMPAT_CACHE=str(tmp_path / "snapshots"),
        HF_HUB_OFFLINE="1",
        HF_HOME=str(tmp_path / "hf"),
    )
    return env


def tokcompat(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "tokcompat"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )


def git_repository(folder: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    subprocess.run(["git", "add", "-A"], cwd=folder, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "matrix"],
        cwd=folder,
        check=True,
    )


def test_a_user_repository_gets_its_grid_and_a_rerun_reuses_every_cell(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    user_matrix(repo)
    own_tox = "[tox]\nenv_list = own\n\n[testenv:own]\nskip_install = true\ncommands = python -c \"print('own env ran')\"\n"
    (repo / "tox.ini").write_text(own_tox)
    git_repository(repo)
    env = environment(tmp_path)

    first = tokcompat(["grid", "--releases", "5.10.4,5.11.0"], repo, env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "| deepseek-v3.2-exp | alias | native Δ |" in first.stdout
    assert "| qwen3-0.6b | native | native |" in first.stdout
    assert "| alias:deepseek_v32 | needed | obsolete Δ |" in first.stdout
    assert "cells: 6, reused 0, judged 6" in first.stdout

    second = tokcompat(["grid", "--releases", "5.10.4,5.11.0"], repo, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "cells: 6, reused 6, judged 0 (nothing changed)" in second.stdout
    assert second.stdout.split("cells:")[0] == first.stdout.split("cells:")[0]

    matrix = repo / "matrix" / "models.yaml"
    matrix.write_text(matrix.read_text().replace("expect: native", "expect: alias"))
    wrong = tokcompat(["grid", "--releases", "5.10.4,5.11.0"], repo, env)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert "| qwen3-0.6b | native ✗ (expected alias) | native ✗ (expected alias) |" in wrong.stdout
    assert "| deepseek-v3.2-exp | alias | native Δ |" in wrong.stdout, "the whole grid"
    assert "cells: 6, reused 2, judged 4" in wrong.stdout

    # The project's own tox configuration is untouched and still runs.
    assert (repo / "tox.ini").read_text() == own_tox
    own = subprocess.run(
        [str(BIN / "tox"), "run", "-e", "own"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert own.returncode == 0 and "own env ran" in own.stdout, own.stdout + own.stderr
    assert sorted(p.name for p in (repo / ".tox").iterdir() if not p.name.startswith(".")) == [
        "CACHEDIR.TAG",
        "own",
    ]


USER_ALIAS = """\
aliases:
  - model_type: deepseek_v32
    base_config: transformers.models.deepseek_v3.configuration_deepseek_v3.DeepseekV3Config
    base_model_type: deepseek_v3
    tokenizer_class: PreTrainedTokenizerFast
    upstream_issue: https://github.com/huggingface/transformers/pull/41251
    reason: our serving stack's shim
watch: [kimi_k2]
"""


def test_a_user_alias_obsolete_upstream_raises_both_alarms_and_a_rerun_reuses_every_cell(
    tmp_path: Path,
) -> None:
    """Issue 12's done-when: a user repository holding only its matrix (two snapshot entries copied from the
    bundled ones, its own deepseek_v32 alias, one watch entry); transformers 5.11.0 registers deepseek_v32."""
    repo = tmp_path / "repo"
    matrix = user_matrix(repo)
    matrix.write_text(matrix.read_text() + USER_ALIAS, encoding="utf-8")
    git_repository(repo)
    tracked = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True).stdout.split()
    assert {name.split("/")[1] for name in tracked} == {"models.yaml", "golden", "snapshots"}, (
        "only the matrix"
    )
    env = environment(tmp_path)
    argv = ["grid", "--releases", "5.10.4,5.11.0"]

    first = tokcompat(argv, repo, env)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "| case | 5.10.4 | 5.11.0 |" in first.stdout
    assert "| alias:deepseek_v32 | needed | obsolete ✗Δ |" in first.stdout
    assert "| deepseek-v3.2-exp | alias | native Δ |" in first.stdout
    assert "| qwen3-0.6b | native | native |" in first.stdout
    alarms = [line for line in first.stdout.splitlines() if line.startswith("- **")]
    assert [line.split("`")[1] for line in alarms] == ["deepseek_v32", "deepseek_v32"], alarms
    obsolete = next(line for line in alarms if line.startswith("- **obsolete-alias**"))
    assert "first in transformers 5.11.0" in obsolete
    assert "record native_since='5.11.0'" in obsolete and "in its declaration (" in obsolete
    registry = next(line for line in alarms if line.startswith("- **registry-change**"))
    assert "first in transformers 5.11.0" in registry
    assert "Upstream: https://github.com/huggingface/transformers/pull/41251" in registry
    assert "### Upstream registry events" in first.stdout
    assert "- 5.11.0: deepseek_v32 registered natively (DeepseekV32Config) **(alarm)**" in first.stdout
    assert "cells: 6, reused 0, judged 6" in first.stdout
    for name in ("grid.md", "grid.html", "grid.json"):
        assert (repo / "tokcompat-grid" / name).is_file(), name
    assert "registry-change:deepseek_v32" in (repo / "tokcompat-grid" / "grid.html").read_text()

    second = tokcompat(argv, repo, env)
    assert second.returncode == 1, second.stdout + second.stderr
    assert "cells: 6, reused 6, judged 0 (nothing changed)" in second.stdout
    assert "  transformers 5.10.4: 3 reused, 0 judged" in second.stdout
    assert "  transformers 5.11.0: 3 reused, 0 judged" in second.stdout
    assert second.stdout.split("cells:")[0] == first.stdout.split("cells:")[0], (
        "the same grid, alarms, events"
    )

    matrix.write_text(matrix.read_text().replace("expect: native\n", "expect: alias\n"), encoding="utf-8")
    wrong = tokcompat(argv, repo, env)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert "| qwen3-0.6b | native ✗ (expected alias) | native ✗ (expected alias) |" in wrong.stdout
    assert "| deepseek-v3.2-exp | alias | native Δ |" in wrong.stdout, "the whole grid"
    assert "| alias:deepseek_v32 | needed | obsolete ✗Δ |" in wrong.stdout
    assert "- 5.11.0: deepseek_v32 registered natively (DeepseekV32Config) **(alarm)**" in wrong.stdout
    assert "cells: 6, reused 2, judged 4" in wrong.stdout


def test_main_is_built_from_a_local_upstream_repository_and_never_reused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    path = user_matrix(repo)
    path.write_text(path.read_text().split("  - id: qwen3-0.6b")[0])  # one case keeps it short
    upstream = tmp_path / "transformers"
    commit = stand_in_upstream(upstream, "5.99.0.dev0")
    env = environment(tmp_path)
    argv = ["grid", "--releases", "main", "--upstream", str(upstream)]

    first = tokcompat(argv, repo, env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "| case | 5.99.0.dev0 |" in first.stdout
    assert "| deepseek-v3.2-exp | native |" in first.stdout
    assert f"transformers main = 5.99.0.dev0 at {commit[:12]}: 0 reused, 2 judged" in first.stdout

    later = new_commit(upstream, "5.99.0.dev1")
    second = tokcompat(argv, repo, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "| case | 5.99.0.dev1 |" in second.stdout
    assert f"transformers main = 5.99.0.dev1 at {later[:12]}: 0 reused, 2 judged" in second.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="building the package needs git")
def test_bisect_from_a_uv_virtualenv_with_a_plain_install(tmp_path: Path) -> None:
    """No pip, no editable checkout, no index entry for tokcompat: it installs its own files."""
    uv = BIN / "uv"
    venv = tmp_path / "venv"
    env = environment(tmp_path)
    subprocess.run([str(uv), "venv", "-q", str(venv)], check=True, env=env, timeout=600)
    installed = subprocess.run(
        [str(uv), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(ROOT)],
        env=env, capture_output=True, text=True, timeout=1200, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    assert (
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "--version"], capture_output=True
        ).returncode
        != 0
    )
    # uv on PATH (here the dev environment's), as bisect documents; nothing else of the dev environment
    env["PATH"] = os.pathsep.join([str(venv / "bin"), str(tmp_path / "uv-only"), env["PATH"]])
    (tmp_path / "uv-only").mkdir()
    (tmp_path / "uv-only" / "uv").symlink_to(uv)
    for name in ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "PIP_INDEX_URL"):
        env.pop(name, None)
    work = tmp_path / "elsewhere"
    work.mkdir()
    done = subprocess.run(
        [str(venv / "bin" / "tokcompat"), "bisect", "deepseek-v3.2-exp", "--from", "5.10.4", "--to", "5.12.0",
         "--cache", str(tmp_path / "bisect")],
        cwd=work, env=env, capture_output=True, text=True, timeout=3600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "deepseek-v3.2-exp: alias -> native, first in transformers 5.11.0"


def test_update_expectations_writes_a_new_entry_that_the_next_grid_passes(tmp_path: Path) -> None:
    """The recorded-expectations done-when on one release: a new entry without ``expect`` (a control run
    refuses it) gets the measured range, its comments stay, and the next grid exits 0."""
    import toys

    toys.native_toy(tmp_path / "native")
    matrix = tmp_path / "models.yaml"
    matrix.write_text(
        "# our tokenizers\nversion: 1\ncases:\n  # added today\n  - id: mine\n    snapshot: native  # our copy\n",
        encoding="utf-8",
    )
    env = environment(tmp_path)
    argv = ["grid", "--matrix", str(matrix), "--releases", "5.24.0"]
    refused = tokcompat(argv, tmp_path, env)
    assert refused.returncode == 2 and "--update-expectations" in refused.stdout + refused.stderr, refused
    done = tokcompat([*argv, "--update-expectations"], tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "+    expect: native" in done.stdout
    text = matrix.read_text(encoding="utf-8")
    assert "# our tokenizers" in text and "# added today" in text and "snapshot: native  # our copy" in text
    again = tokcompat(argv, tmp_path, env)
    assert again.returncode == 0, again.stdout + again.stderr
