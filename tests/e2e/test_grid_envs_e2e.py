"""The grid's environments for real: what tox-uv puts into them is the tool's own.

Slow (a real environment is built from uv's package cache), so e2e.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_tokcompat.ci import envcheck, gridrun, releases, toxrun
from pytest_tokcompat.ci.install import own_wheel, uv_binary
from tests.e2e.test_grid_e2e import environment, tokcompat
from tests.helpers import toys
from tests.helpers.fakegrid import recorded
from tests.unit.judge.test_procfs import kernel_allows_mount_namespaces

RELEASE = "5.10.4"


def site_packages(env: Path) -> Path:
    found = toxrun._site_packages(env)
    assert found is not None, f"no site-packages in {env}"
    return found


@pytest.fixture(scope="module")
def grid_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One grid environment, built as the grid builds it, under a user's ``UV_LINK_MODE=hardlink``."""
    tmp_path = tmp_path_factory.mktemp("grid-env")
    work = tmp_path / "work"
    work.mkdir()
    found = releases.resolve_spec(RELEASE, index="https://index.invalid/simple", fetch=recorded)
    matrix = tmp_path / "models.yaml"
    matrix.write_text("cases: []\n")
    gridrun.write_tox_ini(work, found, matrix, own_wheel(tmp_path / "wheels"), sys.executable)
    log = work / "build.log"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("UV_LINK_MODE", "hardlink")  # a user's own setting: the grid's wins
        done = gridrun.run_tox(work, ["tf-" + RELEASE], jobs=1, notest=True, recreate=False, log=log)
    assert done.results == {"tf-" + RELEASE: 0}, log.read_text()[-3000:]
    return work / ".tox" / ("tf-" + RELEASE)


def test_a_grid_environment_holds_copies_not_links_into_uvs_cache(grid_env: Path, tmp_path: Path) -> None:
    """Every installed file of transformers in a grid env has one link (its own inode); the control, the
    same wheel installed by uv with hardlinks, shares its inode with uv's cache, so a link would be seen."""
    installed = sorted((site_packages(grid_env) / "transformers").rglob("*.py"))
    assert len(installed) > 100
    linked = [path for path in installed if path.stat().st_nlink != 1]
    assert linked == [], f"{len(linked)} files linked elsewhere, e.g. {linked[:3]}"

    control = tmp_path / "control"
    uv = uv_binary()
    subprocess.run([uv, "venv", "-q", str(control)], check=True, timeout=300)
    subprocess.run(
        [uv, "pip", "install", "-q", "--link-mode", "hardlink", "--no-deps", "--python",
         str(control / "bin" / "python"), f"transformers=={RELEASE}"],
        check=True, timeout=600,
    )  # fmt: skip
    linked_init = site_packages(control) / "transformers" / "__init__.py"
    own_init = site_packages(grid_env) / "transformers" / "__init__.py"
    assert linked_init.stat().st_nlink > 1, "the control: a hardlinked install is seen as one"
    assert linked_init.read_bytes() == own_init.read_bytes(), "the same file"
    assert linked_init.stat().st_ino != own_init.stat().st_ino


def test_a_real_environment_passes_its_check_until_code_in_it_adds_a_site_hook(grid_env: Path) -> None:
    """No false alarm on a real install (every RECORD hash matches, the bytecode a run writes is not
    looked at); a ``.pth`` written by code running in the env is found."""
    baseline = envcheck.unrecorded(grid_env)
    assert envcheck.problems(grid_env, baseline) == [], "the control: the env as installed"
    python = str(grid_env / "bin" / "python")
    writes = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(
        [python, "-c", "import transformers, tokenizers, pytest_tokcompat.cli"],
        check=True,
        timeout=300,
        env=writes,
    )
    assert list((site_packages(grid_env) / "transformers").glob("__pycache__/*.pyc")), "bytecode was written"
    assert envcheck.problems(grid_env, baseline) == [], "a run's bytecode is no change"
    hook = (
        "import site, pathlib; pathlib.Path(site.getsitepackages()[0], 'zz.pth').write_text('import os\\n')"
    )
    subprocess.run([python, "-c", hook], check=True, timeout=300)
    found = envcheck.problems(grid_env, baseline)
    assert found == [f"{site_packages(grid_env).relative_to(grid_env).as_posix()}/zz.pth was added"], found


HOSTILE_HOOK = """
import site as _site
from pathlib import Path as _Path

_Path(_site.getsitepackages()[0], "zz_tokcompat_hostile.pth").write_text("import os\\n")
"""


def test_a_trusted_case_that_drops_a_pth_gets_no_verdict_kept(tmp_path: Path) -> None:
    """The whole grid for real: a trust_remote_code case judged in a real environment raises no false
    alarm (the control, rerun from the cache); the same case once its code writes a .pth into the
    environment: rebuilt, judged again, written again, so not checked and nothing cached."""
    repo = tmp_path / "repo"
    remote = toys.remote_toy(repo / "matrix" / "remote")
    (repo / "matrix" / "models.yaml").write_text(
        "cases:\n  - {id: remote, snapshot: remote, trust_remote_code: true, expect: auto_map}\n"
    )
    env = environment(tmp_path)
    argv = ["grid", "--releases", RELEASE]
    first = tokcompat(argv, repo, env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "| remote | auto_map |" in first.stdout and "rebuilt" not in first.stdout + first.stderr
    again = tokcompat(argv, repo, env)
    assert again.returncode == 0 and "reused 2, judged 0" in again.stdout, again.stdout + again.stderr

    code = remote / "tokenization_toy.py"
    code.write_text(code.read_text() + HOSTILE_HOOK)
    hostile = tokcompat(argv, repo, env)
    if kernel_allows_mount_namespaces():  # the attempt's view of site-packages is read-only: the write fails
        assert hostile.returncode == 1, hostile.stdout + hostile.stderr  # not checked: never a pass
        assert "| remote | not-checked ✗ (expected auto_map) |" in hostile.stdout
        log = (repo / "tokcompat-grid" / ".work" / "logs" / "judge.log").read_text(encoding="utf-8")
        assert "zz_tokcompat_hostile.pth, which attempts may only read" in log
        assert "was added" not in hostile.stderr  # nothing landed: the environment is as it was
        return
    assert hostile.returncode == 3, hostile.stdout + hostile.stderr
    assert "| remote | not-checked ? |" in hostile.stdout
    assert "site-packages/zz_tokcompat_hostile.pth was added" in hostile.stderr
    assert "the environment changed again while its cells were judged" in hostile.stdout
