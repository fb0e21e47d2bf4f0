"""Run one matrix case (or one alias lifecycle) to an outcome: passed, failed or not checked.

Everything the pytest items, the CLI and ``load_tokenizer()`` report comes from
here, so that all three agree on what a case means.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_tokcompat.contract import case_record
from pytest_tokcompat.errors import NotReachable, NotRunnable
from pytest_tokcompat.judge.alarms import Alarm, alias_alarms, verdict_alarm
from pytest_tokcompat.judge.ladder import (
    DEFAULT_LIMITS,
    Attempt,
    Judgement,
    Limits,
    judge,
    transformers_version,
)
from pytest_tokcompat.judge.static import CheckpointError, read_json_object
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.matrix.loader import Case
from pytest_tokcompat.model import FAILED_ATTEMPTS, CaseStatus
from pytest_tokcompat.sources.snapshots import SnapshotError, materialize

PASSED, FAILED, NOT_CHECKED = CaseStatus.PASSED, CaseStatus.FAILED, CaseStatus.NOT_CHECKED
_JUDGED: dict[tuple[str, str, tuple[Alias, ...]], Judgement] = {}
"""Judgements of this process, so an alias lifecycle item reuses its cases' loads (under the same registry)."""


def _judged_key(
    case: Case, folder: Path, registry: dict[str, Alias] | None
) -> tuple[str, str, tuple[Alias, ...]]:
    """A judgement depends on the registry it ran with: a declared alias must not reuse a built-in's result."""
    from pytest_tokcompat.matrix.aliases import REGISTRY

    aliases = REGISTRY if registry is None else registry
    return case.id, str(folder), tuple(aliases[name] for name in sorted(aliases))


@dataclass
class CaseOutcome:
    case_id: str
    status: str
    message: str
    expected: str | None = None
    judgement: Judgement | None = None
    alarms: list[Alarm] = field(default_factory=list)
    folder: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> str | None:
        return self.judgement.verdict if self.judgement else self.extra.get("verdict")

    def to_json(self) -> dict[str, Any]:
        details = {key: value for key, value in self.extra.items() if key != "verdict"}
        return case_record(
            self.case_id,
            self.status,
            self.message,
            expected=self.expected,
            verdict=self.verdict,
            alarms=[a.to_json() for a in self.alarms],
            judgement=self.judgement.to_json() if self.judgement is not None else None,
            details=details,
        )


def resolve_folder(case: Case) -> Path:
    """The local checkpoint folder of a case: its snapshot, assembled, or its hub repo from the cache."""
    if case.snapshot is not None:
        return materialize(case.snapshot)
    assert case.repo is not None
    from pytest_tokcompat.sources.hub import resolve_repo

    return resolve_repo(case.repo, case.revision, trust_remote_code=case.trust_remote_code)


def model_type_of(case: Case) -> str | None:
    """The case's model_type from config.json alone, for grouping cases under an alias."""
    try:
        config = read_json_object(resolve_folder(case) / "config.json")
    except (CheckpointError, SnapshotError, NotReachable, NotRunnable):
        return None
    value = config.get("model_type")
    return value if isinstance(value, str) else None


def judge_case(
    case: Case,
    folder: Path,
    *,
    registry: dict[str, Alias] | None = None,
    record: bool = False,
    keep_tokenizer: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> Judgement:
    """The ladder with the case's own opt-in, texts and golden ids; remembered for its alias item."""
    judgement = judge(
        folder,
        trust_remote_code=case.trust_remote_code,
        extra_texts=case.texts,
        golden_path=case.golden_path,
        registry=registry,
        record_as=case.id if record else None,
        keep_tokenizer=keep_tokenizer,
        limits=limits,
    )
    _JUDGED[_judged_key(case, folder, registry)] = replace(
        judgement, tokenizer=None
    )  # keep no tokenizer alive
    return judgement


def run_case(
    case: Case,
    *,
    record: bool = False,
    keep_tokenizer: bool = False,
    registry: dict[str, Alias] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> CaseOutcome:
    version = transformers_version()
    try:
        expected = case.expected_for(version)
    except ValueError as error:
        return CaseOutcome(case.id, FAILED, str(error))
    try:
        folder = resolve_folder(case)
    except NotReachable as error:
        return CaseOutcome(case.id, NOT_CHECKED, str(error), expected)
    except (SnapshotError, CheckpointError, NotRunnable) as error:
        return CaseOutcome(case.id, FAILED, str(error), expected)
    try:
        judgement = judge_case(
            case, folder, registry=registry, record=record, keep_tokenizer=keep_tokenizer, limits=limits
        )
    except CheckpointError as error:
        # The checkpoint's own files are unusable: no remedy can load it, so the verdict is broken.
        status = PASSED if expected == "broken" else FAILED
        outcome = CaseOutcome(
            case.id, status, f"broken: {error} (case {case.id!r} at {case.location})", expected
        )
        outcome.extra = {"verdict": "broken", "location": case.location}
        return outcome
    outcome = CaseOutcome(case.id, PASSED, "", expected, judgement, folder=folder)
    outcome.extra = {"repo": case.repo, "location": case.location, "note": case.note}
    if judgement.recorded is not None:
        outcome.status = FAILED
        outcome.message = (
            f"golden ids recorded to {judgement.recorded}; review and commit them, then run again without "
            "--tokcompat-record"
        )
        return outcome
    if judgement.verdict == "not-checked":
        outcome.status = FAILED
        outcome.message = (
            f"case {case.id!r}: the tokenizer loads but its ids were not checked: {judgement.parity.reason}"
        )
        return outcome
    alarm = verdict_alarm(case.id, expected, judgement)
    if alarm is not None:
        outcome.status = FAILED
        outcome.alarms.append(alarm)
        outcome.message = f"case {case.id!r} ({case.location}): {alarm.message}\n  what to do: {alarm.action}"
        outcome.message += "\n" + describe_attempts(judgement)
    else:
        outcome.message = f"{judgement.verdict}: {judgement.parity.describe()}"
    return outcome


def describe_attempts(judgement: Judgement) -> str:
    lines = [f"  attempts under transformers {judgement.transformers_version}:"]
    for attempt in judgement.attempts:
        detail = f": {attempt.detail}" if attempt.detail else ""
        loaded = f" ({attempt.tokenizer_class})" if attempt.tokenizer_class else ""
        lines.append(f"    {attempt.remedy:<9} {attempt.status}{loaded}{detail}")
    return "\n".join(lines)


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
            (j.attempt("native") or Attempt("native", "skipped")).status == "ok" for j in judgements
        )
        return "obsolete" if native_ok else "drift"
    if any(j.verdict == "alias" for j in judgements):
        return "needed"
    tried = [j.attempt("alias") for j in judgements if j.verdict not in ("native", "auto_map")]
    if any(attempt is not None and attempt.status in FAILED_ATTEMPTS for attempt in tried):
        return "broken"  # needed, but as declared it is no remedy
    return "unused"


def run_alias(
    alias: Alias,
    cases: list[Case],
    registry: dict[str, Alias] | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> AliasOutcome:
    """Judge an alias's lifecycle on the cases of its model_type."""
    relevant = [case for case in cases if model_type_of(case) == alias.model_type]
    if not relevant:
        message = f"no case in the matrix has model_type {alias.model_type!r}; add one to check this alias"
        return AliasOutcome(NOT_CHECKED, message, "not-checked")
    judgements: list[tuple[str, Judgement]] = []
    for case in relevant:
        try:
            folder = resolve_folder(case)
            judgement = _JUDGED.get(_judged_key(case, folder, registry))
            judgements.append(
                (case.id, judgement or judge_case(case, folder, registry=registry, limits=limits))
            )
        except (NotReachable, NotRunnable, SnapshotError, CheckpointError):
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
