"""Each ladder attempt in a child process, forked from a server that imported transformers once.

An attempt runs a checkpoint's files and, where the caller opts in, its code. In the caller's
process that code could monkeypatch transformers for the next case, exit the run, panic, hang,
start threads or flood the output. So the parent runs no attempt itself: a small fork server
(started once per process, on first use) imports transformers and tokenizers, and forks one
child per attempt, which costs milliseconds instead of an import. The child sends typed
messages back as JSON frames over a pipe (never pickle: nothing the child sends can run code
in the parent), and what its tokenizer answered, never a verdict (``observed.py``); the parent enforces a hard time limit per phase (SIGTERM to the child's process
group, SIGKILL after a grace), a memory cap (``RLIMIT_AS`` in the child, ``TOKCOMPAT_MAX_MEMORY_MB``)
and keeps the last 4 KB of the child's stdout and stderr.

Process isolation, not a sandbox: the code still runs as the user, with the user's files.
Where ``os.fork`` does not exist (Windows) each attempt is a fresh ``spawn`` process, which pays
the imports every time and captures output only at the Python level.
``TOKCOMPAT_ISOLATION=inprocess`` runs attempts in the calling process, for benchmarks and
debuggers only: then nothing above holds.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import pickle
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_tokcompat import environment
from pytest_tokcompat.credentials import credential_values, scrub, scrub_data, without_credentials
from pytest_tokcompat.judge import reaper
from pytest_tokcompat.judge.frames import Binding
from pytest_tokcompat.limits import MAX_MEMORY_MB

ISOLATION_ENV = "TOKCOMPAT_ISOLATION"
"""process (the default where os.fork exists), spawn (the default elsewhere), or inprocess."""
MEMORY_ENV = MAX_MEMORY_MB.variable
DEFAULT_MAX_MEMORY_MB = MAX_MEMORY_MB.default
"""Address space one attempt may map (RLIMIT_AS); 0 turns the cap off."""
CAPTURE_BYTES = 4096
GRACE_SECONDS = 1.0
SERVER_START_SECONDS = 300.0
MAX_FRAME_BYTES = 64 * 1024 * 1024
SERVER_REPLY_SECONDS = 5.0
"""How long the fork server may take to answer (a pid, an exit status) before it counts as dead; never
more than the attempt's own time limit, never less than 1 s."""
CONTAINMENT = reaper.NAMESPACE
"""What the fork server is asked for: a PID namespace per attempt (where the kernel allows one, else it
falls back to a subreaper), or ``reaper.SUBREAPER`` (the fallback, forced: for tests)."""
_HEADER = struct.Struct(">Q")
_FRAME = struct.Struct(">I")

Emit = Callable[[dict[str, Any]], None]


def _captured(stream: object) -> str:
    """The tail of what the attempt printed (the child swaps stdout/stderr for StringIO buffers)."""
    getvalue = getattr(stream, "getvalue", None)
    return str(getvalue())[-CAPTURE_BYTES:] if callable(getvalue) else ""


def isolation_mode() -> str:
    """How attempts run here: ``process`` (fork server), ``spawn`` or ``inprocess``."""
    mode = (environment.read(ISOLATION_ENV) or "").lower()
    if mode in ("process", "spawn", "inprocess"):
        return "spawn" if mode == "process" and not hasattr(os, "fork") else mode
    return "process" if hasattr(os, "fork") else "spawn"


def max_memory_mb() -> float | None:
    """The memory cap of one attempt in MB, from TOKCOMPAT_MAX_MEMORY_MB (0: none)."""
    raw = environment.read(MEMORY_ENV)
    try:
        value = float(raw) if raw else DEFAULT_MAX_MEMORY_MB
    except ValueError:
        value = DEFAULT_MAX_MEMORY_MB
    return value if value > 0 and value == value else None


@dataclass
class ChildRun:
    """What the parent saw of one child: its messages, how it ended, and the tail of its output."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    phase: str = "prepare"
    """The last phase the child announced: prepare (static view, ground truth), load or encode."""
    timed_out: bool = False
    ended: str | None = None
    """How the process ended when that was not after its last message: 'exit status 0', 'signal SIGKILL'."""
    stdout: str = ""
    stderr: str = ""
    untrusted: str | None = None
    """Why nothing this child said is used (a frame that is not its job's, a stopped fork server)."""

    @property
    def finished(self) -> bool:
        return any(m.get("kind") == "end" for m in self.messages)

    def last_stderr_line(self) -> str:
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        return lines[-1][:300] if lines else ""


# ---- the wire: length-prefixed JSON frames ------------------------------------------------------


def encode_frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, default=str).encode("utf-8")
    return _FRAME.pack(len(body)) + body


class _FrameReader:
    """Splits the child's byte stream into messages; anything malformed ends the reading."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.error: str | None = None

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        if self.error:
            return []
        self.buffer += data
        found: list[dict[str, Any]] = []
        while len(self.buffer) >= _FRAME.size:
            (size,) = _FRAME.unpack_from(self.buffer)
            if size > MAX_FRAME_BYTES:
                self.error = f"the child sent a {size}-byte message, over the {MAX_FRAME_BYTES}-byte limit"
                return found
            if len(self.buffer) < _FRAME.size + size:
                break
            body = bytes(self.buffer[_FRAME.size : _FRAME.size + size])
            del self.buffer[: _FRAME.size + size]
            try:
                message = json.loads(body.decode("utf-8"))
            except ValueError:
                self.error = "the child sent a message that is not JSON"
                return found
            if not isinstance(message, dict):
                self.error = "the child sent a message that is not a JSON object"
                return found
            found.append(message)
        return found


class _Tail:
    """The last CAPTURE_BYTES of a stream, however much is written."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.data += chunk
        if len(self.data) > CAPTURE_BYTES:
            del self.data[: len(self.data) - CAPTURE_BYTES]

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        if self.total > CAPTURE_BYTES:
            return f"[... {self.total - CAPTURE_BYTES} earlier bytes dropped]\n{text}"
        return text


def _describe_status(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


# ---- the server (runs in its own process) --------------------------------------------------------

_BOOT = (
    "import json, sys\n"
    "sys.path[:] = json.loads(sys.argv[1])\n"
    "from pytest_tokcompat.judge.child import serve\n"
    "serve(int(sys.argv[2]), sys.argv[3])\n"
)


def _send_json(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(encode_frame(message))


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise EOFError
        chunks += chunk
    return bytes(chunks)


def _recv_json(sock: socket.socket) -> dict[str, Any]:
    (size,) = _FRAME.unpack(_recv_exact(sock, _FRAME.size))
    return dict(json.loads(_recv_exact(sock, size)))


def _preload() -> str:
    """Import what every attempt needs, once, and return the transformers version."""
    import tokenizers  # noqa: F401
    import transformers
    from transformers import AutoConfig, AutoTokenizer, PreTrainedTokenizerFast  # noqa: F401
    from transformers.models.auto import configuration_auto, tokenization_auto  # noqa: F401

    import pytest_tokcompat.judge.job
    import pytest_tokcompat.judge.remedies  # noqa: F401

    transformers.logging.disable_default_handler()
    _warm_up()
    return str(transformers.__version__)


def _warm_up() -> None:
    """Load a tiny tokenizer once, so the lazy modules every load needs are imported before forking."""
    import tempfile

    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({"hello": 0, "[UNK]": 1}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    with tempfile.TemporaryDirectory(prefix="tokcompat-warm-") as folder:
        tokenizer.save(os.path.join(folder, "tokenizer.json"))
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as stream:
            json.dump({"model_type": "gpt2"}, stream)
        with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as stream:
            json.dump({"tokenizer_class": "PreTrainedTokenizerFast"}, stream)
        try:
            from transformers import AutoTokenizer

            loaded = AutoTokenizer.from_pretrained(folder)
            loaded.decode(loaded.encode("hello", add_special_tokens=False))
        except Exception:  # only a warm-up: a failure here shows in the first real attempt
            pass


def serve(fd: int, wanted: str = reaper.NAMESPACE) -> None:
    """The fork server's loop: one child per job, its pid and then its exit status sent back, once the
    child and everything it started are gone."""
    import gc

    containment = reaper.Containment(wanted)  # first: while this process is still single-threaded
    sock = socket.socket(fileno=fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles interrupts and kills children
    try:
        version = _preload()
    except BaseException as error:
        _send_json(sock, {"ready": False, "error": f"{type(error).__name__}: {error}"})
        return
    ready = {"ready": True, "transformers": version, "pid": os.getpid(), "containment": containment.mode}
    _send_json(sock, ready)
    gc.collect()
    gc.freeze()  # children then do not copy the server's pages just to scan them
    while True:
        try:
            header, fds, _flags, _address = socket.recv_fds(sock, _HEADER.size, 4)
        except OSError:
            return
        if len(header) < _HEADER.size:
            return
        (size,) = _HEADER.unpack(header)
        try:
            payload = _recv_exact(sock, size)
        except EOFError:
            return
        contained = containment.before_fork()
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                containment.after_fork(in_child=True)
                _child_main(payload, fds)
            finally:
                os._exit(70)
        if contained:
            containment.after_fork(in_child=False)
        for descriptor in fds:
            os.close(descriptor)
        try:
            _send_json(sock, {"pid": pid})
            _, status = os.waitpid(pid, 0)
            containment.reap()  # what the attempt left (a subreaper's orphans) dies before its end is told
            _send_json(sock, {"pid": pid, "status": status})
        except OSError:
            return


def _lifeline(fd: int) -> None:
    """End the child when the parent goes away (the parent holds the other end of this pipe)."""
    try:
        os.read(fd, 1)
    finally:
        os._exit(71)


def _apply_memory_cap(megabytes: float | None) -> None:
    if not megabytes:
        return
    try:
        import resource

        limit = int(megabytes * 1024 * 1024)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # not on this platform: no cap
        pass


def _child_main(payload: bytes, fds: list[int]) -> None:
    result_fd, out_fd, err_fd, life_fd = fds
    os.setpgid(0, 0)  # the parent kills the whole group, grandchildren included
    if reaper.in_namespace_init():  # PID 1 gets only the signals it handles: the parent's SIGTERM too
        signal.signal(signal.SIGTERM, lambda *_: os._exit(128 + signal.SIGTERM))
    else:  # no namespace: its orphans come to it while it runs, and die at its end (the server's after it)
        reaper.become_subreaper()
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    os.close(out_fd)
    os.close(err_fd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    job = pickle.loads(payload)
    threading.Thread(target=_lifeline, args=(life_fd,), daemon=True).start()
    _apply_memory_cap(job.max_memory_mb)
    _enter_context(job)

    def emit(message: dict[str, Any]) -> None:
        data = encode_frame(message)
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view) :]

    # PID 1's end is the namespace's (the kernel kills the rest); else its orphans die before its end frame,
    # after which the parent kills it at once
    _run_in_child(job, emit, reap=not reaper.in_namespace_init())
    os._exit(0)


def _enter_context(job: Any) -> None:
    """The parent's environment, working folder and import path, as of this attempt."""
    os.environ.clear()
    os.environ.update(job.environ)
    sys.path[:] = job.sys_path
    with contextlib.suppress(OSError):
        os.chdir(job.cwd)


def _run_in_child(job: Any, emit: Emit, *, reap: bool = False) -> None:
    from pytest_tokcompat.judge.job import run_job

    try:
        _runner(job, run_job)(job, emit, contain=True)
    except BaseException as error:  # a failure outside an attempt's own guard: report it, never raise
        text = "".join(traceback.format_exception_only(type(error), error)).strip()
        emit({"kind": "error", "detail": text[:2000]})
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BaseException):
                stream.flush()
        if reap:
            reaper.reap_children()
    emit({"kind": "end"})


def _runner(job: Any, run_job: Callable[..., None]) -> Callable[..., None]:
    """A job that brings its own ``execute(job, emit, contain=...)`` (the upstream watch's registry read)
    runs that; a ladder attempt runs ``job.run_job``."""
    execute = getattr(type(job), "execute", None)
    return execute if callable(execute) else run_job


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
            env=without_credentials(os.environ),  # nothing forked from it can read a credential
        )
        child.close()
        self.owner = os.getpid()
        self.ready: dict[str, Any] | None = None
        self.pending = False

    def wait_ready(self) -> dict[str, Any]:
        if self.ready is None:
            self.sock.settimeout(SERVER_START_SECONDS)
            try:
                self.ready = _recv_json(self.sock)
            except (OSError, EOFError, ValueError) as error:
                self.ready = {"ready": False, "error": f"no answer ({type(error).__name__})"}
            finally:
                self.sock.settimeout(None)
        if not self.ready.get("ready"):
            raise ServerUnavailable(f"the judge's fork server could not start: {self.ready.get('error')}")
        return self.ready

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.process.poll() is None

    def reply(self, seconds: float) -> dict[str, Any]:
        """The server's next message, or ServerUnresponsive after ``seconds``."""
        self.sock.settimeout(seconds)
        try:
            return _recv_json(self.sock)
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


def start_server() -> None:
    """Start the fork server now (its imports then overlap with the caller's own work)."""
    global _SERVER
    if isolation_mode() == "process":
        with _LOCK:
            if _SERVER is None or not _SERVER.alive():
                _SERVER = _Server()


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

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.handle: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.handle = os.pidfd_open(pid)

    def signal(self, signum: int) -> None:
        """Signal the child's process group (what it started) and the child itself, if it left the group."""
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
    """Run ``job`` in a child and collect what it says; ``timeout`` applies to each phase anew."""
    mode = isolation_mode()
    if mode == "inprocess":
        return _scrubbed(_run_in_process(job, timeout))
    if mode == "spawn":
        return _scrubbed(_run_spawned(job, timeout))
    with _LOCK:
        try:
            server = _server()
        except ServerUnavailable as error:
            return ChildRun(messages=[{"kind": "error", "detail": str(error)}, {"kind": "end"}])
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


def _reply_limit(timeout: float | None) -> float:
    return min(SERVER_REPLY_SECONDS, max(1.0, timeout)) if timeout else SERVER_REPLY_SECONDS


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
            server.reply(_reply_limit(timeout))
            server.pending = False
        try:
            socket.send_fds(server.sock, [_HEADER.pack(len(payload))], theirs)
            server.sock.sendall(payload)
        finally:
            for descriptor in theirs:
                os.close(descriptor)
        target = _Target(int(server.reply(_reply_limit(timeout))["pid"]))
        status = _watch(server, target, res_r, out_r, err_r, timeout, run, binding)
    except ServerUnresponsive as error:
        lost = f"the judge's fork server did not answer within {_reply_limit(timeout):g} s ({error})"
    except (OSError, EOFError, ValueError, KeyError) as error:
        run.messages.append({"kind": "error", "detail": f"the judge's fork server failed: {error}"})
        with contextlib.suppress(subprocess.TimeoutExpired):  # its socket closes a moment before it is gone
            server.process.wait(0.5)
    finally:
        if lost is None and server.process.poll() is not None:
            code = server.process.returncode
            how = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
            lost = f"the judge's fork server died during the attempt ({how})"
        elif lost is None and reaper.stopped(server.process.pid):
            lost = f"the judge's fork server was stopped during the attempt ({server.state()})"
        if target is not None:
            if lost is not None:  # no server reaps what the attempt left: its whole tree goes now
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
        run.ended = _describe_status(status)
    binding.finish(run.finished)
    run.untrusted = binding.problem
    return run


def _take(run: ChildRun, binding: Binding, messages: list[dict[str, Any]], timeout: float | None) -> bool:
    """Keep the messages the job's binding accepts; True where a phase advanced (the limit starts anew)."""
    advanced = False
    for message in messages:
        if not binding.accept(message):
            return advanced
        run.messages.append(message)
        if message.get("kind") == "phase" and _advances(run, message):
            run.phase = str(message["phase"])
            advanced = True
    return advanced


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
    reader, tails = _FrameReader(), {out_r: _Tail(), err_r: _Tail()}
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
            if killed_at is not None and now >= killed_at + _reply_limit(timeout):
                raise ServerUnresponsive(server.state())
            if terminated_at is None:
                wait = None if deadline is None else deadline - now
            elif killed_at is None:
                wait = terminated_at + GRACE_SECONDS - now
            else:
                wait = killed_at + _reply_limit(timeout) - now
            for key, _ in selector.select(None if wait is None else max(0.0, wait)):
                if key.fileobj is server.sock:
                    status = int(server.reply(_reply_limit(timeout))["status"])
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
                    if _take(run, binding, reader.feed(chunk), timeout):
                        deadline = None if not timeout else time.monotonic() + timeout
                    if reader.error:
                        binding.refuse(reader.error)
                        selector.unregister(descriptor)
        for descriptor in (res_r, out_r, err_r) if terminated_at is None else (out_r, err_r):
            _drain(descriptor, reader if descriptor == res_r else tails[descriptor], run, binding)
    finally:
        selector.close()
    run.stdout, run.stderr = tails[out_r].text(), tails[err_r].text()
    return status


_PHASES = ("prepare", "load", "encode")


def _advances(run: ChildRun, message: dict[str, Any]) -> bool:
    """Only a step forward (prepare, load, encode) renews the time limit: a child cannot extend its own."""
    phase = message.get("phase")
    return phase in _PHASES and _PHASES.index(str(phase)) > _PHASES.index(run.phase)


def _drain(descriptor: int, sink: _FrameReader | _Tail, run: ChildRun, binding: Binding) -> None:
    for _ in range(1024):
        try:
            chunk = os.read(descriptor, 65536)
        except (BlockingIOError, OSError):
            return
        if not chunk:
            return
        if isinstance(sink, _FrameReader):
            _take(run, binding, sink.feed(chunk), None)
            if sink.error:
                binding.refuse(sink.error)
                return
        else:
            sink.feed(chunk)


# ---- the fallbacks: spawn (no fork on this platform) and in-process (benchmarks, debuggers) -------


def _run_in_process(job: Any, timeout: float | None) -> ChildRun:
    """The attempt in this process: no isolation at all (TOKCOMPAT_ISOLATION=inprocess)."""
    from pytest_tokcompat.judge.isolation import isolated_transformers
    from pytest_tokcompat.judge.job import run_job
    from pytest_tokcompat.judge.timelimit import LoadTimeout, time_limit

    run = ChildRun()

    def emit(message: dict[str, Any]) -> None:
        run.messages.append(json.loads(json.dumps(message, default=str)))
        if message.get("kind") == "phase":
            run.phase = str(message["phase"])

    with isolated_transformers():
        try:
            with time_limit(timeout):
                _runner(job, run_job)(job, emit, contain=False)
        except LoadTimeout:
            run.timed_out = True
    run.messages.append({"kind": "end"})
    return run


def _spawned_main(job: Any, connection: Any) -> None:
    """The child of a spawn: Python-level capture of its output, the same messages over a pipe."""
    import io

    class _Bounded(io.StringIO):
        def write(self, text: str) -> int:
            count = super().write(text)
            if self.tell() > 4 * CAPTURE_BYTES:
                tail = self.getvalue()[-CAPTURE_BYTES:]
                self.seek(0)
                self.truncate()
                super().write(tail)
            return count

    sys.stdout, sys.stderr = _Bounded(), _Bounded()
    _apply_memory_cap(job.max_memory_mb)
    _enter_context(job)

    def emit(message: dict[str, Any]) -> None:
        if message.get("kind") == "end":
            message = {**message, "stdout": _captured(sys.stdout), "stderr": _captured(sys.stderr)}
        connection.send_bytes(encode_frame(message))

    _run_in_child(job, emit)
    os._exit(0)


def _run_spawned(job: Any, timeout: float | None) -> ChildRun:
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_spawned_main, args=(job, sender), daemon=True)
    run, reader, binding = ChildRun(), _FrameReader(), Binding(job)
    process.start()
    sender.close()
    deadline = None if not timeout else time.monotonic() + timeout
    try:
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not receiver.poll(wait):
                if deadline is not None and time.monotonic() >= deadline:
                    run.timed_out = True
                    break
                continue
            try:
                data = receiver.recv_bytes(MAX_FRAME_BYTES)
            except (EOFError, OSError):
                break
            if _take(run, binding, reader.feed(data), timeout):
                deadline = None if not timeout else time.monotonic() + timeout
            end = next((m for m in run.messages if m.get("kind") == "end"), None)
            if end is not None:
                run.stdout, run.stderr = str(end.get("stdout", "")), str(end.get("stderr", ""))
            if reader.error:
                binding.refuse(reader.error)
            if run.finished or binding.problem:
                break
    finally:
        process.join(GRACE_SECONDS)
        if process.is_alive():
            process.terminate()
            process.join(GRACE_SECONDS)
        if process.is_alive():
            process.kill()
            process.join()
        receiver.close()
    if not run.finished and process.exitcode is not None:
        code = process.exitcode
        run.ended = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    binding.finish(run.finished)
    run.untrusted = binding.problem
    return run
