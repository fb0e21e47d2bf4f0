"""The parent's side of one attempt: the job it hands a child, and the Attempt it makes of the child's frames.

Parity is measured here, from what the child observed (``observed.Replay``) against the truth this
process holds; nothing a child claims of its own result is used."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pytest_tokcompat.credentials import token_files, without_credentials
from pytest_tokcompat.errors import CheckpointError
from pytest_tokcompat.judge.cacheguard import child_environ
from pytest_tokcompat.judge.job import Job
from pytest_tokcompat.judge.judgement import (
    CRASHED,
    DRIFT,
    ENCODE_ERROR,
    LOAD_ERROR,
    OK,
    TIMEOUT,
    Attempt,
    truth_from,
    view_from,
)
from pytest_tokcompat.judge.loading import memory_hint
from pytest_tokcompat.judge.mounts import hub_caches
from pytest_tokcompat.judge.observed import Malformed, NotObserved, Replay, Report, questions_for, read_report
from pytest_tokcompat.judge.parity import MATCH, NOT_CHECKED, Parity, Truth, check_parity
from pytest_tokcompat.judge.static import StaticView
from pytest_tokcompat.judge.subject import Subject
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.model import AttemptStatus


def _encode_all(tokenizer: Any, texts: list[str]) -> None:
    for text in texts:
        tokenizer.encode(text, add_special_tokens=False)


@dataclass
class Found:
    """What the children found out about the checkpoint, handed on to the next child."""

    view: StaticView | None = None
    texts: list[str] | None = None
    truth: Truth | None = None
    truth_error: str | None = None
    recorded: dict[str, Any] | None = None


def make_job(
    subject: Subject,
    remedy: str | None,
    alias: Alias | None,
    found: Found,
    *,
    record: bool,
    loader: ClientLoader | None = None,
) -> Job:
    """The job one child runs: ``subject``'s files, by its target, under its settings."""
    import os
    import sys

    settings = subject.settings
    return Job(
        folder=str(subject.folder),
        remedy=remedy,
        alias=alias,
        registry=subject.registry,
        extra_texts=list(subject.texts),
        golden_path=str(subject.golden_path) if subject.golden_path else None,
        record=record,
        view=asdict(found.view) if found.view is not None else None,
        texts=found.texts,
        questions=asdict(questions_for(found.truth)) if found.texts is not None else None,
        truth_error=found.truth_error,
        environ=child_environ(without_credentials(os.environ)),
        cwd=os.getcwd(),
        sys_path=[str(p) for p in sys.path],
        max_memory_mb=settings.limits.max_memory_mb or None,
        loader=loader,
        target=subject.target,
        acknowledged=dict(subject.acknowledged),
        isolation=settings.isolation,
        guarded=[str(settings.cache), *hub_caches(os.environ)],
        hidden=[str(path) for path in token_files()],
    )


def absorb(
    run: Any,
    remedy: str,
    found: Found,
    timeout: float | None,
    max_memory_mb: float | None = None,
    *,
    keep_replay: bool = False,
) -> Attempt:
    """Take what a child said: the checkpoint's view and truth, and this attempt (or why it has none),
    its parity measured here from what the child observed (kept as ``replay`` only where asked: a run
    holds many attempts)."""
    if run.untrusted:  # a frame not of its job (judge/frames.py): nothing that child said is used
        refused = untrusted_attempt(remedy, run.untrusted)
        refused.stdout, refused.stderr = run.stdout or None, run.stderr or None
        return refused
    attempt: Attempt | None = None
    failure: str | None = None
    for message in run.messages:
        kind = message.get("kind")
        if kind == "view":
            found.view = view_from(message["view"])
        elif kind == "truth":
            found.texts = [str(t) for t in message["texts"]]
            found.truth = truth_from(message.get("truth"))
            found.truth_error = message.get("truth_error")
            found.recorded = message.get("recorded") or found.recorded
        elif kind == "checkpoint-error":
            raise CheckpointError(str(message.get("message")))
        elif kind == "attempt":
            try:
                attempt = measure(read_report(message["attempt"]), remedy, found, max_memory_mb)
            except Malformed as error:
                attempt = untrusted_attempt(remedy, f"an 'attempt' frame {error}")
            except NotObserved as error:
                attempt = untrusted_attempt(remedy, f"an 'attempt' frame without the answer to {error}")
        elif kind == "error":
            failure = str(message.get("detail"))
    if attempt is None:
        attempt = _unreported(run, remedy, failure, timeout)
    attempt.stdout, attempt.stderr = run.stdout or None, run.stderr or None
    attempt.replay = attempt.replay if keep_replay else None
    return attempt


def measure(report: Report, remedy: str, found: Found, max_memory_mb: float | None) -> Attempt:
    """The attempt a child reported, its parity computed here: the child's observations replayed into
    check_parity against the truth this process holds (what the child claims of itself is never used)."""
    if report.tampered:
        return untrusted_attempt(
            remedy,
            "answers recorded after checkpoint code replaced the judge's own code in that process ("
            + ", ".join(report.tampered)
            + ")",
        )
    attempt = Attempt(
        remedy,
        LOAD_ERROR,
        report.detail,
        report.tokenizer_class,
        warnings=report.warnings,
        seconds=report.seconds,
        undecided=report.undecided,
        loaded_as=report.loaded_as,
    )
    if report.observations is None:
        return attempt
    replay, texts = Replay(report.observations), found.texts or []
    attempt.replay = replay
    try:
        if found.truth is None and found.truth_error:
            _encode_all(replay, texts)  # no truth to compare with: does it encode at all?
            attempt.parity = Parity(NOT_CHECKED, reason=found.truth_error)
        else:
            attempt.parity = check_parity(replay, found.truth, texts)
    except Exception as error:  # a tokenizer that loads but cannot encode is no remedy
        attempt.status, attempt.detail = ENCODE_ERROR, memory_hint(error, max_memory_mb)
        attempt.undecided = isinstance(error, MemoryError)
        return attempt
    statuses = {MATCH: OK, NOT_CHECKED: AttemptStatus.NOT_CHECKED}
    attempt.status = statuses.get(attempt.parity.status, DRIFT)
    if attempt.status == DRIFT:
        attempt.detail = attempt.parity.describe()
    attempt.undecided = False
    return attempt


def untrusted_attempt(remedy: str, problem: str) -> Attempt:
    """The attempt of a child whose frames were not its job's: not checked, and undecided."""
    detail = f"not checked: the attempt's process sent {problem}; nothing it reported is used"
    if problem.startswith("the judge's fork server"):
        detail = f"not checked: {problem}"
    return Attempt(
        remedy, AttemptStatus.NOT_CHECKED, detail, parity=Parity(NOT_CHECKED, reason=detail), undecided=True
    )


def _unreported(run: Any, remedy: str, failure: str | None, timeout: float | None) -> Attempt:
    """The attempt of a child that never reported one: stopped at the time limit, died, or failed us."""
    if run.timed_out:
        what = {
            "load": "the load",
            "encode": "encoding the probe texts",
        }.get(run.phase, "reading the checkpoint and its ground truth")
        detail = f"{what} took longer than {timeout:g} s (--tokcompat-load-timeout); the process was killed"
        return Attempt(remedy, TIMEOUT, detail, undecided=True)
    if failure is not None:
        return Attempt(remedy, CRASHED, failure, undecided=True)
    detail = f"the attempt's process {run.ended or 'ended'} before it reported"
    if run.last_stderr_line():
        detail += f" (last stderr line: {run.last_stderr_line()})"
    if run.phase == "prepare":
        detail += " while reading the checkpoint"
    return Attempt(remedy, CRASHED, detail, undecided=run.phase == "prepare")
