"""``tokcompat issue-text``: one issue title and body per alarm of the merged grid."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytest_tokcompat.cli.options import add_json, add_reports
from pytest_tokcompat.cli.output import say
from pytest_tokcompat.exitcodes import ExitCode


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    issue_text = commands.add_parser(
        "issue-text",
        help="one issue title and body per alarm of the grid",
        epilog="exit status: 0 complete, 2 bad input, 3 incomplete (the texts are printed either way; "
        "never close an issue on an incomplete grid)",
    )
    add_reports(issue_text, "+", "JSON reports written by --tokcompat-report")
    add_json(issue_text, 'print {"complete": bool, "incomplete": [why], "issues": [{key, title, body}]}')
    issue_text.set_defaults(handler=run)


def run(args: argparse.Namespace) -> ExitCode:
    from pytest_tokcompat.ci.grid import load_reports, merge
    from pytest_tokcompat.ci.issues_text import issue_texts, issues_document

    grid = merge(load_reports([Path(p) for p in args.reports]))
    if args.json:
        print(json.dumps(issues_document(grid), indent=2, ensure_ascii=False))
    else:
        if not grid.complete:
            print("The grid is incomplete: close no issue on it. Why:")
            say("".join(f"- {reason}\n" for reason in grid.incomplete))
        for text in issue_texts(grid.alarms):
            print(f"# {text.title}\n\n{text.body}")
    return ExitCode.OK if grid.complete else ExitCode.INCOMPLETE
