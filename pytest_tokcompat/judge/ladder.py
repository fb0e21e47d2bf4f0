"""The verdict ladder: the least remedy with which AutoTokenizer loads a checkpoint AND tokenizes right.

Remedies are tried in order of how much they ask of a user: plain loading, the
checkpoint's own code (only where the entry opts in), then our config alias. A
remedy that loads but gives other ids is not a remedy. Every attempt runs
isolated, so nothing one attempt registers changes the next.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat.judge.isolation import isolated_transformers
from pytest_tokcompat.judge.parity import (
    MATCH,
    NOT_CHECKED,
    Parity,
    Truth,
    check_parity,
    ground_truth,
    reference_tokenizer,
    write_golden,
)
from pytest_tokcompat.judge.probes import probe_texts
from pytest_tokcompat.judge.remedies import register_alias
from pytest_tokcompat.judge.static import StaticView, special_tokens, static_view
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.model import Remedy, Verdict

REMEDIES = tuple(Remedy)
BROKEN, UNCHECKED = Verdict.BROKEN, Verdict.NOT_CHECKED
DEFAULT_LOAD_TIMEOUT = 300.0
DEFAULT_MAX_FILE_MB = 512


@dataclass(frozen=True)
class Limits:
    """How long one load may take, and how large a tokenizer file may be, before it is refused."""

    load_timeout: float | None = DEFAULT_LOAD_TIMEOUT
    max_file_mb: float = DEFAULT_MAX_FILE_MB


DEFAULT_LIMITS = Limits()


class LoadTimeout(Exception):
    """A load ran past its time limit (remote code that hangs, a pathological file)."""


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the block after ``seconds``, inside whatever timer is already running.

    The process has one real-time timer (SIGALRM), and pytest-timeout's signal method
    uses it too. So: where an outer timer fires sooner, it is left alone to do its job;
    else ours is armed, and on exit the outer timer gets back its remaining time and
    its handler. Main thread only; elsewhere no limit is applied.
    """
    if (
        not seconds
        or threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
    ):
        yield
        return
    outer_left, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    if outer_left and outer_left <= seconds:
        yield  # the outer timer ends the block first, as its owner asked
        return
    outer_handler = signal.getsignal(signal.SIGALRM)
    armed = True

    def expire(signum: int, frame: Any) -> None:
        if armed:  # not when the alarm lands between the block's end and disarming
            raise LoadTimeout(f"the load took longer than {seconds:g} s (--tokcompat-load-timeout)")

    started = time.monotonic()
    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        # None: a handler not set from Python; the default is the closest we can restore.
        signal.signal(signal.SIGALRM, outer_handler if outer_handler is not None else signal.SIG_DFL)
        if outer_left:
            left = outer_left - (time.monotonic() - started)
            # A deadline that passed meanwhile still fires, at once (0 would disarm it instead).
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), outer_interval)


def check_file_sizes(folder: Path, names: list[str], max_file_mb: float) -> None:
    """Refuse tokenizer files over the cap before anything parses them."""
    from pytest_tokcompat.errors import CheckpointError

    for name in names:
        size = (folder / name).stat().st_size
        if size > max_file_mb * 1024 * 1024:
            raise CheckpointError(
                f"{folder / name} is {size / 1024 / 1024:.0f} MB, over the {max_file_mb:g} MB cap; "
                "if the file is genuine, raise --tokcompat-max-file-mb"
            )


@dataclass
class Attempt:
    remedy: str
    status: str
    """ok, drift (loads, wrong ids), load-error, encode-error, timeout, not-checked (loads, no ground
    truth) or skipped."""
    detail: str | None = None
    tokenizer_class: str | None = None
    parity: Parity | None = None
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    remote_files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "remedy": self.remedy,
            "status": self.status,
            "detail": self.detail,
            "tokenizer_class": self.tokenizer_class,
            "parity": self.parity.to_json() if self.parity else None,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "remote_files": self.remote_files,
        }


@dataclass
class Judgement:
    transformers_version: str
    static: StaticView
    verdict: str
    parity: Parity
    attempts: list[Attempt]
    texts: int
    truth_source: str | None
    recorded: Path | None = None
    tokenizer: Any = field(default=None, repr=False)

    @property
    def model_type(self) -> str | None:
        return self.static.model_type

    def attempt(self, remedy: str) -> Attempt | None:
        return next((a for a in self.attempts if a.remedy == remedy), None)

    @property
    def remote_files_ran(self) -> list[str]:
        return [name for a in self.attempts for name in a.remote_files]

    def to_json(self) -> dict[str, Any]:
        return {
            "transformers_version": self.transformers_version,
            "model_type": self.model_type,
            "static": self.static.to_json(),
            "verdict": self.verdict,
            "parity": self.parity.to_json(),
            "attempts": [a.to_json() for a in self.attempts],
            "probe_texts": self.texts,
            "ground_truth": self.truth_source,
            "remote_files_ran": self.remote_files_ran,
        }


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.messages) < 5:
            self.messages.append(record.getMessage()[:300])


@contextmanager
def _transformers_warnings() -> Iterator[list[str]]:
    """Collect what transformers warns during a load: it often names the very cause of a drift."""
    logger = logging.getLogger("transformers")
    handler = _Collect()
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield handler.messages
    finally:
        logger.removeHandler(handler)
        for warning in caught[: max(0, 5 - len(handler.messages))]:
            handler.messages.append(f"{warning.category.__name__}: {str(warning.message)[:300]}")


def transformers_version() -> str:
    import transformers

    return str(transformers.__version__)


def load_with(folder: Path, remedy: str, alias: Alias | None = None) -> Any:
    """Load the tokenizer as one remedy prescribes; call inside ``isolated_transformers()``."""
    from transformers import AutoTokenizer

    if remedy == "alias":
        if alias is None:
            raise ValueError("the alias remedy needs an alias")
        register_alias(alias)
        if alias.tokenizer_class:
            import transformers

            return getattr(transformers, alias.tokenizer_class).from_pretrained(str(folder))
    return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=remedy == "auto_map")


def _skip_reason(remedy: str, view: StaticView, trust_remote_code: bool, alias: Alias | None) -> str | None:
    if remedy == "auto_map":
        if not view.has_auto_map:
            return "the checkpoint ships no auto_map"
        if not trust_remote_code:
            return (
                "trust_remote_code is off; opt in if you trust the checkpoint's code: `trust_remote_code: "
                "true` in its matrix entry, `tokcompat check --trust-remote-code`, or "
                "load_tokenizer(..., trust_remote_code=True)"
            )
    if remedy == "alias":
        if alias is None:
            return f"no alias for model_type {view.model_type!r} in the registry"
        if view.registered_natively:
            return f"transformers registers {view.model_type!r} natively; an alias never replaces it"
    return None


def _error_text(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:400] if text else ''}"


def judge(
    folder: Path,
    *,
    trust_remote_code: bool = False,
    extra_texts: tuple[str, ...] | list[str] = (),
    golden_path: Path | None = None,
    registry: dict[str, Alias] | None = None,
    record_as: str | None = None,
    keep_tokenizer: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> Judgement:
    """Run the ladder on one checkpoint folder under the installed transformers.

    ``record_as`` (a case id) writes golden ids from the first tokenizer that loads,
    where the checkpoint has no tokenizer.json; ``keep_tokenizer`` keeps the
    verdict's tokenizer on the judgement for fixtures and ``load_tokenizer()``.
    """
    view = static_view(folder, registry)
    from pytest_tokcompat.matrix.aliases import find_alias

    alias = find_alias(view.model_type, registry)
    check_file_sizes(folder, view.tokenizer_files, limits.max_file_mb)
    reference = reference_tokenizer(folder)
    texts = probe_texts(extra_texts, special_tokens(folder, reference))
    truth: Truth | None = ground_truth(folder, texts, golden_path, reference)
    recording = record_as is not None and reference is None and golden_path is not None
    attempts: list[Attempt] = []
    verdict, chosen, tokenizer, recorded = BROKEN, None, None, None
    for remedy in REMEDIES:
        reason = _skip_reason(remedy, view, trust_remote_code, alias)
        if reason:
            attempts.append(Attempt(remedy, "skipped", reason))
            continue
        attempt = Attempt(remedy, "load-error")
        if remedy == "auto_map":
            attempt.remote_files = list(view.remote_code_files)
        started = time.perf_counter()
        with isolated_transformers(), _transformers_warnings() as messages:
            try:
                with time_limit(limits.load_timeout):
                    loaded = load_with(folder, remedy, alias)
            except LoadTimeout as error:
                attempt.status, attempt.detail, loaded = "timeout", str(error), None
            except Exception as error:  # any failure to load is this attempt's result
                attempt.detail = _error_text(error)
                loaded = None
            if loaded is not None:
                attempt.tokenizer_class = type(loaded).__name__
                if recording and golden_path is not None and record_as is not None:
                    ids = {t: list(loaded.encode(t, add_special_tokens=False)) for t in texts}
                    decoded = {t: loaded.decode(ids[t], skip_special_tokens=False) for t in texts}
                    write_golden(
                        golden_path,
                        record_as,
                        ids,
                        decoded,
                        f"recorded with remedy {remedy} on "
                        f"transformers {transformers_version()} ({type(loaded).__name__})",
                    )
                    recorded, recording = golden_path, False
                    truth = ground_truth(folder, texts, golden_path, reference)
                try:
                    with time_limit(limits.load_timeout):
                        attempt.parity = check_parity(loaded, truth, texts)
                except Exception as error:  # a tokenizer that loads but cannot encode is no remedy
                    attempt.status, attempt.detail = "encode-error", _error_text(error)
                    loaded = None
                else:
                    statuses = {MATCH: "ok", NOT_CHECKED: "not-checked"}
                    attempt.status = statuses.get(attempt.parity.status, "drift")
                    if attempt.status == "drift":
                        attempt.detail = attempt.parity.describe()
        attempt.seconds = time.perf_counter() - started
        attempt.warnings = list(messages)
        attempts.append(attempt)
        if attempt.status in ("ok", "not-checked"):
            verdict = remedy if attempt.status == "ok" else UNCHECKED
            chosen, tokenizer = attempt, loaded if keep_tokenizer else None
            break
    if chosen is not None and chosen.parity is not None:
        parity = chosen.parity
    else:
        tried = [a.parity for a in attempts if a.parity is not None]
        parity = tried[0] if tried else Parity(NOT_CHECKED, reason="no remedy loaded the tokenizer")
    return Judgement(
        transformers_version=transformers_version(),
        static=view,
        verdict=verdict,
        parity=parity,
        attempts=attempts,
        texts=len(texts),
        truth_source=truth.source if truth else None,
        recorded=recorded,
        tokenizer=tokenizer,
    )
