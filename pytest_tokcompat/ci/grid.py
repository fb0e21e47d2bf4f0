"""The merged report: one grid of cases by transformers release, from the per-env JSON reports.

A cell is the verdict, marked where it differs from the expectation, where some
remedy's ids drift, and where it changed since the previous release; below the
grid, each alarm with the first release where it appears and what to do.
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


@dataclass
class Cell:
    verdict: str
    expected: str | None
    status: str
    drift: bool
    changed: bool = False
    message: str = ""
    dimensions: str = ""
    """Contract dimensions that drifted in some attempt, and those acknowledged (``ack: decode``)."""

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
        }


def load_reports(paths: list[Path]) -> list[tuple[Path, dict[str, Any]]]:
    if not paths:
        raise GridError("no report given; pass the JSON files written by --tokcompat-report")
    loaded: list[tuple[Path, dict[str, Any]]] = []
    seen: dict[Version, Path] = {}
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
            version = Version(release)
        except InvalidVersion:
            raise GridError(f"{path}: transformers_version {release!r} is not a version") from None
        if version in seen:  # by version, so that 5.0 and 5.0.0 are one release
            raise GridError(
                f"{path} and {seen[version]} are both reports for transformers {release}; keep one"
            )
        _check_shape(path, document)
        seen[version] = path
        loaded.append((path, document))
    return loaded


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


def _dimension_note(record: dict[str, Any]) -> str:
    """The dimension each drifting attempt failed on first, and those the verdict's attempt acknowledges."""
    drifted: list[str] = []
    acknowledged: list[str] = []
    for attempt in record.get("attempts", []):
        if not isinstance(attempt, dict):
            continue
        parity = attempt.get("parity") if isinstance(attempt.get("parity"), dict) else {}
        dimension = parity.get("dimension")
        if attempt.get("status") == "drift" and isinstance(dimension, str) and dimension not in drifted:
            drifted.append(dimension)
        dimensions = attempt.get("dimensions")
        for name, result in dimensions.items() if isinstance(dimensions, dict) else []:
            status = result.get("status") if isinstance(result, dict) else None
            if status == "acknowledged" and attempt.get("status") == "ok" and name not in acknowledged:
                acknowledged.append(name)
    return ", ".join([*drifted, *(f"ack: {name}" for name in acknowledged)])


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
                dimensions=_dimension_note(record),
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
            if current is None:
                continue
            current.changed = previous is not None and previous.verdict != current.verdict
            previous = current
    return Grid(
        releases,
        dict(sorted(rows.items())),
        list(found.values()),
        {document["transformers_version"]: str(path) for path, document in ordered},
    )


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
    if cell.dimensions:
        text += f" [{cell.dimensions}]"
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
        f"{MARK_CHANGED} changed since the previous release · — no report for that release · "
        "[dimension] the contract dimension a drifting remedy failed on · [ack: …] a drift the matrix "
        "acknowledges for that release",
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
