"""The grid's cells and their shards: which (release, cell) pairs a ``--shard I/N`` run judges.

The costs and the split live in :mod:`pytest_tokcompat.ci.schedule`; this module names the cells.
"""

from __future__ import annotations

import re

from pytest_tokcompat.ci import schedule
from pytest_tokcompat.ci.gridinput import BadInput
from pytest_tokcompat.ci.releases import GridRelease

EXTRAS = "@extras"


def parse_shard(text: str | None) -> tuple[int, int]:
    if text is None:
        return 1, 1
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise BadInput(f"--shard {text!r}: write I/N with 1 <= I <= N, e.g. --shard 2/4")
    return int(match.group(1)), int(match.group(2))


def plan_cells(releases: list[GridRelease], case_ids: list[str]) -> list[tuple[str, str]]:
    """Every cell, release by release (oldest first, ``main`` last), the extras cell first in each."""
    return [(release.label, cell) for release in releases for cell in [EXTRAS, *sorted(case_ids)]]


def shard_of(
    cells: list[tuple[str, str]], index: int, count: int, costs: schedule.Costs | None = None
) -> list[tuple[str, str]]:
    """The ``index``-th (1-based) of ``count`` shards of ``cells`` of near-equal cost (the recorded
    ``costs``, else estimates: :func:`pytest_tokcompat.ci.schedule.split`): deterministic, disjoint,
    together all of them, and each spans few releases (few environments to build)."""
    known = costs or {}
    cost = {cell: schedule.estimate(known, *cell) for cell in cells}
    return schedule.split(cells, count, cost)[index - 1]
