"""The fork server: imports transformers once, then forks one child per attempt and runs its job there.

Runs in its own process (started by ``child._Server``); the child it forks caps its memory, takes the
parent's environment and runs the job (``job.run_job``, or a job's own ``execute``), sending frames."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from pytest_tokcompat.judge import reaper
from pytest_tokcompat.judge.wire import HEADER, Emit, encode_frame, recv_exact, send_json


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


def serve(fd: int, wanted: str = reaper.MOUNT_NAMESPACE) -> None:
    """The fork server's loop: one child per job, its pid and then its exit status sent back, once the
    child and everything it started are gone."""
    import gc

    containment = reaper.Containment(wanted)  # first: while this process is still single-threaded
    sock = socket.socket(fileno=fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles interrupts and kills children
    try:
        version = _preload()
    except BaseException as error:
        send_json(sock, {"ready": False, "error": f"{type(error).__name__}: {error}"})
        return
    ready = {
        "ready": True,
        "transformers": version,
        "containment": containment.mode,
        "nested": os.getpid() == 1,
    }
    send_json(sock, ready)
    gc.collect()
    gc.freeze()  # children then do not copy the server's pages just to scan them
    while True:
        try:
            header, fds, _flags, _address = socket.recv_fds(sock, HEADER.size, 4)
        except OSError:
            return
        if len(header) < HEADER.size:
            return
        (size,) = HEADER.unpack(header)
        try:
            payload = recv_exact(sock, size)
        except EOFError:
            return
        contained = containment.before_fork()
        pid = os.fork()
        if pid == 0:
            try:
                sock.close()
                containment.after_fork(in_child=True)
                _child_main(payload, fds, containment)
            finally:
                os._exit(70)
        if contained:
            containment.after_fork(in_child=False)
        for descriptor in fds:
            os.close(descriptor)
        try:
            send_json(sock, {"pid": pid})
            _, status = os.waitpid(pid, 0)
            containment.reap()  # what the attempt left (a subreaper's orphans) dies before its end is told
            send_json(sock, {"pid": pid, "status": status})
        except OSError:
            return


def _lifeline(fd: int) -> None:
    """End the child when the parent goes away (the parent holds the other end of this pipe)."""
    try:
        os.read(fd, 1)
    finally:
        os._exit(71)


def apply_memory_cap(megabytes: float | None) -> None:
    if not megabytes:
        return
    try:
        import resource

        limit = int(megabytes * 1024 * 1024)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):  # not on this platform: no cap
        pass


def _child_main(payload: bytes, fds: list[int], containment: reaper.Containment) -> None:
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

    def emit(message: dict[str, Any]) -> None:
        data = encode_frame(message)
        view = memoryview(data)
        while view:
            view = view[os.write(result_fd, view) :]

    try:
        containment.enter_mounts(job)  # first: unshare(CLONE_NEWNS) needs a single thread
    except OSError as error:  # weaker than the server's mode promises: nothing of the job runs
        emit({"kind": "error", "detail": f"the attempt's mount namespace could not be set up ({error})"})
        emit({"kind": "end"})
        os._exit(0)
    threading.Thread(target=_lifeline, args=(life_fd,), daemon=True).start()
    apply_memory_cap(job.max_memory_mb)
    enter_context(job)

    # PID 1's end is the namespace's (the kernel kills the rest); else its orphans die before its end frame,
    # after which the parent kills it at once
    run_in_child(job, emit, reap=not reaper.in_namespace_init())
    os._exit(0)


def enter_context(job: Any) -> None:
    """The parent's environment, working folder and import path, as of this attempt."""
    os.environ.clear()
    os.environ.update(job.environ)
    sys.path[:] = job.sys_path
    with contextlib.suppress(OSError):
        os.chdir(job.cwd)


def run_in_child(job: Any, emit: Emit, *, reap: bool = False) -> None:
    from pytest_tokcompat.judge.job import run_job

    try:
        runner(job, run_job)(job, emit, contain=True)
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


def runner(job: Any, run_job: Callable[..., None]) -> Callable[..., None]:
    """A job that brings its own ``execute(job, emit, contain=...)`` (the upstream watch's registry read)
    runs that; a ladder attempt runs ``job.run_job``."""
    execute = getattr(type(job), "execute", None)
    return execute if callable(execute) else run_job
