"""The grid's environments for real: what tox-uv puts into them is the tool's own.

Slow (a real environment is built from uv's package cache), so e2e.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_gridrun import recorded

from pytest_tokcompat.ci import gridrun, releases
from pytest_tokcompat.ci.install import own_wheel, uv_binary

pytestmark = pytest.mark.e2e
RELEASE = "5.10.4"


def site_packages(env: Path) -> Path:
    found = gridrun._site_packages(env)
    assert found is not None, f"no site-packages in {env}"
    return found


def test_a_grid_environment_holds_copies_not_links_into_uvs_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every installed file of transformers in a grid env has one link (its own inode); the control, the
    same wheel installed by uv with hardlinks, shares its inode with uv's cache, so a link would be seen."""
    monkeypatch.setenv("UV_LINK_MODE", "hardlink")  # a user's own setting: the grid's wins
    work = tmp_path / "work"
    work.mkdir()
    found = releases.resolve_spec(RELEASE, index="https://index.invalid/simple", fetch=recorded)
    matrix = tmp_path / "models.yaml"
    matrix.write_text("cases: []\n")
    gridrun.write_tox_ini(work, found, matrix, own_wheel(tmp_path / "wheels"), sys.executable)
    log = work / "build.log"
    done = gridrun.run_tox(work, ["tf-" + RELEASE], jobs=1, notest=True, recreate=False, log=log)
    assert done.results == {"tf-" + RELEASE: 0}, log.read_text()[-3000:]
    installed = sorted((site_packages(work / ".tox" / ("tf-" + RELEASE)) / "transformers").rglob("*.py"))
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
    own_init = site_packages(work / ".tox" / ("tf-" + RELEASE)) / "transformers" / "__init__.py"
    assert linked_init.stat().st_nlink > 1, "the control: a hardlinked install is seen as one"
    assert linked_init.read_bytes() == own_init.read_bytes(), "the same file"
    assert linked_init.stat().st_ino != own_init.stat().st_ino
