"""The wire between a child and its parent: length-prefixed JSON frames, and what the parent keeps of them.

Never pickle in this direction: nothing a child sends can run code in the parent. A leaf shared by the
fork server's side (``forkserver``), the parent's (``child``) and the spawn fallback (``spawned``)."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pytest_tokcompat.credentials import scrub, scrub_cut
from pytest_tokcompat.judge.frames import Binding

CAPTURE_BYTES = 4096


GRACE_SECONDS = 1.0


MAX_FRAME_BYTES = 64 * 1024 * 1024


HEADER = struct.Struct(">Q")


FRAME = struct.Struct(">I")


Emit = Callable[[dict[str, Any]], None]


def captured(stream: object) -> str:
    """The tail of what the attempt printed (the child swaps stdout/stderr for StringIO buffers)."""
    getvalue = getattr(stream, "getvalue", None)
    return str(getvalue())[-CAPTURE_BYTES:] if callable(getvalue) else ""


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


def encode_frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, default=str).encode("utf-8")
    return FRAME.pack(len(body)) + body


class FrameReader:
    """Splits the child's byte stream into messages; anything malformed ends the reading."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.error: str | None = None

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        if self.error:
            return []
        self.buffer += data
        found: list[dict[str, Any]] = []
        while len(self.buffer) >= FRAME.size:
            (size,) = FRAME.unpack_from(self.buffer)
            if size > MAX_FRAME_BYTES:
                self.error = f"the child sent a {size}-byte message, over the {MAX_FRAME_BYTES}-byte limit"
                return found
            if len(self.buffer) < FRAME.size + size:
                break
            body = bytes(self.buffer[FRAME.size : FRAME.size + size])
            del self.buffer[: FRAME.size + size]
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


class Tail:
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
        """What was kept, scrubbed of credential values here, before anything shortens it further: a
        secret cut by the dropped bytes (or by a later excerpt) would no longer match its value."""
        text = self.data.decode("utf-8", errors="replace")
        if self.total > CAPTURE_BYTES:
            return f"[... {self.total - CAPTURE_BYTES} earlier bytes dropped]\n{scrub_cut(text)}"
        return scrub(text)


def describe_status(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def send_json(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(encode_frame(message))


def recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise EOFError
        chunks += chunk
    return bytes(chunks)


def recv_json(sock: socket.socket) -> dict[str, Any]:
    (size,) = FRAME.unpack(recv_exact(sock, FRAME.size))
    return dict(json.loads(recv_exact(sock, size)))


def take(run: ChildRun, binding: Binding, messages: list[dict[str, Any]], timeout: float | None) -> bool:
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


_PHASES = ("prepare", "load", "encode")


def _advances(run: ChildRun, message: dict[str, Any]) -> bool:
    """Only a step forward (prepare, load, encode) renews the time limit: a child cannot extend its own."""
    phase = message.get("phase")
    return phase in _PHASES and _PHASES.index(str(phase)) > _PHASES.index(run.phase)


def drain(descriptor: int, sink: FrameReader | Tail, run: ChildRun, binding: Binding) -> None:
    for _ in range(1024):
        try:
            chunk = os.read(descriptor, 65536)
        except (BlockingIOError, OSError):
            return
        if not chunk:
            return
        if isinstance(sink, FrameReader):
            take(run, binding, sink.feed(chunk), None)
            if sink.error:
                binding.refuse(sink.error)
                return
        else:
            sink.feed(chunk)
