"""What the ladder judges: one request, with what resolving its name added, as one frozen object.

The resolver turns a :class:`~pytest_tokcompat.request.Request`'s name into files; the evaluator adds
what the matrix says of this release. A :class:`Subject` holds both, built once by ``evaluate``, so the
ladder, its attempts and their jobs read one object instead of a dozen keyword arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.request import Request
from pytest_tokcompat.settings import JudgeSettings
from pytest_tokcompat.sources.names import LoadTarget

if TYPE_CHECKING:
    from pytest_tokcompat.sources.checkpoint import Checkpoint


@dataclass(frozen=True)
class Subject:
    """One checkpoint's files and the request they were resolved for."""

    folder: Path
    """The files the attempts read (an assembled cache entry, a snapshot, a local folder)."""
    request: Request
    """What the caller asked: registry, loaders, settings, whether to keep the tokenizer."""
    trust_remote_code: bool = False
    """The opt-in that applies (the caller's, or the matrix entry's for a matrix run)."""
    texts: tuple[str, ...] = ()
    """Extra probe texts (the caller's and the entry's)."""
    golden_path: Path | None = None
    target: LoadTarget | None = None
    """The name each attempt loads the files by (None: the folder's path)."""
    acknowledged: Mapping[str, str] = field(default_factory=dict, hash=False)
    """The contract dimensions the matrix entry acknowledges for this release, with the reason."""
    record_as: str | None = None
    """A case id: record its missing golden ids (None: record nothing)."""

    @classmethod
    def of(
        cls,
        checkpoint: Checkpoint,
        request: Request,
        acknowledged: Mapping[str, str] | None = None,
        record_as: str | None = None,
    ) -> Subject:
        """The checkpoint as the resolver found it, for ``request``."""
        from pytest_tokcompat.sources.names import load_target

        return cls(
            checkpoint.folder,
            request,
            checkpoint.trust_remote_code,
            tuple(checkpoint.texts),
            checkpoint.golden_path,
            load_target(checkpoint, request.settings.cache),
            dict(acknowledged or {}),
            record_as,
        )

    @property
    def settings(self) -> JudgeSettings:
        return self.request.settings

    @cached_property
    def registry(self) -> dict[str, Alias]:
        """The alias registry the ladder judges with: the request's, else the built-in aliases."""
        from pytest_tokcompat.matrix.aliases import REGISTRY

        return dict(REGISTRY if self.request.registry is None else self.request.registry)
