"""``tokcompat releases``: the transformers releases on the package index, one a line."""

from __future__ import annotations

import argparse

from pytest_tokcompat.cli.errors import BadInput
from pytest_tokcompat.cli.options import add_pre
from pytest_tokcompat.exitcodes import ExitCode


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    releases = commands.add_parser("releases", help="list the transformers releases on the package index")
    releases.add_argument("--since", default=None, metavar="VERSION", help="only this release and later ones")
    add_pre(releases, "include pre-releases")
    releases.set_defaults(handler=run)


def run(args: argparse.Namespace) -> ExitCode:
    from pytest_tokcompat.ci.releases import discover_releases

    found = discover_releases(pre=args.pre, since=args.since)
    if not found:
        raise BadInput("no release of transformers matches")
    for version in found:
        print(version)
    return ExitCode.OK
