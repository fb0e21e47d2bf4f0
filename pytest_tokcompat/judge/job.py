"""One attempt's job: everything a child needs, and what the child runs with it (``run_job``).

The child (``child.py``) imports this and nothing of the ladder: earlier children's findings
travel in the job, the child's answers travel back as frames that the parent reads (``absorb``)."""

from __future__ import annotations

import contextlib
import errno
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat.errors import CheckpointError
from pytest_tokcompat.judge.chat import frozen_clock
from pytest_tokcompat.judge.judgement import LOAD_ERROR, Attempt, view_from
from pytest_tokcompat.judge.loading import (
    call_client_loader,
    load_with,
    memory_hint,
    native_replacements,
    registered_types,
    transformers_warnings,
)
from pytest_tokcompat.judge.observed import Questions, observe, questions_for
from pytest_tokcompat.judge.reading import read_truth
from pytest_tokcompat.judge.static import static_view
from pytest_tokcompat.judge.tamper import Snapshot
from pytest_tokcompat.judge.timelimit import LoadTimeout
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.sources.names import LoadTarget


@dataclass
class Job:
    """Everything a child needs for one attempt; what earlier children found is passed on, not redone."""

    folder: str
    remedy: str | None
    """None: only read the checkpoint (static view, probe texts, ground truth)."""
    alias: Alias | None
    registry: dict[str, Alias]
    extra_texts: list[str]
    golden_path: str | None
    record: bool
    view: dict[str, Any] | None
    texts: list[str] | None
    questions: dict[str, Any] | None
    """What to ask the tokenizer beyond encoding ``texts`` (``observed.Questions``): never the truth itself."""
    truth_error: str | None
    environ: dict[str, str]
    cwd: str
    sys_path: list[str]
    max_memory_mb: float | None
    loader: ClientLoader | None = None
    """A client's own loader to call instead of a remedy (``remedy`` is then None)."""
    target: LoadTarget | None = None
    """The name the client loads it by (None: the folder's path)."""
    repairs: list[str] = field(default_factory=list)
    """Repairs to apply on top of ``remedy`` (their names join the attempt's: ``native+declared_special_tokens``)."""
    acknowledged: dict[str, str] = field(default_factory=dict)
    """The contract dimensions the matrix entry acknowledges for this release, with the reason."""
    isolation: str = "process"
    """How the parent runs the attempt (the ``isolation`` setting): process, spawn or inprocess."""
    guarded: list[str] = field(default_factory=list)
    """The judge's own folders the attempt may read, never change, where it has a mount namespace: the
    snapshot cache (another checkpoint's assembled files)."""
    hidden: list[str] = field(default_factory=list)
    """Files the attempt sees empty where it has a mount namespace: the user's stored hub tokens."""


def run_job(job: Job, emit: Callable[[dict[str, Any]], None], *, contain: bool) -> None:
    """Read the checkpoint if no earlier child did, then load with ``job.remedy`` and report what the
    tokenizer answers to the job's questions (``observed.observe``); the parent computes parity from that.

    ``contain`` (in a child) turns every BaseException of the attempt (SystemExit, a Rust panic,
    KeyboardInterrupt raised by remote code) into the attempt's result; in-process, an interrupt
    still interrupts.
    """
    folder = Path(job.folder)
    changed = Snapshot.take().changes  # before any checkpoint code runs; bound here, out of its reach
    record_answers = observe
    try:
        name = job.target.name if job.target is not None else None
        view = static_view(folder, job.registry, name) if job.view is None else view_from(job.view)
        if job.view is None:
            emit({"kind": "view", "view": asdict(view)})
        if job.texts is None:
            texts, truth, _ = read_truth(
                folder,
                emit,
                extra_texts=job.extra_texts,
                golden_path=Path(job.golden_path) if job.golden_path else None,
                record=job.record,
                acknowledged=job.acknowledged,
            )
        else:
            texts, truth = job.texts, None
    except CheckpointError as error:
        emit({"kind": "checkpoint-error", "message": str(error)})
        return
    if job.remedy is None and job.loader is None:
        return
    questions = questions_for(truth) if job.texts is None else Questions.from_json(job.questions)
    observations: dict[str, Any] | None = None
    emit({"kind": "phase", "phase": "load"})
    attempt = Attempt(attempt_name(job), LOAD_ERROR)
    attempt.loaded_as = job.target.name if job.target is not None else str(folder)
    started = time.perf_counter()
    caught: tuple[type[BaseException], ...] = (BaseException,) if contain else (Exception,)
    with transformers_warnings() as messages:
        try:
            if job.loader is not None:
                loaded = call_client_loader(folder, job.loader, job.target)
            else:
                loaded = load_with(folder, job.remedy or "native", job.alias, job.target, job.repairs)
        except caught as error:  # any failure to load is this attempt's result
            if isinstance(error, LoadTimeout):  # in-process only: the caller's time limit
                raise
            attempt.detail, loaded = memory_hint(error, job.max_memory_mb), None
            attempt.undecided = isinstance(error, MemoryError)
            refused = read_only_write(error)
            if refused is not None:  # the judge's read-only view, not the tokenizer, stopped it: undecided
                attempt.detail = (
                    f"its code wrote to {refused}, which attempts may only read (read-only inside the "
                    f"attempt; in your process the write would land): {attempt.detail}"
                )
                attempt.undecided = True
        if job.loader is not None:
            with contextlib.suppress(Exception):  # findings beside the result, never the result
                emit({"kind": "registers", "registers": registered_types()})
                replaced = native_replacements(view.model_type) if view.registered_natively else []
                if replaced:
                    emit({"kind": "replaces-native", "replaces": replaced})
        if loaded is not None:
            attempt.tokenizer_class = type(loaded).__name__
            emit({"kind": "phase", "phase": "encode"})
            with frozen_clock():
                observations = record_answers(loaded, texts, questions, caught, (LoadTimeout,))
    report = {
        **{key: value for key, value in attempt.to_json().items() if key in _REPORTED},
        "loaded": loaded is not None,
        "undecided": attempt.undecided,
        "seconds": time.perf_counter() - started,
        "warnings": list(messages),
        "observations": observations,
        "tampered": changed(),
    }
    emit({"kind": "attempt", "attempt": report})


def read_only_write(error: BaseException) -> str | None:
    """The path of a write the attempt's read-only mounts refused (``EROFS``), anywhere in the chain of
    ``error``'s causes; None where the load failed otherwise."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno == errno.EROFS:
            return str(current.filename) if current.filename is not None else "a read-only path"
        current = current.__cause__ or current.__context__
    return None


_REPORTED = ("remedy", "detail", "tokenizer_class", "loaded_as")
"""What a child reports of its attempt beside whether it loaded and its observations: never a status."""


def attempt_name(job: Job) -> str:
    """``native``, ``native+declared_special_tokens`` (a repair on a remedy), ``loader:NAME``: the name the
    parent binds the child's attempt frame to (``frames.expected_remedy``)."""
    from pytest_tokcompat.judge.frames import expected_remedy

    return expected_remedy(job) or "native"
