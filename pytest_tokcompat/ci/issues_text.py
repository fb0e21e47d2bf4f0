"""From the merged grid's alarms to issue text: one stable title and a Markdown body per alarm.

The title is keyed on the alarm's kind and subject only, never on a release, so
that the nightly workflow finds the same open issue night after night (by exact
title) and updates it, and closes it once the alarm is gone -- but only on a
complete grid: the JSON carries ``complete``, and an alarm missing from an
incomplete grid may only be unchecked, not fixed.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote

from pytest_tokcompat.ci.grid import Grid, GridAlarm
from pytest_tokcompat.credentials import scrub
from pytest_tokcompat.inert import markdown_code, markdown_text, plain_title
from pytest_tokcompat.model import AlarmKind

NATIVE_DRIFT, OBSOLETE_ALIAS, UNEXPECTED_VERDICT, REGISTRY_CHANGE = (
    AlarmKind.NATIVE_DRIFT,
    AlarmKind.OBSOLETE_ALIAS,
    AlarmKind.UNEXPECTED_VERDICT,
    AlarmKind.REGISTRY_CHANGE,
)

TITLE_PREFIX = "tokcompat:"
TITLE_LIMIT = 256  # GitHub's limit for an issue title
_TITLES = {
    OBSOLETE_ALIAS: "{subject} alias obsolete",
    NATIVE_DRIFT: "{subject} native registration gives wrong ids",
    UNEXPECTED_VERDICT: "{subject} verdict differs from the matrix",
    REGISTRY_CHANGE: "{subject} registration changed upstream",
    AlarmKind.LOADER_DRIFT: "your {subject} gives wrong token ids",
    AlarmKind.LOADER_ERROR: "your {subject} cannot be imported or called",
    AlarmKind.LOADER_OBSOLETE: "your {subject} shim is obsolete",
}
LOADER_KINDS = (AlarmKind.LOADER_DRIFT, AlarmKind.LOADER_ERROR, AlarmKind.LOADER_OBSOLETE)
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class IssueText:
    key: str
    title: str
    body: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def alarm_key(alarm: GridAlarm) -> str:
    return f"{alarm.kind}:{alarm.subject}"


def alarm_title(alarm: GridAlarm) -> str:
    """``tokcompat: <subject> <what>``: the same for the same kind and subject, whatever the release."""
    template = (
        _TITLES.get(AlarmKind(alarm.kind), "{subject} {kind}")
        if alarm.kind in set(AlarmKind)
        else "{subject} {kind}"
    )
    title = f"{TITLE_PREFIX} " + plain_title(
        _one_line(template.format(subject=alarm.subject, kind=alarm.kind))
    )
    return title if len(title) <= TITLE_LIMIT else title[: TITLE_LIMIT - 1] + "…"


def key_comment(key: str) -> str:
    """The key, hidden in the body, percent-encoded so no ``-->`` in a subject ends the comment early."""
    return f"<!-- tokcompat-key: {quote(key, safe=':/')} -->"


def alarm_body(alarm: GridAlarm) -> str:
    """The issue's Markdown: every string from a report (subject, message, releases, link) inert."""
    releases = ", ".join(alarm.releases) or alarm.first_release
    lines = [
        key_comment(alarm_key(alarm)),
        f"**{markdown_text(alarm.kind)}** for {markdown_code(alarm.subject)}, raised by the nightly tokcompat grid.",
        "",
        "### What",
        "",
        f"{markdown_text(alarm.message)}.",
        "",
        *(["### Cases", "", ", ".join(alarm.cases), ""] if alarm.cases else []),
        "### First release",
        "",
        f"transformers {markdown_text(alarm.first_release)}",
        "",
        "### All releases with this alarm",
        "",
        markdown_text(releases),
        "",
        "### What to do",
        "",
        f"{markdown_text(alarm.action)}.",
    ]
    if alarm.link:
        lines += ["", "### Upstream", "", markdown_text(alarm.link)]
    if alarm.kind == REGISTRY_CHANGE:
        lines += [
            "",
            "Raised by the upstream watch (the report's `registry`): no checkpoint was needed. With `main` in "
            "the grid's release set it fires the night the change is merged upstream.",
        ]
    if alarm.kind in LOADER_KINDS:
        lines += [
            "",
            "Your own tokenizer loader was called as your client calls it, in each release's environment "
            "(`tokcompat grid --with … --loader …`), and checked against the checkpoint's ground truth.",
        ]
    if alarm.kind == AlarmKind.LOADER_OBSOLETE:
        lines += [
            "",
            f"Plain AutoTokenizer gives the same right tokenizer from transformers {alarm.first_release} on.",
        ]
    if alarm.kind == OBSOLETE_ALIAS:
        lines += [
            "",
            "To find the exact first release between two grid columns, run "
            "`tokcompat bisect CASE --from OLD --to NEW` on a case that carries this model type.",
        ]
    lines += [
        "",
        "---",
        "This issue is updated by the nightly workflow while the alarm stands, and closed when it is gone.",
    ]
    return "\n".join(lines) + "\n"


def issue_texts(alarms: list[GridAlarm]) -> list[IssueText]:
    """One text per alarm, in a stable order (by key); alarms with the same key become one."""
    texts: dict[str, IssueText] = {}
    for alarm in alarms:
        key = alarm_key(alarm)
        # credentials masked: what is filed on GitHub is public
        texts.setdefault(key, IssueText(key, scrub(alarm_title(alarm)), scrub(alarm_body(alarm))))
    return [texts[key] for key in sorted(texts)]


def issues_document(grid: Grid) -> dict[str, Any]:
    """What the nightly reads: the issue texts, and whether the grid is complete enough to close any."""
    return {
        "complete": grid.complete,
        "incomplete": grid.incomplete,
        "issues": [text.to_json() for text in issue_texts(grid.alarms)],
    }
