"""A normal user's attempts get the user namespace mode, and cannot reach the run (issue 21).

As uid 65534 (``setpriv``, from a test that runs as root), a script judges remote code that looks for
the run that started it: a marker in its ``/proc/<pid>/environ``, and whether a signal reaches it.
Under ``user+pid+mount-namespace`` the run is not even there. The control is the same code under the
subreaper (forced), where the attempt does reach the run (a signal does), and cannot read its environ
only because the run is non-dumpable while attempts run; the script itself reads the marker in its own
environ, so the marker is there to find.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_tokcompat.judge import reaper, userns

ROOT = Path(__file__).resolve().parents[3]
NOBODY = 65534

SCRIPT = """
import json, os, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from pytest_tokcompat.judge import child
from tests.helpers import toys
from tests.helpers.ladder import judge_folder as judge
child.CONTAINMENT = sys.argv[1]
run = os.getpid()
code = '''
import json, os
found = {{"uid": os.getuid()}}
try:
    found["environ"] = b"USERNS_MARK=" in open("/proc/%d/environ", "rb").read()
except OSError as error:
    found["environ"] = type(error).__name__
try:
    os.kill(%d, 0)
    found["signal"] = "delivered"
except OSError as error:
    found["signal"] = type(error).__name__
open(%r, "w").write(json.dumps(found))
''' % (run, run, sys.argv[2] + ".attempt")
judgement = judge(toys.hostile_remote_toy(Path(sys.argv[2] + ".toy"), code), trust_remote_code=True)
mine = b"USERNS_MARK=" in open("/proc/self/environ", "rb").read()
print(json.dumps({{"verdict": str(judgement.verdict), "mode": child.containment(), "own_environ": mine}}))
"""


def _interpreter() -> tuple[str, dict[str, str]] | None:
    """A Python uid 65534 may run with this test's packages: this one, else the system's of the same
    version with this environment's site-packages on its path (a pyenv/uv Python under /root is not)."""
    site = sysconfig.get_paths()["purelib"]
    same = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    for python, extra in ((sys.executable, {}), (same, {"PYTHONPATH": site})):
        executable = [*_as_nobody(), "test", "-x", python]  # never setpriv's exec: it searches PATH on EACCES
        probe = [*_as_nobody(), python, "-c", "import tokenizers, transformers, pytest_tokcompat"]
        env = {**os.environ, **extra}
        if subprocess.run(executable, capture_output=True).returncode == 0 and (
            subprocess.run(probe, env=env, capture_output=True).returncode == 0
        ):
            return python, extra
    return None


def _as_nobody() -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]


def _allows_user_namespaces() -> bool:
    probe = [*_as_nobody(), "unshare", "--user", "--map-root-user", "--pid", "--fork", "--mount"]
    return subprocess.run([*probe, "--mount-proc", "true"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def nobody() -> Iterator[tuple[str, dict[str, str], Path]]:
    """How to run a script as uid 65534, and a folder it may write."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("not checked: needs Linux, root and setpriv to run a front-end as uid 65534")
    found = _interpreter()
    if found is None:
        pytest.skip("not checked: no Python with this environment's packages that uid 65534 may run")
    folder = Path(tempfile.mkdtemp(prefix="tokcompat-userns-"))
    folder.chmod(0o777)
    try:
        yield found[0], found[1], folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _judge_as_nobody(
    nobody: tuple[str, dict[str, str], Path], mode: str
) -> tuple[dict[str, str], dict[str, str]]:
    python, extra, folder = nobody
    work = folder / mode.replace("+", "-")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("TOKCOMPAT_", "HF_", "XDG_"))},
        **extra,
        "HOME": str(folder),  # the test session's caches are root's
        "HF_HOME": str(folder / "hf"),
        "USERNS_MARK": "marked",
    }
    command = [*_as_nobody(), python, "-c", SCRIPT.format(root=str(ROOT)), mode, str(work)]
    done = subprocess.run(command, env=env, cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    return said, json.loads(Path(str(work) + ".attempt").read_text(encoding="utf-8"))


def test_a_normal_users_attempt_cannot_read_nor_signal_the_run(
    nobody: tuple[str, dict[str, str], Path],
) -> None:
    if not _allows_user_namespaces():
        pytest.skip(
            "not checked: this kernel refuses uid 65534 a user namespace (the fallback is tested below)"
        )
    said, found = _judge_as_nobody(nobody, reaper.MOUNT_NAMESPACE)
    assert said == {
        "verdict": "auto_map",
        "mode": "user+pid+mount-namespace (proc hidden: yes)",
        "own_environ": True,  # control: the run's environ holds the marker
    }
    assert found == {"uid": 0, "environ": "FileNotFoundError", "signal": "ProcessLookupError"}


def test_without_namespaces_the_run_is_non_dumpable_while_attempts_run(
    nobody: tuple[str, dict[str, str], Path],
) -> None:
    said, found = _judge_as_nobody(nobody, reaper.SUBREAPER)
    assert said == {"verdict": "auto_map", "mode": "subreaper (proc hidden: no)", "own_environ": True}
    assert found["signal"] == "delivered"  # control: the attempt does reach the run by this pid
    assert found == {"uid": NOBODY, "environ": "PermissionError", "signal": "delivered"}


def test_undumpable_while_restores_what_it_found() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("prctl is Linux's")
    libc = reaper.libc()
    assert libc is not None
    assert libc.prctl(3, 0, 0, 0, 0) == 1  # control: this process is dumpable to start with
    with userns.undumpable_while(libc, True):
        assert libc.prctl(3, 0, 0, 0, 0) == 0
    assert libc.prctl(3, 0, 0, 0, 0) == 1
    with userns.undumpable_while(libc, False):
        assert libc.prctl(3, 0, 0, 0, 0) == 1
