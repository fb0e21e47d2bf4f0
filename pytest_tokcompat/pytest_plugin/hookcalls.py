"""Each plugin's answer to one of our hooks, called through pluggy, with where it came from.

An alias or a loader a project declares is reported with the file that declared it (a
conflict or a bad declaration names that conftest), so the results of one hook call must
stay paired with their implementations. A plain ``config.hook.name(config=config)`` loses
that pairing (it drops ``None`` and returns a flat list), so each implementing plugin is
called through ``pluginmanager.subset_hook_caller``, the way pytest calls a hook for one
conftest's directory: pluggy still runs the call (its ordering, every plugin's wrappers, which
see each implementation's answer in turn, its argument checking) and nothing calls an
implementation's function by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class HookResult:
    """What one plugin's implementation returned, and the name that points a user at it."""

    where: str
    value: Any


def _where(plugin: object, plugin_name: str, hook: str) -> str:
    return f"{getattr(plugin, '__file__', None) or plugin_name or 'a plugin'} ({hook})"


def results_by_plugin(config: pytest.Config, hook: str) -> list[HookResult]:
    """Every non-None result of ``hook`` in pluggy's call order (last registered first, ``tryfirst`` and
    ``trylast`` respected), one per implementing plugin; empty where the hook is not declared."""
    caller = getattr(config.hook, hook, None)
    if caller is None:
        return []
    implementations = [
        impl for impl in caller.get_hookimpls() if not (impl.hookwrapper or getattr(impl, "wrapper", False))
    ]
    plugins = [impl.plugin for impl in implementations]
    found: list[HookResult] = []
    for impl in reversed(implementations):  # the order pluggy calls them in
        others = [plugin for plugin in plugins if plugin is not impl.plugin]
        one = config.pluginmanager.subset_hook_caller(hook, remove_plugins=others)
        for value in one(config=config):
            found.append(HookResult(_where(impl.plugin, impl.plugin_name, hook), value))
    return found
