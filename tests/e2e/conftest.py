"""Every test in this folder is end to end: marked `e2e` here, by folder, so no test file marks itself.

`addopts` (pyproject.toml) leaves the `e2e` tests out of a plain run (`-m 'not e2e'`); `-m e2e` runs them.
The mark is added before pytest's own `-m` deselection runs (tryfirst).
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.e2e)
