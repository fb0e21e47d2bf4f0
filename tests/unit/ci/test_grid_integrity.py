"""`tokcompat grid`: an environment in which opted-in code ran is trusted only as its install left it.

tox stands in as in test_gridrun.py; its fake "remote code" drops a ``.pth`` into the
environment it is judged in, as a checkpoint's code could.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest

from pytest_tokcompat.ci import envcheck
from tests.helpers.fakegrid import FakeTox, grid

ENV = "tf-5.10.4"
ARGV = ["--releases", "5.10.4"]


def site(project: Path) -> Path:
    return project / "tokcompat-grid" / ".work" / ".tox" / ENV / "lib" / "python3.11" / "site-packages"


def trust_qwen(project: Path) -> None:
    path = project / "matrix" / "models.yaml"
    path.write_text(
        path.read_text().replace("  - id: qwen3-0.6b\n", "  - id: qwen3-0.6b\n    trust_remote_code: true\n")
    )


def cells_cached(tmp_path: Path) -> int:
    return len(list((tmp_path / "cache" / "grid" / "cells").rglob("*.json")))


def test_the_control_an_untouched_env_that_ran_opted_in_code_is_kept_and_its_cells_reused(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    trust_qwen(project)
    code, out, err = grid(ARGV, capsys)
    assert code == 0, out + err
    assert tox.builds == [ENV] and len(tox.judged) == 1
    assert json.loads((project / "tokcompat-grid" / ".work" / "integrity" / f"{ENV}.json").read_text())[
        "exposed"
    ]
    assert "rebuilt" not in out + err and cells_cached(tmp_path) == 3
    tox.builds.clear(), tox.judged.clear()
    code, out, err = grid(ARGV, capsys)
    assert code == 0 and "cells: 3, reused 3, judged 0" in out, out + err
    assert tox.builds == [] and tox.judged == [] and "rebuilt" not in out + err


def hostile_grid(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], runs: int
) -> tuple[int, str, str]:
    """The grid with qwen trusted, its env's first ``runs`` judging runs each dropping a .pth."""
    trust_qwen(project)
    tox.hostile[ENV] = runs
    return grid(ARGV, capsys)


def test_an_env_changed_while_judging_is_rebuilt_and_its_cells_judged_again(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = hostile_grid(project, tox, capsys, runs=1)
    assert code == 0, out + err
    assert "lib/python3.11/site-packages/zz_hostile.pth was added" in err
    assert (
        "transformers 5.10.4: 0 reused, 3 judged; the environment changed while its cells were judged" in out
    )
    assert tox.builds == [ENV, ENV], "built, then rebuilt"
    summary = (project / "tokcompat-grid" / "grid.md").read_text()
    assert "Note: transformers 5.10.4: the environment changed while its cells were judged (" in summary
    assert [env for env, _, _ in tox.judged] == [ENV, ENV], "judged, then judged again"
    assert not (site(project) / "zz_hostile.pth").exists(), "nothing of the changed env is kept"
    assert cells_cached(tmp_path) == 3, "the cells of the clean second run"
    code, out, _ = grid(ARGV, capsys)
    assert code == 0 and "cells: 3, reused 3, judged 0" in out
    assert "Note:" not in (project / "tokcompat-grid" / "grid.md").read_text(), "the control: a clean run"


def test_an_env_changed_on_every_run_leaves_its_cells_not_checked_and_uncached(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = hostile_grid(project, tox, capsys, runs=2)
    assert code == 3, out + err
    assert "| qwen3-0.6b | not-checked ? |" in out and "| deepseek-v3.2-exp | not-checked ? |" in out
    assert "the environment changed again while its cells were judged (" in out
    assert "zz_hostile.pth was added" in out and "incomplete grid" in out
    assert cells_cached(tmp_path) == 0, "no verdict from a changed env is kept"
    tox.builds.clear(), tox.judged.clear()
    code, out, err = grid(ARGV, capsys)
    assert code == 0, out + err
    assert tox.builds == [ENV] and "nothing records what its install put there" in err, "built anew"
    assert "cells: 3, reused 0, judged 3" in out


def test_an_env_changed_between_runs_is_rebuilt_before_any_cell_is_reused(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Something that outlived its run edits an installed module in place: its RECORD hash says so."""
    trust_qwen(project)
    assert grid(ARGV, capsys)[0] == 0
    module = site(project) / "transformers" / "__init__.py"
    module.write_text(module.read_text() + "import os  # poisoned\n")
    tox.builds.clear(), tox.judged.clear()
    code, out, err = grid(ARGV, capsys)
    assert code == 0, out + err
    assert "transformers/__init__.py differs from its RECORD" in err
    assert tox.builds == [ENV] and len(tox.judged) == 1 and "cells: 3, reused 0, judged 3" in out
    assert "# poisoned" not in module.read_text()


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def test_what_the_check_sees(tmp_path: Path) -> None:
    env = tmp_path / "env"
    FakeTox().build(env, ENV)
    packages = env / "lib" / "python3.11" / "site-packages"
    baseline = envcheck.unrecorded(env)
    assert (
        "pyvenv.cfg" in baseline and "lib/python3.11/site-packages/transformers/__init__.py" not in baseline
    )
    assert envcheck.problems(env, baseline) == [], "the control: an env as built"
    (env / "tmp").mkdir()
    (env / "tmp" / "scratch").write_text("tox's, not the venv's")
    (packages / "transformers" / "__pycache__").mkdir()
    (packages / "transformers" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\0")
    assert envcheck.problems(env, baseline) == [], "tox's folders and bytecode caches are not looked at"

    (packages / "sitecustomize.py").write_text("print('hi')\n")
    assert envcheck.problems(env, baseline) == ["lib/python3.11/site-packages/sitecustomize.py was added"]
    (packages / "sitecustomize.py").unlink()
    # a new distribution whose own RECORD vouches for its .pth: that RECORD is itself new
    info = packages / "evil-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n")
    (packages / "evil.pth").write_text("import evil\n")
    (info / "RECORD").write_text(
        record_line("evil.pth", b"import evil\n") + "\nevil-1.0.dist-info/RECORD,,\n"
    )
    found = envcheck.problems(env, baseline)
    assert "lib/python3.11/site-packages/evil-1.0.dist-info/RECORD was added" in found, found
    # an edited module with its RECORD edited to match: the RECORD is not as installed
    module = packages / "transformers" / "__init__.py"
    module.write_text("poisoned = True\n")
    record = next(packages.glob("transformers-*.dist-info")) / "RECORD"
    record.write_text(record_line("transformers/__init__.py", module.read_bytes()) + "\n")
    found = envcheck.problems(env, baseline)
    assert f"{record.relative_to(env).as_posix()} was changed" in found, found
    # a RECORD that vouches for a file outside the environment
    record.write_text(record_line("../../../../../outside.py", b"x") + "\n")
    found = envcheck.problems(env, baseline)
    assert "a RECORD names a file outside the environment (transformers: ../../../../../outside.py)" in found


def test_a_checked_env_loses_the_bytecode_a_run_wrote_and_keeps_a_wheels_own(tmp_path: Path) -> None:
    """numpy and others ship .pyc files in their RECORD: removing those was a false alarm next time."""
    work = tmp_path / "work"
    env = work / ".tox" / ENV
    FakeTox().build(env, ENV)
    packages = env / "lib" / "python3.11" / "site-packages"
    shipped = packages / "numpy" / "__pycache__" / "conv.cpython-311.pyc"
    shipped.parent.mkdir(parents=True)
    shipped.write_bytes(b"shipped")
    info = packages / "numpy-2.3.5.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: numpy\nVersion: 2.3.5\n")
    (info / "RECORD").write_text(record_line("numpy/__pycache__/conv.cpython-311.pyc", b"shipped") + "\n")
    integrity = envcheck.Integrity(work, work / ".tox")
    integrity.built(ENV)
    written = packages / "transformers" / "__pycache__" / "__init__.cpython-311.pyc"
    written.parent.mkdir()
    written.write_bytes(b"\0")
    assert integrity.check(ENV) is None and written.exists(), "no opted-in code ran: nothing to check"
    integrity.exposed(ENV)
    assert integrity.check(ENV) is None
    assert not written.exists(), "Python trusts a run's .pyc by its source's size and time only"
    assert shipped.exists(), "a wheel's own .pyc is hash-checked, and kept"
    assert integrity.check(ENV) is None, "and the next check finds the env as installed"
    shipped.write_bytes(b"poisoned")
    assert (
        integrity.check(ENV)
        == "lib/python3.11/site-packages/numpy/__pycache__/conv.cpython-311.pyc differs from its RECORD"
    )
    assert integrity.check("tf-unknown") == "nothing records what its install put there"
