"""The matrix as the rest of the engine sees it: validated cases, their expectations and problems.

Kept apart from the YAML reading, so that a module which only needs a ``Case`` (the judge, the
plugin, the grid) does not read how a file is parsed to find out what one is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.matrix.versions import VersionRange, matching_ranges
from pytest_tokcompat.model import Outcome

OUTCOMES = tuple(str(outcome) for outcome in Outcome)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a matrix, located and with its fix."""

    path: Path
    line: int
    case: str | None
    what: str
    fix: str

    def __str__(self) -> str:
        where = f"case {self.case!r}: " if self.case else ""
        return f"{self.path}:{self.line}: {where}{self.what}; {self.fix}"


@dataclass(frozen=True)
class Expectation:
    range: VersionRange
    outcome: str


MEASURED_ONLY = "native"
"""What an entry without ``expect`` is run as while its outcomes are measured (``missing_expect``)."""


@dataclass(frozen=True)
class Acknowledgement:
    """A contract dimension whose drift the entry accepts under a version range, and why."""

    range: VersionRange
    dimension: str
    reason: str


@dataclass(frozen=True)
class Case:
    """One matrix entry, validated."""

    id: str
    source: Path
    line: int
    expectations: tuple[Expectation, ...]
    repo: str | None = None
    snapshot: Path | None = None
    revision: str | None = None
    trust_remote_code: bool = False
    texts: tuple[str, ...] = ()
    served_names: tuple[str, ...] = ()
    note: str | None = None
    golden_path: Path | None = None
    acknowledge: tuple[Acknowledgement, ...] = ()
    expect_written: bool = True
    """False for an entry read without ``expect`` (``missing_expect``): its expectation is a stand-in."""

    def acknowledged_for(self, transformers_version: str) -> dict[str, str]:
        """The dimensions acknowledged under ``transformers_version``, with their reasons."""
        found: dict[str, str] = {}
        for entry in self.acknowledge:
            if matching_ranges([entry.range], transformers_version):
                found.setdefault(
                    entry.dimension, f"{entry.reason} (acknowledged for {entry.range.text or '*'})"
                )
        return found

    @property
    def location(self) -> str:
        return f"{self.source}:{self.line}"

    def expected_for(self, transformers_version: str) -> str:
        """The expected outcome under ``transformers_version``; ValueError when none or several apply."""
        ranges = [e.range for e in self.expectations]
        found = matching_ranges(ranges, transformers_version)
        if not found:
            listed = ", ".join(repr(r.text) for r in ranges)
            raise ValueError(
                f"no expectation for transformers {transformers_version} (ranges: {listed}); "
                f"add a range that covers it to case {self.id!r} at {self.location}"
            )
        outcomes = {e.outcome for e in self.expectations if e.range in found}
        if len(outcomes) > 1:
            raise ValueError(f"ranges {[r.text for r in found]} overlap at {transformers_version}")
        return outcomes.pop()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "repo": self.repo,
            "snapshot": str(self.snapshot) if self.snapshot else None,
            "revision": self.revision,
            "expect": {e.range.text or "*": e.outcome for e in self.expectations},
            "trust_remote_code": self.trust_remote_code,
            "location": self.location,
        }


@dataclass
class Matrix:
    path: Path
    cases: list[Case] = field(default_factory=list)
    loaders: list[ClientLoader] = field(default_factory=list)
    """The clients' own loaders (``loaders:``), judged on every case beside the verdict."""
    aliases: tuple[Alias, ...] = ()
    """The matrix's own aliases (``aliases:``), applied exactly as declared; they replace built-in ones."""
    watch: tuple[str, ...] = ()
    """model_types whose registration upstream every report records (``watch:``), to raise an alarm when
    a release changes it, before any checkpoint of them is at hand."""

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    def by_id(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)
