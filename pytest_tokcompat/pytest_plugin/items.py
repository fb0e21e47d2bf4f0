"""pytest nodes: the matrix file, one item per case, one item per alias of the run's registry.

Failures point at the case's YAML line and say what to do. Each item keeps its
record in ``item.stash``; the ``pytest_runtest_makereport`` wrapper puts it on the
test report (``report.tokcompat``), where the controller's reporter reads it, also
under xdist. Nothing goes into ``user_properties``, so ``--junitxml`` stays clean.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat.contract import alias_record
from pytest_tokcompat.credentials import scrub
from pytest_tokcompat.inert import terminal
from pytest_tokcompat.judge.evaluate import FAILED, NOT_CHECKED, evaluate, run_alias
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.matrix.cases import Case
from pytest_tokcompat.pytest_plugin.keys import RECORD_KEY
from pytest_tokcompat.pytest_plugin.session import TokcompatRun, run_of


class TokcompatFailure(Exception):
    """A case or alias that failed; its text is the whole, user-facing explanation."""


class MatrixFile(pytest.File):
    """The matrix YAML: one item per case, then one per alias of the registry."""

    def collect(self) -> Iterator[pytest.Item]:
        run = run_of(self.config)
        for case in run.matrix.cases:
            yield CaseItem.from_parent(self, name=case.id, case=case)
        for alias in run.registry.values():
            yield AliasItem.from_parent(self, name=f"alias:{alias.model_type}", alias=alias)


class _TokcompatItem(pytest.Item):
    @property
    def run(self) -> TokcompatRun:
        return run_of(self.config)

    def _record(self, record: dict[str, Any]) -> None:
        """Plain JSON (enums as strings, paths as text), as it will be in the report."""
        self.stash[RECORD_KEY] = json.loads(json.dumps(record, ensure_ascii=False, default=str))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, TokcompatFailure):
            # It quotes what a checkpoint's code raised or printed: no escape sequence reaches the terminal.
            return terminal(scrub(str(excinfo.value)), newlines=True)
        return super().repr_failure(excinfo)


class CaseItem(_TokcompatItem):
    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case

    def runtest(self) -> None:
        run = self.run
        outcome = evaluate(run.request_for(self.case, record=run.record), run.judges)
        self._record(outcome.to_json())
        if outcome.status == NOT_CHECKED:
            if run.require_hub:
                raise TokcompatFailure(
                    f"{self.case.location}: case {self.case.id!r} not checked: {outcome.message}"
                )
            pytest.skip(f"not checked: {outcome.message}")
        if outcome.status == FAILED:
            raise TokcompatFailure(f"{self.case.location}: {outcome.message}")

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.case.source, self.case.line - 1, f"tokcompat case {self.case.id}"


class AliasItem(_TokcompatItem):
    def __init__(self, *, alias: Alias, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alias = alias

    def runtest(self) -> None:
        run = self.run
        outcome = run_alias(
            self.alias, run.matrix.cases, registry=run.registry, settings=run.settings, cache=run.judges
        )
        self._record(
            alias_record(
                self.alias.model_type,
                outcome.status,
                outcome.state,
                outcome.message,
                alias=self.alias.to_json(),
                cases=outcome.case_ids,
                alarms=[a.to_json() for a in outcome.alarms],
            )
        )
        if outcome.status == NOT_CHECKED:
            pytest.skip(f"not checked: {outcome.message}")
        if outcome.status == FAILED:
            raise TokcompatFailure(f"alias {self.alias.model_type}: {outcome.message}")

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the alias is declared: its matrix line, else the registry module."""
        import pytest_tokcompat.matrix.aliases as module

        where, _, line = self.alias.declared_in.rpartition(":")
        if where and line.isdigit():
            return Path(where), int(line) - 1, f"tokcompat alias {self.alias.model_type}"
        return Path(module.__file__ or "aliases.py"), 0, f"tokcompat alias {self.alias.model_type}"


class MatrixCollection:
    """Collects the run's matrix once: as pytest collects any file when it is inside the rootdir, else
    as a synthetic node added to the items (registered under ``--tokcompat`` only)."""

    def __init__(self, run: TokcompatRun) -> None:
        self.run = run
        self.collected = False
        """The matrix file was collected through pytest_collect_file (so no synthetic node is needed)."""

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> MatrixFile | None:
        path = self.run.path
        if file_path.name != path.name or file_path.resolve() != path:
            return None
        self.collected = True
        return MatrixFile.from_parent(parent, path=file_path)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, items: list[pytest.Item]) -> None:
        """A synthetic node for a matrix that pytest did not collect itself (outside the rootdir)."""
        if self.collected:
            return
        nodeid = self.run.synthetic_nodeid
        node = MatrixFile.from_parent(session, path=self.run.path, nodeid=nodeid)
        collected = list(node.collect())
        items.extend(collected)
        report = pytest.CollectReport(nodeid, "passed", None, list[pytest.Item | pytest.Collector](collected))
        session.ihook.pytest_collectreport(report=report)

    def pytest_report_header(self, config: pytest.Config) -> str:
        return f"tokcompat: matrix {self.run.path}"
