"""The merged report: one grid of cases by transformers release, from the per-env JSON reports.

A cell is the verdict, marked where it differs from the expectation, where some
remedy's ids drift, where it changed since the previous release, and where it was
not checked; below the grid, each alarm with the first release where it appears
and what to do. A grid that could not check everything says so at its top and in
its exit status: an interrupted or partial run, a not-checked case, or a release
without a record for a case never merge into "all is well".

Several reports of one release (the shards of ``tokcompat grid --shard``) are
combined into one column.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_tokcompat.ci.loaders import LoaderHistory, loader_rows, loader_text
from pytest_tokcompat.ci.watch import RegistryEvent, event_alarms, registry_events
from pytest_tokcompat.contract import ALIAS, SCHEMA_VERSION, is_full_run, parse_timestamp, read_report
from pytest_tokcompat.errors import ReportError as GridError
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.model import AttemptStatus, CaseStatus

MARK_UNEXPECTED, MARK_DRIFT, MARK_CHANGED, MARK_NOT_CHECKED = "✗", "~", "Δ", "?"
NOT_CHECKED = "not-checked"
ALIAS_PREFIX = "alias:"
LOADER_ALARM_PREFIX = "loader-"
LISTED = 20
"""At most this many cases are named per kind of incompleteness; the rest are counted."""


@dataclass
class Cell:
    verdict: str
    expected: str | None
    status: str
    drift: bool
    changed: bool = False
    message: str = ""
    source: str = ""
    dimensions: str = ""
    """Contract dimensions that drifted in some attempt, and those acknowledged (``ack: decode``)."""
    findings: list[str] = field(default_factory=list)
    """Unacknowledged findings of the verdict's remedy (right ids, but e.g. the default call drifts)."""
    repairs: list[str] = field(default_factory=list)
    """Repairs applied on top of the verdict's remedy (``declared_special_tokens``)."""
    local: str | None = None
    """Where the client's repo id is name-keyed in transformers: the verdict for a local copy by its path."""
    details: dict[str, Any] = field(default_factory=dict)
    """What a reader wants on hover: the remedy, each attempt, the drifting dimension and probe, the error."""
    location: str = ""
    """The matrix entry's FILE:LINE, where the record names it."""

    @property
    def unexpected(self) -> bool:
        return self.status == CaseStatus.FAILED

    @property
    def checked(self) -> bool:
        return self.status != CaseStatus.NOT_CHECKED

    def marks(self) -> str:
        return (
            (MARK_UNEXPECTED if self.unexpected else "")
            + (MARK_DRIFT if self.drift else "")
            + (MARK_CHANGED if self.changed else "")
            + ("" if self.checked else MARK_NOT_CHECKED)
        )

    def to_json(self) -> dict[str, Any]:
        return self.__dict__ | {"marks": self.marks()}


@dataclass
class GridAlarm:
    kind: str
    subject: str
    first_release: str
    releases: list[str]
    message: str
    action: str
    link: str | None = None
    """The upstream issue that tracks it, where the alias names one."""
    cases: list[str] = field(default_factory=list)
    """The cases an alarm about a client loader was raised on, in the order they were found."""


@dataclass
class Grid:
    releases: list[str]
    rows: dict[str, dict[str, Cell]]
    alarms: list[GridAlarm] = field(default_factory=list)
    sources: dict[str, list[str]] = field(default_factory=dict)
    incomplete: list[str] = field(default_factory=list)
    """Why the grid cannot say that all is well, one line each; empty when it is complete."""
    notes: list[str] = field(default_factory=list)
    """Information that changes no exit status (several reports for one release)."""
    loaders: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    """``case / loader:NAME`` -> release -> {status, text}: client loaders beside the verdicts (their alarms are in ``alarms``)."""
    events: list[RegistryEvent] = field(default_factory=list)
    """Changes of transformers' tokenizer-relevant registries between adjacent releases (the upstream watch)."""
    versions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per release, the library versions of the report shown (tokenizers, pytest-tokcompat …) and its finished_at."""

    @property
    def complete(self) -> bool:
        return not self.incomplete

    @property
    def unexpected(self) -> list[str]:
        return [
            f"{case} under transformers {release}"
            for case, cells in self.rows.items()
            for release, cell in cells.items()
            if cell.unexpected
        ]

    def exit_status(self) -> ExitCode:
        """1 for alarms or unexpected verdicts, else 3 when incomplete, else 0."""
        if self.alarms or self.unexpected:
            return ExitCode.ALARMS
        return ExitCode.OK if self.complete else ExitCode.INCOMPLETE

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "complete": self.complete,
            "incomplete": self.incomplete,
            "releases": self.releases,
            "rows": {
                case: {release: cell.to_json() for release, cell in cells.items()}
                for case, cells in self.rows.items()
            },
            "alarms": [alarm.__dict__ for alarm in self.alarms],
            "sources": self.sources,
            "notes": self.notes,
            **({"loaders": self.loaders} if self.loaders else {}),
            "events": [event.to_json() for event in self.events],
            "versions": self.versions,
        }


Report = tuple[Path, dict[str, Any]]


def load_reports(paths: list[Path]) -> list[Report]:
    """Read and validate every report; a bad one is a GridError naming its file, never a crash."""
    if not paths:
        raise GridError("no report given; pass the JSON files written by --tokcompat-report")
    loaded: list[Report] = []
    for path in paths:
        document = read_report(path)
        release = document["transformers_version"]
        try:
            Version(release)
        except InvalidVersion:
            raise GridError(f"{path}: transformers_version {release!r} is not a version") from None
        loaded.append((path, document))
    return loaded


def _checked(record: dict[str, Any]) -> bool:
    return record.get("status") != NOT_CHECKED


def _drifted(record: Mapping[str, Any]) -> bool:
    return any(attempt.get("status") == AttemptStatus.DRIFT for attempt in record.get("attempts", []))


def _dimension_note(record: Mapping[str, Any]) -> str:
    """The dimension each drifting attempt failed on first, and those the verdict's attempt acknowledges."""
    drifted: list[str] = []
    acknowledged: list[str] = []
    for attempt in record.get("attempts", []):
        if not isinstance(attempt, Mapping):
            continue
        found = attempt.get("parity")
        parity: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        dimension = parity.get("dimension")
        if (
            attempt.get("status") == AttemptStatus.DRIFT
            and isinstance(dimension, str)
            and dimension not in drifted
        ):
            drifted.append(dimension)
        dimensions = attempt.get("dimensions")
        for name, result in dimensions.items() if isinstance(dimensions, Mapping) else []:
            status = result.get("status") if isinstance(result, Mapping) else None
            if (
                status == "acknowledged"
                and attempt.get("status") == AttemptStatus.OK
                and name not in acknowledged
            ):
                acknowledged.append(name)
    return ", ".join([*drifted, *(f"ack: {name}" for name in acknowledged)])


def _details(record: Mapping[str, Any]) -> dict[str, Any]:
    """The hover details of a cell, from what the record has (read defensively: records may be older
    or newer than this reader): the remedy, the attempts, the drifting dimension and probe, the error."""
    details: dict[str, Any] = {}
    verdict = record.get("verdict")
    if verdict in ("native", "auto_map", "alias", "backend"):
        details["remedy"] = verdict
    attempts = [a for a in record.get("attempts", []) if isinstance(a, Mapping)]
    if attempts:
        details["attempts"] = [
            {key: a.get(key) for key in ("remedy", "status", "tokenizer_class") if a.get(key) is not None}
            for a in attempts
        ]
    for attempt in attempts:
        found = attempt.get("parity")
        parity: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        if attempt.get("status") == AttemptStatus.DRIFT:
            drift: dict[str, Any] = {"remedy": attempt.get("remedy")}
            for key, name in (
                ("dimension", "dimension"),
                ("text", "probe"),
                ("kind", "probe_kind"),
                ("probe_source", "probe_source"),
            ):
                if isinstance(parity.get(key), str):
                    drift[name] = parity[key][:200]
            details["drift"] = drift
            break
    errors = [
        f"{a.get('remedy')}: {a.get('detail')}"
        for a in attempts
        if a.get("status") not in ("ok", "skipped", AttemptStatus.DRIFT) and a.get("detail")
    ]
    if errors:
        details["error"] = "; ".join(errors)[:600]
    elif record.get("status") == CaseStatus.NOT_CHECKED and record.get("message"):
        details["why"] = _first_line(str(record["message"]))
    elif record.get("status") == CaseStatus.FAILED and record.get("message"):
        details["error"] = _first_line(str(record["message"]))
    return details


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _loaders_only(record: Mapping[str, Any]) -> bool:
    """A case failed by its client loaders' alarms alone: its verdict is the one the matrix expects."""
    alarms = [a for a in record.get("alarms", []) if isinstance(a, Mapping)]
    return (
        record.get("status") == CaseStatus.FAILED
        and record.get("verdict") == record.get("expected")
        and bool(alarms)
        and all(str(a.get("kind", "")).startswith(LOADER_ALARM_PREFIX) for a in alarms)
    )


def _cell(record: Mapping[str, Any], source: Path) -> Cell:
    state = record.get("state") if record.get("kind") == ALIAS else record.get("verdict")
    local = record.get("local")
    return Cell(
        verdict=str(state or record["status"]),
        expected=record.get("expected"),
        # the verdict is as expected: the loader's row and its alarm say what failed, not a ✗ on the case
        status=CaseStatus.PASSED if _loaders_only(record) else str(record["status"]),
        drift=_drifted(record),
        message=str(record.get("message", ""))[:WHY_NOT_CHECKED],
        source=str(source),
        dimensions=_dimension_note(record),
        details=_details(record),
        findings=_strings(record.get("findings")),
        repairs=_strings(record.get("repairs")),
        local=str(local["verdict"]) if isinstance(local, Mapping) and local.get("verdict") else None,
        location=str(record.get("location") or ""),
    )


def _first_line(text: str, limit: int = 200) -> str:
    lines = text.strip().splitlines()
    return lines[0][:limit] if lines else ""


WHY_NOT_CHECKED = 600
"""A not-checked cell's reason in the grid's incompleteness, long enough to hold its fix."""


def named(items: list[str]) -> str:
    shown = ", ".join(items[:LISTED])
    return shown + (f" and {len(items) - LISTED} more" if len(items) > LISTED else "")


_NEVER = datetime.min.replace(tzinfo=timezone.utc)


def _rank(report: Report) -> tuple[bool, datetime, str]:
    """Complete runs first, then the newest, then the file name (so the choice never depends on order)."""
    path, document = report
    return is_full_run(document), parse_timestamp(document.get("finished_at")) or _NEVER, str(path)


def _run_problem(path: Path, document: Mapping[str, Any]) -> str | None:
    """Why one report cannot stand for its whole release: a partial selection, or cases that never ran."""
    selection = document.get("selection")
    shard = isinstance(document.get("grid_run"), Mapping)  # one shard of a plan: plan_gaps() covers it
    if isinstance(selection, Mapping) and selection.get("partial") is True and not shard:
        why = selection.get("reason") or "part of the matrix"
        return f"{path}: the run selected part of the matrix ({why}): run the whole matrix"
    error = document["grid_run"].get("error") if shard else None
    if document["complete"] is not True and isinstance(error, str) and error:
        return f"{path}: {error}"  # what tokcompat grid knows went wrong (an environment not built)
    if document["complete"] is not True:
        return (
            f"{path}: not every case ran (pytest exit status {document['exit_status']}: interrupted, a worker "
            "died, or part of the matrix was selected): run the whole matrix under that release again"
        )
    return None


def _release_alarms(group: list[Report], chosen: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The alarms of the records shown, and the best report's own list (it may hold alarms of no record)."""
    alarms = [alarm for record in chosen for alarm in record.get("alarms", [])]
    return alarms + list(group[0][1].get("alarms", []))


def merge(reports: list[Report]) -> Grid:
    groups: dict[Version, list[Report]] = {}
    for report in reports:
        groups.setdefault(Version(report[1]["transformers_version"]), []).append(report)
    releases: list[str] = []
    rows: dict[str, dict[str, Cell]] = {}
    found: dict[tuple[str, str], GridAlarm] = {}
    sources: dict[str, list[str]] = {}
    incomplete: list[str] = []
    notes: list[str] = []
    loaders: dict[str, dict[str, dict[str, str]]] = {}
    columns: list[tuple[str, Mapping[str, Any] | None]] = []
    versions: dict[str, dict[str, Any]] = {}
    history = LoaderHistory()
    for version in sorted(groups):
        group = sorted(groups[version], key=_rank, reverse=True)
        release = group[0][1]["transformers_version"]  # 5.0 and 5.0.0 are one release
        releases.append(release)
        sources[release] = [str(path) for path, _ in group]
        columns.append(
            (release, next((d["registry"] for _, d in group if isinstance(d.get("registry"), dict)), None))
        )
        versions[release] = {**group[0][1].get("versions", {}), "finished_at": group[0][1].get("finished_at")}
        chosen: dict[str, dict[str, Any]] = {}
        for path, document in group:
            problem = _run_problem(path, document)
            incomplete += [problem] if problem else []
            rebuilt = (document.get("grid_run") or {}).get("rebuilt")
            notes += [f"transformers {release}: {rebuilt}"] if isinstance(rebuilt, str) else []
            for record in document["cases"]:
                held = rows.get(record["id"], {}).get(release)
                if record["id"] not in chosen or (
                    held is not None and not held.checked and _cell(record, path).checked
                ):  # a shard that judged the case wins over one that left it unchecked
                    chosen[record["id"]] = record
                    rows.setdefault(record["id"], {})[release] = _cell(record, path)
                else:
                    shown, other = rows[record["id"]][release], _cell(record, path)
                    if other.checked and other.verdict != shown.verdict:
                        notes.append(
                            f"transformers {release}: {record['id']} is {shown.verdict} in {shown.source} but "
                            f"{other.verdict} in {path}; the grid shows the former (complete runs first, "
                            "then the newest)"
                        )
        if len(group) > 1:
            notes.append(
                f"transformers {release}: {len(group)} reports ({', '.join(sources[release])}); "
                "each cell comes from the newest complete one that has it"
            )
        obsolete: list[dict[str, Any]] = []
        for record in chosen.values():
            for row, result in loader_rows(record):
                loaders.setdefault(row, {})[release] = {
                    "status": str(result.get("status")),
                    "text": loader_text(result),
                }
                alarm = history.obsolete(record, result, release)
                obsolete += [alarm] if alarm is not None else []
        for alarm in [*_release_alarms(group, chosen.values()), *obsolete]:
            _add_alarm(found, alarm, [release])
    events = registry_events(columns)
    for alarm in event_alarms(events):
        _add_alarm(found, alarm, alarm["releases"])
    ordered = dict(sorted(rows.items()))
    incomplete += plan_gaps([document for report in reports for document in [report[1]]])
    incomplete += _cell_problems(releases, ordered)
    _mark_changes(releases, ordered)
    return Grid(
        releases,
        ordered,
        list(found.values()),
        sources,
        incomplete,
        notes,
        dict(sorted(loaders.items())),
        events,
        versions,
    )


def _add_alarm(
    found: dict[tuple[str, str], GridAlarm], alarm: Mapping[str, Any], releases: list[str]
) -> None:
    """One grid alarm per kind and subject: the first release's text, every release that raised it."""
    key = (alarm["kind"], alarm["subject"])
    if key not in found:
        link = alarm.get("link") if isinstance(alarm.get("link"), str) else None
        found[key] = GridAlarm(
            alarm["kind"], alarm["subject"], releases[0], [], alarm["message"], alarm["action"], link
        )
    for release in releases:
        if release not in found[key].releases:
            found[key].releases.append(release)
    case = alarm.get("case")
    if isinstance(case, str) and case not in found[key].cases:
        found[key].cases.append(case)


def _cell_problems(releases: list[str], rows: dict[str, dict[str, Cell]]) -> list[str]:
    """Cases with no record for a release, and cases not checked (an alias not checked is not
    incomplete on its own: it has no case here, or its cases are counted themselves)."""
    problems = []
    for release in releases:
        missing = [case for case, cells in rows.items() if release not in cells]
        if missing:
            problems.append(
                f"transformers {release}: no record for {named(missing)} (its report does not have it): "
                "run the same matrix under every release"
            )
        unchecked = [
            f"{case}{f' at {cells[release].location}' if cells[release].location else ''} "
            f"({_first_line(cells[release].message, WHY_NOT_CHECKED) or 'not checked'})"
            for case, cells in rows.items()
            if release in cells and not cells[release].checked and not case.startswith(f"{ALIAS}:")
        ]
        if unchecked:
            problems.append(f"transformers {release}: not checked: {named(unchecked)}")
    return problems


def _mark_changes(releases: list[str], rows: dict[str, dict[str, Cell]]) -> None:
    for cells in rows.values():
        previous: Cell | None = None
        for release in releases:
            current = cells.get(release)
            if current is None or not current.checked:
                continue
            current.changed = previous is not None and previous.verdict != current.verdict
            previous = current


def plan_gaps(documents: list[dict[str, Any]]) -> list[str]:
    """What a ``tokcompat grid`` plan promised and no report holds: each report it writes names the
    plan (its releases and how many cells) and the cells it holds, so a shard that never reported shows."""
    parts = [
        part
        for document in documents
        for part in (document.get("grid_run_parts") or [document.get("grid_run")])
        if isinstance(part, dict) and isinstance(part.get("plan"), dict)
    ]
    if not parts:
        return []
    gaps: list[str] = []
    planned = max(int(part["plan"].get("cells", 0)) for part in parts)
    held = sum(int(part.get("cells", 0)) for part in parts)
    if held < planned:
        gaps.append(
            f"{planned - held} of the {planned} planned cells have no report (did a shard not finish?)"
        )
    labels = {str(label) for part in parts for label in part["plan"].get("releases", [])}
    reported = {str(part.get("release")) for part in parts}
    for label in sorted(labels - reported):
        gaps.append(f"no report for transformers {label}")
    return gaps
