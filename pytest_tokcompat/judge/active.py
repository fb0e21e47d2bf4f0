"""The run cache of the judgement in progress, as the lower modules of the judge see it.

A leaf: the reference parser (``parity``) asks it for what a run shares; the run's ``cache.JudgeCache`` (which holds judgements, so imports their type) sets it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

ReferenceKey = tuple[Any, ...]
"""A tokenizer.json (and tokenizer_config.json) by resolved path, size and modification time."""


class RunCache(Protocol):
    """What a run shares with the judge's lower modules."""

    def reference(self, key: ReferenceKey, parse: Callable[[], Any]) -> Any:
        """The reference tokenizer for ``key``, parsed once."""
        ...


_ACTIVE: ContextVar[RunCache | None] = ContextVar("tokcompat_judge_cache", default=None)


@contextmanager
def activated(cache: RunCache) -> Iterator[None]:
    """Make ``cache`` the one :func:`active_cache` returns inside the block."""
    token = _ACTIVE.set(cache)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active_cache() -> RunCache | None:
    """The cache of the judgement in progress, if its caller gave one."""
    return _ACTIVE.get()
