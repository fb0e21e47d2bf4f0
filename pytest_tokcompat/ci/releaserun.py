"""One release's part of a grid run: its cells, what was reused and judged, and the records it ends with.

The plain data the run's stages (build, reuse, judge, report) pass along, kept apart from all of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat.ci.releases import GridRelease
from pytest_tokcompat.ci.shards import EXTRAS
from pytest_tokcompat.ci.toxini import env_name
from pytest_tokcompat.contract import not_checked_record
from pytest_tokcompat.matrix.cases import Matrix


@dataclass
class ReleaseRun:
    """One release in one run: filled in stage by stage (built, reused, judged, reported)."""

    release: GridRelease
    cells: list[str]
    versions: dict[str, str | None] | None = None
    error: str | None = None
    reused: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    to_judge: list[str] = field(default_factory=list)
    keys: dict[str, str | None] = field(default_factory=dict)
    fresh: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    report: Path | None = None
    version_clash: bool = False
    registry: dict[str, Any] | None = None
    """The upstream watch of this release (the report's ``registry``): judged with the extras cell, or
    reused with it."""
    rebuilt: str | None = None
    """Why the environment was rebuilt and every cell judged again (it had changed since its install)."""
    costs: dict[str, float] = field(default_factory=dict)
    """Seconds each cell judged in this run took (its items' setup and call)."""

    @property
    def env(self) -> str:
        return env_name(self.release)


def stub(record_id: str, message: str) -> dict[str, Any]:
    return not_checked_record(record_id, message)


def extras_stubs(message: str, matrix: Matrix | None = None) -> list[dict[str, Any]]:
    """The alias items a release would have judged: the built-in aliases and the matrix's own."""
    from pytest_tokcompat.matrix.aliases import effective_registry

    registry = effective_registry(matrix.aliases if matrix is not None else ())
    return [stub(f"alias:{model_type}", message) for model_type in registry]


def records_of(run: ReleaseRun, matrix: Matrix | None) -> list[dict[str, Any]]:
    """Every record of a release: reused, judged, else a not-checked stub saying why."""
    records: list[dict[str, Any]] = []
    why = run.error or "no result"
    for cell in run.cells:
        if cell in run.reused:
            records.extend(run.reused[cell])
        elif cell in run.fresh:
            records.extend(run.fresh[cell])
        else:
            records.extend(extras_stubs(why, matrix) if cell == EXTRAS else [stub(cell, why)])
    return records
