"""The one evaluator: any target to one typed outcome, :class:`Evaluation`, and its record.

pytest's case and alias items, the ``tokcompat_tokenizer`` fixture, ``load_tokenizer()``,
``tokcompat check`` and bisect's child ``check`` all evaluate through :func:`evaluate`
(the target resolved by the one resolver, then the ladder), so the same checkpoint
gives the same verdict, parity and record in every one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
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
from pytest_tokcompat.judge.judgement import Attempt, Judgement, Limits
from pytest_tokcompat.judge.ladder import judge
from pytest_tokcompat.judge.loading import transformers_version
from pytest_tokcompat.judge.static import read_json_object
from pytest_tokcompat.judge.verdicts import VerdictCache, key_fields, key_of
from pytest_tokcompat.matrix.aliases import Alias, effective_registry
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.matrix.loader import Case, load_matrix
from pytest_tokcompat.model import FAILED_ATTEMPTS, AlarmKind, AliasState, AttemptStatus, CaseStatus, Verdict
from pytest_tokcompat.settings import JudgeSettings
from pytest_tokcompat.sources.names import load_target
from pytest_tokcompat.sources.resolve import Checkpoint, identify, resolve

PASSED, FAILED, NOT_CHECKED = CaseStatus.PASSED, CaseStatus.FAILED, CaseStatus.NOT_CHECKED


CaseOutcome = Evaluation
"""The name the pytest items knew it by."""


def evaluate(
    target: str | Path | Case,
    *,
    matrix: Path | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    texts: Sequence[str] = (),
    expect: str | None = None,
    record: bool = False,
    keep_tokenizer: bool = False,
    registry: dict[str, Alias] | None = None,
    limits: Limits | None = None,
    loaders: Sequence[ClientLoader] = (),
    cache: JudgeCache | None = None,
    aliases: Sequence[Alias] = (),
    verdicts: VerdictCache | None = None,
    allow_unpinned_remote_code: bool = False,
    settings: JudgeSettings | None = None,
) -> Evaluation:
    """Resolve ``target`` (see :func:`~pytest_tokcompat.sources.resolve.resolve`) and judge it.

    ``expect`` overrides the case's expectation; a ``Case`` target is a matrix run (its
    opt-in applies, and a missing expectation fails it before anything loads). Never
    raises a deliberate error: what could not be had is NOT_CHECKED, what cannot be
    used as given is FAILED with ``failure`` BAD_INPUT and the error kept on ``error``.
    ``loaders`` are the client loaders judged beside the verdict (never a rung; their alarms fail it);
    ``cache`` is the run's judgements (pytest keeps one per session), so a case is judged once;
    ``verdicts`` is the verdict cache on disk (``load_tokenizer()``), shared by processes.
    ``registry`` is the alias registry to judge with (pytest passes its run's); without one, the built-in
    aliases, then those of the matrix the target was found in, then ``aliases`` (the caller's own), each
    applied exactly as declared.
    """
    subject = target.id if isinstance(target, Case) else str(target)
    version = transformers_version()
    expected: str | None = expect
    notes: list[str] = []
    try:
        identity = identify(target, matrix)
    except (NotRunnable, MatrixError) as error:
        return Evaluation(subject, FAILED, str(error), expected, failure=Failure.BAD_INPUT, error=error)
    known = identity.case
    subject = known.id if known is not None else subject
    if registry is None:
        declared = _matrix_aliases(identity.matrix) if known is not None else ()
        if declared or aliases:
            registry = effective_registry(declared, aliases)
    if known is not None and expected is None:
        try:
            expected = known.expected_for(version)
        except ValueError as error:
            if isinstance(target, Case):  # a matrix run without an expectation fails before anything loads
                return Evaluation(subject, FAILED, str(error), failure=Failure.BAD_INPUT, case=known)
            notes.append(str(error))
    try:
        checkpoint = resolve(
            identity,
            revision=revision,
            trust_remote_code=trust_remote_code,
            texts=texts,
            allow_unpinned_remote_code=allow_unpinned_remote_code,
        )
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
        judgement = _judge(
            checkpoint,
            registry=registry,
            record=record,
            keep_tokenizer=keep_tokenizer,
            limits=limits,
            loaders=loaders,
            cache=cache,
            verdicts=verdicts,
            settings=settings,
        )
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


def _judge(
    checkpoint: Checkpoint,
    *,
    registry: dict[str, Alias] | None = None,
    record: bool = False,
    keep_tokenizer: bool = False,
    limits: Limits | None = None,
    loaders: Sequence[ClientLoader] = (),
    cache: JudgeCache | None = None,
    verdicts: VerdictCache | None = None,
    settings: JudgeSettings | None = None,
) -> Judgement:
    """The ladder with the checkpoint's opt-in, texts and golden ids; remembered in the run's ``cache``
    and, where given, in the verdict cache on disk (``verdicts``)."""
    case = checkpoint.case
    if verdicts is not None and not record and not loaders:
        return _judge_with_verdicts(checkpoint, verdicts, registry, keep_tokenizer, limits, settings)
    if cache is not None and case is not None and not record and not keep_tokenizer:
        known = cache.judgement(case.id, checkpoint.folder, registry)
        if known is not None and [result.loader for result in known.loaders] == list(loaders):
            return known  # judged earlier in this run (by its case item or a fixture): once per case
    with cache.active() if cache is not None else nullcontext():
        judgement = _ladder_for(
            checkpoint,
            registry,
            keep_tokenizer,
            limits,
            acknowledged=case.acknowledged_for(transformers_version()) if case is not None else None,
            record_as=case.id if (record and case is not None) else None,
            loaders=loaders,
            settings=settings,
        )
    if cache is not None and case is not None:
        cache.remember(case.id, checkpoint.folder, judgement, registry)  # keyed by the registry it ran under
    return judgement


def _ladder_for(
    checkpoint: Checkpoint,
    registry: dict[str, Alias] | None,
    keep_tokenizer: bool,
    limits: Limits | None,
    *,
    acknowledged: dict[str, str] | None,
    record_as: str | None = None,
    loaders: Sequence[ClientLoader] = (),
    settings: JudgeSettings | None = None,
) -> Judgement:
    """The ladder on a checkpoint with what the resolver attached (opt-in, texts, golden ids)."""
    return judge(
        checkpoint.folder,
        trust_remote_code=checkpoint.trust_remote_code,
        extra_texts=checkpoint.texts,
        golden_path=checkpoint.golden_path,
        registry=registry,
        record_as=record_as,
        keep_tokenizer=keep_tokenizer,
        limits=limits,
        loaders=loaders,
        acknowledged=acknowledged,
        target=load_target(checkpoint),
        settings=settings,
    )


def _judge_with_verdicts(
    checkpoint: Checkpoint,
    verdicts: VerdictCache,
    registry: dict[str, Alias] | None,
    keep_tokenizer: bool,
    limits: Limits | None,
    settings: JudgeSettings | None,
) -> Judgement:
    """A verdict kept on disk by an earlier process, loaded here; else judged, and kept for the next."""
    from pytest_tokcompat.judge.inprocess import import_in_background, load_here
    from pytest_tokcompat.matrix.aliases import REGISTRY

    if keep_tokenizer:
        import_in_background()  # the load needs transformers: import it while the files are hashed
    case = checkpoint.case
    aliases = dict(REGISTRY if registry is None else registry)
    acknowledged = case.acknowledged_for(transformers_version()) if case is not None else None
    fields = key_fields(checkpoint, aliases, acknowledged)
    key = key_of(fields)
    cached = verdicts.get(key)
    if cached is not None:
        judgement = cached.judgement
        judgement.target = load_target(checkpoint)  # loaded as it was judged: by the client's name
        judgement.verdict_cache = {"state": "hit", "path": str(cached.path)}
        if keep_tokenizer:
            judgement.tokenizer = load_here(checkpoint.folder, judgement, aliases, ids_only=True)
        return judgement
    judgement = _ladder_for(
        checkpoint, aliases, keep_tokenizer, limits, acknowledged=acknowledged, settings=settings
    )
    if keep_tokenizer and judgement.tokenizer is None:
        # what this process found (it does not load, or loads otherwise here) is not the verdict
        judgement.verdict_cache = {"state": "not-stored", "path": None}
        return judgement
    path = verdicts.put(key, fields, judgement)
    judgement.verdict_cache = {
        "state": "stored" if path else "not-stored",
        "path": str(path) if path else None,
    }
    return judgement


def run_case(
    case: Case,
    *,
    record: bool = False,
    keep_tokenizer: bool = False,
    registry: dict[str, Alias] | None = None,
    limits: Limits | None = None,
    loaders: Sequence[ClientLoader] = (),
    cache: JudgeCache | None = None,
    settings: JudgeSettings | None = None,
) -> Evaluation:
    """A matrix case, as the matrix runs it (its snapshot or hub repo, its opt-in), with the client loaders."""
    return evaluate(
        case,
        record=record,
        keep_tokenizer=keep_tokenizer,
        registry=registry,
        limits=limits,
        loaders=loaders,
        cache=cache,
        settings=settings,
    )


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
    limits: Limits | None = None,
    cache: JudgeCache | None = None,
    settings: JudgeSettings | None = None,
) -> AliasOutcome:
    """Judge an alias's lifecycle on the cases of its model_type."""
    relevant: list[Checkpoint] = []
    for case in cases:
        try:
            checkpoint = resolve(case)
        except (CheckpointError, SnapshotError, NotReachable, NotRunnable):
            continue
        if _model_type(checkpoint) == alias.model_type:
            relevant.append(checkpoint)
    if not relevant:
        message = f"no case in the matrix has model_type {alias.model_type!r}; add one to check this alias"
        return AliasOutcome(NOT_CHECKED, message, "not-checked")
    judgements: list[tuple[str, Judgement]] = []
    for checkpoint in relevant:
        case_id = checkpoint.subject
        try:
            known = cache.judgement(case_id, checkpoint.folder, registry) if cache is not None else None
            judgements.append(
                (
                    case_id,
                    known
                    or _judge(checkpoint, registry=registry, limits=limits, cache=cache, settings=settings),
                )
            )
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
