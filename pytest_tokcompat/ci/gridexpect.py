"""``tokcompat grid --update-expectations``: the grid's measured outcomes and findings written into the matrix.

The environments' runs measure (``--tokcompat-measure``: entries without ``expect``
run too, nothing is written there); the parent, which holds every release's records,
writes once (:mod:`pytest_tokcompat.matrix.expectations`) and exits as the next run
will: the unexpected verdicts the update answers no longer count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_tokcompat.ci.grid import Grid
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.matrix.expectations import (
    ExpectationsError,
    describe,
    measured_findings,
    measured_outcomes,
    update_matrix,
)
from pytest_tokcompat.model import AlarmKind

ANSWERED = (AlarmKind.UNEXPECTED_VERDICT, AlarmKind.UNACKNOWLEDGED_FINDING)
"""The alarms of an entry the update rewrote that the next run no longer raises."""


def record_expectations(
    path: Path,
    grid: Grid,
    records: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    allow_weaker: bool,
    out: Callable[[str], None],
) -> ExitCode:
    """Write what ``records`` ((transformers version, case record) of released versions) measured into
    the matrix at ``path``; the exit status the grid has once the update is taken into account."""
    try:
        update = update_matrix(
            path,
            measured_outcomes(list(records)),
            findings=measured_findings(list(records)),
            allow_weaker=allow_weaker,
        )
    except ExpectationsError as error:
        out(f"tokcompat grid: {error}")
        return ExitCode.BAD_INPUT
    for line in describe(update, "--allow-weaker"):
        out(line)
    if update.refused:
        return ExitCode.ALARMS
    answered = set(update.changed)
    alarms = [alarm for alarm in grid.alarms if not (alarm.kind in ANSWERED and alarm.subject in answered)]
    unexpected = [
        cell for cell in grid.unexpected if cell.split(" under transformers ", 1)[0] not in answered
    ]
    if alarms or unexpected:
        return ExitCode.ALARMS
    return ExitCode.INCOMPLETE if grid.incomplete else ExitCode.OK
