"""The child's check that checkpoint code left the judge's own code as it was (``judge/tamper.py``)."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

from pytest_tokcompat.judge.tamper import Snapshot

NAME = "pytest_tokcompat._tamper_probe"


@pytest.fixture
def probe() -> Iterator[types.ModuleType]:
    """A module of the package's namespace, with a function, a class and some data."""
    module = types.ModuleType(NAME)
    exec(
        "COUNT = 0\ndef answer():\n    return 1\nclass Box:\n    def get(self):\n        return 2\n",
        vars(module),
    )
    module.Box.__module__ = NAME
    sys.modules[NAME] = module
    yield module
    sys.modules.pop(NAME, None)


def test_control_an_untouched_judge_has_no_changes(probe: types.ModuleType) -> None:
    snapshot = Snapshot.take()
    probe.COUNT += 1  # data may change (counters, caches): not code
    probe.added = lambda: 3  # new names: a lazy import, a cache
    assert NAME in snapshot.modules
    assert snapshot.changes() == []


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda m: setattr(m, "answer", lambda: 9), f"{NAME}.answer"),
        (
            lambda m: setattr(m.answer, "__code__", (lambda: 9).__code__),
            f"{NAME}.answer (rewritten in place)",
        ),
        (lambda m: setattr(m.Box, "get", lambda self: 9), f"{NAME}.Box (rewritten in place)"),
        (lambda m: delattr(m, "answer"), f"{NAME}.answer"),
        (lambda m: sys.modules.__setitem__(NAME, types.ModuleType(NAME)), f"{NAME} (the module itself)"),
    ],
    ids=["rebound", "code-swapped", "method-replaced", "removed", "module-swapped"],
)
def test_every_way_to_replace_the_judges_code_is_named(probe: types.ModuleType, change, named: str) -> None:  # type: ignore[no-untyped-def]
    snapshot = Snapshot.take()
    change(probe)
    assert named in snapshot.changes()
