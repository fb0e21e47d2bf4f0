"""The merged grid as Markdown: a job summary, a pull request comment and the terminal's table.

Apart from the grid's model (:mod:`pytest_tokcompat.ci.grid`) so the HTML page can share a cell's text
without the model importing its renderings.
"""

from __future__ import annotations

from pytest_tokcompat.ci.grid import (
    MARK_CHANGED,
    MARK_DRIFT,
    MARK_NOT_CHECKED,
    MARK_UNEXPECTED,
    Cell,
    Grid,
    GridAlarm,
    named,
)
from pytest_tokcompat.inert import markdown_code, markdown_text

MARKDOWN_LIMIT = 1024 * 1024 - 1024  # $GITHUB_STEP_SUMMARY takes at most 1 MiB per step


MARK_FINDING = "⚠"
REPAIR_LABELS = {"declared_special_tokens": "declared-bos/eos"}


def cell_text(cell: Cell | None) -> str:
    if cell is None:
        return "—"
    marks = cell.marks()
    text = f"{cell.verdict} {marks}".strip()
    text += "".join(f" +{REPAIR_LABELS.get(repair, repair)}" for repair in cell.repairs)
    text += "".join(f" {MARK_FINDING}{finding}" for finding in cell.findings)
    if cell.dimensions:
        text += f" [{cell.dimensions}]"
    if cell.local is not None and cell.local != cell.verdict:
        text += f" (local folder: {cell.local})"
    if cell.unexpected and cell.expected and cell.expected != cell.verdict:
        text += f" (expected {cell.expected})"
    return text


INCOMPLETE_HEADLINE = (
    "**Incomplete grid**: not everything was checked, so this grid cannot say that all is well "
    "(`tokcompat report` exits 3 unless there are alarms). Why:"
)


def render_markdown(grid: Grid) -> str:
    lines = ["## tokcompat: tokenizer verdicts by transformers release", ""]
    if not grid.complete:
        lines += [INCOMPLETE_HEADLINE, ""]
        lines += [f"- {markdown_text(reason)}" for reason in grid.incomplete]
        lines.append("")
    lines.append("| case | " + " | ".join(markdown_text(r) for r in grid.releases) + " |")
    lines.append("|---" * (len(grid.releases) + 1) + "|")
    for case, cells in grid.rows.items():
        texts = [markdown_text(cell_text(cells.get(r))) for r in grid.releases]
        lines.append(f"| {markdown_text(case)} | " + " | ".join(texts) + " |")
    for row, results in grid.loaders.items():
        texts = [markdown_text(results[r]["text"]) if r in results else "—" for r in grid.releases]
        lines.append(f"| {markdown_text(row)} | " + " | ".join(texts) + " |")
    lines += [
        "",
        f"{MARK_UNEXPECTED} differs from the matrix · {MARK_DRIFT} some remedy loads with wrong ids · "
        f"{MARK_CHANGED} changed since the previous release · {MARK_NOT_CHECKED} not checked · "
        "— no record for that release · [dimension] the contract dimension a drifting remedy failed on · "
        "[ack: …] a drift the matrix acknowledges for that release"
        + (
            " · loader:NAME rows: a client's own loader judged beside the verdict (wrong ids, an error or "
            "an obsolete shim is an alarm below)"
            if grid.loaders
            else ""
        ),
        "",
    ]
    lines += [f"Note: {markdown_text(note)}" for note in grid.notes]
    if grid.notes:
        lines.append("")
    if grid.alarms:
        lines.append("### Alarms")
        lines.append("")
        for alarm in grid.alarms:
            upstream = f" Upstream: {markdown_text(alarm.link)}" if alarm.link else ""
            also = markdown_text(", ".join(alarm.releases[1:])) or "nowhere else"
            lines.append(
                f"- **{markdown_text(alarm.kind)}** {markdown_code(alarm.subject)}{_on_cases(alarm)}, first in "
                f"transformers {markdown_text(alarm.first_release)} (also {also}): {markdown_text(alarm.message)}. "
                f"What to do: {markdown_text(alarm.action)}.{upstream}"
            )
    else:
        lines.append("No alarms." if grid.complete else "No alarms in what was checked.")
    if grid.events:
        lines += ["", "### Upstream registry events", ""]
        for event in grid.events:
            flag = (
                " **(alarm)**"
                if event.alarm
                else (f" ({markdown_text(event.acknowledged)})" if event.acknowledged else "")
            )
            lines.append(f"- {markdown_text(event.text)}{flag}")
    text = "\n".join(lines) + "\n"
    if len(text.encode()) > MARKDOWN_LIMIT:
        text = text.encode()[: MARKDOWN_LIMIT - 200].decode(errors="ignore")
        text += "\n\n(truncated to fit the job summary; see the JSON report)\n"
    return text


def _on_cases(alarm: GridAlarm) -> str:
    """`` on cases a, b`` for an alarm about a client loader (its subject names the loader)."""
    if not alarm.cases:
        return ""
    return f" on {'case' if len(alarm.cases) == 1 else 'cases'} {named(alarm.cases)}"
