"""The end of a grid run: each release's report written, the grid merged, rendered and printed, its exit status.

Apart from the stages that build and judge, so what a run reports can be read without tox.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_tokcompat.ci import grid as grid_module
from pytest_tokcompat.ci import schedule
from pytest_tokcompat.ci.releaserun import ReleaseRun, records_of
from pytest_tokcompat.ci.render import render
from pytest_tokcompat.ci.toxrun import LIBRARIES
from pytest_tokcompat.contract import SCHEMA_VERSION, write_json_atomic
from pytest_tokcompat.errors import ReportError
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.matrix.cases import Matrix

Out = Callable[[str], None]


@dataclass(frozen=True)
class GridReporter:
    """What a grid run leaves behind: a report per release, the merged grid in three forms, the summary."""

    output: Path
    out: Out
    err: Out
    shard: tuple[int, int]
    costs: schedule.Costs
    matrix: Matrix | None
    path: Path | None
    """The matrix file (written with --update-expectations)."""
    update_expectations: bool = False
    allow_weaker: bool = False

    def write_report(self, run: ReleaseRun, matrix: Path, plan: dict[str, Any]) -> None:
        versions = dict(run.versions or {})
        version = versions.get("transformers") or (str(run.release.version) if run.release.version else None)
        if version is None:
            return  # main that could not be built: no version to file it under; the summary says so
        if run.version_clash:
            version = f"{version}+main"  # a stand-in upstream at a released version: its own column
        records = records_of(run, self.matrix)
        index, count = self.shard
        document = {
            "schema_version": SCHEMA_VERSION,
            "versions": {name: versions.get(name) for name in ("python", *LIBRARIES)},
            "transformers_version": version,
            "matrix": str(matrix),
            "cases": sorted(records, key=lambda r: (r.get("kind", "case"), r.get("id", ""))),
            "alarms": [alarm for record in records for alarm in record.get("alarms", [])],
            "exit_status": 1 if any(r.get("status") == "failed" for r in records) else 0,
            "complete": run.error is None,
            "grid_run": {
                "release": run.release.label,
                "requirement": run.release.requirement,
                "commit": versions.get("commit"),
                "shard": f"{index}/{count}",
                "plan": plan,
                "cells": len(run.cells),
                "judged": sorted(run.fresh),
                "reused": sorted(run.reused),
                "costs": {
                    cell: round(seconds, 3)
                    for cell in run.cells
                    for seconds in [run.costs.get(cell, self.costs.get(run.release.label, {}).get(cell))]
                    if seconds is not None
                },
                "error": run.error,
                **({"rebuilt": run.rebuilt} if run.rebuilt else {}),
            },
        }
        if run.registry is not None:
            document["registry"] = run.registry
        suffix = f".shard-{index}-of-{count}" if count > 1 else ""
        run.report = self.output / "reports" / f"transformers-{version}{suffix}.json"
        write_json_atomic(run.report, document)

    def finish(self, runs: list[ReleaseRun], plan: dict[str, Any]) -> ExitCode:
        reports = [run.report for run in runs if run.report is not None]
        grid: grid_module.Grid | None = None
        if reports:
            try:
                grid = grid_module.merge(grid_module.load_reports(reports))
            except ReportError as error:
                self.err(f"tokcompat grid: cannot merge the reports: {error}")
        if grid is None:
            grid = grid_module.Grid([], {})
        for run in runs:
            if run.report is None:
                grid.releases.append(run.release.label)
                grid.incomplete.append(f"no report for transformers {run.release.label}: {run.error}")
        for form, name in (("markdown", "grid.md"), ("html", "grid.html"), ("json", "grid.json")):
            (self.output / name).write_text(render(grid, form), encoding="utf-8")
        self.out(render(grid, "markdown").rstrip("\n"))
        self.out("")
        for line in self.summary(runs):
            self.out(line)
        status = self.exit_status(grid, runs)
        if self.update_expectations and self.path is not None:
            from pytest_tokcompat.ci.gridexpect import record_expectations

            measured = [
                (str(run.versions["transformers"]), record)
                for run in runs
                if run.release.immutable and run.versions and run.versions.get("transformers")
                for record in records_of(run, self.matrix)
            ]
            status = record_expectations(
                self.path, grid, measured, allow_weaker=self.allow_weaker, out=self.out
            )
        self.out(f"grid: {self.output / 'grid.md'} (also .html, .json); reports: {self.output / 'reports'}")
        return status

    def summary(self, runs: list[ReleaseRun]) -> list[str]:
        judged = sum(len(run.fresh) for run in runs)
        reused = sum(len(run.reused) for run in runs)
        total = sum(len(run.cells) for run in runs)
        lines = [
            f"cells: {total}, reused {reused}, judged {judged}"
            + (" (nothing changed)" if total and reused == total else "")
        ]
        for run in runs:
            version = (run.versions or {}).get("transformers")
            label = (
                run.release.label
                if version in (None, run.release.label)
                else f"{run.release.label} = {version}"
            )
            commit = (run.versions or {}).get("commit")
            extra = f" at {commit[:12]}" if commit else ""
            state = "".join(f"; {note}" for note in (run.rebuilt, run.error) if note)
            lines.append(
                f"  transformers {label}{extra}: {len(run.reused)} reused, {len(run.fresh)} judged{state}"
            )
        return lines

    def exit_status(self, grid: grid_module.Grid, runs: list[ReleaseRun]) -> ExitCode:
        """The shared rule (:meth:`Grid.exit_status`): a shard's grid lacks the other shards' cells, so it
        is incomplete (3) unless it has alarms (1), as a report of part of the matrix is; the merge of every
        shard's reports (``tokcompat report``) is what can be complete."""
        if grid.incomplete:
            more = f" (and {len(grid.incomplete) - 10} more)" if len(grid.incomplete) > 10 else ""
            self.out(f"incomplete grid: {'; '.join(grid.incomplete[:10])}{more}")
        if self.shard[1] > 1:
            index, count = self.shard
            self.out(
                f"shard {index}/{count}: this grid holds only this shard's cells (exit 3 unless an alarm); "
                "merge every shard's reports with tokcompat report for the whole grid"
            )
        return grid.exit_status()
