"""Whether checkpoint code changed the judge's own code in an attempt's process.

The parent computes parity from what the child's tokenizer answered, but those answers are recorded by
the judge's code running in the same process as the checkpoint's. Remote code that replaces that code
(``job.observe``, a helper of ``observed``, a method of ``Questions``) can answer with another tokenizer
than the one a user gets. So the child takes a :class:`Snapshot` of every ``pytest_tokcompat`` module's
namespace before any checkpoint code runs (each value by identity; a function's code and defaults; a
class's own attributes) and compares after loading and observing: a replaced, removed or rewritten name
makes the attempt not checked. Code that recognises the judge and behaves differently without touching
the judge's code (it reads ``sys.modules``, walks the stack) is beyond what any measurement can see.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

PACKAGE = "pytest_tokcompat"
_FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__", "__closure__")


def _ours(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def _parts(value: Any) -> tuple[Any, ...]:
    """What a value is made of that can be rewritten in place without rebinding its name."""
    if isinstance(value, types.FunctionType):
        return tuple(getattr(value, part) for part in _FUNCTION_PARTS)
    if isinstance(value, type) and _ours(getattr(value, "__module__", "")):
        return tuple(
            item for key in sorted(vars(value)) if key != "__weakref__" for item in (key, vars(value)[key])
        )
    return ()


def _same(before: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    return len(before) == len(now) and all(a is b for a, b in zip(before, now, strict=True))


def _names(module: types.ModuleType) -> Iterator[tuple[str, Any]]:
    """The code a module holds (functions, classes, modules); its data (counters, caches) may change."""
    for key, value in list(vars(module).items()):
        if not key.startswith("__") and (callable(value) or isinstance(value, types.ModuleType)):
            yield key, value


@dataclass
class Snapshot:
    """The judge's modules as they were; holds the objects, so an identity cannot be reused."""

    modules: dict[str, types.ModuleType] = field(default_factory=dict)
    values: dict[tuple[str, str], tuple[Any, tuple[Any, ...]]] = field(default_factory=dict)

    @classmethod
    def take(cls) -> Snapshot:
        snapshot = cls()
        for name, module in list(sys.modules.items()):
            if _ours(name) and isinstance(module, types.ModuleType):
                snapshot.modules[name] = module
                for key, value in _names(module):
                    snapshot.values[name, key] = (value, _parts(value))
        return snapshot

    def changes(self) -> list[str]:
        """The judge's names that are no longer what they were (empty: untouched), at most 10."""
        changed: list[str] = []
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                changed.append(f"{name} (the module itself)")
        for (name, key), (value, parts) in self.values.items():
            now = vars(self.modules[name]).get(key, _GONE)
            if now is not value:
                changed.append(f"{name}.{key}")
            elif parts and not _same(parts, _parts(now)):
                changed.append(f"{name}.{key} (rewritten in place)")
        return changed[:10]


_GONE = object()
