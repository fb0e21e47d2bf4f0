"""The merged report: one grid of cases by transformers release, from the per-env JSON reports.

A cell is the verdict, marked where it differs from the expectation, where some
remedy's ids drift, and where it changed since the previous release; below the
grid, each alarm with the first release where it appears and what to do.

Several reports of one release (the shards of ``tokcompat grid --shard``) are
combined into one column. The exit status of the grid is one rule, shared by
``tokcompat report`` and ``tokcompat grid``: :meth:`Grid.exit_status`.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_tokcompat.contract import SCHEMA_VERSION
from pytest_tokcompat.errors import ReportError as GridError

MARK_UNEXPECTED, MARK_DRIFT, MARK_CHANGED = "✗", "~", "Δ"
MARKDOWN_LIMIT = 1024 * 1024 - 1024  # $GITHUB_STEP_SUMMARY takes at most 1 MiB per step
EXIT_CLEAN, EXIT_ALARMS, EXIT_BAD_INPUT, EXIT_INCOMPLETE = 0, 1, 2, 3
NOT_CHECKED = "not-checked"
ALIAS_PREFIX = "alias:"


@dataclass
class Cell:
    verdict: str
    expected: str | None
    status: str
    drift: bool
    changed: bool = False
    message: str = ""

    @property
    def unexpected(self) -> bool:
        return self.status == "failed"

    def marks(self) -> str:
        return (
            (MARK_UNEXPECTED if self.unexpected else "")
            + (MARK_DRIFT if self.drift else "")
            + (MARK_CHANGED if self.changed else "")
        )


@dataclass
class GridAlarm:
    kind: str
    subject: str
    first_release: str
    releases: list[str]
    message: str
    action: str


@dataclass
class Grid:
    releases: list[str]
    rows: dict[str, dict[str, Cell]]
    alarms: list[GridAlarm] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    incomplete: list[str] = field(default_factory=list)
    """Why the grid cannot say that all is well, one line each; empty when it is complete."""

    @property
    def complete(self) -> bool:
        return not self.incomplete

    def exit_status(self) -> int:
        """1 for alarms or unexpected verdicts (also when incomplete: the output says so), else 3 when
        incomplete, else 0; 2 (bad input) is the caller's."""
        if self.alarms or any(cell.unexpected for cells in self.rows.values() for cell in cells.values()):
            return EXIT_ALARMS
        return EXIT_CLEAN if self.complete else EXIT_INCOMPLETE

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "releases": self.releases,
            "rows": {
                case: {release: cell.__dict__ | {"marks": cell.marks()} for release, cell in cells.items()}
                for case, cells in self.rows.items()
            },
            "alarms": [alarm.__dict__ for alarm in self.alarms],
            "sources": self.sources,
            "complete": self.complete,
            "incomplete": self.incomplete,
        }


def load_reports(paths: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    if not paths:
        raise GridError("no report given; pass the JSON files written by --tokcompat-report")
    loaded: list[tuple[Path, dict[str, Any]]] = []
    for path in paths:
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise GridError(f"{path}: cannot read it ({error.strerror})") from None
        except ValueError as error:
            raise GridError(
                f"{path}: not JSON ({error}); was the run interrupted? run its env again"
            ) from None
        if not isinstance(document, dict) or "schema_version" not in document:
            raise GridError(f"{path}: not a tokcompat report (no schema_version)")
        if document["schema_version"] != SCHEMA_VERSION:
            raise GridError(
                f"{path}: report schema version {document['schema_version']}, this tokcompat reads "
                f"{SCHEMA_VERSION}; regenerate it with the same tokcompat version"
            )
        release = document.get("transformers_version")
        try:
            if not isinstance(release, str):
                raise InvalidVersion(repr(release))
            Version(release)
        except InvalidVersion:
            raise GridError(f"{path}: transformers_version {release!r} is not a version") from None
        _check_shape(path, document)
        loaded.append((path, document))
    return combine_releases(loaded)


def _checked(record: dict[str, Any]) -> bool:
    return record.get("status") != NOT_CHECKED


def combine_releases(reports: list[tuple[Path, dict[str, Any]]]) -> list[tuple[Path, dict[str, Any]]]:
    """One report per release: the reports of one release (shards; by version, so 5.0 and 5.0.0 are one)
    are united record by record. A checked record wins over a not-checked one; two checked records
    of one case that disagree are an error."""
    groups: dict[Version, list[tuple[Path, dict[str, Any]]]] = {}
    for path, document in reports:
        groups.setdefault(Version(document["transformers_version"]), []).append((path, document))
    combined: list[tuple[Path, dict[str, Any]]] = []
    for group in groups.values():
        if len(group) == 1:
            combined.append(group[0])
            continue
        first = group[0][1]
        records: dict[str, tuple[Path, dict[str, Any]]] = {}
        for path, document in group:
            for record in document.get("cases", []):
                held = records.get(record["id"])
                if held is None or (not _checked(held[1]) and _checked(record)):
                    records[record["id"]] = (path, record)
                elif _checked(record) and (held[1].get("status"), held[1].get("verdict")) != (
                    record.get("status"),
                    record.get("verdict"),
                ):
                    raise GridError(
                        f"{held[0]} and {path} both judge {record['id']!r} under transformers "
                        f"{first['transformers_version']}, differently ({held[1].get('verdict')} and "
                        f"{record.get('verdict')}); keep one"
                    )
        alarms: dict[tuple[str, str, str], dict[str, Any]] = {}
        for _, document in group:
            for alarm in document.get("alarms", []):
                alarms.setdefault((alarm["kind"], alarm["subject"], alarm["message"]), alarm)
        merged = dict(first)
        merged["cases"] = sorted(
            (record for _, record in records.values()),
            key=lambda r: (r.get("kind", "case"), r.get("id", "")),
        )
        merged["alarms"] = list(alarms.values())
        merged["complete"] = all(document.get("complete", True) for _, document in group)
        merged["grid_run_parts"] = [document.get("grid_run") for _, document in group]
        combined.append((Path(", ".join(str(path) for path, _ in group)), merged))
    return combined


def _check_shape(path: Path, document: dict[str, Any]) -> None:
    """The fields merge() reads, so that a damaged report is a GridError, not a crash."""
    cases, alarms = document.get("cases", []), document.get("alarms", [])
    if not isinstance(cases, list) or not all(
        isinstance(record, dict) and isinstance(record.get("id"), str) for record in cases
    ):
        raise GridError(f"{path}: 'cases' must be a list of records, each with a string 'id'")
    needed = ("kind", "subject", "message", "action")
    if not isinstance(alarms, list) or not all(
        isinstance(alarm, dict) and all(isinstance(alarm.get(key), str) for key in needed) for alarm in alarms
    ):
        raise GridError(f"{path}: 'alarms' must be a list of alarms, each with {', '.join(needed)}")


def _drifted(record: dict[str, Any]) -> bool:
    return any(attempt.get("status") == "drift" for attempt in record.get("attempts", []))


def merge(reports: list[tuple[Path, dict[str, Any]]]) -> Grid:
    ordered = sorted(reports, key=lambda item: Version(item[1]["transformers_version"]))
    releases = [document["transformers_version"] for _, document in ordered]
    rows: dict[str, dict[str, Cell]] = {}
    found: dict[tuple[str, str], GridAlarm] = {}
    for path, document in ordered:
        release = document["transformers_version"]
        for record in document.get("cases", []):
            verdict = record.get("verdict") or record.get("status", "?")
            if record.get("kind") == "alias":
                verdict = record.get("verdict") or record.get("status", "not-checked")
            cell = Cell(
                verdict=str(verdict),
                expected=record.get("expected"),
                status=str(record.get("status")),
                drift=_drifted(record),
                message=str(record.get("message", ""))[:300],
            )
            rows.setdefault(record["id"], {})[release] = cell
        for alarm in document.get("alarms", []):
            key = (alarm["kind"], alarm["subject"])
            if key not in found:
                found[key] = GridAlarm(
                    alarm["kind"], alarm["subject"], release, [], alarm["message"], alarm["action"]
                )
            if release not in found[key].releases:
                found[key].releases.append(release)
        del path
    for cells in rows.values():
        previous: Cell | None = None
        for release in releases:
            current = cells.get(release)
            if current is None or NOT_CHECKED in (current.verdict, current.status):
                continue  # a cell that was not judged neither changed nor is a baseline
            current.changed = previous is not None and previous.verdict != current.verdict
            previous = current
    ordered_rows = dict(sorted(rows.items()))
    return Grid(
        releases,
        ordered_rows,
        list(found.values()),
        {document["transformers_version"]: str(path) for path, document in ordered},
        plan_gaps([document for _, document in ordered]) + cell_problems(releases, ordered_rows),
    )


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


def cell_problems(releases: list[str], rows: dict[str, dict[str, Cell]]) -> list[str]:
    """A case with no cell in a release that has a report, and a case not checked (an alias not checked
    is not incomplete on its own: it has no case here, or its cases are counted themselves)."""
    problems: list[str] = []
    for case, cells in rows.items():
        for release in releases:
            cell = cells.get(release)
            if cell is None:
                problems.append(f"{case}: no record under transformers {release}")
            elif NOT_CHECKED in (cell.verdict, cell.status) and not case.startswith(ALIAS_PREFIX):
                problems.append(f"{case}: not checked under transformers {release}")
    return problems


def render(grid: Grid, form: str) -> str:
    if form == "json":
        return json.dumps(grid.to_json(), indent=2, ensure_ascii=False) + "\n"
    if form == "html":
        return render_html(grid)
    return render_markdown(grid)


def _cell_text(cell: Cell | None) -> str:
    if cell is None:
        return "—"
    marks = cell.marks()
    text = f"{cell.verdict} {marks}".strip()
    if cell.unexpected and cell.expected and cell.expected != cell.verdict:
        text += f" (expected {cell.expected})"
    return text


def render_markdown(grid: Grid) -> str:
    lines = ["## tokcompat: tokenizer verdicts by transformers release", ""]
    lines.append("| case | " + " | ".join(grid.releases) + " |")
    lines.append("|---" * (len(grid.releases) + 1) + "|")
    for case, cells in grid.rows.items():
        lines.append(f"| {case} | " + " | ".join(_cell_text(cells.get(r)) for r in grid.releases) + " |")
    lines += [
        "",
        f"{MARK_UNEXPECTED} differs from the matrix · {MARK_DRIFT} some remedy loads with wrong ids · "
        f"{MARK_CHANGED} changed since the previous release · — no report for that release",
        "",
    ]
    if grid.alarms:
        lines.append("### Alarms")
        lines.append("")
        for alarm in grid.alarms:
            lines.append(
                f"- **{alarm.kind}** `{alarm.subject}`, first in transformers {alarm.first_release} "
                f"(also {', '.join(alarm.releases[1:]) or 'nowhere else'}): {alarm.message}. "
                f"What to do: {alarm.action}."
            )
    else:
        lines.append("No alarms.")
    text = "\n".join(lines) + "\n"
    if len(text.encode()) > MARKDOWN_LIMIT:
        text = text.encode()[: MARKDOWN_LIMIT - 200].decode(errors="ignore")
        text += "\n\n(truncated to fit the job summary; see the JSON report)\n"
    return text


_COLOURS = {"native": "#d8f5d0", "auto_map": "#d6e8ff", "alias": "#fff2c2", "broken": "#ffd0d0"}


def render_html(grid: Grid) -> str:
    head = "".join(f"<th>{html.escape(r)}</th>" for r in grid.releases)
    body = []
    for case, cells in grid.rows.items():
        tds = []
        for release in grid.releases:
            cell = cells.get(release)
            colour = "#eeeeee" if cell is None else _COLOURS.get(cell.verdict, "#eeeeee")
            border = "3px solid #c00" if cell is not None and cell.unexpected else "1px solid #999"
            title = html.escape(cell.message if cell else "no report", quote=True)
            tds.append(
                f'<td style="background:{colour};border:{border}" title="{title}">{html.escape(_cell_text(cell))}</td>'
            )
        body.append(f"<tr><th>{html.escape(case)}</th>{''.join(tds)}</tr>")
    alarms = "".join(
        f"<li><b>{html.escape(a.kind)}</b> {html.escape(a.subject)}, first in {html.escape(a.first_release)}: "
        f"{html.escape(a.message)}. <i>{html.escape(a.action)}</i></li>"
        for a in grid.alarms
    )
    return (
        "<!doctype html><meta charset='utf-8'><title>tokcompat grid</title>"
        "<style>table{border-collapse:collapse;font:13px sans-serif}td,th{padding:4px 8px}</style>"
        f"<table><tr><th>case</th>{head}</tr>{''.join(body)}</table>"
        f"<h3>Alarms</h3><ul>{alarms or '<li>none</li>'}</ul>\n"
    )
