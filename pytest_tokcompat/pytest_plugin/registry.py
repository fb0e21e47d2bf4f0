"""The aliases a project declares through the ``pytest_tokcompat_aliases`` hook.

The run (``TokcompatRun.registry`` in ``config.stash``) layers them over the built-in
registry and the matrix's ``aliases:``, and passes that registry down to every item,
fixture and attempt as data; nothing changes the module-level REGISTRY.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest

from pytest_tokcompat.errors import AliasError
from pytest_tokcompat.matrix.aliases import BUILT_IN, Alias, alias_from_mapping
from pytest_tokcompat.pytest_plugin.hookcalls import results_by_plugin

HOOK = "pytest_tokcompat_aliases"


def hook_aliases(config: pytest.Config) -> list[Alias]:
    """What every ``pytest_tokcompat_aliases`` implementation declares; UsageError naming the
    implementation for anything that is not an alias, or for two that declare one model_type differently."""
    declared: dict[str, Alias] = {}
    for answer in results_by_plugin(config, HOOK):
        where, result = answer.where, answer.value
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
