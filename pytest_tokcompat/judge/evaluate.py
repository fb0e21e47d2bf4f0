"""The one evaluator: a :class:`~pytest_tokcompat.request.Request` to one typed outcome, :class:`Evaluation`.

pytest's case and alias items, the ``tokcompat_tokenizer`` fixture, ``load_tokenizer()``,
``tokcompat check`` and bisect's child ``check`` all build a request and evaluate it through
:func:`evaluate` (its name resolved by the one resolver, then the ladder), so the same checkpoint
gives the same verdict, parity and record in every one of them. The request travels down as it
is; what travels back up is the ``Evaluation`` holding the ``Judgement``. Here ``request.name`` is
what the client names, ``identity`` what that name was found to be, ``checkpoint`` the files it
resolved to, and ``load_target(checkpoint)`` the name each attempt loads them by
(``pytest_tokcompat.request``).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from pytest_tokcompat.errors import (
    CheckpointError,
    MatrixError,
    NotReachable,
    NotRunnable,
    SnapshotError,
)
from pytest_tokcompat.judge.alarms import Alarm, alias_alarms, findings_alarm, loader_alarms, verdict_alarm
from pytest_tokcompat.judge.cache import JudgeCache
from pytest_tokcompat.judge.describe import describe_attempts
from pytest_tokcompat.judge.evaluation import Evaluation, Failure
from pytest_tokcompat.judge.judgement import Attempt, Judgement
from pytest_tokcompat.judge.ladder import judge
from pytest_tokcompat.judge.loading import transformers_version
from pytest_tokcompat.judge.static import read_json_object
from pytest_tokcompat.judge.subject import Subject
from pytest_tokcompat.judge.verdicts import VerdictCache, default_cache, key_fields, key_of
from pytest_tokcompat.matrix.aliases import Alias, effective_registry
from pytest_tokcompat.matrix.cases import Case
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.model import FAILED_ATTEMPTS, AlarmKind, AliasState, AttemptStatus, CaseStatus, Verdict
from pytest_tokcompat.request import Request
from pytest_tokcompat.settings import JudgeSettings
from pytest_tokcompat.sources.checkpoint import Checkpoint
from pytest_tokcompat.sources.names import load_target
from pytest_tokcompat.sources.resolve import identify, resolve

PASSED, FAILED, NOT_CHECKED = CaseStatus.PASSED, CaseStatus.FAILED, CaseStatus.NOT_CHECKED


CaseOutcome = Evaluation
"""The name the pytest items knew it by."""


def evaluate(request: Request, cache: JudgeCache | None = None) -> Evaluation:
    """Resolve what ``request`` names (see :func:`~pytest_tokcompat.sources.resolve.resolve`) and judge it.

    ``request.expect`` overrides the case's expectation; a ``Case`` name is a matrix run (its
    opt-in applies, and a missing expectation fails it before anything loads). Never
    raises a deliberate error: what could not be had is NOT_CHECKED, what cannot be
    used as given is FAILED with ``failure`` BAD_INPUT and the error kept on ``error``.
    ``request.loaders`` are judged beside the verdict (never a rung; their alarms fail it);
    ``cache`` is the run's judgements (pytest keeps one per session), so a case is judged once;
    ``request.verdict_cache`` keeps the verdict on disk (``load_tokenizer()``), shared by processes.
    ``request.registry`` is the alias registry to judge with (pytest passes its run's); without one,
    the built-in aliases, then those of the matrix the name was found in, then ``request.aliases``
    (the caller's own), each applied exactly as declared.
    """
    subject = request.subject
    version = transformers_version()
    expected: str | None = request.expect
    notes: list[str] = []
    try:
        identity = identify(request.name, request.matrix)
    except (NotRunnable, MatrixError) as error:
        return Evaluation(subject, FAILED, str(error), expected, failure=Failure.BAD_INPUT, error=error)
    known = identity.case
    subject = known.id if known is not None else subject
    if request.registry is None:
        declared = _matrix_aliases(identity.matrix) if known is not None else ()
        if declared or request.aliases:
            request = replace(request, registry=effective_registry(declared, request.aliases))
    if known is not None and expected is None:
        try:
            expected = known.expected_for(version)
        except ValueError as error:
            if isinstance(
                request.name, Case
            ):  # a matrix run without an expectation fails before anything loads
                return Evaluation(subject, FAILED, str(error), failure=Failure.BAD_INPUT, case=known)
            notes.append(str(error))
    try:
        checkpoint = resolve(request, identity)
    except NotReachable as error:
        return Evaluation(subject, NOT_CHECKED, str(error), expected, error=error, notes=notes, case=known)
    except (NotRunnable, SnapshotError, MatrixError, CheckpointError) as error:
        return Evaluation(
            subject,
            FAILED,
            str(error),
            expected,
            failure=Failure.BAD_INPUT,
            error=error,
            notes=notes,
            case=known,
        )
    case = checkpoint.case
    try:
        judgement = _judge(checkpoint, request, cache)
    except CheckpointError as error:
        # Files the judge cannot read (size cap, corrupt, unreadable): not checked, never broken, never passed.
        text = _unreadable_text(str(error), checkpoint)
        where = f" (case {case.id!r} at {case.location})" if case is not None else ""
        return Evaluation(
            subject,
            FAILED,
            f"not checked: {text}{where}",
            expected,
            checkpoint=checkpoint,
            failure=Failure.UNREADABLE,
            error=CheckpointError(text),
            notes=notes,
        )
    except ValueError as error:  # golden ids that cannot be read (not JSON, no 'ids' map)
        return Evaluation(
            subject,
            FAILED,
            f"{subject}: {error}",
            expected,
            checkpoint=checkpoint,
            failure=Failure.BAD_INPUT,
            error=CheckpointError(str(error)),
            notes=notes,
        )
    outcome = Evaluation(subject, PASSED, "", expected, judgement, checkpoint=checkpoint, notes=notes)
    where = f"case {case.id!r} ({case.location})" if case is not None else subject
    if judgement.recorded is not None:
        outcome.status = FAILED
        outcome.message = (
            f"golden ids recorded to {judgement.recorded}; review and commit them, then run again without "
            "--tokcompat-record"
        )
        return outcome
    if judgement.verdict == Verdict.NOT_CHECKED:
        outcome.status = FAILED
        who = f"case {case.id!r}" if case is not None else subject
        outcome.message = f"{who}: not checked: {judgement.parity.reason}"
        return outcome
    alarm = verdict_alarm(subject, expected, judgement) if expected is not None else None
    if alarm is None and expected is not None:
        alarm = findings_alarm(subject, judgement)
    if alarm is not None:
        outcome.status = FAILED
        outcome.alarms.append(alarm)
        outcome.message = f"{where}: {alarm.message}\n  what to do: {alarm.action}"
        if alarm.kind == AlarmKind.UNACKNOWLEDGED_FINDING:
            outcome.message += "\n  " + judgement.parity.describe()
        outcome.message += "\n" + describe_attempts(judgement)
    else:
        outcome.message = f"{judgement.verdict}: {judgement.parity.describe()}"
    clients = loader_alarms(subject, case, judgement)
    if clients:  # a client's own shim, judged with the lifecycle of an alias
        outcome.status = FAILED
        outcome.alarms += clients
        outcome.message += "".join(f"\n{where}: {a.message}\n  what to do: {a.action}" for a in clients)
    return outcome


def _matrix_aliases(matrix: Path | None) -> tuple[Alias, ...]:
    """The ``aliases:`` of the matrix a case was found in (it was loaded, and checked, a moment ago)."""
    if matrix is None:
        return ()
    try:
        return load_matrix(matrix).aliases
    except MatrixError:
        return ()


def _unreadable_text(text: str, checkpoint: Checkpoint) -> str:
    """An assembled cache entry is verified (and rebuilt) on every use: a bad file there is bad at its origin."""
    if checkpoint.origin is None or "re-download it" not in text:
        return text
    return text.replace(
        "re-download it",
        f"the cache entry {checkpoint.folder} was verified against (and if it differed, rebuilt from) "
        f"{checkpoint.origin}, so the file is wrong there: fix it in that snapshot folder",
    )


def _judge(checkpoint: Checkpoint, request: Request, cache: JudgeCache | None = None) -> Judgement:
    """The ladder with the checkpoint's opt-in, texts and golden ids; remembered in the run's ``cache``
    and, where the request asks for it, in the verdict cache on disk its settings name."""
    case, registry = checkpoint.case, request.registry
    verdicts = default_cache(request.settings) if request.verdict_cache else None
    if verdicts is not None and not request.record and not request.loaders:
        return _judge_with_verdicts(checkpoint, request, verdicts)
    if cache is not None and case is not None and not request.record and not request.keep_tokenizer:
        known = cache.judgement(case.id, checkpoint.folder, registry)
        if known is not None and [result.loader for result in known.loaders] == list(request.loaders):
            return known  # judged earlier in this run (by its case item or a fixture): once per case
    with cache.active() if cache is not None else nullcontext():
        acknowledged = case.acknowledged_for(transformers_version()) if case is not None else None
        record_as = case.id if (request.record and case is not None) else None
        judgement = judge(Subject.of(checkpoint, request, acknowledged, record_as))
    if cache is not None and case is not None:
        cache.remember(case.id, checkpoint.folder, judgement, registry)  # keyed by the registry it ran under
    return judgement


def _judge_with_verdicts(checkpoint: Checkpoint, request: Request, verdicts: VerdictCache) -> Judgement:
    """A verdict kept on disk by an earlier process, loaded here; else judged, and kept for the next."""
    from pytest_tokcompat.judge.inprocess import import_in_background, load_here
    from pytest_tokcompat.matrix.aliases import REGISTRY

    if request.keep_tokenizer:
        import_in_background()  # the load needs transformers: import it while the files are hashed
    case = checkpoint.case
    aliases = dict(REGISTRY if request.registry is None else request.registry)
    acknowledged = case.acknowledged_for(transformers_version()) if case is not None else None
    fields = key_fields(checkpoint, aliases, acknowledged)
    key = key_of(fields)
    cached = verdicts.get(key)
    if cached is not None:
        judgement = cached.judgement
        judgement.target = load_target(
            checkpoint, request.settings.cache
        )  # loaded as it was judged: by the client's name
        judgement.verdict_cache = {"state": "hit", "path": str(cached.path)}
        if request.keep_tokenizer:
            judgement.tokenizer = load_here(checkpoint.folder, judgement, aliases, ids_only=True)
        return judgement
    judgement = judge(Subject.of(checkpoint, replace(request, registry=aliases), acknowledged))
    if request.keep_tokenizer and judgement.tokenizer is None:
        # what this process found (it does not load, or loads otherwise here) is not the verdict
        judgement.verdict_cache = {"state": "not-stored", "path": None}
        return judgement
    path = verdicts.put(key, fields, judgement)
    judgement.verdict_cache = {
        "state": "stored" if path else "not-stored",
        "path": str(path) if path else None,
    }
    return judgement


def _model_type(checkpoint: Checkpoint) -> str | None:
    try:
        value = read_json_object(checkpoint.folder / "config.json").get("model_type")
    except CheckpointError:
        return None
    return value if isinstance(value, str) else None


@dataclass
class AliasOutcome:
    status: str
    message: str
    state: str
    """unused (plain loading works without it), needed, obsolete (native and right), drift, or broken
    (needed, but as declared no remedy)."""
    alarms: list[Alarm] = field(default_factory=list)
    case_ids: list[str] = field(default_factory=list)


def alias_state(judgements: list[Judgement]) -> str:
    """What the alias is for under this transformers, judged on its cases."""
    if any(j.static.registered_natively for j in judgements):
        native_ok = all(
            (j.attempt("native") or Attempt("native", AttemptStatus.SKIPPED)).status == "ok"
            for j in judgements
        )
        return AliasState.OBSOLETE if native_ok else AliasState.DRIFT
    if any(j.verdict == Verdict.ALIAS for j in judgements):
        return AliasState.NEEDED
    tried = [j.attempt("alias") for j in judgements if j.verdict not in (Verdict.NATIVE, Verdict.AUTO_MAP)]
    if any(attempt is not None and attempt.status in FAILED_ATTEMPTS for attempt in tried):
        return AliasState.BROKEN  # needed, but as declared it is no remedy
    return AliasState.UNUSED


def run_alias(
    alias: Alias,
    cases: list[Case],
    registry: dict[str, Alias] | None = None,
    settings: JudgeSettings | None = None,
    cache: JudgeCache | None = None,
) -> AliasOutcome:
    """Judge an alias's lifecycle on the cases of its model_type: each case a request of the matrix's
    run, under the run's ``registry`` and ``settings``."""
    relevant: list[tuple[Checkpoint, Request]] = []
    for case in cases:
        request = (
            Request(case, registry=registry)
            if settings is None
            else Request(case, registry=registry, settings=settings)
        )
        try:
            checkpoint = resolve(request)
        except (CheckpointError, SnapshotError, NotReachable, NotRunnable):
            continue
        if _model_type(checkpoint) == alias.model_type:
            relevant.append((checkpoint, request))
    if not relevant:
        message = f"no case in the matrix has model_type {alias.model_type!r}; add one to check this alias"
        return AliasOutcome(NOT_CHECKED, message, "not-checked")
    judgements: list[tuple[str, Judgement]] = []
    for checkpoint, request in relevant:
        case_id = checkpoint.subject
        try:
            known = cache.judgement(case_id, checkpoint.folder, registry) if cache is not None else None
            judgements.append((case_id, known or _judge(checkpoint, request, cache)))
        except CheckpointError:
            continue
    if not judgements:
        message = f"none of the cases of {alias.model_type!r} could be loaded here"
        return AliasOutcome(NOT_CHECKED, message, "not-checked")
    alarms = alias_alarms(alias, judgements)
    ids = [case_id for case_id, _ in judgements]
    state = alias_state([j for _, j in judgements])
    if alarms:
        return AliasOutcome(FAILED, "\n".join(str(a) for a in alarms), state, alarms, ids)
    version = judgements[0][1].transformers_version
    explain = {
        "unused": "plain loading keeps parity without it",
        "needed": "the alias is the remedy",
        "obsolete": f"transformers registers it natively (recorded: native since {alias.native_since})",
        "drift": f"the native registration drifts (acknowledged: {alias.native_drift})",
        "broken": "plain loading fails and the alias, applied as declared, gives no right ids either "
        "(see the alias attempt of its cases)",
    }[state]
    return AliasOutcome(
        PASSED, f"alias {alias.model_type} under transformers {version}: {state}: {explain}", state, [], ids
    )
