"""pytest entry point: options and hooks only. The work is imported when --tokcompat is given."""

from __future__ import annotations

from typing import Any

import pytest


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_tokcompat.pytest_plugin import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tokcompat", "tokenizer compatibility matrix (pytest-tokcompat)")
    group.addoption(
        "--tokcompat",
        action="store_true",
        default=False,
        help="turn the tokenizer matrix into tests: load every tokenizer and check its ids",
    )
    group.addoption(
        "--tokcompat-matrix",
        metavar="PATH",
        default=None,
        help="the matrix YAML (default: ini tokcompat_matrix, matrix/models.yaml, the bundled one)",
    )
    group.addoption(
        "--tokcompat-record",
        action="store_true",
        default=False,
        help="write golden ids for checkpoints without tokenizer.json, and fail the run",
    )
    group.addoption(
        "--tokcompat-report", metavar="PATH", default=None, help="write the JSON report of the run to PATH"
    )
    group.addoption(
        "--tokcompat-require-hub",
        action="store_true",
        default=False,
        help="fail, rather than skip, cases whose hub files cannot be had",
    )
    group.addoption(
        "--tokcompat-load-timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help="time limit of one tokenizer load (default 300; 0 for none)",
    )
    group.addoption(
        "--tokcompat-max-file-mb",
        metavar="MB",
        type=float,
        default=None,
        help="refuse tokenizer files larger than this (default 512)",
    )
    parser.addini("tokcompat_matrix", "the matrix YAML used by --tokcompat", default="")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("tokcompat"):
        from pytest_tokcompat.pytest_plugin.session import TokcompatSession

        config.pluginmanager.register(TokcompatSession(config), "tokcompat-session")
    config.pluginmanager.import_plugin("pytest_tokcompat.pytest_plugin.fixtures")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "tokcompat_case" in metafunc.fixturenames:
        from pytest_tokcompat.pytest_plugin.fixtures import parametrize_cases

        parametrize_cases(metafunc)


def pytest_report_header(config: pytest.Config) -> Any:
    if config.getoption("tokcompat"):
        from pytest_tokcompat.pytest_plugin.session import matrix_path

        return f"tokcompat: matrix {matrix_path(config)}"
    return None
