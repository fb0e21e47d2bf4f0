"""What the parent accepts from an attempt's child: only the frames of the job it sent, in their order.

The child runs checkpoint code, and that code can find the result pipe and write to it. So a frame is
data the child claims, never a verdict by itself: the parent binds what it reads to the job it sent
(which remedy, whether it asked for the checkpoint's view and ground truth, whether a client loader
runs) and to the protocol's order (the checkpoint read before the load, one attempt, nothing after
``end``). A frame for another remedy, a second attempt, a frame after ``end``, a view or ground truth
the job did not ask for, an attempt that claims its own status or parity (the parent measures them
from the child's observations, ``observed.py``), or a malformed frame makes the whole run untrusted: its attempt is
``not-checked``, undecided, and nothing it said (not even its ground truth) is used.
"""

from __future__ import annotations

from typing import Any

_BEFORE_LOAD = ("view", "truth", "checkpoint-error")
_LOADER_ONLY = ("registers", "replaces-native")
"""What a client loader's job reports beside its attempt (what it registered, what it registered over)."""
_KINDS = frozenset({*_BEFORE_LOAD, "phase", "attempt", *_LOADER_ONLY, "error", "end"})
_ONCE = frozenset({*_BEFORE_LOAD, "attempt", *_LOADER_ONLY, "error", "end"})


def expected_remedy(job: Any) -> str | None:
    """The name of the attempt ``job`` asks for: its remedy (with its repairs: ``native+declared_special_tokens``),
    ``loader:NAME`` for a client loader, None: only the checkpoint's view and ground truth."""
    loader = getattr(job, "loader", None)
    if loader is not None:
        return f"loader:{loader.name}"
    remedy = getattr(job, "remedy", None)
    if remedy is None:
        return None
    return "+".join([str(remedy), *(str(repair) for repair in getattr(job, "repairs", None) or ())])


class Binding:
    """Checks each frame of one child against the job the parent sent; ``problem`` is the first breach."""

    def __init__(self, job: Any) -> None:
        self.ladder = hasattr(job, "remedy") and hasattr(job, "texts")
        """A ladder attempt (its frames are checked in full); other jobs (the upstream watch's registry read,
        which runs no checkpoint code) only by the order every job keeps."""
        self.remedy = expected_remedy(job) if self.ladder else None
        self.wants_view = self.ladder and getattr(job, "view", None) is None
        self.wants_truth = self.ladder and getattr(job, "texts", None) is None
        self.wants_counts = self.ladder and getattr(job, "loader", None) is not None
        self.seen: set[str] = set()
        self.loading = False
        self.problem: str | None = None

    def accept(self, message: dict[str, Any]) -> bool:
        """True: ``message`` belongs to the job; False (and ``problem`` set): the run is untrusted."""
        if self.problem is None:
            self.problem = self._breach(message)
            if self.problem is None:
                kind = str(message.get("kind"))
                self.seen.add(kind)
                self.loading = self.loading or (kind == "phase" and message.get("phase") != "prepare")
        return self.problem is None

    def refuse(self, problem: str) -> None:
        """A breach the parent saw outside the frames (a malformed byte stream, a stopped server)."""
        self.problem = self.problem or problem

    def finish(self, ended: bool) -> None:
        """An attempt frame from a process that never sent its end frame (killed, exited) is not trusted."""
        if ended or self.problem is not None or "attempt" not in self.seen:
            return
        self.problem = "its attempt frame was not followed by an end frame (the process was killed or exited)"

    def _breach(self, message: dict[str, Any]) -> str | None:
        kind = message.get("kind")
        shown = repr(kind)[:60]
        if "end" in self.seen:
            return f"a {shown} frame after its end frame"
        if not self.ladder:
            return None
        if kind not in _KINDS:
            return f"a frame of unknown kind {shown}"
        if kind in _ONCE and kind in self.seen:
            return f"a second {shown} frame"
        if kind in _BEFORE_LOAD and self.loading:
            return f"a {shown} frame after the load began"
        if kind == "view" and not self.wants_view:
            return "a 'view' frame for a checkpoint whose view the parent already had"
        if kind == "truth" and not self.wants_truth:
            return "a 'truth' frame for a checkpoint whose ground truth the parent already had"
        if kind in _LOADER_ONLY and not self.wants_counts:
            return f"a {shown} frame for a job that calls no client loader"
        if kind == "attempt":
            return self._attempt_breach(message.get("attempt"))
        if (
            kind == "end"
            and self.remedy is not None
            and not self.seen & {"attempt", "checkpoint-error", "error"}
        ):
            return "an end frame before any attempt frame"
        return None

    def _attempt_breach(self, attempt: Any) -> str | None:
        if self.remedy is None:
            return "an 'attempt' frame for a job that asked for no attempt"
        if not isinstance(attempt, dict):
            return "an 'attempt' frame without an attempt object"
        claimed = attempt.get("remedy")
        if claimed != self.remedy:
            return f"an 'attempt' frame for remedy {str(claimed)[:60]!r}, not {self.remedy!r}, the remedy it was sent"
        if "status" in attempt or "parity" in attempt:
            return "an 'attempt' frame that claims a status or parity (the parent measures them)"
        if not isinstance(attempt.get("loaded"), bool):
            return "an 'attempt' frame that does not say whether the tokenizer loaded"
        return None
