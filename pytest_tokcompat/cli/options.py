"""The options several commands share, declared once, and the settings they resolve to.

A settings-derived option (``--matrix``, ``--output``, ``--releases``, ``--loader``) is only the first
source :func:`pytest_tokcompat.matrix.settings.resolve_settings` reads; the environment,
``[tool.tokcompat]`` and the defaults follow there, the same rule for every command and for pytest.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_tokcompat.matrix.settings import Settings

SETTINGS_FLAGS = {"matrix": "matrix", "output": "output", "releases": "releases", "loaders": "loader"}
"""The settings keys (:mod:`pytest_tokcompat.matrix.settings`) and the ``args`` attribute of each one's flag."""

MATRIX_DEFAULT = "[tool.tokcompat] matrix, else the project's matrix/models.yaml or ci/tokenizers.yaml, else the bundled one"


def add_matrix(parser: argparse.ArgumentParser, help: str) -> None:
    """``--matrix FILE``: the matrix a command looks names up in."""
    parser.add_argument("--matrix", default=None, metavar="FILE", help=help)


def add_json(parser: argparse.ArgumentParser, help: str) -> None:
    """``--json``: the command's result as one JSON document on standard output."""
    parser.add_argument("--json", action="store_true", help=help)


def add_trust_remote_code(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--trust-remote-code", action="store_true", help=help)


def add_pre(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--pre", action="store_true", help=help)


def add_reports(parser: argparse.ArgumentParser, nargs: str, help: str) -> None:
    """The per-release JSON reports a command reads."""
    parser.add_argument("reports", nargs=nargs, help=help)


def add_judge_settings(parser: argparse.ArgumentParser) -> None:
    """The judge's settings as flags (``--tokcompat-load-timeout``...), from the table the plugin's come from
    (:data:`pytest_tokcompat.settings.OPTIONS`): the same names for a command and for pytest."""
    from pytest_tokcompat.settings import OPTIONS

    group = parser.add_argument_group(
        "the judge's settings", "each also $TOKCOMPAT_<KEY>, [tool.tokcompat] <key>; the flag wins"
    )
    for setting in OPTIONS:
        group.add_argument(
            setting.flag, **setting.option(), help=f"{setting.help} (default {setting.described_default()})"
        )


def command_settings(args: argparse.Namespace) -> Settings:
    """The command's settings, built once: its flags, then the environment, [tool.tokcompat], the defaults."""
    from pytest_tokcompat.matrix.settings import resolve_settings
    from pytest_tokcompat.settings import OPTIONS

    flags = {key: getattr(args, attribute, None) for key, attribute in SETTINGS_FLAGS.items()}
    flags.update({setting.key: getattr(args, setting.dest, None) for setting in OPTIONS})
    return resolve_settings(flags=flags)


def command_matrix(args: argparse.Namespace) -> Path:
    """The matrix a command looks names up in: --matrix, $TOKCOMPAT_MATRIX, [tool.tokcompat] matrix, the
    project's matrix/models.yaml or ci/tokenizers.yaml, else the bundled one."""
    settings: Settings = args.settings
    return settings.matrix
