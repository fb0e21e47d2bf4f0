"""The plugin object registered by ``--tokcompat``: collects the matrix, gathers results, reports.

Kept apart from ``plugin.py`` so that nothing here (nor transformers) is imported
unless the flag is given.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat.contract import not_checked_record, report_document, utc_timestamp, write_report
from pytest_tokcompat.matrix.loader import Matrix, MatrixError, bundled_matrix, load_matrix
from pytest_tokcompat.pytest_plugin.items import PROPERTY, MatrixFile
from pytest_tokcompat.pytest_plugin.registry import run_registry


def matrix_path(config: pytest.Config) -> Path:
    """--tokcompat-matrix, else the ini option, else the project's matrix/models.yaml, else the bundled one."""
    given = config.getoption("tokcompat_matrix") or config.getini("tokcompat_matrix")
    if given:
        path = Path(given)
        return path if path.is_absolute() else (Path(config.invocation_params.dir) / path)
    own = Path(config.rootpath) / "matrix" / "models.yaml"
    return own if own.is_file() else bundled_matrix()


def load_or_usage_error(path: Path) -> Matrix:
    try:
        return load_matrix(path)
    except MatrixError as error:
        lines = "\n".join(f"  {problem}" for problem in error.problems)
        raise pytest.UsageError(
            f"tokcompat: the matrix has {len(error.problems)} problem(s):\n{lines}"
        ) from None


class TokcompatSession:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.path = matrix_path(config)
        self.matrix = load_or_usage_error(self.path)
        # The run's alias registry, built now so that a bad declaration stops the run before it starts.
        self.registry = run_registry(config, self.matrix)
        self.records: dict[str, dict[str, Any]] = {}
        self.written: Path | None = None
        self.started_at = utc_timestamp()
        self.watch_problem: str | None = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Fill the hub cache for every hub entry at once, before any worker needs it."""
        entries = [
            (c.repo, c.revision, c.trust_remote_code)
            for c in self.matrix.cases
            if c.snapshot is None and c.repo
        ]
        if entries and self._is_controller():
            from pytest_tokcompat.sources.hub import hub_offline, prefetch

            if not hub_offline():
                prefetch(entries)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        try:
            nodeid = self.path.relative_to(self.config.rootpath).as_posix()
        except ValueError:  # the bundled matrix, or one outside the project
            nodeid = f"tokcompat/{self.path.name}"
        node = MatrixFile.from_parent(session, path=self.path, nodeid=nodeid)
        node.matrix = self.matrix
        collected = list(node.collect())
        items.extend(collected)
        report = pytest.CollectReport(nodeid, "passed", None, list[pytest.Item | pytest.Collector](collected))
        session.ihook.pytest_collectreport(report=report)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == PROPERTY:
                record = json.loads(str(value))
                self.records[record["id"]] = record

    def _is_controller(self) -> bool:
        return not hasattr(self.config, "workerinput")

    def report_target(self) -> Path | None:
        """--tokcompat-report PATH; a folder (ending in '/') gets one file per transformers release."""
        given = self.config.getoption("tokcompat_report")
        if not given:
            return None
        path = Path(given)
        if given.endswith(("/", os.sep)) or path.is_dir():
            from pytest_tokcompat.contract import library_versions

            return path / f"transformers-{library_versions()['transformers']}.json"
        return path

    def missing_records(self, exit_status: int) -> list[dict[str, Any]]:
        """Cases that never reported (deselected, interrupted, a worker that died): not checked, never passed."""
        registry = run_registry(self.config, self.matrix)
        wanted = [case.id for case in self.matrix.cases] + [f"alias:{m}" for m in registry]
        return [
            not_checked_record(case_id, f"did not run in this session (pytest exit status {exit_status})")
            for case_id in wanted
            if case_id not in self.records
        ]

    def upstream_watch(self) -> dict[str, Any] | None:
        """The report's ``registry``: what this transformers' registries say about the model_types of
        the matrix's cases (as judged), of the run's aliases and of the matrix's ``watch:`` list.

        None (and a line in the summary) where they cannot be read: the run's report is never lost to it.
        """
        from pytest_tokcompat.judge.upstream import registry_view

        cases = [r for r in self.records.values() if r.get("kind") == "case"]
        try:
            return registry_view(
                [r.get("model_type") for r in cases],
                self.registry,
                self.matrix.watch,
                checkpoints={r["repo"]: r.get("model_type") for r in cases if isinstance(r.get("repo"), str)},
            )
        except Exception as error:  # a transformers whose registries look like nothing known
            self.watch_problem = f"{type(error).__name__}: {error}"
            return None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        target = self.report_target()
        if target is not None and self._is_controller():
            records = list(self.records.values()) + self.missing_records(int(session.exitstatus))
            document = report_document(
                records,
                str(self.path),
                exit_status=int(session.exitstatus),
                complete=len(records) == len(self.records),
                started_at=self.started_at,
                registry=self.upstream_watch(),
            )
            self.written = write_report(target, document)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self._is_controller():
            return
        from pytest_tokcompat.ci.summary import summary_lines

        terminalreporter.section("tokcompat")
        for line in summary_lines(list(self.records.values())):
            terminalreporter.write_line(line)
        if self.watch_problem is not None:
            terminalreporter.write_line(f"upstream watch not recorded in the report: {self.watch_problem}")
        if self.written is not None:
            terminalreporter.write_line(f"report written to {self.written}")
            if self.written != self.report_target():
                terminalreporter.write_line(
                    f"  (kept the report already at {self.report_target()}: another run's, or a complete one)"
                )
