"""pytest plugin for the child runs of ``tokcompat grid``: keep only the cells this run judges.

Loaded with ``-p pytest_tokcompat.ci.gridselect``; it reads the selection file that
$TOKCOMPAT_GRID_SELECT names. An item is a case cell when its name is a case id of
the matrix; every other tokcompat item (an alias lifecycle, ...) belongs to the
release's "extras" cell. Deselected items are reported to pytest as deselected, and
the parent ignores the not-checked records the report gives them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tokcompat import environment

SELECT_ENV = "TOKCOMPAT_GRID_SELECT"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    where = environment.read(SELECT_ENV)
    if not where:
        return
    selection = json.loads(Path(where).read_text(encoding="utf-8"))
    judge, every_case, extras = set(selection["cases"]), set(selection["matrix_cases"]), selection["extras"]
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        name = item.name.split("[", 1)[0]
        wanted = name in judge if name in every_case else bool(extras)
        (keep if wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
