"""``tokcompat bisect``: the first transformers release where a case's verdict changes."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_tokcompat.cli.options import (
    add_judge_settings,
    add_matrix,
    add_pre,
    add_trust_remote_code,
    command_matrix,
)
from pytest_tokcompat.cli.output import progress, say
from pytest_tokcompat.exitcodes import ExitCode


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bisect = commands.add_parser("bisect", help="find the first transformers release where a verdict changes")
    bisect.add_argument("target", metavar="CASE_OR_PATH", help="a matrix case id or a checkpoint folder")
    add_matrix(bisect, "the matrix YAML that holds CASE (default: [tool.tokcompat] matrix, as check)")
    bisect.add_argument("--from", dest="start", default=None, metavar="V", help="the release to compare with")
    bisect.add_argument("--to", dest="end", default=None, metavar="V", help="the last release to search")
    add_pre(bisect, "include pre-releases in the range")
    bisect.add_argument("--cache", default=None, metavar="DIR", help="where the throwaway environments go")
    add_trust_remote_code(bisect, "allow the checkpoint's own code to run in each check")
    add_judge_settings(bisect)
    bisect.set_defaults(handler=run)


def run(args: argparse.Namespace) -> ExitCode:
    from pytest_tokcompat.ci.bisect import run as bisect
    from pytest_tokcompat.settings import passed_on_flags

    results = bisect(
        args.target,
        matrix=command_matrix(args),
        start=args.start,
        end=args.end,
        pre=args.pre,
        cache=Path(args.cache) if args.cache else None,
        trust_remote_code=args.trust_remote_code,
        out=progress,
        settings=passed_on_flags(args.settings.judge),
    )
    for result in results:
        say(result.line())
    return ExitCode.OK
