"""The alias registry of one run: the built-in aliases, the matrix's own and the hooks', built once.

Stored on the run (``config.stash``) and passed down to every item, the report and
the fixtures, so that a project's declared alias is judged exactly as it is applied,
and nothing changes the module-level REGISTRY.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pytest_tokcompat.matrix.aliases import Alias, alias_from_mapping, effective_registry
from pytest_tokcompat.matrix.loader import Matrix

REGISTRY_KEY = pytest.StashKey[dict[str, Alias]]()
HOOK = "pytest_tokcompat_aliases"


def _declared_by(impl: Any) -> str:
    plugin = getattr(impl, "plugin", None)
    where = getattr(plugin, "__file__", None) or getattr(impl, "plugin_name", None) or "a plugin"
    return f"{where} ({HOOK})"


def hook_aliases(config: pytest.Config) -> list[Alias]:
    """What every ``pytest_tokcompat_aliases`` implementation declares; UsageError naming the
    implementation for anything that is not an alias, or for two that declare one model_type."""
    caller = getattr(config.hook, HOOK, None)
    if caller is None:
        return []
    declared: dict[str, Alias] = {}
    for impl in caller.get_hookimpls():
        if impl.hookwrapper or getattr(impl, "wrapper", False):
            continue
        where = _declared_by(impl)
        result = impl.function(**{name: config for name in impl.argnames if name == "config"})
        if result is None:
            continue
        if isinstance(result, (str, bytes, Mapping, Alias)) or not hasattr(result, "__iter__"):
            raise pytest.UsageError(
                f"tokcompat: {where} returned {type(result).__name__}; return a list of Alias objects or mappings"
            )
        for item in result:
            if isinstance(item, Alias):
                alias = item if item.declared_in != "built-in" else _with_origin(item, where)
            elif isinstance(item, Mapping):
                try:
                    alias = alias_from_mapping(item, where)
                except ValueError as error:
                    raise pytest.UsageError(f"tokcompat: {error}") from None
            else:
                raise pytest.UsageError(
                    f"tokcompat: {where} returned {item!r} in its list; return Alias objects or mappings with "
                    "model_type, base_config and upstream_issue"
                )
            held = declared.get(alias.model_type)
            if held is not None and held != alias:
                raise pytest.UsageError(
                    f"tokcompat: alias {alias.model_type!r} is declared by both {held.declared_in} and "
                    f"{alias.declared_in}, differently; keep one"
                )
            declared[alias.model_type] = alias
    return list(declared.values())


def _with_origin(alias: Alias, where: str) -> Alias:
    from dataclasses import replace

    return replace(alias, declared_in=where)


def run_registry(config: pytest.Config, matrix: Matrix) -> dict[str, Alias]:
    """The run's registry (built-in, then the matrix's ``aliases:``, then the hooks'), built on first use
    and kept in ``config.stash``: collection, items, fixtures and the report all read this one."""
    found = config.stash.get(REGISTRY_KEY, None)
    if found is None:
        found = config.stash[REGISTRY_KEY] = effective_registry(matrix.aliases, hook_aliases(config))
    return found
