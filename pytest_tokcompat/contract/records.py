"""One builder per record type, and the whole report of a run: the report's shape has one owner.

Unknown statuses, outcomes and verdicts raise here, where the record is made, not in the reader a
night later.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

from pytest_tokcompat.contract.schema import SCHEMA_VERSION
from pytest_tokcompat.model import AliasState, CaseStatus, Outcome, OverrideKind, TrackedAs, Verdict

CASE, ALIAS = "case", "alias"


def library_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("transformers", "tokenizers", "huggingface_hub", "pytest-tokcompat"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def utc_timestamp() -> str:
    """Now, as the report's ISO 8601 UTC timestamps spell it."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _optional(kind: type[Any], value: str | None) -> str | None:
    return None if value is None else str(kind(value).value)


def case_record(
    case_id: str,
    status: CaseStatus | str,
    message: str,
    *,
    expected: Outcome | str | None = None,
    verdict: Verdict | str | None = None,
    alarms: Sequence[Mapping[str, Any]] = (),
    judgement: Mapping[str, Any] | None = None,
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The record of one matrix case: its result, and the judgement's record (``Judgement.to_json()``).

    ``details`` (repo, location, note …) are added as they are; the judgement's verdict
    wins over ``verdict``. Unknown statuses, outcomes or verdicts raise ValueError here,
    not in the reader a night later.
    """
    record: dict[str, Any] = {
        "kind": CASE,
        "id": case_id,
        "status": CaseStatus(status).value,
        "message": message,
        "expected": _optional(Outcome, expected),
        "verdict": _optional(Verdict, verdict),
        "alarms": [dict(alarm) for alarm in alarms],
        **(details or {}),
    }
    if judgement is not None:
        record.update(judgement)
        record["verdict"] = _optional(Verdict, judgement.get("verdict"))
        predicted = (judgement.get("static") or {}).get("predicted")
        record["verdict_matches_static"] = predicted == record["verdict"]
    return record


def alias_record(
    model_type: str,
    status: CaseStatus | str,
    state: AliasState | str | None,
    message: str,
    *,
    alias: Mapping[str, Any] | None = None,
    cases: Sequence[str] = (),
    alarms: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The record of one registry alias's lifecycle; its state lives under ``state``, never ``verdict``."""
    return {
        "kind": ALIAS,
        "id": f"alias:{model_type}",
        "status": CaseStatus(status).value,
        "state": _optional(AliasState, state),
        "message": message,
        "alias": None if alias is None else dict(alias),
        "cases": list(cases),
        "alarms": [dict(alarm) for alarm in alarms],
    }


def not_checked_record(record_id: str, reason: str) -> dict[str, Any]:
    """A case or alias (``alias:<model_type>``) that never reported: not checked, never passed."""
    if record_id.startswith("alias:"):
        return alias_record(record_id.removeprefix("alias:"), CaseStatus.NOT_CHECKED, None, reason)
    return case_record(record_id, CaseStatus.NOT_CHECKED, reason)


TRACKED_AS = tuple(str(why) for why in TrackedAs)
"""Why the upstream watch records a model_type: a case has it, an alias declares it or borrows its
tokenizer mapping, or the matrix's ``watch:`` list names it."""
OVERRIDE_KINDS = tuple(str(kind) for kind in OverrideKind)


def registry_record(
    transformers_version: str,
    model_types: Mapping[str, Mapping[str, Any]],
    override_lists: Mapping[str, Mapping[str, Any]],
    *,
    aliases: Mapping[str, Mapping[str, Any]] | None = None,
    watch: Sequence[str] = (),
    checkpoints: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """The report's ``registry`` object: the upstream watch under one release.

    ``model_types`` maps each tracked model_type to ``tracked_as`` (why: matrix, alias,
    alias-base, watch), ``config`` (its CONFIG_MAPPING_NAMES class name, null when not
    registered), ``tokenizer`` (its TOKENIZER_MAPPING_NAMES entry: a class name, [slow, fast]
    in 4.x, [] for an entry naming no class; null when it has none) and ``overrides`` (the
    override lists of model types that name it). ``override_lists`` maps each hard-coded list
    whose hub tokenizer class transformers overrides to its kind (model_types or checkpoints)
    and sorted entries. ``aliases`` are the run's alias registry entries (so the grid knows
    what is acknowledged), ``watch`` the matrix's list, ``checkpoints`` each hub repo of the
    matrix with its model_type (to match the checkpoint lists against). Unknown reasons or
    kinds raise ValueError here, not in the reader a night later.
    """
    entries: dict[str, dict[str, Any]] = {}
    for model_type, entry in sorted(model_types.items()):
        tracked = [str(why) for why in entry.get("tracked_as", [])]
        unknown = [why for why in tracked if why not in TRACKED_AS]
        if unknown:
            raise ValueError(f"tracked_as {unknown} is not one of {TRACKED_AS}")
        entries[model_type] = {
            "tracked_as": tracked,
            "config": entry.get("config"),
            "tokenizer": entry.get("tokenizer"),
            "overrides": sorted(entry.get("overrides", [])),
        }
    lists: dict[str, dict[str, Any]] = {}
    for name, found in sorted(override_lists.items()):
        if found.get("kind") not in OVERRIDE_KINDS:
            raise ValueError(
                f"override list {name}: kind {found.get('kind')!r} is not one of {OVERRIDE_KINDS}"
            )
        lists[name] = {"kind": found["kind"], "entries": sorted(found.get("entries", []))}
    return {
        "transformers_version": transformers_version,
        "model_types": entries,
        "override_lists": lists,
        "aliases": {name: dict(alias) for name, alias in sorted((aliases or {}).items())},
        "watch": list(watch),
        "checkpoints": dict(sorted((checkpoints or {}).items())),
    }


def report_document(
    records: Sequence[Mapping[str, Any]],
    matrix: str | None,
    *,
    exit_status: int,
    complete: bool,
    selection: Mapping[str, Any] | None = None,
    versions: Mapping[str, str | None] | None = None,
    started_at: str | None = None,
    finished_at: str | None = None,
    registry: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole report of one run: versions, records sorted by kind and id, every alarm in one list.

    ``complete`` is false when a case never reported; ``selection`` ({"partial": true,
    "reason": "-k qwen"}) marks a run that selected part of the matrix. ``started_at``
    lets ``write_report`` tell a run that overlapped this one from an earlier one. ``registry``
    is the upstream watch (``registry_record``), where the run read it.
    """
    found = dict(versions) if versions is not None else library_versions()
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "versions": found,
        "transformers_version": found.get("transformers"),
        "matrix": matrix,
        "exit_status": int(exit_status),
        "complete": bool(complete),
        "cases": sorted((dict(r) for r in records), key=lambda r: (r.get("kind", CASE), r.get("id", ""))),
        "alarms": [dict(alarm) for record in records for alarm in record.get("alarms", [])],
        "finished_at": finished_at or utc_timestamp(),
    }
    if started_at is not None:
        document["started_at"] = started_at
    if selection is not None:
        document["selection"] = dict(selection)
    if registry is not None:
        document["registry"] = dict(registry)
    return document


def is_full_run(document: Mapping[str, Any]) -> bool:
    """A report of a run that finished and selected the whole matrix (not interrupted, not partial)."""
    selection = document.get("selection")
    partial = isinstance(selection, Mapping) and selection.get("partial") is True
    return document.get("complete") is True and not partial
