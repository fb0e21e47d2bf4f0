"""Where a grid's time goes: the measured cost of each cell, shards split by cost, the cores per run.

A release's cells differ in cost (a release like 5.5.4 costs twice what 5.24.0 does), so
equal counts of cells are not equal shares of work, and environments run in the order
given finish one long one last on an idle machine. Each run records what each cell cost
(the seconds its items took, read from the environments' progress files) in
``costs.json`` beside the cell cache; the next run orders environments longest first,
gives a run that has cores to spare pytest-xdist workers, and splits ``--shard I/N`` by
cost. A cell never measured is estimated from what was: its release's mean cell, else
that cell's mean over releases, else one unit. The split depends on nothing but the
cells and the costs, so every shard of a CI matrix computes the same one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_tokcompat.contract import write_json_atomic

Cell = tuple[str, str]
"""(release label, cell name)."""
Costs = dict[str, dict[str, float]]
"""release label -> cell name -> seconds."""
COSTS_VERSION = 1
SLACK = 0.02
"""A shard takes a whole release while it stays within this share above the mean shard's cost."""
WORKERS_VAR = "TOKCOMPAT_GRID_WORKERS"
"""How many pytest-xdist workers each run of one tox invocation gets (0: none, one process)."""


def load_costs(path: Path) -> Costs:
    """The costs recorded in ``path``; empty when there are none or the file is not a costs file (the
    split then falls back to estimates: a damaged file costs balance, never a cell)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = document.get("costs") if isinstance(document, dict) else None
    if not isinstance(found, dict) or document.get("version") != COSTS_VERSION:
        return {}
    return {
        str(release): {
            str(cell): float(seconds)
            for cell, seconds in cells.items()
            if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds >= 0
        }
        for release, cells in found.items()
        if isinstance(cells, dict)
    }


def save_costs(path: Path, costs: Mapping[str, Mapping[str, float]]) -> None:
    ordered = {release: dict(sorted(cells.items())) for release, cells in sorted(costs.items()) if cells}
    write_json_atomic(path, {"version": COSTS_VERSION, "costs": ordered})


def record_costs(path: Path, measured: Mapping[str, Mapping[str, float]]) -> None:
    """Merge what this run measured into ``path`` (a cell judged again replaces its old cost)."""
    costs = load_costs(path)
    for release, cells in measured.items():
        costs.setdefault(release, {}).update(cells)
    save_costs(path, costs)


def cell_costs(lines: Iterable[str], case_ids: Iterable[str], extras: str) -> dict[str, float]:
    """Seconds per cell from one environment's progress lines (``{"item": nodeid, "seconds": s}``): an
    item named by a case id is that case's cell, every other one the release's extras cell."""
    cases = set(case_ids)
    found: dict[str, float] = {}
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("item"), str):
            continue
        seconds = entry.get("seconds")
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
            continue
        name = entry["item"].rsplit("::", 1)[-1].split("[", 1)[0]
        cell = name if name in cases else extras
        found[cell] = found.get(cell, 0.0) + max(0.0, float(seconds))
    return found


def estimate(costs: Mapping[str, Mapping[str, float]], release: str, cell: str) -> float:
    """The measured cost of a cell; else its release's mean cell; else that cell's mean over releases;
    else the mean of every measured cell; else 1."""
    measured = costs.get(release, {})
    if cell in measured:
        return measured[cell]
    if measured:
        return sum(measured.values()) / len(measured)
    across = [cells[cell] for cells in costs.values() if cell in cells]
    if across:
        return sum(across) / len(across)
    every = [seconds for cells in costs.values() for seconds in cells.values()]
    return sum(every) / len(every) if every else 1.0


def split(cells: list[Cell], count: int, cost: Mapping[Cell, float]) -> list[list[Cell]]:
    """``count`` shards of ``cells`` of near-equal cost, each building as few environments as it can.

    Greedy longest-processing-time over the releases: the costliest release left goes to the cheapest
    shard, whole while that shard stays within :data:`SLACK` of the mean; otherwise the shard takes the
    release's first cells up to the mean and the rest goes back into the queue. Ties are broken by the
    release's and the shard's order, so the same inputs give the same split everywhere. Each shard
    keeps the cells in the plan's order."""
    if count <= 1:
        return [list(cells)]
    position = {cell: index for index, cell in enumerate(cells)}
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        groups.setdefault(cell[0], []).append(cell)
    order = {release: index for index, release in enumerate(groups)}
    target = sum(cost[cell] for cell in cells) / count
    loads = [0.0] * count
    shards: list[list[Cell]] = [[] for _ in range(count)]
    queue = list(groups.values())
    while queue:
        queue.sort(key=lambda group: (-sum(cost[c] for c in group), order[group[0][0]], position[group[0]]))
        group = queue.pop(0)
        index = min(range(count), key=lambda i: (loads[i], i))
        total = sum(cost[cell] for cell in group)
        if loads[index] + total <= target * (1 + SLACK) or len(group) == 1:
            taken, rest = group, list[Cell]()
        else:
            taken, rest = [group[0]], []
            room = target * (1 + SLACK) - loads[index] - cost[group[0]]
            for cell in group[1:]:
                if not rest and cost[cell] <= room:
                    taken.append(cell)
                    room -= cost[cell]
                else:
                    rest.append(cell)
        shards[index] += taken
        loads[index] += sum(cost[cell] for cell in taken)
        if rest:
            queue.append(rest)
    return [sorted(shard, key=position.__getitem__) for shard in shards]


def shard_costs(shards: list[list[Cell]], cost: Mapping[Cell, float]) -> list[float]:
    return [sum(cost[cell] for cell in shard) for shard in shards]


def cores() -> int:
    """The cores this process may run on (its affinity where the system says, else the CPU count)."""
    affinity: Any = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        try:
            return max(1, len(affinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def workers(envs: int, jobs: int) -> int:
    """pytest-xdist workers per run when ``envs`` runs share ``jobs`` cores: none (one process, ``-n 0``)
    while the environments alone fill the cores; else the cores each run has to itself."""
    if envs <= 0 or envs >= jobs:
        return 0
    share = jobs // envs
    return share if share > 1 else 0


def longest_first(envs: list[str], cost: Mapping[str, float]) -> list[str]:
    """Environments by cost, the costliest first (stable for equal costs), so the last to finish is short."""
    return sorted(envs, key=lambda env: -cost.get(env, 0.0))
