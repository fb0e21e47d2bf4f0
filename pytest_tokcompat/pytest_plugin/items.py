"""pytest nodes: the matrix file, one item per case, one item per alias of the run's registry.

Failures point at the case's YAML line and say what to do; every item records
its result in ``user_properties`` so the controller can report it under xdist.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat.contract import alias_record
from pytest_tokcompat.judge.evaluate import FAILED, NOT_CHECKED, run_alias, run_case
from pytest_tokcompat.judge.ladder import DEFAULT_LOAD_TIMEOUT, DEFAULT_MAX_FILE_MB, Limits
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.matrix.loader import Case, Matrix
from pytest_tokcompat.pytest_plugin.registry import run_registry

PROPERTY = "tokcompat"


def limits_from(config: pytest.Config) -> Limits:
    timeout = config.getoption("tokcompat_load_timeout")
    max_mb = config.getoption("tokcompat_max_file_mb")
    return Limits(
        load_timeout=DEFAULT_LOAD_TIMEOUT if timeout is None else (timeout or None),
        max_file_mb=DEFAULT_MAX_FILE_MB if max_mb is None else max_mb,
    )


class TokcompatFailure(Exception):
    """A case or alias that failed; its text is the whole, user-facing explanation."""


class MatrixFile(pytest.File):
    matrix: Matrix

    def collect(self) -> Iterator[pytest.Item]:
        registry = run_registry(self.config, self.matrix)
        for case in self.matrix.cases:
            yield CaseItem.from_parent(self, name=case.id, case=case, registry=registry)
        for alias in registry.values():
            yield AliasItem.from_parent(
                self, name=f"alias:{alias.model_type}", alias=alias, registry=registry
            )


class _TokcompatItem(pytest.Item):
    def _record(self, record: dict[str, Any]) -> None:
        self.user_properties.append((PROPERTY, json.dumps(record, ensure_ascii=False, default=str)))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, TokcompatFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class CaseItem(_TokcompatItem):
    def __init__(self, *, case: Case, registry: dict[str, Alias], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.registry = registry

    def runtest(self) -> None:
        record_mode = bool(self.config.getoption("tokcompat_record"))
        outcome = run_case(
            self.case, record=record_mode, registry=self.registry, limits=limits_from(self.config)
        )
        self._record(outcome.to_json())
        if outcome.status == NOT_CHECKED:
            if self.config.getoption("tokcompat_require_hub"):
                raise TokcompatFailure(
                    f"{self.case.location}: case {self.case.id!r} not checked: {outcome.message}"
                )
            pytest.skip(f"not checked: {outcome.message}")
        if outcome.status == FAILED:
            raise TokcompatFailure(f"{self.case.location}: {outcome.message}")

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.case.source, self.case.line - 1, f"tokcompat case {self.case.id}"


class AliasItem(_TokcompatItem):
    def __init__(self, *, alias: Alias, registry: dict[str, Alias], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alias = alias
        self.registry = registry

    def runtest(self) -> None:
        assert isinstance(self.parent, MatrixFile)
        outcome = run_alias(
            self.alias, self.parent.matrix.cases, registry=self.registry, limits=limits_from(self.config)
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
