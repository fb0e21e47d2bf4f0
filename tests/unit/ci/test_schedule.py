"""The grid's schedule: shards split by measured cost, cores per run, cost recording (unit, fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tokcompat.ci import schedule
from pytest_tokcompat.ci.releases import GridRelease
from pytest_tokcompat.ci.shards import EXTRAS, plan_cells, shard_of
from pytest_tokcompat.matrix.discovery import bundled_dir
from pytest_tokcompat.matrix.loader import load_matrix
from tests.helpers.paths import DATA

RECORDED = DATA / "grid_costs_bundled.json"
"""Per-cell seconds of a cold grid of the bundled matrix over its 26 releases on the 2-core machine: each
case's attempt seconds from its report, the rest of the environment's run time on its extras cell."""


def bundled_grid() -> tuple[list[tuple[str, str]], schedule.Costs]:
    costs = schedule.load_costs(RECORDED)
    cases = [case.id for case in load_matrix(bundled_dir() / "models.yaml").cases]
    found = [GridRelease(label, f"transformers=={label}", None, True, "recorded") for label in costs]
    return plan_cells(found, cases), costs


def spread(shards: list[list[tuple[str, str]]], costs: schedule.Costs) -> float:
    totals = schedule.shard_costs(
        shards, {cell: schedule.estimate(costs, *cell) for s in shards for cell in s}
    )
    return max(totals) / min(totals)


def test_the_recorded_costs_are_the_bundled_grid_and_uneven() -> None:
    cells, costs = bundled_grid()
    assert len(costs) == 26 and all(len(costs[label]) == 17 for label in costs)
    assert {cell for _, cell in cells} == {*next(iter(costs.values()))}, "one cost for every cell"
    totals = sorted(sum(cells.values()) for cells in costs.values())
    assert totals[-1] > 2 * totals[0], "the control: releases differ in cost, so counting cells is not enough"


def test_four_shards_of_the_bundled_grid_are_within_15_percent_by_cost() -> None:
    cells, costs = bundled_grid()
    by_count = [cells[(i - 1) * len(cells) // 4 : i * len(cells) // 4] for i in range(1, 5)]
    assert spread(by_count, costs) > 1.15, "the control: the old contiguous split misses the bound"
    shards = [shard_of(cells, index, 4, costs) for index in range(1, 5)]
    assert spread(shards, costs) <= 1.15
    assert sorted(cell for shard in shards for cell in shard) == sorted(cells), "disjoint, every cell once"
    environments = sum(len({label for label, _ in shard}) for shard in shards)
    assert environments <= 26 + 3, "a release is split only where the balance needs it"
    assert shards == [shard_of(cells, index, 4, json.loads(json.dumps(costs))) for index in range(1, 5)]


@pytest.mark.parametrize("count", [1, 2, 3, 5, 7, 40])
def test_a_split_without_costs_is_by_count_and_covers_every_cell(count: int) -> None:
    found = [GridRelease(label, label, None, True, "x") for label in ("5.1.0", "5.2.0", "5.3.0")]
    cells = plan_cells(found, ["b", "a", "c"])
    shards = [shard_of(cells, index, count) for index in range(1, count + 1)]
    assert sorted(cell for shard in shards for cell in shard) == sorted(cells)
    sizes = sorted(len(shard) for shard in shards)
    assert sizes[-1] - sizes[0] <= 1 or (count > len(cells) and sizes[-1] == 1)
    for shard in shards:
        assert shard == [cell for cell in cells if cell in shard], "each shard keeps the plan's order"


def test_one_costly_release_is_split_and_cheap_ones_stay_whole() -> None:
    cells = [(label, cell) for label in ("a", "b", "c") for cell in (EXTRAS, "x", "y", "z")]
    cost = {cell: 10.0 if cell[0] == "a" else 1.0 for cell in cells}
    shards = schedule.split(cells, 2, cost)
    totals = schedule.shard_costs(shards, cost)
    assert max(totals) / min(totals) <= 1.15
    assert [sorted({label for label, _ in shard}) for shard in shards] == [["a", "b"], ["a", "c"]]
    assert totals == [24.0, 24.0], "only the release too costly for one shard is split"


def test_estimates_fall_back_from_the_cell_to_its_release_to_other_releases() -> None:
    costs = {"5.1.0": {"x": 4.0, "y": 2.0}, "5.2.0": {"x": 8.0}}
    assert schedule.estimate(costs, "5.1.0", "x") == 4.0
    assert schedule.estimate(costs, "5.1.0", "new") == 3.0, "its release's mean cell"
    assert schedule.estimate(costs, "5.9.0", "x") == 6.0, "that cell's mean over releases"
    assert schedule.estimate(costs, "5.9.0", "new") == pytest.approx(14 / 3)
    assert schedule.estimate({}, "5.9.0", "new") == 1.0


def test_workers_fill_the_cores_the_environments_leave() -> None:
    assert schedule.workers(1, 2) == 2, "one release on two cores: both busy"
    assert schedule.workers(2, 2) == 0 and schedule.workers(26, 2) == 0, "the environments fill the cores"
    assert schedule.workers(2, 8) == 4 and schedule.workers(3, 4) == 0
    assert schedule.longest_first(["a", "b", "c"], {"a": 1.0, "b": 5.0, "c": 1.0}) == ["b", "a", "c"]
    assert schedule.cores() >= 1


def test_cell_costs_sum_item_seconds_per_cell() -> None:
    lines = [
        json.dumps({"total": 3}),
        json.dumps({"item": "m.yaml::qwen[native]", "outcome": "passed", "seconds": 1.5}),
        json.dumps({"item": "m.yaml::qwen[alias]", "outcome": "passed", "seconds": 0.5}),
        json.dumps({"item": "m.yaml::alias:glm", "outcome": "passed", "seconds": 0.25}),
        json.dumps({"item": "m.yaml::other", "outcome": "passed"}),
        '{"item": "half a line',
    ]
    assert schedule.cell_costs(lines, ["qwen"], EXTRAS) == {"qwen": 2.0, EXTRAS: 0.25}


def test_recorded_costs_merge_and_a_damaged_file_is_no_costs(tmp_path: Path) -> None:
    path = tmp_path / "costs.json"
    schedule.record_costs(path, {"5.1.0": {"x": 1.0, "y": 2.0}})
    schedule.record_costs(path, {"5.1.0": {"x": 3.0}, "5.2.0": {EXTRAS: 0.5}})
    assert schedule.load_costs(path) == {"5.1.0": {"x": 3.0, "y": 2.0}, "5.2.0": {EXTRAS: 0.5}}
    for text in ("{", "[]", '{"version": 99, "costs": {}}', '{"version": 1, "costs": {"5.1.0": {"x": "a"}}}'):
        path.write_text(text)
        assert schedule.load_costs(path) in ({}, {"5.1.0": {}})
