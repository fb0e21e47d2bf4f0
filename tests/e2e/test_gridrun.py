# ruff: noqa: F811 (the fixtures tests/helpers/fakegrid.py defines, imported by name)
"""End to end: `tokcompat grid`: planning, cell keys and reuse, shards, reports and exit statuses.

The rest of this subject's tests, and the helpers these use, are in tests/unit/ci/test_gridrun.py.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_tokcompat.ci import gridrun, schedule
from tests.helpers import toys
from tests.helpers.fakegrid import index, project  # noqa: F401 (fixtures)


def test_a_projects_own_pytest_config_stays_out_of_the_grids_runs(tmp_path: Path) -> None:
    """The grid's own command, run where tox runs it: in the work folder inside a project whose pytest
    configuration names a plugin the environment lacks and whose conftest.py raises."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-p not_installed_here"\n')
    (project / "conftest.py").write_text("raise RuntimeError('the project conftest ran')\n")
    toys.native_toy(project / "matrix" / "native")
    matrix = project / "matrix" / "models.yaml"  # inside the project: pytest also looks up from here
    matrix.write_text("cases:\n  - {id: native, snapshot: native, expect: native}\n")
    work = project / "tokcompat-grid" / ".work"
    work.mkdir(parents=True)
    wheel = tmp_path / "pytest_tokcompat-0.1.0-py3-none-any.whl"
    tox_ini = gridrun.write_tox_ini(work, [], matrix, wheel, "/usr/bin/python3").read_text()
    line = tox_ini.split("commands =\n", 1)[1].splitlines()[0].replace("{env_name}", "tf-5.10.4")
    line = line.replace(f"{{env:{schedule.WORKERS_VAR}:0}}", "0")  # tox's substitution, as run_tox leaves it
    command = [sys.executable, *shlex.split(line)[1:], "--collect-only"]
    env_tmp_dir = work / ".tox" / "tf-5.10.4" / "tmp"  # change_dir of each env
    env_tmp_dir.mkdir(parents=True)

    def collect() -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        return subprocess.run(command, cwd=env_tmp_dir, env=env, capture_output=True, text=True, timeout=120)

    done = collect()
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    assert "models.yaml::native\n" in done.stdout, done.stdout
    # The premise: without the named configuration, the project's own is the run's.
    named = ["-c", str(work / "pytest.ini"), "--rootdir", str(work)]
    assert command[3:7] == named
    del command[3:7]
    done = collect()
    assert done.returncode != pytest.ExitCode.OK
    assert "not_installed_here" in done.stdout + done.stderr
