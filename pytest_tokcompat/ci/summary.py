"""The terminal summary: one table of the run, case by case, then the alarms.

Reads report records (pytest_tokcompat.contract builds them), never the judge. Every
line is for a terminal: a checkpoint's strings in it have their control characters
shown escaped (:func:`pytest_tokcompat.inert.terminal`), never interpreted.
"""

from __future__ import annotations

from typing import Any

from pytest_tokcompat.ci.loaders import loader_rows, loader_text
from pytest_tokcompat.contract import ALIAS, CASE
from pytest_tokcompat.inert import terminal
from pytest_tokcompat.model import CaseStatus, Verdict

REMEDY_TEXT = {
    Verdict.NATIVE.value: "plain AutoTokenizer",
    Verdict.AUTO_MAP.value: "trust_remote_code=True",
    Verdict.ALIAS.value: "tokcompat alias",
    Verdict.BACKEND.value: "fast-backend override",
    Verdict.BROKEN.value: "none works",
    Verdict.NOT_CHECKED.value: "-",
}


def _cell(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    return "-" if value in (None, "") else str(value)


def _parity_cell(record: dict[str, Any]) -> str:
    """The parity status, with the dimension that drifted and any acknowledged one (``match (ack: decode)``)."""
    parity = record.get("parity") or {}
    text = str(parity.get("status", "-"))
    if parity.get("dimension") and text != "match":
        kind = f"/{parity['kind']}" if parity.get("kind") else ""
        text += f" ({parity['dimension']}{kind})"
    found = parity.get("dimensions")
    dimensions: dict[str, Any] = found if isinstance(found, dict) else {}
    acknowledged = [
        n for n, r in dimensions.items() if isinstance(r, dict) and r.get("status") == "acknowledged"
    ]
    if acknowledged:
        text += f" (ack: {', '.join(acknowledged)})"
    findings = record.get("findings")
    for finding in findings if isinstance(findings, list) else []:
        text += f" ⚠{finding}"
    repairs = record.get("repairs")
    for repair in repairs if isinstance(repairs, list) else []:
        text += f" +{repair}"
    return text


def summary_lines(records: list[dict[str, Any]]) -> list[str]:
    cases = sorted((r for r in records if r.get("kind") == CASE), key=lambda r: r["id"])
    aliases = sorted((r for r in records if r.get("kind") == ALIAS), key=lambda r: r["id"])
    rows = [("case", "model_type", "expected", "verdict", "parity", "remedy")]
    for record in cases:
        verdict = record.get("verdict") or record.get("status")
        parity = _parity_cell(record)
        mark = "" if record.get("status") == CaseStatus.PASSED else " !"
        rows.append(
            (
                record["id"],
                _cell(record, "model_type"),
                _cell(record, "expected"),
                f"{verdict}{mark}",
                parity,
                REMEDY_TEXT.get(str(verdict), "-"),
            )
        )
    shown = [[terminal(cell) for cell in row] for row in rows]  # escaped before the widths are taken
    widths = [max(len(row[i]) for row in shown) for i in range(len(shown[0]))]
    lines = [
        " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip()
        for row in shown
    ]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    for record in cases:
        if record.get("verdict_matches_static") is False:
            predicted = record.get("static", {}).get("predicted")
            lines.append(
                f"note: {record['id']}: the static view predicts {predicted}, the measured verdict is "
                f"{record.get('verdict')} (information, not a failure)"
            )
    for record in cases:
        for row, result in loader_rows(record):
            lines.append(f"{row}: {loader_text(result)}")
    for record in aliases:
        message = (record.get("message") or "").splitlines() or [""]
        lines.append(f"{record['id']}: {record.get('status')}: {message[0]}".rstrip())
    alarms = [alarm for record in records for alarm in record.get("alarms", [])]
    for alarm in alarms:
        lines.append(f"ALARM [{alarm['kind']}] {alarm['subject']}: {alarm['message']}; {alarm['action']}")
    return [terminal(line) for line in lines]
