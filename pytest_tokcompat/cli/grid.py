"""``tokcompat grid``: run the matrix under a set of transformers releases and print the grid.

The command wires its flags and the settings into :class:`pytest_tokcompat.ci.gridinput.GridOptions`;
what the grid does with them is :mod:`pytest_tokcompat.ci.gridrun`'s.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pytest_tokcompat.cli.options import add_judge_settings, add_matrix
from pytest_tokcompat.cli.output import progress
from pytest_tokcompat.exitcodes import ExitCode

if TYPE_CHECKING:
    from pytest_tokcompat.matrix.settings import Settings


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    grid = commands.add_parser(
        "grid", help="run the matrix under a set of transformers releases (tox-uv) and print the grid"
    )
    add_matrix(grid, "the matrix YAML (default: [tool.tokcompat], as pytest)")
    grid.add_argument(
        "--releases",
        default=None,
        metavar="SPEC",
        help="versions, ranges (>=5.3,<5.11), minors, latest, pre, main; comma-separated "
        "(default: [tool.tokcompat] releases, else minors,pre)",
    )
    grid.add_argument(
        "--output",
        default=None,
        metavar="DIR",
        help="reports, grid and work folder (default: [tool.tokcompat] output, else tokcompat-grid)",
    )
    grid.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="environments at once (default: cores)"
    )
    grid.add_argument("--shard", default=None, metavar="I/N", help="run the I-th of N shares of the cells")
    grid.add_argument(
        "--upstream",
        default=None,
        metavar="URL_OR_PATH",
        help="transformers source for 'main': a git URL, a local git checkout or a wheel "
        "(default: $TOKCOMPAT_UPSTREAM, else the upstream repository)",
    )
    grid.add_argument(
        "--with",
        dest="with_requirements",
        action="append",
        metavar="REQ",
        help="also install REQ (a client package: a requirement or a local path) into every release's "
        "environment, so its loader can be judged there (repeatable)",
    )
    grid.add_argument(
        "--loader",
        action="append",
        metavar="[NAME=]MODULE:CALLABLE[:ATTR]",
        help="judge a client's own loader in every release: a row 'CASE / loader:NAME' in the grid; wrong "
        "ids or a loader that cannot be called is an alarm (repeatable; each run gets it as tokcompat_loaders)",
    )
    grid.add_argument(
        "--loader-kwargs",
        action="append",
        metavar="[NAME=]JSON",
        help="keyword arguments the loader is called with, a JSON object, e.g. "
        '\'{"tokenizer_mode": "deepseek_v32"}\' (repeatable; NAME= picks one of several loaders)',
    )
    grid.add_argument(
        "--plan", action="store_true", help="print the resolved releases and cell count as JSON, run nothing"
    )
    grid.add_argument(
        "--update-expectations",
        action="store_true",
        help="write the measured outcome ranges into the matrix's expect (comments and order kept; entries "
        "without expect are judged and get one) and print the diff; exit as the next run will",
    )
    grid.add_argument(
        "--allow-weaker",
        action="store_true",
        help="with --update-expectations: also write a clean remedy that became broken (refused otherwise, exit 1)",
    )
    add_judge_settings(grid)
    grid.set_defaults(handler=run)


def run(args: argparse.Namespace) -> ExitCode:
    from pytest_tokcompat.ci.gridinput import GridOptions
    from pytest_tokcompat.ci.gridrun import run_command

    settings: Settings = args.settings
    options = GridOptions(
        matrix=settings.matrix,
        releases=settings.releases,
        output=settings.output,
        jobs=args.jobs,
        shard=args.shard,
        upstream=args.upstream,
        with_requirements=tuple(args.with_requirements or ()),
        loaders=settings.loaders,
        loader_kwargs=tuple(args.loader_kwargs or ()),
        update_expectations=args.update_expectations,
        allow_weaker=args.allow_weaker,
        settings=settings.judge,
    )
    return ExitCode(run_command(options, out=progress, plan_only=args.plan))
