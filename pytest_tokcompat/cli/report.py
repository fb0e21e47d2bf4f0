"""``tokcompat report``: merge per-release JSON reports into one grid, in the form asked for."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_tokcompat.cli.options import add_reports
from pytest_tokcompat.errors import ReportError
from pytest_tokcompat.exitcodes import ExitCode

if TYPE_CHECKING:
    from pytest_tokcompat.matrix.settings import Settings

EPILOG = (
    "exit status: 0 complete and no alarm; 1 alarms or unexpected verdicts (even when also incomplete); "
    "2 bad input (a report that is not a valid report, --output equal to an input or not writable); "
    "3 incomplete: a report of a run that did not finish or selected part of the matrix, a case not "
    "checked, or a release without a record for a case"
)
FORMS = {"markdown": ".md", "html": ".html", "json": ".json"}


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = commands.add_parser("report", help="merge per-release JSON reports into one grid", epilog=EPILOG)
    add_reports(
        report, "*", "JSON reports written by --tokcompat-report (default: those in [tool.tokcompat] report)"
    )
    report.add_argument("--format", choices=("markdown", "json", "html"), default="markdown")
    report.add_argument(
        "--output",
        default=None,
        metavar="FILE",
        help="write to FILE instead of standard output, and the grid's other forms beside it (grid.md, "
        "grid.html, grid.json); missing folders are created; never an input",
    )
    report.set_defaults(handler=run)


def run(args: argparse.Namespace) -> ExitCode:
    from pytest_tokcompat.ci.grid import load_reports, merge
    from pytest_tokcompat.ci.render import render

    args.reports = report_inputs(args)
    target = _output_target(args.output, args.reports) if args.output else None
    grid = merge(load_reports([Path(p) for p in args.reports]))
    text = render(grid, args.format)
    beside: list[str] = []
    if target is not None:
        _write_output(target, text)
        beside = _write_beside(target, args.format, grid, args.reports)
    for line in beside:
        print(f"tokcompat report: {line}", file=sys.stderr)
    if target is None:
        sys.stdout.write(text)
    if not grid.complete:
        print(
            f"tokcompat report: the grid is incomplete ({len(grid.incomplete)} reason(s), listed at its top)",
            file=sys.stderr,
        )
    return grid.exit_status()


def report_inputs(args: argparse.Namespace) -> list[str]:
    """The reports named, else the JSON reports in [tool.tokcompat] report (or $TOKCOMPAT_REPORT)."""
    if args.reports:
        return list(args.reports)
    settings: Settings = args.settings
    folder = settings.report
    if folder is None:
        raise ReportError(
            "no reports given: name the JSON reports (tokcompat report reports/*.json), or set "
            'report = "reports" in [tool.tokcompat] of pyproject.toml'
        )
    found = [folder] if folder.suffix == ".json" and folder.is_file() else sorted(folder.glob("*.json"))
    if not found:
        raise ReportError(f"{folder} (report, {settings.origin.get('report')}) holds no JSON report")
    return [str(path) for path in found]


def _output_target(given: str, inputs: list[str]) -> Path:
    """--output FILE: never one of the inputs, never a folder; missing parent folders are created."""
    target = Path(given)
    if target.is_dir():
        raise ReportError(f"--output {given} is a folder; name a file in it (e.g. {target / 'grid.md'})")
    for source in inputs:
        path = Path(source)
        same = path.resolve() == target.resolve()
        if not same and path.exists() and target.exists():
            same = path.samefile(target)
        if same:
            raise ReportError(
                f"--output {given} is the input report {source}; write the grid elsewhere "
                "(an input is never overwritten)"
            )
    return target


def _write_beside(target: Path, chosen: str, grid: Any, inputs: list[str]) -> list[str]:
    """With --output FILE, the grid's other forms go beside it (grid.md -> grid.html, grid.json), as
    ``tokcompat grid`` writes them; a name that is one of the inputs is left alone and said so."""
    from pytest_tokcompat.ci.render import render

    lines: list[str] = []
    for form, suffix in FORMS.items():
        if form == chosen:
            continue
        sibling = target.with_suffix(suffix)
        if sibling == target:
            continue
        try:
            _output_target(str(sibling), inputs)
        except ReportError as error:
            lines.append(f"{form} not written beside {target.name}: {error}")
            continue
        _write_output(sibling, render(grid, form))
        lines.append(f"also wrote {sibling}")
    return lines


def _write_output(target: Path, text: str) -> None:
    import os
    import tempfile

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise ReportError(f"--output {target}: cannot write it ({error.strerror or error})") from None
