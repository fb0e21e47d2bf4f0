"""The aliases a project declares through the ``pytest_tokcompat_aliases`` hook.

The run (``TokcompatRun.registry`` in ``config.stash``) layers them over the built-in
registry and the matrix's ``aliases:``, and passes that registry down to every item,
fixture and attempt as data; nothing changes the module-level REGISTRY.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from pytest_tokcompat.errors import AliasError
from pytest_tokcompat.matrix.aliases import BUILT_IN, Alias, alias_from_mapping

HOOK = "pytest_tokcompat_aliases"


def _declared_by(impl: Any) -> str:
    plugin = getattr(impl, "plugin", None)
    where = getattr(plugin, "__file__", None) or getattr(impl, "plugin_name", None) or "a plugin"
    return f"{where} ({HOOK})"


def hook_aliases(config: pytest.Config) -> list[Alias]:
    """What every ``pytest_tokcompat_aliases`` implementation declares; UsageError naming the
    implementation for anything that is not an alias, or for two that declare one model_type differently."""
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
                alias = item if item.declared_in != BUILT_IN else replace(item, declared_in=where)
            elif isinstance(item, Mapping):
                try:
                    alias = alias_from_mapping(item, where)
                except AliasError as error:
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
