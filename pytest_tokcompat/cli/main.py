"""``tokcompat``: judge one checkpoint, or merge the grid's reports, from the shell.

Exit status of ``check``: 0 when the verdict is not broken, 1 when it is broken or
differs from the expectation, 2 on bad input, 3 when it could not be checked here
(an uncached hub id offline, no ground truth for its ids, files the judge cannot read).
Exit status of ``report``, ``grid`` and ``issue-text``: 0 when the grid is complete and
has no alarm, 1 when it has alarms or unexpected verdicts, 2 on bad input, 3 when the
grid is incomplete (a run that did not finish or selected part of the matrix, a
not-checked case, a release without a record for a case) and has no alarm. Other
commands: 0 fine, 1 alarms, 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pytest_tokcompat.cli import (
    bisect,
    check,
    golden,
    grid,
    issue_text,
    issues_sync,
    releases,
    report,
    resolve,
)
from pytest_tokcompat.cli.errors import BadInput
from pytest_tokcompat.cli.options import command_settings
from pytest_tokcompat.cli.output import say
from pytest_tokcompat.errors import BisectError, ConfigError, ReleaseError, ReportError
from pytest_tokcompat.exitcodes import ExitCode

COMMANDS = (check, resolve, report, grid, releases, bisect, issue_text, golden, issues_sync)
"""Each command's module, in the order ``tokcompat --help`` lists them; each has ``register`` and ``run``."""

BAD_INPUT = (BadInput, ConfigError, ReportError, ReleaseError, BisectError)
"""What a command raises for input it cannot use: one line on standard error, exit 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokcompat", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, resolve the settings once, run the command; the one place an error becomes an exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return ExitCode.BAD_INPUT if exit_.code else ExitCode.OK
    try:
        args.settings = command_settings(args)
        return ExitCode(args.handler(args))
    except BAD_INPUT as error:
        say(f"tokcompat {args.command}: {error}", file=sys.stderr)
        return ExitCode.BAD_INPUT
