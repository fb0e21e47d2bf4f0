"""An attempt cannot read the run's /proc nor change its checkpoint (issue 21: the mount namespace).

Remote code in an attempt searches /proc for the processes above it (the fork server, whose initial
environment holds a marker set only in the test's process when it started the server; the judging
process itself, by its pid) and writes into its checkpoint. Under ``pid+mount-namespace`` it finds
nothing and writes nothing, and the verdict is the same; the control is the same code under the
subreaper (no namespace), where it finds the marker, reads the run's environ and writes.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_tokcompat import cli
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.judge import child, mounts, reaper
from pytest_tokcompat.model import Verdict
from pytest_tokcompat.sources.names import LoadTarget
from tests.helpers import hubcache, toys
from tests.helpers.ladder import judge_folder
from tests.unit.judge.test_isolation import judge_within

MARK_VARIABLE = "PROCFS_TEST_ANCESTOR_MARK"

SNOOP = """
import errno, hashlib, json, os
_found = {{"marked": [], "run": None, "others": 0, "writes": {{}}, "capabilities": {{}}, "umount": None}}
_me = os.readlink("/proc/self")
for _name in os.listdir("/proc"):
    if not _name.isdigit() or _name == _me:
        continue
    _found["others"] += 1
    try:
        with open(f"/proc/{{_name}}/environ", "rb") as _stream:
            if {mark!r}.encode() in _stream.read():
                _found["marked"].append(int(_name))
    except OSError:
        pass
try:
    with open("/proc/{run}/environ", "rb") as _stream:
        _found["run"] = hashlib.sha256(_stream.read()).hexdigest()
except OSError as _error:
    _found["run"] = type(_error).__name__
for _what, _path, _how in {writes!r}:
    try:
        with open(_path, _how):
            pass
        _found["writes"][_what] = "written"
    except OSError as _error:
        _found["writes"][_what] = errno.errorcode.get(_error.errno, str(_error.errno))
with open("/proc/self/status") as _stream:
    for _line in _stream:
        if _line.startswith(("CapEff:", "CapBnd:")):
            _found["capabilities"][_line.split(":")[0]] = int(_line.split()[1], 16)
if {try_umount!r}:  # only inside a mount namespace of its own: elsewhere this would be the host's /proc
    import ctypes
    _libc = ctypes.CDLL(None, use_errno=True)
    _found["umount"] = "unmounted" if _libc.umount2(b"/proc", 2) == 0 else errno.errorcode[ctypes.get_errno()]
with open({outcome!r} + ".tmp", "w") as _stream:
    json.dump(_found, _stream)
os.replace({outcome!r} + ".tmp", {outcome!r})
"""


def kernel_allows_mount_namespaces() -> bool:
    """Whether this process may make a mount namespace and mount a proc in it, asked of the kernel in a
    throwaway child without the product's code: where it may, the fork server must use one."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            private, bind = 0x4000 | 0x40000, tempfile.mkdtemp(prefix="tokcompat-procfs-")
            if (
                libc.unshare(0x00020000) == 0
                and libc.mount(None, b"/", None, ctypes.c_ulong(private), None) == 0
            ):
                code = (
                    0 if libc.mount(b"proc", os.fsencode(bind), b"proc", ctypes.c_ulong(0), None) == 0 else 1
                )
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _own_environ_digest() -> str:
    return hashlib.sha256(Path("/proc/self/environ").read_bytes()).hexdigest()


@pytest.fixture(params=[reaper.MOUNT_NAMESPACE, reaper.SUBREAPER])
def mode(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """A fork server of its own, contained as asked, whose initial environment holds a fresh marker."""
    if not sys.platform.startswith("linux"):
        pytest.skip("PID and mount namespaces, and the subreaper, are Linux's")
    if request.param == reaper.MOUNT_NAMESPACE and not kernel_allows_mount_namespaces():
        pytest.skip("not checked: this kernel lets this process make no mount namespace (not root?)")
    mark = f"ancestor-{uuid.uuid4().hex}"
    monkeypatch.setenv(MARK_VARIABLE, mark)
    monkeypatch.setattr(child, "CONTAINMENT", request.param)
    child._shutdown()
    judge_folder(toys.native_toy(tmp_path_factory.mktemp("warm") / "native"))
    assert child._SERVER is not None and child._SERVER.ready is not None
    got = child._SERVER.ready["containment"]
    assert got == request.param, "the fork server does not contain its attempts as the kernel allows"
    yield got, mark
    child._shutdown()


def _snoop(outcome: Path, mark: str, writes: list[tuple[str, str, str]], try_umount: bool = False) -> str:
    return SNOOP.format(
        mark=mark, run=os.getpid(), writes=writes, outcome=str(outcome), try_umount=try_umount
    )


def _writes(folder: Path) -> list[tuple[str, str, str]]:
    return [("new", str(folder / "planted"), "w"), ("existing", str(folder / "config.json"), "a")]


def test_an_attempt_cannot_read_the_runs_environ_nor_write_its_checkpoint(
    mode: tuple[str, str], tmp_path: Path
) -> None:
    containment, mark = mode
    outcome, folder = tmp_path / "outcome.json", tmp_path / "snoops"
    hidden = containment == reaper.MOUNT_NAMESPACE
    prelude = _snoop(outcome, mark, _writes(folder), try_umount=hidden)
    judgement = judge_within(toys.hostile_remote_toy(folder, prelude), trust_remote_code=True)
    found: dict[str, Any] = json.loads(outcome.read_text(encoding="utf-8"))
    if not hidden:  # the control: the setup sees what it looks for where nothing hides it
        assert child._SERVER is not None and child._SERVER.process.pid in found["marked"]
        assert found["run"] == _own_environ_digest(), "the control did not read the run's environ"
        assert found["writes"] == {"new": "written", "existing": "written"}
        # the writes landed; the parent's fingerprint saw them, put the files back and trusts nothing after
        assert judgement.verdict == Verdict.NOT_CHECKED
        assert "changed" in judgement.parity.reason and not (folder / "planted").exists()
        return
    assert judgement.verdict == Verdict.AUTO_MAP  # the snooping changes nothing the judge measures
    assert found["marked"] == [] and found["others"] == 0, found  # no other process is even visible
    assert found["run"] == "FileNotFoundError"
    assert found["writes"] == {"new": "EROFS", "existing": "EROFS"}
    assert not (folder / "planted").exists()
    sys_admin = 1 << 21
    assert not found["capabilities"]["CapEff"] & sys_admin and not found["capabilities"]["CapBnd"] & sys_admin
    assert found["umount"] == "EPERM"  # so the host's /proc under the fresh one stays covered


def test_this_process_holds_the_capability_the_attempt_gives_up() -> None:
    """Control for the capability check: the run itself (root, where the namespace is made) has it."""
    if not sys.platform.startswith("linux"):
        pytest.skip("capabilities are Linux's")
    status = Path("/proc/self/status").read_text(encoding="utf-8")
    effective = int(next(line for line in status.splitlines() if line.startswith("CapEff:")).split()[1], 16)
    if os.geteuid() != 0:
        pytest.skip("not checked: a normal user holds no CAP_SYS_ADMIN to give up")
    assert effective & (1 << 21)


def test_an_attempt_cannot_write_the_hub_blobs_behind_its_snapshot(
    mode: tuple[str, str], tmp_path: Path
) -> None:
    containment, mark = mode
    toy = toys.remote_toy(tmp_path / "toy")
    files = {path.name: path.read_bytes() for path in sorted(toy.iterdir()) if path.is_file()}
    cache = tmp_path / "hub"
    commit = hubcache.add_repo(cache, "owner/snoop", files)
    storage = cache / "models--owner--snoop"
    snapshot = storage / "snapshots" / commit
    outcome = tmp_path / "outcome.json"
    writes = [
        ("blob", str(snapshot / "config.json"), "a"),  # through the link, into the blob
        ("refs", str(storage / "refs" / "planted"), "w"),
    ]
    code = snapshot / "tokenization_toy.py"
    hostile = _snoop(outcome, mark, writes) + "\n" + code.read_text(encoding="utf-8")
    code.unlink()
    code.write_text(hostile, encoding="utf-8")  # a regular file in the snapshot: the judge allows it
    judgement = judge_within(snapshot, trust_remote_code=True)
    assert judgement.verdict == Verdict.AUTO_MAP
    found = json.loads(outcome.read_text(encoding="utf-8"))
    expected = "written" if containment == reaper.SUBREAPER else "EROFS"
    assert found["writes"] == {"blob": expected, "refs": expected}


def _job(folder: Path, cache_dir: Path | None = None) -> SimpleNamespace:
    return SimpleNamespace(folder=str(folder), target=SimpleNamespace(cache_dir=cache_dir and str(cache_dir)))


def test_the_read_only_paths_are_the_folder_its_hub_storage_and_what_its_links_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mounts, "site_paths", tuple)  # the interpreter's own: their test is below
    plain = toys.native_toy(tmp_path / "plain")
    assert mounts.readonly_paths(_job(plain)) == [str(plain.resolve())]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "vocab.txt").write_text("a\n", encoding="utf-8")
    (plain / "vocab.txt").symlink_to(elsewhere / "vocab.txt")
    assert sorted(mounts.readonly_paths(_job(plain))) == sorted(
        [str(plain.resolve()), str(elsewhere.resolve())]
    )
    (tmp_path / "shared.txt").write_text("b\n", encoding="utf-8")  # beside the folder: its holder holds it
    (plain / "shared.txt").symlink_to(tmp_path / "shared.txt")
    assert str((tmp_path / "shared.txt").resolve()) in mounts.readonly_paths(_job(plain))
    assert str(tmp_path.resolve()) not in mounts.readonly_paths(_job(plain))
    stand_in = tmp_path / "snapshots" / "a-case"  # a folder named snapshots in no hub cache
    toys.native_toy(stand_in)
    assert mounts.readonly_paths(_job(stand_in)) == [str(stand_in.resolve())]
    cache = tmp_path / "hub"
    commit = hubcache.add_repo(cache, "owner/name", {"config.json": b"{}"})
    snapshot = cache / "models--owner--name" / "snapshots" / commit
    assert mounts.readonly_paths(_job(snapshot)) == [str((cache / "models--owner--name").resolve())]
    assert mounts.readonly_paths(_job(snapshot, cache)) == [str(cache.resolve())]
    assert mounts.readonly_paths(SimpleNamespace()) == []  # a job without a folder (the upstream watch)


def test_the_root_is_never_made_read_only() -> None:
    assert mounts.outermost(["/", "/a/b", "/a", "/ab"]) == ["/a", "/ab"]


def test_a_child_that_is_not_pid_1_gets_no_mounts_it_would_misreport() -> None:
    """Fail closed: a fresh /proc outside a PID namespace of its own would show the host's processes."""
    if not sys.platform.startswith("linux"):
        pytest.skip("mount namespaces are Linux's")
    containment = reaper.Containment.__new__(reaper.Containment)  # not __init__: no subreaper here
    containment._libc, containment.mode = ctypes.CDLL(None, use_errno=True), reaper.MOUNT_NAMESPACE
    with pytest.raises(mounts.MountError, match="not PID 1"):
        containment.enter_mounts(_job(Path("/nonexistent")))
    containment.mode = reaper.NAMESPACE  # control: a weaker mode asks for no mounts, and makes none
    containment.enter_mounts(_job(Path("/nonexistent")))


def test_tokcompat_check_says_which_containment_ran(
    mode: tuple[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    containment, _ = mode
    assert cli.main(["check", str(toys.native_toy(tmp_path / "plain"))]) == ExitCode.OK
    hidden = "yes" if containment == reaper.MOUNT_NAMESPACE else "no"
    assert f"  attempts contained by: {containment} (proc hidden: {hidden})\n" in capsys.readouterr().out


def test_remote_code_still_runs_where_the_modules_cache_is_inside_a_read_only_folder(
    mode: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HF_MODULES_CACHE inside the hub cache: transformers copies the remote code there to import it, so
    that folder stays writable (else every opted-in load would fail, a false broken)."""
    cache = tmp_path / "hub"
    modules = cache / "modules"
    modules.mkdir(parents=True)
    monkeypatch.setenv("HF_MODULES_CACHE", str(modules))
    child._shutdown()  # transformers reads HF_MODULES_CACHE when the fork server imports it
    toy = toys.remote_toy(tmp_path / "toy")
    files = {path.name: path.read_bytes() for path in sorted(toy.iterdir()) if path.is_file()}
    commit = hubcache.add_repo(cache, "owner/modules", files)
    snapshot = cache / "models--owner--modules" / "snapshots" / commit
    by_id = LoadTarget("owner/modules", revision=commit, cache_dir=str(cache))  # the whole cache read-only
    judgement = judge_within(snapshot, trust_remote_code=True, target=by_id)
    assert judgement.verdict == Verdict.AUTO_MAP, judgement.attempts
    assert any(modules.rglob("tokenization_toy.py")), "transformers did not use the modules cache asked for"
    target = SimpleNamespace(cache_dir=str(cache))
    assert mounts.writable_paths(
        mounts.readonly_paths(SimpleNamespace(folder=str(snapshot), target=target))
    ) == [str(modules.resolve())]


def test_an_attempt_cannot_write_where_every_later_python_looks(
    mode: tuple[str, str], tmp_path: Path
) -> None:
    """A file dropped into this interpreter's site-packages (a ``.pth`` would run in every later process of
    the venv, the next run's included) is refused inside the mount namespace; the control writes it."""
    containment, mark = mode
    site_packages = Path(sysconfig.get_path("purelib"))
    probe = site_packages / f"tokcompat-probe-{uuid.uuid4().hex}.txt"  # never a .pth: nothing runs it
    outcome = tmp_path / "outcome.json"
    prelude = _snoop(outcome, mark, [("site", str(probe), "w")])
    try:
        judge_within(toys.hostile_remote_toy(tmp_path / "toy", prelude), trust_remote_code=True)
        found: dict[str, Any] = json.loads(outcome.read_text(encoding="utf-8"))
        if containment == reaper.MOUNT_NAMESPACE:
            assert str(site_packages) in mounts.site_paths()
            assert found["writes"] == {"site": "EROFS"} and not probe.exists()
        else:  # the control: without the namespace the same write lands
            assert found["writes"] == {"site": "written"} and probe.exists()
    finally:
        probe.unlink(missing_ok=True)


def test_a_load_stopped_by_a_read_only_mount_is_undecided_not_broken() -> None:
    """The judge's read-only view, not the tokenizer, stopped the load: named, so the attempt is undecided
    (not-checked) rather than a load error that would read as broken; any other error stays the load's."""
    from pytest_tokcompat.judge.job import read_only_write

    refused = OSError(errno.EROFS, "Read-only file system", "/venv/site-packages/x.pth")
    try:
        try:
            raise refused
        except OSError as inner:
            raise ValueError("the remote module failed to import") from inner
    except ValueError as wrapped:
        assert read_only_write(wrapped) == "/venv/site-packages/x.pth"
    assert read_only_write(OSError(errno.EACCES, "Permission denied", "/x")) is None  # control
    assert read_only_write(ValueError("ids")) is None


READ_TOKEN = """
import json, os
try:
    with open({token!r}, encoding="utf-8") as _stream:
        _seen = _stream.read()
except OSError as _error:
    _seen = type(_error).__name__
with open({outcome!r}, "w") as _stream:
    json.dump({{"token": _seen}}, _stream)
"""


def test_an_attempt_finds_the_stored_hub_token_empty(
    mode: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stored token is masked in what the run publishes, but only as it is: remote code that read it
    could publish it re-encoded. Inside the namespace the file reads empty; the control reads the token."""
    containment, _ = mode
    token, outcome = tmp_path / "hub" / "token", tmp_path / "outcome.json"
    token.parent.mkdir()
    token.write_text("hf_storedTokenForTheProcfsTest0123", encoding="utf-8")
    monkeypatch.setenv("HF_TOKEN_PATH", str(token))
    prelude = READ_TOKEN.format(token=str(token), outcome=str(outcome))
    judgement = judge_within(toys.hostile_remote_toy(tmp_path / "reader", prelude), trust_remote_code=True)
    seen = json.loads(outcome.read_text(encoding="utf-8"))["token"]
    if containment == reaper.MOUNT_NAMESPACE:
        assert seen == "" and judgement.verdict == Verdict.AUTO_MAP, (seen, judgement.verdict)
    else:  # the control: without the namespace the same code reads the token
        assert seen == "hf_storedTokenForTheProcfsTest0123"
    assert token.read_text(encoding="utf-8") == "hf_storedTokenForTheProcfsTest0123"  # never changed


def test_an_attempt_cannot_write_another_snapshot_in_the_snapshot_cache(
    mode: tuple[str, str], tmp_path: Path
) -> None:
    """Another checkpoint's assembled files (the snapshot cache) are read-only inside the namespace; the
    control writes them."""
    from pytest_tokcompat.settings import judge_settings_from_environment

    containment, mark = mode
    other = Path(judge_settings_from_environment().cache) / f"other-{uuid.uuid4().hex}"
    other.mkdir(parents=True)
    outcome = tmp_path / "outcome.json"
    prelude = _snoop(outcome, mark, [("snapshot", str(other / "planted"), "w")])
    try:
        judge_within(toys.hostile_remote_toy(tmp_path / "toy", prelude), trust_remote_code=True)
        found: dict[str, Any] = json.loads(outcome.read_text(encoding="utf-8"))
        if containment == reaper.MOUNT_NAMESPACE:
            assert found["writes"] == {"snapshot": "EROFS"} and not (other / "planted").exists()
        else:
            assert found["writes"] == {"snapshot": "written"} and (other / "planted").exists()
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_an_attempt_cannot_write_the_interpreter_the_judge_or_the_hub_cache(
    mode: tuple[str, str], tmp_path: Path
) -> None:
    """What every later run starts (the standard library, ``bin/``, ``pyvenv.cfg``, the judge's own code)
    and another repo's files in the user's hub cache are read-only inside the namespace; the control
    writes the new files (and opens ``pyvenv.cfg`` for appending, writing nothing)."""
    from pytest_tokcompat.credentials import hf_home

    containment, mark = mode
    hub = hf_home(os.environ) / "hub"
    hub.mkdir(parents=True, exist_ok=True)
    name = f"tokcompat-probe-{uuid.uuid4().hex}.txt"  # never .py or .pth: nothing runs it
    probes = {
        "stdlib": Path(sysconfig.get_path("stdlib")) / name,
        "scripts": Path(sysconfig.get_path("scripts")) / name,
        "judge": Path(mounts.__file__).resolve().parents[1] / name,
        "hub": hub / name,
    }
    config = Path(sys.prefix) / "pyvenv.cfg"
    writes = [(what, str(path), "w") for what, path in probes.items()]
    writes += [("pyvenv", str(config), "a")] if config.is_file() else []
    outcome = tmp_path / "outcome.json"
    try:
        judge_within(
            toys.hostile_remote_toy(tmp_path / "toy", _snoop(outcome, mark, writes)), trust_remote_code=True
        )
        found: dict[str, Any] = json.loads(outcome.read_text(encoding="utf-8"))
        expected = "EROFS" if containment == reaper.MOUNT_NAMESPACE else "written"
        assert found["writes"] == dict.fromkeys((w[0] for w in writes), expected), found["writes"]
        assert all(path.exists() == (expected == "written") for path in probes.values())
    finally:
        for path in probes.values():
            path.unlink(missing_ok=True)
