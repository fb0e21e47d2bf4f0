"""Each ladder attempt in a child process, forked from a server that imported transformers once.

An attempt runs a checkpoint's files and, where the caller opts in, its code. In the caller's
process that code could monkeypatch transformers for the next case, exit the run, panic, hang,
start threads or flood the output. So the parent runs no attempt itself: a small fork server
(started once per process, on first use) imports transformers and tokenizers, and forks one
child per attempt, which costs milliseconds instead of an import. The child sends typed
messages back as JSON frames over a pipe (never pickle: nothing the child sends can run code
in the parent), and what its tokenizer answered, never a verdict (``observed.py``); the parent enforces a hard time limit per phase (SIGTERM to the child's process
group, SIGKILL after a grace), a memory cap (``RLIMIT_AS`` in the child, the ``max_memory_mb`` setting)
and keeps the last 4 KB of the child's stdout and stderr.

Process isolation, not a sandbox: the code still runs as the user, with the user's files.
Where ``os.fork`` does not exist (Windows) each attempt is a fresh ``spawn`` process, which pays
the imports every time and captures output only at the Python level.
The ``isolation`` setting ``inprocess`` (``TOKCOMPAT_ISOLATION=inprocess``), carried by each job, runs
attempts in the calling process, for benchmarks and debuggers only: then nothing above holds.

This module is the parent's side; the server itself is ``forkserver``, the frames ``wire``, the
fallbacks ``spawned``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import pickle
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from pytest_tokcompat.credentials import credential_values, scrub, scrub_data, without_credentials
from pytest_tokcompat.judge import reaper, userns
from pytest_tokcompat.judge.cacheguard import child_environ, runs_checkpoint_code, watched
from pytest_tokcompat.judge.frames import Binding
from pytest_tokcompat.judge.spawned import run_in_process, run_spawned
from pytest_tokcompat.judge.wire import CAPTURE_BYTES as CAPTURE_BYTES
from pytest_tokcompat.judge.wire import (
    GRACE_SECONDS,
    HEADER,
    ChildRun,
    FrameReader,
    Tail,
    describe_status,
    drain,
    recv_json,
    take,
)
from pytest_tokcompat.judge.wire import encode_frame as encode_frame
from pytest_tokcompat.settings import ISOLATION

log = logging.getLogger("pytest_tokcompat.judge")
ISOLATION_ENV = ISOLATION.variable
"""process (the default where os.fork exists), spawn (the default elsewhere), or inprocess."""
SERVER_START_SECONDS = 300.0
SERVER_REPLY_SECONDS = 5.0
"""How long the fork server may take to answer (a pid, an exit status) before it counts as dead, whatever
the attempt's own time limit: on a loaded machine a server that forks or reaps takes a second or more,
and a slow server is not a dead one."""
CONTAINMENT = reaper.MOUNT_NAMESPACE
"""What the fork server is asked for: a PID and a mount namespace per attempt (where the kernel allows
them, else a PID namespace alone, else a subreaper), or ``reaper.NAMESPACE`` / ``reaper.SUBREAPER``
(a weaker mode, forced: for tests)."""


def isolation_mode(setting: str = "process") -> str:
    """How attempts run here under the ``isolation`` setting: ``process`` (fork server; ``spawn`` where
    there is no ``os.fork``), ``spawn`` or ``inprocess``."""
    return "spawn" if setting == "process" and not hasattr(os, "fork") else setting


_BOOT = (
    "import json, sys\n"
    "sys.path[:] = json.loads(sys.argv[1])\n"
    "from pytest_tokcompat.judge.forkserver import serve\n"
    "serve(int(sys.argv[2]), sys.argv[3])\n"
)


# ---- the parent's side ---------------------------------------------------------------------------


class ServerUnavailable(RuntimeError):
    """The fork server could not be started (its imports failed): no attempt can be judged."""


class ServerUnresponsive(RuntimeError):
    """The fork server did not answer in time (stopped by a signal, or hung): it counts as dead."""


class _Server:
    def __init__(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = parent
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _BOOT,
                json.dumps([str(p) for p in sys.path]),
                str(child.fileno()),
                CONTAINMENT,
            ],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the terminal reaches the parent, which ends the children
            env=child_environ(without_credentials(os.environ)),  # no credential, no cache folder
        )
        child.close()
        self.owner = os.getpid()
        self.ready: dict[str, Any] | None = None
        self.pending = False
        self.announced = False

    def wait_ready(self) -> dict[str, Any]:
        if self.ready is None:
            self.sock.settimeout(SERVER_START_SECONDS)
            try:
                self.ready = recv_json(self.sock)
            except (OSError, EOFError, ValueError) as error:
                self.ready = {"ready": False, "error": f"no answer ({type(error).__name__})"}
            finally:
                self.sock.settimeout(None)
        if not self.ready.get("ready"):
            raise ServerUnavailable(f"the judge's fork server could not start: {self.ready.get('error')}")
        if not self.announced:
            self.announced = True
            mode = reaper.describe(str(self.ready.get("containment")))
            log.info(
                "the judge's fork server is up (pid %s): attempts contained by %s", self.process.pid, mode
            )
        return self.ready

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def reply(self, seconds: float) -> dict[str, Any]:
        """The server's next message, or ServerUnresponsive after ``seconds``."""
        self.sock.settimeout(seconds)
        try:
            return recv_json(self.sock)
        except TimeoutError:
            raise ServerUnresponsive(self.state()) from None
        finally:
            with contextlib.suppress(OSError):
                self.sock.settimeout(None)

    def state(self) -> str:
        if reaper.stopped(self.process.pid):
            return "it was stopped (SIGSTOP: checkpoint code can signal its parent)"
        return "it was hung"

    def destroy(self) -> None:
        """Kill the server and everything below it (a stopped server reaps nothing), never to be used again."""
        self.owner = -1
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.process.poll() is None:
            reaper.kill_tree(self.process.pid)
        self.process.wait()

    def close(self) -> None:
        self.owner = -1  # never used again
        try:
            self.sock.close()
        finally:
            try:
                self.process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


_SERVER: _Server | None = None
_LOCK = threading.Lock()


def _server() -> _Server:
    global _SERVER
    if _SERVER is None or not _SERVER.alive():
        if _SERVER is not None and _SERVER.owner == os.getpid():
            _SERVER.close()
        _SERVER = _Server()
    _SERVER.wait_ready()
    return _SERVER


def containment(isolation: str = "process") -> str:
    """How this process's attempts were contained under the ``isolation`` setting, as a run reports it
    (``reaper.describe``)."""
    mode = isolation_mode(isolation)
    if mode != "process":
        return f"{mode} (proc hidden: no)"
    ready = _SERVER.ready if _SERVER is not None and _SERVER.ready else {}
    return reaper.describe(str(ready["containment"])) if "containment" in ready else "process (not started)"


def server_version() -> str | None:
    """The transformers version the fork server imported (None before it started)."""
    return _SERVER.ready.get("transformers") if _SERVER is not None and _SERVER.ready else None


def _shutdown() -> None:
    if _SERVER is not None and _SERVER.owner == os.getpid():
        _SERVER.close()


def _forget_after_fork() -> None:
    global _SERVER, _LOCK
    _SERVER, _LOCK = None, threading.Lock()


atexit.register(_shutdown)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


class _Target:
    """The child by a pidfd where the platform has one (a reused pid is never signalled), and its group."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.handle: int | None = None
        with contextlib.suppress(AttributeError, OSError, TypeError):
            self.handle = os.pidfd_open(pid)  # type: ignore[arg-type]

    def signal(self, signum: int) -> None:
        """Signal the child's process group (what it started) and the child itself, if it left the group."""
        if self.pid is None:  # gone before its pid was known here: nothing of it is left to signal
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            if self.handle is not None:
                signal.pidfd_send_signal(self.handle, signum)

    def close(self) -> None:
        if self.handle is not None:
            os.close(self.handle)
            self.handle = None


def run(job: Any, timeout: float | None) -> ChildRun:
    """Run ``job`` in a child and collect what it says; ``timeout`` applies to each phase anew, and the
    job's ``isolation`` (the setting, resolved by the front-end) says how the child runs. What the
    child's checkpoint code leaves in the judge's caches is discarded (``cacheguard``)."""
    with watched(runs_checkpoint_code(job)):
        return _run(job, timeout)


def _run(job: Any, timeout: float | None) -> ChildRun:
    mode = isolation_mode(job.isolation)
    if mode == "inprocess":
        return _scrubbed(run_in_process(job, timeout))
    if mode == "spawn":
        with userns.undumpable_while(reaper.libc(), True):  # the attempt runs as this user, beside it
            return _scrubbed(run_spawned(job, timeout))
    with _LOCK:
        try:
            server = _server()
        except ServerUnavailable as error:
            return ChildRun(messages=[{"kind": "error", "detail": str(error)}, {"kind": "end"}])
        hidden = reaper.PROC_HIDDEN.get(str((server.ready or {}).get("containment")), False)
        with userns.undumpable_while(reaper.libc(), not hidden):  # else it reads our environ and mem
            return _scrubbed(_run_forked(server, job, timeout))


def _scrubbed(run: ChildRun) -> ChildRun:
    """What a child said, with the values of this process's credential variables masked: nothing it
    prints or raises carries a secret into a record, a report or the terminal."""
    secrets = credential_values()
    if secrets:
        run.messages = scrub_data(run.messages, secrets)
        run.stdout, run.stderr = scrub(run.stdout, secrets), scrub(run.stderr, secrets)
        run.untrusted = scrub(run.untrusted, secrets) if run.untrusted else run.untrusted
    return run


def _run_forked(server: _Server, job: Any, timeout: float | None) -> ChildRun:
    payload = pickle.dumps(job)
    (res_r, res_w), (out_r, out_w), (err_r, err_w), (life_r, life_w) = (os.pipe() for _ in range(4))
    theirs = [res_w, out_w, err_w, life_r]  # handed to the child, closed here once sent
    ours = [res_r, out_r, err_r, life_w]  # closing life_w at the end ends a child that still runs
    run, binding = ChildRun(), Binding(job)
    target: _Target | None = None
    status: int | None = None
    lost: str | None = None
    try:
        if server.pending:  # the exit status of the previous child, which had already reported
            server.reply(SERVER_REPLY_SECONDS)
            server.pending = False
        try:
            socket.send_fds(server.sock, [HEADER.pack(len(payload))], theirs)
            server.sock.sendall(payload)
        finally:
            for descriptor in theirs:
                os.close(descriptor)
        reported = int(server.reply(SERVER_REPLY_SECONDS)["pid"])
        nested = bool((server.ready or {}).get("nested"))  # its pids are not ours: never signal them as such
        target = _Target(reaper.host_pid(server.process.pid, reported) if nested else reported)
        status = _watch(server, target, res_r, out_r, err_r, timeout, run, binding)
    except ServerUnresponsive as error:
        lost = f"the judge's fork server did not answer within {SERVER_REPLY_SECONDS:g} s ({error})"
    except (OSError, EOFError, ValueError, KeyError) as error:
        run.messages.append({"kind": "error", "detail": f"the judge's fork server failed: {error}"})
        with contextlib.suppress(subprocess.TimeoutExpired):  # its socket closes a moment before it is gone
            server.process.wait(SERVER_REPLY_SECONDS)  # a moment that a loaded machine stretches
    finally:
        if lost is None and server.process.poll() is not None:
            code = server.process.returncode
            how = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            lost = f"the judge's fork server died during the attempt ({how})"
        elif lost is None and reaper.stopped(server.process.pid):
            lost = f"the judge's fork server was stopped during the attempt ({server.state()})"
        if target is not None:
            if lost is not None and target.pid is not None:  # no server reaps what the attempt left
                reaper.kill_tree(target.pid)
            target.signal(signal.SIGKILL)  # whatever the attempt started does not outlive it
            target.close()
        for descriptor in ours:
            os.close(descriptor)
        if lost is not None:
            server.destroy()  # and replaced by the next run()
            binding.refuse(f"{lost}; it and everything it started were killed, and it was replaced")
        elif status is None and run.finished:
            server.pending = True  # its exit status is read before the next job, off the critical path
        elif status is None:
            server.close()  # out of step with this parent (interrupted, or broken): replaced next time
    if status is not None and not run.finished:
        run.ended = describe_status(status)
    binding.finish(run.finished)
    run.untrusted = binding.problem
    return run


def _watch(
    server: _Server,
    target: _Target,
    res_r: int,
    out_r: int,
    err_r: int,
    timeout: float | None,
    run: ChildRun,
    binding: Binding,
) -> int | None:
    """Read the child's messages and output until it reports its end or the server reports its exit;
    kill it at the deadline. None: it reported its end, and its exit status is still to come.
    ServerUnresponsive: the child was killed and the server still did not report its exit."""
    reader, tails = FrameReader(), {out_r: Tail(), err_r: Tail()}
    selector = selectors.DefaultSelector()
    for descriptor in (res_r, out_r, err_r):
        os.set_blocking(descriptor, False)
        selector.register(descriptor, selectors.EVENT_READ)
    selector.register(server.sock, selectors.EVENT_READ)
    deadline = None if not timeout else time.monotonic() + timeout
    terminated_at: float | None = None
    killed_at: float | None = None
    status: int | None = None
    try:
        while status is None and not run.finished:
            now = time.monotonic()
            if terminated_at is None and deadline is not None and now >= deadline:
                run.timed_out = True
                target.signal(signal.SIGTERM)
                terminated_at = now
            if terminated_at is not None and killed_at is None and now >= terminated_at + GRACE_SECONDS:
                target.signal(signal.SIGKILL)
                killed_at = now
            if killed_at is not None and now >= killed_at + SERVER_REPLY_SECONDS:
                raise ServerUnresponsive(server.state())
            if terminated_at is None:
                wait = None if deadline is None else deadline - now
            elif killed_at is None:
                wait = terminated_at + GRACE_SECONDS - now
            else:
                wait = killed_at + SERVER_REPLY_SECONDS - now
            for key, _ in selector.select(None if wait is None else max(0.0, wait)):
                if key.fileobj is server.sock:
                    status = int(server.reply(SERVER_REPLY_SECONDS)["status"])
                    break
                descriptor = int(key.fd)
                try:
                    chunk = os.read(descriptor, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(descriptor)
                elif descriptor != res_r:
                    tails[descriptor].feed(chunk)
                elif terminated_at is None:  # past the deadline nothing it says counts: it timed out
                    if take(run, binding, reader.feed(chunk), timeout):
                        deadline = None if not timeout else time.monotonic() + timeout
                    if reader.error:
                        binding.refuse(reader.error)
                        selector.unregister(descriptor)
        for descriptor in (res_r, out_r, err_r) if terminated_at is None else (out_r, err_r):
            drain(descriptor, reader if descriptor == res_r else tails[descriptor], run, binding)
    finally:
        selector.close()
    run.stdout, run.stderr = tails[out_r].text(), tails[err_r].text()
    return status
