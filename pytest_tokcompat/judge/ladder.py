"""The verdict ladder: the least remedy with which AutoTokenizer loads a checkpoint AND tokenizes right.

Remedies are tried in order of how much they ask of a user: plain loading, the
checkpoint's own code (only where the entry opts in), our config alias, then the backend
override (tokenizer.json loaded with the fast backend as it is). A remedy that loads but
gives other ids on ordinary text is not a remedy; what else drifts is a finding beside the
verdict, and a repair (the declared BOS/EOS) is tried on the verdict's remedy where one
would clear a finding. Each attempt loads the checkpoint by the name the client gives
(``LoadTarget``: a hub repo id from the hub cache, a folder by its path as given), since
transformers chooses classes by that name. Every attempt runs in a
child process of its own (``judge/child.py``), so nothing one attempt does (a
monkeypatch, an exit, a panic, a hang, a thread, a flood of output) reaches the
next attempt, the next case or the caller; a checkpoint the judge could not
finish (a time or memory limit, an unreadable file) is not-checked, never broken.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat import environment
from pytest_tokcompat.credentials import without_credentials
from pytest_tokcompat.errors import CheckpointError
from pytest_tokcompat.judge.contract_checks import ContractTruth, frozen_clock
from pytest_tokcompat.judge.inputs import check_checkpoint_files
from pytest_tokcompat.judge.isolation import isolated_transformers
from pytest_tokcompat.judge.observed import (
    Malformed,
    NotObserved,
    Questions,
    Replay,
    Report,
    observe,
    questions_for,
    read_report,
)
from pytest_tokcompat.judge.parity import (
    MATCH,
    MISMATCH,
    NOT_CHECKED,
    Parity,
    Truth,
    check_parity,
    golden_probes,
    golden_truth,
    ground_truth,
    reference_tokenizer,
)
from pytest_tokcompat.judge.probes import derive_probes, probe_texts
from pytest_tokcompat.judge.remedies import register_alias
from pytest_tokcompat.judge.static import StaticView, special_tokens, static_view
from pytest_tokcompat.limits import LOAD_TIMEOUT, MAX_FILE_MB
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.model import AttemptStatus, Dimension, Remedy, Repair, Verdict
from pytest_tokcompat.sources.names import LoadTarget, served_offline

REMEDIES = tuple(Remedy)
BROKEN, UNCHECKED = Verdict.BROKEN, Verdict.NOT_CHECKED
DEFAULT_LOAD_TIMEOUT = LOAD_TIMEOUT.default
DEFAULT_MAX_FILE_MB = MAX_FILE_MB.default
OK, SKIPPED, TIMEOUT, CRASHED = (
    AttemptStatus.OK,
    AttemptStatus.SKIPPED,
    AttemptStatus.TIMEOUT,
    AttemptStatus.CRASHED,
)
LOAD_ERROR, ENCODE_ERROR, DRIFT = AttemptStatus.LOAD_ERROR, AttemptStatus.ENCODE_ERROR, AttemptStatus.DRIFT


@dataclass(frozen=True)
class Limits:
    """How long one load may take, how large a tokenizer file and one attempt's memory may be."""

    load_timeout: float | None = DEFAULT_LOAD_TIMEOUT
    max_file_mb: float = DEFAULT_MAX_FILE_MB
    max_memory_mb: float | None = None
    """Address space of one attempt's process; None: TOKCOMPAT_MAX_MEMORY_MB or 8192; 0: no cap."""


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


@dataclass
class Attempt:
    remedy: str
    status: AttemptStatus
    """ok, drift (loads, wrong ids), load-error, encode-error, timeout, crashed (its process died
    before it reported), not-checked (loads, no ground truth) or skipped."""
    detail: str | None = None
    tokenizer_class: str | None = None
    parity: Parity | None = None
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    remote_files: list[str] = field(default_factory=list)
    stdout: str | None = None
    """The last 4 KB the attempt's process wrote to stdout (None: nothing)."""
    stderr: str | None = None
    undecided: bool = False
    """The judge's own limit (time, memory) or failure stopped it: says nothing about the remedy."""
    loaded_as: str | None = None
    """The name ``from_pretrained`` was given (a repo id, or a folder's path as given)."""
    replay: Replay | None = field(default=None, repr=False, compare=False)
    """What its child observed of the tokenizer, answering as it did (in this process only, never stored)."""

    def __post_init__(self) -> None:
        self.status = AttemptStatus(self.status)

    @property
    def findings(self) -> list[str]:
        """The unacknowledged findings of an attempt with right ids."""
        return self.parity.findings() if self.parity is not None and self.status == OK else []

    @property
    def drifting(self) -> list[str]:
        """Every finding of an attempt with right ids, acknowledged or not (what its tokenizer does)."""
        return (
            self.parity.findings(acknowledged=True) if self.parity is not None and self.status == OK else []
        )

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
            "stdout": self.stdout,
            "stderr": self.stderr,
            "dimensions": self.parity.dimensions if self.parity else {},
            "probe_counts": self.parity.probe_counts if self.parity else {},
            "findings": self.findings,
            "loaded_as": self.loaded_as,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        parity = data.get("parity")
        return cls(
            remedy=str(data["remedy"]),
            status=AttemptStatus(data["status"]),
            detail=data.get("detail"),
            tokenizer_class=data.get("tokenizer_class"),
            parity=Parity(**parity) if isinstance(parity, dict) else None,
            warnings=[str(w) for w in data.get("warnings") or []],
            seconds=float(data.get("seconds") or 0.0),
            remote_files=[str(name) for name in data.get("remote_files") or []],
            stdout=data.get("stdout"),
            stderr=data.get("stderr"),
            undecided=bool(data.get("undecided")),
            loaded_as=data.get("loaded_as"),
        )


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
    loaders: list[LoaderResult] = field(default_factory=list)
    """Each declared client loader, judged beside the verdict (never a rung)."""
    truth: Truth | None = field(default=None, repr=False, compare=False)
    """The ground truth the attempts were checked against (kept for the caller's own load and the
    verdict cache; a run's JudgeCache drops it)."""
    probe_texts: list[str] | None = field(default=None, repr=False, compare=False)
    verdict_cache: dict[str, Any] | None = field(default=None, compare=False)
    """Where the verdict cache on disk was involved: {state: hit | stored | not-stored, path}."""
    repairs: list[str] = field(default_factory=list)
    """The repairs applied on top of the verdict's remedy (each cleared a finding, ids still right)."""
    repair_attempts: list[Attempt] = field(default_factory=list)
    local: list[Attempt] = field(default_factory=list)
    """Where the client's name is a repo id that transformers' name-keyed rules match: the same files
    loaded by their folder path (what a user of a local copy gets), judged beside the verdict."""
    target: LoadTarget | None = field(default=None, compare=False)

    @property
    def model_type(self) -> str | None:
        return self.static.model_type

    @property
    def chosen(self) -> Attempt | None:
        """The verdict's attempt."""
        return next((a for a in self.attempts if a.remedy == self.verdict), None)

    @property
    def findings(self) -> list[str]:
        """What drifts on the verdict's remedy as the client loads it (a matrix entry acknowledges these)."""
        chosen = self.chosen
        return chosen.findings if chosen is not None else []

    @property
    def delivered(self) -> Attempt | None:
        """The attempt of the tokenizer a client is handed: the verdict's, with its repairs where kept."""
        repaired = next((a for a in reversed(self.repair_attempts) if a.status == OK), None)
        return repaired if self.repairs and repaired is not None else self.chosen

    @property
    def remaining_findings(self) -> list[str]:
        """What still drifts once the repairs are applied, acknowledged or not (what ``load_tokenizer()``
        hands back: an acknowledgement accepts a finding, it does not fix the tokenizer)."""
        delivered = self.delivered
        return delivered.drifting if delivered is not None else []

    @property
    def local_verdict(self) -> str | None:
        """The least remedy with right ids for the local copy, where it was judged (else None)."""
        if not self.local:
            return None
        ok = next((a for a in self.local if a.status == OK), None)
        return ok.remedy if ok is not None else BROKEN

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
            "findings": self.findings,
            "repairs": list(self.repairs),
            "remaining_findings": self.remaining_findings,
            **(
                {"repair_attempts": [a.to_json() for a in self.repair_attempts]}
                if self.repair_attempts
                else {}
            ),
            **(
                {"local": {"verdict": self.local_verdict, "attempts": [a.to_json() for a in self.local]}}
                if self.local
                else {}
            ),
            **({"loaders": [result.to_json() for result in self.loaders]} if self.loaders else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Judgement:
        """A judgement as :meth:`to_json` wrote it (client loaders aside: they are never stored)."""
        return cls(
            transformers_version=str(data["transformers_version"]),
            static=_view_from(dict(data["static"])),
            verdict=str(data["verdict"]),
            parity=Parity(**data["parity"]),
            attempts=[Attempt.from_json(attempt) for attempt in data["attempts"]],
            texts=int(data["probe_texts"]),
            truth_source=data.get("ground_truth"),
            repairs=[str(r) for r in data.get("repairs") or []],
            repair_attempts=[Attempt.from_json(a) for a in data.get("repair_attempts") or []],
            local=[Attempt.from_json(a) for a in (data.get("local") or {}).get("attempts") or []],
        )


@dataclass
class LoaderResult:
    """A client loader's attempt on one checkpoint: information beside the verdict, not a remedy."""

    loader: ClientLoader
    attempt: Attempt
    differing: int | None = None
    """How many probe texts it encodes differently from the ground truth (drift only)."""
    compared: int | None = None
    replaces_native: list[str] = field(default_factory=list)
    """What the loader's call registered over transformers' own registration of a natively registered
    model_type (AutoConfig / AutoTokenizer ``register(..., exist_ok=True)``): a finding even where ids match."""
    environment: dict[str, str] = field(default_factory=dict)
    """The hub-offline variables the loader was called with (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE)."""
    registers: list[str] = field(default_factory=list)
    """The model_types the loader's call registered a config class or tokenizer mapping for: what its
    shim acts on (a shim that registers the checkpoint's type where plain loading is right is obsolete)."""
    set_by_tool: dict[str, str] = field(default_factory=dict)
    """What the tool set for the call beyond the client's environment: the hub cache holding the repo it
    was called with by id, offline (``LoadTarget.client_environment``)."""

    def to_json(self) -> dict[str, Any]:
        record = self.attempt.to_json()
        del record["remedy"], record["remote_files"]
        return {
            **self.loader.to_json(),
            **record,
            "differing": self.differing,
            "compared": self.compared,
            "replaces_native": list(self.replaces_native),
            "environment": dict(self.environment),
            "registers": list(self.registers),
            "set_by_tool": dict(self.set_by_tool),
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
    """The transformers of this process: the imported module's own version where it is imported (free, and
    what runs), else the installed one's metadata (a scan of every distribution on sys.path): the caller's
    process need not import it."""
    imported = getattr(sys.modules.get("transformers"), "__version__", None)
    if isinstance(imported, str):
        return imported
    from importlib import metadata

    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        import transformers

        return str(transformers.__version__)


def load_with(
    folder: Path,
    remedy: str,
    alias: Alias | None = None,
    target: LoadTarget | None = None,
    repairs: Sequence[str] = (),
) -> Any:
    """Load the tokenizer as one remedy prescribes, by the client's name, with ``repairs`` applied on top;
    call inside ``isolated_transformers()``."""
    import transformers
    from transformers import AutoTokenizer

    from pytest_tokcompat.judge.repairs import apply_repair

    target = target or LoadTarget(str(folder))
    name, kwargs = target.name, target.kwargs()
    if remedy == "alias":
        if alias is None:
            raise ValueError("the alias remedy needs an alias")
        register_alias(alias)
        if alias.tokenizer_class:
            tokenizer = getattr(transformers, alias.tokenizer_class).from_pretrained(name, **kwargs)
        else:
            tokenizer = AutoTokenizer.from_pretrained(name, **kwargs)
    elif remedy == "backend":
        backend = getattr(transformers, "TokenizersBackend", None) or transformers.PreTrainedTokenizerFast
        tokenizer = backend.from_pretrained(name, **kwargs)
    else:
        tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=remedy == "auto_map", **kwargs)
    for repair in repairs:
        apply_repair(tokenizer, repair, folder)
    return tokenizer


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
    if remedy == "backend" and "tokenizer.json" not in view.tokenizer_files:
        return "the checkpoint ships no tokenizer.json for the fast backend to load as it is"
    if remedy == "alias":
        if alias is None and not view.has_config:
            return "the checkpoint has no config.json (tokenizer-only): no model_type, so no alias applies"
        if alias is None:
            return f"no alias for model_type {view.model_type!r} in the registry"
        if view.registered_natively:
            return f"transformers registers {view.model_type!r} natively; an alias never replaces it"
    return None


def _error_text(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:400] if text else ''}"


# ---- one attempt, in its child process -----------------------------------------------------------


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


def call_client_loader(folder: Path, loader: ClientLoader, name: LoadTarget | None = None) -> Any:
    """Call the client's loader as the client does, and reach the tokenizer inside what it returns.

    By the name the client gives it (``name``): a hub repo id, with only what finding it offline in the
    tool's hub layout needs (``LoadTarget.client_environment``), so code that branches on HF_HUB_OFFLINE or
    on "is this a local path" takes the client's branch; else the folder's path."""
    import importlib

    target: Any = importlib.import_module(loader.module)
    for part in loader.callable.split("."):
        target = getattr(target, part)
    given = name or LoadTarget(str(folder))
    with served_offline(given):
        loaded = target(given.name, **loader.kwargs)
    for part in loader.attr.split(".") if loader.attr else ():
        loaded = getattr(loaded, part)
    if not callable(getattr(loaded, "encode", None)):
        raise TypeError(
            f"{loader.call}{':' + loader.attr if loader.attr else ''} returned a {type(loaded).__name__}, "
            "which has no encode(); give the attribute path to the tokenizer (MODULE:CALLABLE:ATTR)"
        )
    return loaded


def _count_differing(tokenizer: Any, truth: Truth, texts: list[str]) -> tuple[int, int]:
    """How many of the texts with a ground truth the tokenizer encodes differently, of how many."""
    compared = [text for text in texts if text in truth.ids]
    differing = sum(
        1 for text in compared if list(tokenizer.encode(text, add_special_tokens=False)) != truth.ids[text]
    )
    return differing, len(compared)


def run_job(job: Job, emit: Callable[[dict[str, Any]], None], *, contain: bool) -> None:
    """Read the checkpoint if no earlier child did, then load with ``job.remedy`` and report what the
    tokenizer answers to the job's questions (``observed.observe``); the parent computes parity from that.

    ``contain`` (in a child) turns every BaseException of the attempt (SystemExit, a Rust panic,
    KeyboardInterrupt raised by remote code) into the attempt's result; in-process, an interrupt
    still interrupts.
    """
    folder = Path(job.folder)
    try:
        name = job.target.name if job.target is not None else None
        view = static_view(folder, job.registry, name) if job.view is None else _view_from(job.view)
        if job.view is None:
            emit({"kind": "view", "view": asdict(view)})
        if job.texts is None:
            texts, truth, _ = _read_truth(folder, job, emit)
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
    with _transformers_warnings() as messages:
        try:
            if job.loader is not None:
                loaded = call_client_loader(folder, job.loader, job.target)
            else:
                loaded = load_with(folder, job.remedy or "native", job.alias, job.target, job.repairs)
        except caught as error:  # any failure to load is this attempt's result
            if isinstance(error, LoadTimeout):  # in-process only: the caller's time limit
                raise
            attempt.detail, loaded = _memory_hint(error, job.max_memory_mb), None
            attempt.undecided = isinstance(error, MemoryError)
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
                observations = observe(loaded, texts, questions, caught, (LoadTimeout,))
    report = {
        **{key: value for key, value in attempt.to_json().items() if key in _REPORTED},
        "loaded": loaded is not None,
        "undecided": attempt.undecided,
        "seconds": time.perf_counter() - started,
        "warnings": list(messages),
        "observations": observations,
    }
    emit({"kind": "attempt", "attempt": report})


_REPORTED = ("remedy", "detail", "tokenizer_class", "loaded_as")
"""What a child reports of its attempt beside whether it loaded and its observations: never a status."""


def attempt_name(job: Job) -> str:
    """``native``, ``native+declared_special_tokens`` (a repair on a remedy), ``loader:NAME``: the name the
    parent binds the child's attempt frame to (``frames.expected_remedy``)."""
    from pytest_tokcompat.judge.frames import expected_remedy

    return expected_remedy(job) or "native"


def _memory_hint(error: BaseException, max_memory_mb: float | None) -> str:
    text = _error_text(error)
    if isinstance(error, MemoryError) and max_memory_mb:
        text += (
            f" (the attempt ran out of its {max_memory_mb:g} MB memory cap: raise TOKCOMPAT_MAX_MEMORY_MB "
            "if the tokenizer is genuine)"
        )
    return text


def _encode_all(tokenizer: Any, texts: list[str]) -> None:
    for text in texts:
        tokenizer.encode(text, add_special_tokens=False)


def _read_truth(
    folder: Path, job: Job, emit: Callable[[dict[str, Any]], None]
) -> tuple[list[str], Truth | None, str | None]:
    """The probe texts and their ground truth, recording missing golden ids where asked."""
    from pytest_tokcompat.judge import golden

    truth_error: str | None = None
    try:
        reference = reference_tokenizer(folder)
    except CheckpointError:
        raise
    except BaseException as error:  # a Rust panic while parsing is a BaseException
        reference, truth_error = None, _unreadable(folder, error)
    golden_path = Path(job.golden_path) if job.golden_path else None
    derived = derive_probes(folder, reference) if truth_error is None else []
    derived += [] if reference is not None else golden_probes(golden_path)
    texts = probe_texts(job.extra_texts, special_tokens(folder, reference), derived)
    truth: Truth | None = None
    recorded: dict[str, Any] | None = None
    if truth_error is None:
        try:
            truth = ground_truth(folder, texts, golden_path, reference)
        except CheckpointError:
            raise
        except BaseException as error:
            truth_error = _unreadable(folder, error)
        if truth_error is None and reference is None and job.record:
            # derived probes without golden ids are recorded too (and their kinds, for the next run)
            missing = [text for text in texts if truth is None or text not in truth.ids]
            found = golden.independent_ids(folder, missing) if missing else None
            if isinstance(found, str):
                truth = truth or golden_truth(folder, texts, "golden ids", {}, {})
                truth.missing_reason = found
            elif found is not None:
                recorded = found.to_json()
                recorded["kinds"] = {t: texts.kinds[t] for t in found.ids if t in texts.derived}
                truth = golden.with_recorded(truth, folder, texts, found, golden_path)
    if truth is not None:
        truth.acknowledged = dict(job.acknowledged)
    emit(
        {
            "kind": "truth",
            "texts": texts,
            "truth": asdict(truth) if truth is not None else None,
            "truth_error": truth_error,
            "recorded": recorded,
        }
    )
    return texts, truth, truth_error


def _unreadable(folder: Path, error: BaseException) -> str:
    if isinstance(error, (MemoryError, RecursionError)):
        return (
            f"the ground truth could not be computed: it hit a resource limit ({_error_text(error)}); "
            "raise TOKCOMPAT_MAX_MEMORY_MB if the checkpoint is genuine"
        )
    return (
        f"the ground truth could not be computed: the tokenizers library fails on {folder / 'tokenizer.json'} "
        f"({_error_text(error)}); the checkpoint cannot be judged until the file is fixed"
    )


def _view_from(data: dict[str, Any]) -> StaticView:
    return StaticView(**{k: v for k, v in data.items() if k in StaticView.__dataclass_fields__})


def truth_from(data: dict[str, Any] | None) -> Truth | None:
    """The Truth a child sent as JSON (its contract expectations included)."""
    if data is None:
        return None
    truth = Truth(**{k: v for k, v in data.items() if k in Truth.__dataclass_fields__})
    if isinstance(truth.contract, dict):
        truth.contract = ContractTruth.from_json(truth.contract)
    return truth


# ---- the ladder, in the caller's process ---------------------------------------------------------


@dataclass
class _Found:
    """What the children found out about the checkpoint, handed on to the next child."""

    view: StaticView | None = None
    texts: list[str] | None = None
    truth: Truth | None = None
    truth_error: str | None = None
    recorded: dict[str, Any] | None = None


def _job(folder: Path, remedy: str | None, alias: Alias | None, found: _Found, **given: Any) -> Job:
    import os
    import sys

    from pytest_tokcompat.judge.child import max_memory_mb

    limits: Limits = given.pop("limits")
    memory = max_memory_mb() if limits.max_memory_mb is None else (limits.max_memory_mb or None)
    return Job(
        folder=str(folder),
        remedy=remedy,
        alias=alias,
        view=asdict(found.view) if found.view is not None else None,
        texts=found.texts,
        questions=asdict(questions_for(found.truth)) if found.texts is not None else None,
        truth_error=found.truth_error,
        environ=without_credentials(os.environ),
        cwd=os.getcwd(),
        sys_path=[str(p) for p in sys.path],
        max_memory_mb=memory,
        **given,
    )


def _absorb(
    run: Any,
    remedy: str,
    found: _Found,
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
            found.view = _view_from(message["view"])
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


def measure(report: Report, remedy: str, found: _Found, max_memory_mb: float | None) -> Attempt:
    """The attempt a child reported, its parity computed here: the child's observations replayed into
    check_parity against the truth this process holds (what the child claims of itself is never used)."""
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
        attempt.status, attempt.detail = ENCODE_ERROR, _memory_hint(error, max_memory_mb)
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
    loaders: Sequence[ClientLoader] = (),
    acknowledged: dict[str, str] | None = None,
    target: LoadTarget | None = None,
) -> Judgement:
    """Run the ladder on one checkpoint folder under the installed transformers.

    Each attempt loads ``folder``'s files by ``target`` (the name the client gives; by default the
    folder's path) and runs in a child process. Where the verdict's attempt has a default-call
    finding that the declared BOS/EOS repair clears, the repair is recorded; where ``target`` is a
    repo id matched by transformers' name-keyed rules, the folder path is judged too (``local``). ``record_as`` (a case id) records golden ids that are
    missing, from an independent implementation of the checkpoint's own format, where the checkpoint
    has no tokenizer.json; ``keep_tokenizer`` loads the verdict's remedy once more, in this process,
    after the judgement, for fixtures and ``load_tokenizer()``. Each of ``loaders`` (a client's own
    loader) is then called in a child process of its own and checked against the same truth: its
    result is recorded beside the verdict and never changes it. ``acknowledged`` maps the contract
    dimensions the matrix entry acknowledges for this release to the reason (their drift is reported,
    not failed). Raises CheckpointError where the checkpoint's files cannot be read.
    """
    from pytest_tokcompat.judge import child, golden, truthcache
    from pytest_tokcompat.matrix.aliases import REGISTRY, find_alias

    if keep_tokenizer:
        import_in_background()
    registry = dict(REGISTRY if registry is None else registry)
    check_checkpoint_files(folder, limits.max_file_mb)  # special files, dangling links: never opened
    refusal = golden.write_refusal(golden_path) if record_as is not None and golden_path is not None else None
    record = record_as is not None and golden_path is not None and refusal is None
    found = _Found()
    truths = None if record else truthcache.lookup(folder, list(extra_texts), golden_path)
    if truths is not None and truths.hit is not None:  # computed by an earlier run: no child reads it again
        found.texts, found.truth = truths.hit.texts, truths.hit.truth
        found.truth.acknowledged = dict(acknowledged or {})
    attempts: list[Attempt] = []
    stop: str | None = None
    given = {
        "registry": registry,
        "extra_texts": list(extra_texts),
        "golden_path": str(golden_path) if golden_path else None,
        "record": record,
        "limits": limits,
        "acknowledged": dict(acknowledged or {}),
        "target": target,
    }
    for remedy in REMEDIES:
        if stop is not None:
            attempts.append(Attempt(remedy, SKIPPED, f"not tried: {stop}"))
            continue
        alias = find_alias(found.view.model_type, registry) if found.view is not None else None
        reason = _skip_reason(remedy, found.view, trust_remote_code, alias) if found.view else None
        if reason:
            attempts.append(Attempt(remedy, SKIPPED, reason))
            continue
        job = _job(folder, remedy, alias, found, **given)
        attempt = _absorb(
            child.run(job, limits.load_timeout), remedy, found, limits.load_timeout, job.max_memory_mb
        )
        if remedy == "auto_map" and found.view is not None:
            attempt.remote_files = list(found.view.remote_code_files)
        attempts.append(attempt)
        if found.view is None or found.texts is None:
            stop = f"the checkpoint could not be read ({attempt.detail})"
        if attempt.status in (OK, AttemptStatus.NOT_CHECKED):
            break
    if truths is not None:
        truths.keep(found.texts, found.truth, found.truth_error)
    recorded = _write_recorded(found, record_as, golden_path) if record else None
    verdict, parity = _verdict(attempts, found, refusal)
    chosen = next((a for a in attempts if a.remedy == verdict), None)
    repairs, repair_attempts = _try_repairs(folder, chosen, found, given, limits)
    local = _judge_local(folder, target, verdict, found, given, limits)
    judgement = Judgement(
        transformers_version=child.server_version() or transformers_version(),
        static=found.view or _unread_view(),
        verdict=verdict,
        parity=parity,
        attempts=attempts,
        texts=len(found.texts or []),
        truth_source=found.truth.source if found.truth else None,
        recorded=recorded,
        truth=found.truth,
        probe_texts=found.texts,
        repairs=repairs,
        repair_attempts=repair_attempts,
        local=local,
        target=target,
    )
    judgement.loaders = [_judge_loader(folder, loader, found, given, limits, stop) for loader in loaders]
    if keep_tokenizer and verdict in (*REMEDIES, UNCHECKED):
        judgement.tokenizer = load_here(folder, judgement, registry)
    return judgement


def _try_repairs(
    folder: Path, chosen: Attempt | None, found: _Found, given: dict[str, Any], limits: Limits
) -> tuple[list[str], list[Attempt]]:
    """The declared BOS/EOS repair on the verdict's remedy, where the default call is a finding it may
    clear; kept only where the repaired tokenizer keeps right ids and the finding is gone."""
    from pytest_tokcompat.judge import child
    from pytest_tokcompat.judge.repairs import declared_special_tokens_applicable

    if chosen is None or str(Dimension.DEFAULT_CALL) not in chosen.drifting or found.truth is None:
        return [], []
    contract = found.truth.contract
    if contract is None or not declared_special_tokens_applicable(contract.declared):
        return [], []
    repair = str(Repair.DECLARED_SPECIAL_TOKENS)
    alias = _alias_for(found, given)
    job = _job(folder, chosen.remedy, alias if chosen.remedy == "alias" else None, found, **given)
    job.repairs = [repair]
    run = child.run(job, limits.load_timeout)
    attempt = _absorb(run, attempt_name(job), found, limits.load_timeout, job.max_memory_mb)
    cleared = attempt.status == OK and str(Dimension.DEFAULT_CALL) not in attempt.drifting
    return ([repair] if cleared else []), [attempt]


def _alias_for(found: _Found, given: dict[str, Any]) -> Alias | None:
    from pytest_tokcompat.matrix.aliases import find_alias

    return find_alias(found.view.model_type, given["registry"]) if found.view is not None else None


def _judge_local(
    folder: Path,
    target: LoadTarget | None,
    verdict: str,
    found: _Found,
    given: dict[str, Any],
    limits: Limits,
) -> list[Attempt]:
    """Where the client's repo id is matched by a name-keyed rule, the same files by their folder path:
    plain loading, then the backend override where that drifts (what a user of a local copy gets)."""
    from pytest_tokcompat.judge import child

    if target is None or not target.by_repo_id or found.view is None or not found.view.name_keyed:
        return []
    if verdict not in REMEDIES or found.texts is None:
        return []
    local_given = {**given, "target": LoadTarget(str(folder))}
    attempts: list[Attempt] = []
    for remedy in ("native", "backend"):
        if _skip_reason(remedy, found.view, False, None):
            break
        job = _job(folder, remedy, None, found, **local_given)
        attempt = _absorb(
            child.run(job, limits.load_timeout), remedy, found, limits.load_timeout, job.max_memory_mb
        )
        attempts.append(attempt)
        if attempt.status in (OK, AttemptStatus.NOT_CHECKED):
            break
    return attempts


def _judge_loader(
    folder: Path, loader: ClientLoader, found: _Found, given: dict[str, Any], limits: Limits, stop: str | None
) -> LoaderResult:
    """One client loader in its own child, against the ground truth the ladder's children read."""
    from pytest_tokcompat.judge import child

    name = f"loader:{loader.name}"
    if found.view is None or found.texts is None:
        return LoaderResult(loader, Attempt(name, AttemptStatus.NOT_CHECKED, f"not tried: {stop}"))
    job = _job(folder, None, None, found, loader=loader, **given)
    job.environ = client_environ(job.environ)
    run = child.run(job, limits.load_timeout)
    attempt = _absorb(run, name, found, limits.load_timeout, job.max_memory_mb, keep_replay=True)
    counts: dict[str, int] = {}
    if attempt.status == DRIFT and attempt.replay is not None and found.truth is not None:
        with contextlib.suppress(Exception, NotObserved):  # the count is extra detail, never the result
            counts["differing"], counts["compared"] = _count_differing(
                attempt.replay, found.truth, found.texts
            )
    attempt.replay = None
    replaced = next((m for m in run.messages if m.get("kind") == "replaces-native"), {})
    registered = next((m for m in run.messages if m.get("kind") == "registers"), {})
    set_by_tool = job.target.client_environment() if job.target is not None else {}
    offline = {
        key: job.environ[key] for key in OFFLINE_VARIABLES if job.environ.get(key) and key not in set_by_tool
    }
    return LoaderResult(
        loader,
        attempt,
        counts.get("differing"),
        counts.get("compared"),
        [str(text) for text in replaced.get("replaces", [])],
        offline,
        [str(name) for name in registered.get("registers", [])],
        set_by_tool,
    )


SET_BY_TOOL = "TOKCOMPAT_SET_BY_TOOL"
"""Comma-separated names of variables a tool of ours set in this environment (``tokcompat grid`` sets
HF_HUB_OFFLINE for its own runs); a client's loader is called without them, as the client's code runs."""
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def client_environ(environ: dict[str, str]) -> dict[str, str]:
    """The environment a client loader is called in: ours without what our tools set (``SET_BY_TOOL``)."""
    dropped = {
        name.strip() for name in (environment.read(SET_BY_TOOL, environ) or "").split(",") if name.strip()
    }
    return {key: value for key, value in environ.items() if key not in dropped and key != SET_BY_TOOL}


def native_replacements(model_type: str | None) -> list[str]:
    """What this process registered over transformers' own registration of ``model_type``: a config
    class or a tokenizer mapping given with ``exist_ok=True`` for a natively registered type."""
    try:
        from transformers.models.auto.configuration_auto import (  # type: ignore[attr-defined]
            CONFIG_MAPPING,
            CONFIG_MAPPING_NAMES,
        )
        from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING
    except ImportError:
        return []
    if model_type is None or model_type not in CONFIG_MAPPING_NAMES:
        return []
    found: list[str] = []
    config = getattr(CONFIG_MAPPING, "_extra_content", {}).get(model_type)
    if config is not None:
        found.append(
            f"AutoConfig's {model_type!r} is {_qualified(config)}, not transformers' own "
            f"{CONFIG_MAPPING_NAMES[model_type]}"
        )
    for key, value in getattr(TOKENIZER_MAPPING, "_extra_content", {}).items():
        if getattr(key, "model_type", None) == model_type:
            found.append(
                f"AutoTokenizer's mapping for {model_type!r} is {_qualified(value)}, registered over transformers' own"
            )
    return found


def registered_types() -> list[str]:
    """The model_types registered in this process beyond transformers' own (a client's shim, in the
    loader's child): AutoConfig's and AutoTokenizer's added entries."""
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING
        from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING
    except ImportError:
        return []
    found = {str(name) for name in getattr(CONFIG_MAPPING, "_extra_content", {})}
    found |= {
        str(key.model_type)
        for key in getattr(TOKENIZER_MAPPING, "_extra_content", {})
        if isinstance(getattr(key, "model_type", None), str)
    }
    return sorted(found)


def _qualified(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_qualified(v) for v in value) + ")"
    if value is None:
        return "None"
    return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', type(value).__name__)}"


def _verdict(attempts: list[Attempt], found: _Found, refusal: str | None) -> tuple[str, Parity]:
    """The least remedy that works, provided nothing before it was left undecided by the judge's limits."""
    chosen = next((a for a in attempts if a.status in (OK, AttemptStatus.NOT_CHECKED)), None)
    before = attempts[: attempts.index(chosen) + 1] if chosen is not None else attempts
    undecided = [a for a in before if a.undecided]
    if found.truth_error is not None:
        return UNCHECKED, Parity(NOT_CHECKED, reason=found.truth_error)
    missing = found.truth is None or bool(found.truth.missing)
    not_recorded = refusal or (found.truth.missing_reason if found.truth is not None else None)
    if not_recorded and missing:  # asked to record, and could not: nothing to check against
        return UNCHECKED, Parity(NOT_CHECKED, reason=not_recorded)
    if undecided:
        first = undecided[0]
        reason = f"the {first.remedy} attempt could not be judged: {first.detail}"
        return UNCHECKED, Parity(NOT_CHECKED, reason=reason)
    if chosen is not None and chosen.parity is not None:
        if chosen.status == OK:
            return chosen.remedy, chosen.parity
        reason = f"the tokenizer loads ({chosen.remedy}) but its ids were not checked: {chosen.parity.reason}"
        reason += f"; {refusal}" if refusal else ""
        return UNCHECKED, Parity(NOT_CHECKED, chosen.parity.checked, chosen.parity.source, reason=reason)
    tried = [a.parity for a in attempts if a.parity is not None]
    return BROKEN, tried[0] if tried else Parity(NOT_CHECKED, reason="no remedy loaded the tokenizer")


def _write_recorded(found: _Found, record_as: str | None, golden_path: Path | None) -> Path | None:
    """Write the golden ids a child recorded: only those that were missing, never over existing ones."""
    from pytest_tokcompat.judge import golden

    if not found.recorded or record_as is None or golden_path is None:
        return None
    kinds = found.recorded.get("kinds")
    recording = golden.Recording.from_json(found.recorded)
    added = golden.merge_golden(golden_path, record_as, recording, kinds if isinstance(kinds, dict) else None)
    return golden_path if added else None


def _unread_view() -> StaticView:
    return StaticView(None, False, False, None, None, None)


_IMPORTER: threading.Thread | None = None


def import_in_background() -> None:
    """Import transformers here while the children judge: the caller's own load needs it next."""
    global _IMPORTER
    if _IMPORTER is None:

        def work() -> None:
            with contextlib.suppress(Exception):  # the load itself reports it
                from transformers import AutoTokenizer  # noqa: F401

        _IMPORTER = threading.Thread(target=work, name="tokcompat-import", daemon=True)
        _IMPORTER.start()


def ids_parity(tokenizer: Any, truth: Truth, texts: list[str]) -> Parity:
    """The ids dimension alone: every probe text with a ground truth, encoded as the matrix encodes it."""
    checked = 0
    special = set(truth.special_texts)
    for text in texts:
        expected = truth.ids.get(text)
        if expected is None or text in special:
            continue
        actual = list(tokenizer.encode(text, add_special_tokens=False))
        if actual != expected:
            return Parity(MISMATCH, checked, truth.source, text, expected, actual, dimension="ids")
        checked += 1
    return Parity(MATCH, checked, truth.source)


def load_here(
    folder: Path, judgement: Judgement, registry: dict[str, Alias] | None = None, *, ids_only: bool = False
) -> Any | None:
    """The verdict's remedy loaded in the caller's process, checked against the same truth once more.

    None (and the judgement's parity says why) where it does not load here or gives other results
    here than in the child that judged it: the caller's process may carry a client's monkeypatches.
    ``ids_only`` (a verdict from the cache on disk, whose every dimension a child checked) checks
    the ids of every probe text here, not the contract's other dimensions again.
    """
    from pytest_tokcompat.matrix.aliases import REGISTRY, find_alias

    if _IMPORTER is not None:
        _IMPORTER.join()
    chosen = next((a for a in judgement.attempts if a.status in (OK, AttemptStatus.NOT_CHECKED)), None)
    if chosen is None or judgement.probe_texts is None:
        return None
    alias = find_alias(judgement.model_type, dict(REGISTRY if registry is None else registry))
    with isolated_transformers():
        try:
            tokenizer = load_with(folder, chosen.remedy, alias, judgement.target, judgement.repairs)
            truth = judgement.truth
            parity: Parity | None
            if truth is not None and ids_only:
                parity = ids_parity(tokenizer, truth, judgement.probe_texts)
            else:
                with frozen_clock():
                    parity = check_parity(tokenizer, truth, judgement.probe_texts) if truth else None
        except Exception as error:
            judgement.parity = Parity(
                NOT_CHECKED, reason=f"loads in a child process but not in this one: {_error_text(error)}"
            )
            return None
    if parity is not None and chosen.parity is not None and parity.status != chosen.parity.status:
        judgement.parity = Parity(
            NOT_CHECKED, reason=f"in this process the {chosen.remedy} remedy gives: {parity.describe()}"
        )
        return None
    return tokenizer
