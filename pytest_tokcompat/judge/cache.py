"""What one run has judged, owned by the run (a pytest session keeps it in ``config.stash``).

A case is judged once per run: its alias item and the ``tokcompat_tokenizer``
fixture reuse that judgement instead of loading the checkpoint again. The parsed
reference tokenizer (the ground truth) is kept for the run as well, one at a time,
so workers' memory stays flat. Nothing lives in module globals: two runs in one
process (pytester, an embedding tool) share nothing, and a caller without a cache
(the CLI, ``load_tokenizer``) simply judges afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_tokcompat.judge.active import ReferenceKey, activated

if TYPE_CHECKING:
    from pytest_tokcompat.judge.judgement import Judgement
    from pytest_tokcompat.matrix.aliases import Alias

JudgementKey = tuple[str, str, tuple["Alias", ...]]
"""A judgement by case id, folder and the alias registry it ran under."""


def registry_key(registry: dict[str, Alias] | None) -> tuple[Alias, ...]:
    """The registry a judgement ran under, as a key: a declared alias never reuses a built-in's result."""
    from pytest_tokcompat.matrix.aliases import REGISTRY

    aliases = REGISTRY if registry is None else registry
    return tuple(aliases[name] for name in sorted(aliases))


class JudgeCache:
    """Judgements by (case id, folder, alias registry) and the last parsed reference tokenizer, for one run."""

    def __init__(self) -> None:
        self._judgements: dict[JudgementKey, Judgement] = {}
        self._reference: tuple[ReferenceKey, Any] | None = None

    def judgement(
        self, case_id: str, folder: Path, registry: dict[str, Alias] | None = None
    ) -> Judgement | None:
        """The judgement of the case under ``registry`` (None: the built-in one), if this run made it."""
        return self._judgements.get((case_id, str(folder), registry_key(registry)))

    def remember(
        self, case_id: str, folder: Path, judgement: Judgement, registry: dict[str, Alias] | None = None
    ) -> None:
        """Keep the judgement, never its tokenizer or truth (a run may judge hundreds of checkpoints)."""
        self._judgements[(case_id, str(folder), registry_key(registry))] = replace(
            judgement, tokenizer=None, truth=None, probe_texts=None
        )

    def __len__(self) -> int:
        return len(self._judgements)

    def reference(self, key: ReferenceKey, parse: Callable[[], Any]) -> Any:
        """The reference tokenizer for ``key``, parsed once; the previous one is let go."""
        if self._reference is None or self._reference[0] != key:
            self._reference = None  # one large reference at a time
            self._reference = (key, parse())
        return self._reference[1]

    @contextmanager
    def active(self) -> Iterator[JudgeCache]:
        """Make this the cache that ``parity.reference_tokenizer`` uses inside the block."""
        with activated(self):
            yield self
