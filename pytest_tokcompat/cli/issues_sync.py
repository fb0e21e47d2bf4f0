"""``tokcompat issues-sync``: keep one GitHub issue per alarm of the grid, through the gh CLI."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_tokcompat.cli.options import add_reports
from pytest_tokcompat.cli.output import progress
from pytest_tokcompat.exitcodes import ExitCode


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    issues_sync = commands.add_parser(
        "issues-sync", help="keep one GitHub issue per alarm (gh CLI): open, update, close when gone"
    )
    add_reports(issues_sync, "+", "the per-release JSON reports of the grid")
    issues_sync.add_argument(
        "--incomplete", action="store_true", help="the grid is known to be incomplete: close no issue"
    )
    issues_sync.add_argument(
        "--gh", default="gh", metavar="PATH", help="the GitHub CLI (default: gh on PATH)"
    )
    issues_sync.set_defaults(handler=run)


def run(args: argparse.Namespace) -> ExitCode:
    from pytest_tokcompat.ci.issues_sync import run as sync

    return sync([Path(p) for p in args.reports], incomplete=args.incomplete, gh=args.gh, out=progress)
