"""``tokcompat issues-sync``: one GitHub issue per alarm of the merged grid, through the ``gh`` CLI.

Run by the workflow's issues job, the only job that may write. For each alarm it
opens an issue, or updates the open one that carries the alarm's key (or, for
issues opened before keys were written, its exact title). An open ``tokcompat:``
issue whose alarm is gone is closed, but only when the grid is complete: a release
or a cell without a report must not look like a fixed alarm (``--incomplete`` says
so from outside, e.g. when a shard job failed before it could report).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pytest_tokcompat.ci.grid import load_reports, merge
from pytest_tokcompat.ci.issues_text import TITLE_PREFIX, IssueText, issue_texts
from pytest_tokcompat.errors import ReportError as GridError
from pytest_tokcompat.exitcodes import ExitCode

KEY_MARK = re.compile(r"<!-- tokcompat-key: (.+?) -->")


class GhError(Exception):
    """gh failed; the message has its command and output."""


@dataclass
class SyncResult:
    opened: list[str] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    closed: list[int] = field(default_factory=list)
    kept_open: list[int] = field(default_factory=list)
    """Issues whose alarm is gone but were not closed, since the grid is incomplete."""


Gh = Callable[[list[str]], str]


def run_gh(gh: str) -> Gh:
    def call(arguments: list[str]) -> str:
        try:
            done = subprocess.run([gh, *arguments], capture_output=True, text=True, timeout=120, check=False)
        except FileNotFoundError:
            raise GhError(
                f"{gh} not found: the GitHub CLI runs this job (it is on GitHub's runners)"
            ) from None
        except subprocess.TimeoutExpired:
            raise GhError(f"gh {' '.join(arguments[:2])} timed out") from None
        if done.returncode != 0:
            raise GhError(
                f"gh {' '.join(arguments[:2])} failed (exit {done.returncode}): {done.stderr.strip()}"
            )
        return done.stdout

    return call


def _key_of(issue: dict[str, Any]) -> str | None:
    found = KEY_MARK.search(str(issue.get("body") or ""))
    return unquote(found.group(1).strip()) if found else None


def sync(texts: list[IssueText], complete: bool, gh: Gh, out: Callable[[str], None] = print) -> SyncResult:
    """Make the open ``tokcompat:`` issues match ``texts``: open, update, and (when complete) close."""
    listed = json.loads(
        gh(["issue", "list", "--state", "open", "--limit", "1000", "--json", "number,title,body"])
    )
    ours = [issue for issue in listed if str(issue.get("title", "")).startswith(TITLE_PREFIX)]
    result = SyncResult()
    matched: set[int] = set()
    with tempfile.TemporaryDirectory(prefix="tokcompat-issues-") as folder:
        body_file = Path(folder) / "body.md"
        for text in texts:
            issue = next((i for i in ours if _key_of(i) == text.key and i["number"] not in matched), None)
            issue = issue or next(
                (i for i in ours if i.get("title") == text.title and i["number"] not in matched), None
            )
            body_file.write_text(text.body, encoding="utf-8")
            if issue is None:
                out(f"opening: {text.title}")
                gh(["issue", "create", "--title", text.title, "--body-file", str(body_file)])
                result.opened.append(text.title)
                continue
            number = int(issue["number"])
            matched.add(number)
            if issue.get("body") == text.body and issue.get("title") == text.title:
                result.unchanged.append(number)
                continue
            out(f"updating #{number}: {text.title}")
            gh(["issue", "edit", str(number), "--title", text.title, "--body-file", str(body_file)])
            result.updated.append(number)
    for issue in ours:
        number = int(issue["number"])
        if number in matched:
            continue
        if not complete:
            out(f"keeping #{number} open: its alarm is gone, but the grid is incomplete")
            result.kept_open.append(number)
            continue
        out(f"closing #{number}: {issue.get('title')}")
        gh(
            [
                "issue",
                "close",
                str(number),
                "--comment",
                "The tokcompat grid no longer raises this alarm, on a complete grid; closing.",
            ]
        )
        result.closed.append(number)
    return result


def run(
    reports: list[Path], *, incomplete: bool = False, gh: str = "gh", out: Callable[[str], None] = print
) -> ExitCode:
    """The ``tokcompat issues-sync`` command."""
    try:
        grid = merge(load_reports(reports))
    except GridError as error:
        out(f"tokcompat issues-sync: {error}")
        return ExitCode.BAD_INPUT
    gaps = grid.incomplete
    complete = not gaps and not incomplete
    if not complete:
        why = gaps[0] if gaps else "--incomplete was given"
        out(f"the grid is incomplete ({why}{' …' if len(gaps) > 1 else ''}): no issue will be closed")
    try:
        result = sync(issue_texts(grid.alarms), complete, run_gh(gh), out)
    except (GhError, ValueError) as error:
        out(f"tokcompat issues-sync: {error}")
        return ExitCode.GH_FAILED
    out(
        f"issues: {len(result.opened)} opened, {len(result.updated)} updated, {len(result.unchanged)} unchanged, "
        f"{len(result.closed)} closed, {len(result.kept_open)} kept open"
    )
    return ExitCode.OK
