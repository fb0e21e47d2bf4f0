"""The fallbacks of the fork server: a spawned process per attempt (no fork on this platform) and
in-process (``TOKCOMPAT_ISOLATION=inprocess``: benchmarks and debuggers, no isolation at all)."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from pytest_tokcompat.credentials import withheld
from pytest_tokcompat.judge.forkserver import apply_memory_cap, enter_context, run_in_child, runner
from pytest_tokcompat.judge.frames import Binding
from pytest_tokcompat.judge.wire import (
    CAPTURE_BYTES,
    GRACE_SECONDS,
    MAX_FRAME_BYTES,
    ChildRun,
    FrameReader,
    captured,
    encode_frame,
    take,
)


def run_in_process(job: Any, timeout: float | None) -> ChildRun:
    """The attempt in this process: no isolation at all (TOKCOMPAT_ISOLATION=inprocess)."""
    from pytest_tokcompat.judge.cacheguard import runs_checkpoint_code
    from pytest_tokcompat.judge.isolation import isolated_transformers
    from pytest_tokcompat.judge.job import run_job
    from pytest_tokcompat.judge.timelimit import LoadTimeout, time_limit

    run = ChildRun()

    def emit(message: dict[str, Any]) -> None:
        run.messages.append(json.loads(json.dumps(message, default=str)))
        if message.get("kind") == "phase":
            run.phase = str(message["phase"])

    with isolated_transformers(foreign=runs_checkpoint_code(job)):
        try:
            with time_limit(timeout):
                runner(job, run_job)(job, emit, contain=False)
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
    apply_memory_cap(job.max_memory_mb)
    enter_context(job)

    def emit(message: dict[str, Any]) -> None:
        if message.get("kind") == "end":
            message = {**message, "stdout": captured(sys.stdout), "stderr": captured(sys.stderr)}
        connection.send_bytes(encode_frame(message))

    run_in_child(job, emit)
    os._exit(0)


def run_spawned(job: Any, timeout: float | None) -> ChildRun:
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_spawned_main, args=(job, sender), daemon=True)
    run, reader, binding = ChildRun(), FrameReader(), Binding(job)
    with withheld():  # a spawned child starts with this process's environment: none of its credentials
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
            if take(run, binding, reader.feed(data), timeout):
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
