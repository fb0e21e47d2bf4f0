"""What a name resolves to: the checkpoint folder and its context, and how the name was recognised.

A leaf of ``sources``: the resolver makes these, and the load name (``names``) and the judge read
them, without importing the resolver.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from pytest_tokcompat.matrix.cases import Case


class Source(str, Enum):
    """Where a checkpoint's files came from."""

    SNAPSHOT = "snapshot"
    """A matrix case's snapshot folder (assembled into the cache when it carries a manifest)."""
    HUB = "hub"
    """The hub, or huggingface_hub's cache of it."""
    FALLBACK = "bundled-fallback"
    """The hub could not be reached; the snapshot of the case the name stands for, which holds the real data."""
    FOLDER = "folder"
    """A local folder that no case of the matrix names."""

    def __str__(self) -> str:
        return str(self.value)


class MatchedBy(str, Enum):
    """How a target was recognised."""

    MATRIX_RUN = "matrix run"
    ID = "id"
    NODE_ID = "node id"
    REPO = "repo"
    SERVED_NAME = "served name"
    SNAPSHOT_FOLDER = "snapshot folder"
    ASSEMBLED_FOLDER = "assembled folder"
    FOLDER = "folder"
    REPO_ID = "repo id"

    def __str__(self) -> str:
        return str(self.value)


NAMES_THE_CASE = {
    MatchedBy.MATRIX_RUN,
    MatchedBy.ID,
    MatchedBy.NODE_ID,
    MatchedBy.SNAPSHOT_FOLDER,
    MatchedBy.ASSEMBLED_FOLDER,
}
"""Targets that name the matrix case itself (resolved as the matrix runs it), not the model it stands for."""


@dataclass(frozen=True)
class Identity:
    """What a target names, found from the matrix alone: nothing fetched, nothing assembled."""

    target: str
    by: MatchedBy
    case: Case | None = None
    repo: str | None = None
    folder: Path | None = None
    matrix: Path | None = None
    shadowed: tuple[Case, ...] = ()


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint folder ready to judge, and everything that decides how it is judged."""

    target: str
    """What was asked for, as given (a folder, a repo id, a served name, a case id or a node id)."""
    folder: Path
    source: Source
    case: Case | None = None
    """The matrix entry it stands for (golden ids, probe texts, revision, opt-in); None for a bare folder/repo."""
    repo: str | None = None
    revision: str | None = None
    """The commit the hub files are from; None for local files."""
    trust_remote_code: bool = False
    """Whether its own code may run in this run (the caller's opt-in, or the entry's in a matrix run)."""
    golden_path: Path | None = None
    texts: tuple[str, ...] = ()
    """The probe texts added to the built-in corpus: the entry's, then the caller's."""
    origin: Path | None = None
    """The snapshot folder an assembled cache entry was built from."""
    stand_in: bool = False
    matched_by: MatchedBy = MatchedBy.FOLDER
    matrix: Path | None = None
    notes: tuple[str, ...] = ()
    file_digests: tuple[tuple[str, str], ...] | None = None
    """sha256 of each file, where resolving verified them (an assembled snapshot); None: not hashed."""
    unpinned_branch: str | None = None
    """The branch or tag remote code was allowed to come from (``allow_unpinned_remote_code``); the commit
    that ran is ``revision``. None: pinned, or no remote code."""

    @property
    def subject(self) -> str:
        """The name its record goes by: the case id, else the target."""
        return self.case.id if self.case is not None else self.target

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "path": str(self.folder),
            "source": str(self.source),
            "matched_by": str(self.matched_by),
            "repo": self.repo,
            "revision": self.revision,
            "origin": str(self.origin) if self.origin is not None else None,
            "stand_in": self.stand_in,
            "matrix": str(self.matrix) if self.matrix is not None else None,
            "notes": list(self.notes),
            **(
                {
                    "unpinned_remote_code": {
                        "repo": self.repo,
                        "branch": self.unpinned_branch,
                        "commit": self.revision,
                    }
                }
                if self.unpinned_branch is not None
                else {}
            ),
        }
