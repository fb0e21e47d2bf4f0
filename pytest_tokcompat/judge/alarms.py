"""Alarms: the changes upstream that a maintainer must act on, each with what to do.

A verdict that differs from the matrix is one; so is an alias that transformers
made obsolete, and a native registration that gives wrong ids. Recording the
change (in the matrix or the alias registry) acknowledges it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from packaging.version import Version

from pytest_tokcompat.judge.judgement import Judgement, LoaderResult
from pytest_tokcompat.matrix.aliases import BUILT_IN, Alias
from pytest_tokcompat.matrix.cases import Case
from pytest_tokcompat.matrix.clients import obsolete_action
from pytest_tokcompat.matrix.versions import matching_ranges, parse_range
from pytest_tokcompat.model import FAILED_ATTEMPTS, AlarmKind, AttemptStatus, Outcome, Verdict

UNEXPECTED_VERDICT, OBSOLETE_ALIAS, NATIVE_DRIFT = (
    AlarmKind.UNEXPECTED_VERDICT,
    AlarmKind.OBSOLETE_ALIAS,
    AlarmKind.NATIVE_DRIFT,
)
REPAIR_TEXT = {
    "backend": "the backend override (tokenizer.json loaded with the fast backend as it is)",
    "declared_special_tokens": "the declared BOS/EOS repair",
}


@dataclass(frozen=True)
class Alarm:
    kind: str
    subject: str
    transformers_version: str
    message: str
    action: str
    link: str | None = None
    """The upstream issue that tracks it, where one is known (the grid and the issue text link it)."""
    case: str | None = None
    """The case an alarm about a client loader (its subject) was raised on."""

    def to_json(self) -> dict[str, Any]:
        found = asdict(self)
        for optional in ("link", "case"):
            if found[optional] is None:
                del found[optional]
        return found

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}; {self.action}"


def declaration_of(alias: Alias) -> str:
    """Where to record what changed for ``alias``: the registry module, or its own declaration."""
    if alias.declared_in == BUILT_IN:
        return "in the alias registry"
    return f"in its declaration ({alias.declared_in})"


def _release_range(version: str) -> str:
    return f">={Version(version).base_version}"


def verdict_alarm(case_id: str, expected: str, judgement: Judgement) -> Alarm | None:
    """The alarm for a verdict that differs from the matrix, phrased as the fix."""
    got, version = judgement.verdict, judgement.transformers_version
    if got == expected or got == "not-checked":
        return None
    model_type = judgement.model_type
    if expected == "backend" and got == "native":
        return Alarm(
            AlarmKind.OBSOLETE_REPAIR,
            case_id,
            version,
            f"expected backend, got native: plain AutoTokenizer keeps parity under transformers {version}, so "
            f"{REPAIR_TEXT['backend']} is obsolete from {version} for {case_id}"
            + (f" (loaded as {judgement.target.name})" if judgement.target is not None else ""),
            f"retire the shim for this release and later: expect native for '{_release_range(version)}' in "
            "the matrix (and drop the class override from your client where it loads this checkpoint)",
        )
    if got == "backend":
        chosen = judgement.chosen
        native = judgement.attempt("native")
        why = (
            f" (plain loading: {native.status}: {native.detail})"
            if native is not None and native.detail
            else ""
        )
        return Alarm(
            UNEXPECTED_VERDICT,
            case_id,
            version,
            f"expected {expected}, got backend: under transformers {version} only {REPAIR_TEXT['backend']} "
            f"gives right ids for {case_id}{why}"
            + (
                f"; it loads as {chosen.tokenizer_class}"
                if chosen is not None and chosen.tokenizer_class
                else ""
            ),
            f"a repair is needed from {version}: load it with TokenizersBackend.from_pretrained (load_tokenizer() "
            f"does), and expect backend for '{_release_range(version)}' in the matrix",
        )
    if expected == "alias" and got == "native":
        why = (
            f"transformers {version} registers {model_type} natively"
            if judgement.static.registered_natively
            else f"transformers {version} loads {model_type} without the alias"
        )
        message = f"expected alias, got native: {why} and plain AutoTokenizer keeps parity"
        action = (
            f"the alias is obsolete: expect native for '{_release_range(version)}'"
            " and record the release in the alias registry"
        )
    elif got == "broken":
        failures = "; ".join(f"{a.remedy}: {a.detail}" for a in judgement.attempts if a.status != "skipped")
        message = f"expected {expected}, got broken: no remedy loads {case_id} with right ids and an intact contract ({failures})"
        action = "investigate the attempts below; if upstream broke it, expect broken for this release and report it"
    else:
        message = f"expected {expected}, got {got} under transformers {version}"
        action = f"if this is the new normal, expect {got} for '{_release_range(version)}' in the matrix"
    return Alarm(UNEXPECTED_VERDICT, case_id, version, message, action)


def findings_alarm(case_id: str, judgement: Judgement) -> Alarm | None:
    """Right ids, but findings the matrix entry does not acknowledge: each named with its consequence."""
    from pytest_tokcompat.model import CONSEQUENCES

    findings = judgement.findings
    if not findings or judgement.verdict not in ("native", "auto_map", "alias", "backend"):
        return None
    version = judgement.transformers_version
    repaired = (
        f" (repaired by {', '.join(judgement.repairs)} in load_tokenizer())" if judgement.repairs else ""
    )
    told = "; ".join(f"{name}: {CONSEQUENCES.get(name, name)}" for name in findings)
    return Alarm(
        AlarmKind.UNACKNOWLEDGED_FINDING,
        case_id,
        version,
        f"{judgement.verdict} with right ids on ordinary text under transformers {version}, and findings the "
        f"matrix does not acknowledge: {told}",
        f"if this is known and accepted, acknowledge {', '.join(findings)} for '{_release_range(version)}' in "
        f"the entry's acknowledge: with the reason; else report it upstream{repaired}",
    )


def alias_alarms(alias: Alias, judgements: list[tuple[str, Judgement]]) -> list[Alarm]:
    """The lifecycle of one alias, judged on the matrix cases that carry its model_type."""
    alarms: list[Alarm] = []
    for case_id, judgement in judgements:
        version = judgement.transformers_version
        if not judgement.static.registered_natively:
            continue
        native = judgement.attempt("native")
        acknowledged_native = alias.native_since is not None and Version(version) >= Version(
            alias.native_since
        )
        if native is not None and native.status == "ok" and not acknowledged_native:
            alarms.append(
                Alarm(
                    OBSOLETE_ALIAS,
                    alias.model_type,
                    version,
                    f"transformers {version} registers {alias.model_type} natively and plain AutoTokenizer "
                    f"keeps parity on {case_id}: the {alias.model_type} alias is obsolete",
                    f"record native_since='{Version(version).base_version}' (or the first such release, see "
                    f"'tokcompat bisect') for {alias.model_type} {declaration_of(alias)}, and expect native "
                    f"for '{_release_range(version)}' in the matrix",
                    link=alias.upstream_issue or None,
                )
            )
        drift_acknowledged = alias.native_drift is not None and bool(
            matching_ranges([parse_range(alias.native_drift)], version)
        )
        if native is not None and native.status in FAILED_ATTEMPTS and not drift_acknowledged:
            alarms.append(
                Alarm(
                    NATIVE_DRIFT,
                    alias.model_type,
                    version,
                    f"transformers {version} registers {alias.model_type} natively but plain loading of "
                    f"{case_id} fails parity ({native.detail}); the alias must stay for earlier releases",
                    f"report it upstream ({alias.upstream_issue}) and record this release in native_drift "
                    f"for {alias.model_type} {declaration_of(alias)}",
                    link=alias.upstream_issue or None,
                )
            )
    return alarms


REMEDY_WORDS = {
    Verdict.NATIVE: "plain AutoTokenizer.from_pretrained",
    Verdict.AUTO_MAP: "AutoTokenizer with trust_remote_code=True",
    Verdict.ALIAS: "tokcompat's alias (the model_type registered with the tokenizer mapping it borrows)",
}


def _first_difference(result: LoaderResult) -> str:
    parity = result.attempt.parity
    if parity is None:
        return result.attempt.detail or "its ids differ"
    if parity.dimension not in (None, "ids"):
        return f"the {parity.dimension} dimension drifts ({parity.describe()})"
    count = f"{result.differing} of {result.compared} probe texts differ; " if result.compared else ""
    return f"{count}first: {parity.text!r} gives {parity.actual} instead of {parity.expected}"


def loader_alarms(case_id: str, case: Case | None, judgement: Judgement) -> list[Alarm]:
    """A client's loaders judged with the lifecycle of an alias: wrong ids or a loader that cannot be
    used is an alarm; one that plain AutoTokenizer has made unnecessary is obsolete from that release."""
    alarms: list[Alarm] = []
    version = judgement.transformers_version
    works = REMEDY_WORDS.get(Verdict(judgement.verdict)) if judgement.verdict in REMEDY_WORDS else None
    instead = f"here {works} gives right ids" if works else "no remedy gives right ids here either"
    native = judgement.attempt("native")
    try:
        expected_broken = case is not None and case.expected_for(version) == Outcome.BROKEN
    except ValueError:
        expected_broken = False
    for result in judgement.loaders:
        loader, status = result.loader, result.attempt.status
        subject = f"loader:{loader.name}"
        who = f"your loader {loader.name} ({loader.call}{':' + loader.attr if loader.attr else ''})"
        if status in FAILED_ATTEMPTS and expected_broken:
            continue  # the matrix records that nothing loads it right here
        if status == AttemptStatus.DRIFT:
            alarms.append(
                Alarm(
                    AlarmKind.LOADER_DRIFT,
                    subject,
                    version,
                    f"{who} loads {case_id} with wrong ids under transformers {version}: {_first_difference(result)}",
                    f"fix the shim for transformers {version} ({instead}; `tokcompat check {case_id}` shows it)",
                    case=case_id,
                )
            )
        elif status in FAILED_ATTEMPTS:
            offline = "".join(f", called with {k}={v}" for k, v in result.environment.items())
            alarms.append(
                Alarm(
                    AlarmKind.LOADER_ERROR,
                    subject,
                    version,
                    f"{who} cannot be used on {case_id} under transformers {version}{offline}: "
                    f"{status}: {result.attempt.detail}",
                    "check that the module and callable are spelt right and installed where the run is "
                    "(tokcompat grid --with YOUR-PACKAGE), and that the call works as your client makes it",
                    case=case_id,
                )
            )
        elif (
            status == AttemptStatus.OK
            and native is not None
            and native.status == AttemptStatus.OK
            and judgement.model_type in result.registers
            and not (loader.native_since and Version(version) >= Version(loader.native_since))
        ):
            alarms.append(
                Alarm(
                    AlarmKind.LOADER_OBSOLETE,
                    subject,
                    version,
                    f"{who} registers {judgement.model_type} for {case_id} under transformers {version}, where "
                    f"plain AutoTokenizer.from_pretrained gives the same right ids: your shim is obsolete from "
                    f"{version}",
                    obsolete_action(loader.name, version),
                    case=case_id,
                )
            )
    return alarms
