"""pytest entry point: options and hooks only.

Without ``--tokcompat`` these hooks return at once and nothing of the engine (nor
transformers) is imported; the run's state, its collector and its reporter live in
``session.py`` and ``reporter.py`` and are imported when the flag is given (or when
a test asks for a ``tokcompat_*`` fixture).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_tokcompat.pytest_plugin.keys import RECORD_KEY, REPORT_ATTRIBUTE
from pytest_tokcompat.settings import OPTIONS


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
        help="the matrix YAML (default: $TOKCOMPAT_MATRIX, [tool.tokcompat] matrix in pyproject.toml, ini "
        "tokcompat_matrix, the project's matrix/models.yaml or ci/tokenizers.yaml, else the bundled one)",
    )
    group.addoption(
        "--tokcompat-record",
        action="store_true",
        default=False,
        help="write golden ids for checkpoints without tokenizer.json, and fail the run",
    )
    group.addoption(
        "--tokcompat-report",
        metavar="PATH",
        default=None,
        help="write the JSON report of the run (default: $TOKCOMPAT_REPORT, [tool.tokcompat] report): "
        "PATH ending in .json is that file, any other PATH a folder "
        "that gets transformers-<version>.json; a finished whole run is never replaced by a partial or "
        "interrupted one (that is written beside it as <name>.run-N.json)",
    )
    group.addoption(
        "--tokcompat-require-hub",
        action="store_true",
        default=False,
        help="fail, rather than skip, cases whose hub files cannot be had",
    )
    # The judge's settings, from their one table (pytest_tokcompat/settings.py): a flag and an ini key each.
    for setting in OPTIONS:
        group.addoption(
            setting.flag,
            **setting.option(),
            help=f"{setting.help} (else ${setting.variable}, [tool.tokcompat] {setting.key}, ini "
            f"{setting.ini}; default {setting.described_default()})",
        )
        parser.addini(
            setting.ini,
            f"{setting.help} (the flag {setting.flag}, ${setting.variable} and [tool.tokcompat] {setting.key} win)",
            default="",
        )
    group.addoption(
        "--tokcompat-loader",
        metavar="[NAME=]MODULE:CALLABLE[:ATTR]",
        action="append",
        default=[],
        help="also judge a client's own loader, called as CALLABLE(checkpoint_path, **kwargs) (repeatable); "
        "ATTR reaches the tokenizer inside a wrapper it returns; a loader that gives wrong ids or cannot be "
        "called fails the run",
    )
    group.addoption(
        "--tokcompat-loader-kwargs",
        metavar="[NAME=]JSON",
        action="append",
        default=[],
        help='keyword arguments for a loader, as a JSON object, e.g. \'{"tokenizer_mode": "slow"}\' '
        "(repeatable; NAME= picks the loader where several are declared)",
    )
    group.addoption(
        "--tokcompat-update-expectations",
        action="store_true",
        default=False,
        help="write the outcomes measured under the installed transformers into the matrix's expect "
        "(comments kept; entries without expect are run and get one) and show the diff",
    )
    group.addoption(
        "--tokcompat-measure",
        action="store_true",
        default=False,
        help="run entries without expect too (as if native) and write nothing into the matrix: what "
        "tokcompat grid --update-expectations runs in each environment",
    )
    group.addoption(
        "--tokcompat-allow-weaker",
        action="store_true",
        default=False,
        help="with --tokcompat-update-expectations: also write a clean remedy that became broken "
        "(refused otherwise, exit 1)",
    )
    parser.addini("tokcompat_matrix", "the matrix YAML used by --tokcompat", default="")
    parser.addini(
        "tokcompat_loaders",
        "client loaders judged beside the verdict, one [NAME=]MODULE:CALLABLE[:ATTR] a line",
        type="linelist",
        default=[],
    )
    parser.addini(
        "tokcompat_loader_kwargs",
        "keyword arguments of the client loaders, one [NAME=]JSON-OBJECT a line",
        type="linelist",
        default=[],
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("tokcompat"):
        from pytest_tokcompat.pytest_plugin.items import MatrixCollection
        from pytest_tokcompat.pytest_plugin.session import is_controller, start_run

        run = start_run(config)  # validates the matrix and the report path before any test runs
        config.pluginmanager.register(MatrixCollection(run), "tokcompat-collection")
        if is_controller(config):
            from pytest_tokcompat.pytest_plugin.reporter import TokcompatReporter, report_target

            config.pluginmanager.register(TokcompatReporter(run, report_target(config)), "tokcompat-reporter")
    config.pluginmanager.import_plugin("pytest_tokcompat.pytest_plugin.fixtures")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    record = item.stash.get(RECORD_KEY, None)
    if record is not None and call.when == "call":
        setattr(report, REPORT_ATTRIBUTE, record)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any) -> Any:
    data = yield
    record = getattr(report, REPORT_ATTRIBUTE, None)
    if isinstance(data, dict) and isinstance(record, dict):
        data[REPORT_ATTRIBUTE] = json.dumps(record, ensure_ascii=False)
    return data


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(config: pytest.Config, data: dict[str, Any]) -> Any:
    report = yield
    record = getattr(report, REPORT_ATTRIBUTE, None)
    if isinstance(record, str):
        setattr(report, REPORT_ATTRIBUTE, json.loads(record))
    return report


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "tokcompat_case" in metafunc.fixturenames:
        from pytest_tokcompat.pytest_plugin.fixtures import parametrize_cases

        parametrize_cases(metafunc)
