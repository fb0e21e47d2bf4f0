"""``tokcompat golden``: diff a case's golden ids against its independent implementation, or rewrite them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_tokcompat.exitcodes import ExitCode


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    golden = commands.add_parser(
        "golden",
        help="diff a case's golden ids against its independent implementation; --replace writes them",
    )
    golden.add_argument("case", help="a matrix case id")
    golden.add_argument(
        "--matrix", default=None, metavar="FILE", help="the matrix YAML (default: the bundled one)"
    )
    golden.add_argument(
        "--replace", action="store_true", help="write the new golden ids (after showing the diff)"
    )
    golden.set_defaults(handler=run)


def run(args: argparse.Namespace) -> ExitCode:
    from pytest_tokcompat.judge.golden import golden_command

    code, text = golden_command(args.case, Path(args.matrix) if args.matrix else None, replace=args.replace)
    print(text, file=sys.stderr if code == ExitCode.BAD_INPUT else sys.stdout)
    return code
