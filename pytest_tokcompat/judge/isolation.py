"""Undo whatever one load attempt registers in transformers.

transformers keeps its auto-class registries in module-level dicts; an alias or
a trust_remote_code load adds to them for the life of the process. Each attempt
runs inside ``isolated_transformers()`` so that it cannot change the verdict of
the next attempt, the next test, or the user's own process, also when it fails
half-way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from pytest_tokcompat.credentials import withheld
from pytest_tokcompat.judge.cacheguard import watched

_DYNAMIC_MODULE_PREFIX = "transformers_modules"


def _registries() -> list[MutableMapping[Any, Any]]:
    """The mutable registries of the installed transformers (those that exist in this release)."""
    from transformers.models.auto import configuration_auto, tokenization_auto

    found: list[MutableMapping[Any, Any]] = []
    for mapping in (configuration_auto.CONFIG_MAPPING, tokenization_auto.TOKENIZER_MAPPING):
        extra = getattr(mapping, "_extra_content", None)
        if isinstance(extra, dict):
            found.append(extra)
    for module, name in (
        (configuration_auto, "CONFIG_MAPPING_NAMES"),
        (tokenization_auto, "TOKENIZER_MAPPING_NAMES"),
        (tokenization_auto, "REGISTERED_TOKENIZER_CLASSES"),
        (tokenization_auto, "REGISTERED_FAST_ALIASES"),
    ):
        value = getattr(module, name, None)
        if isinstance(value, MutableMapping) and all(value is not seen for seen in found):
            found.append(value)
    return found


def registry_fingerprint() -> list[tuple[int, tuple[Any, ...]]]:
    """A comparable picture of the registries, for tests that prove nothing leaked."""
    dynamic = tuple(sorted(n for n in sys.modules if n.startswith(_DYNAMIC_MODULE_PREFIX)))
    return [(len(m), tuple(sorted(map(repr, m.items())))) for m in _registries()] + [(len(dynamic), dynamic)]


@contextmanager
def isolated_transformers(foreign: bool = True) -> Iterator[None]:
    """Restore transformers' registries and dynamic modules to their state on entry; credentials are
    withheld from the process meanwhile (``credentials.withheld``), and where the load may run the
    checkpoint's code (``foreign``) what appears in the judge's caches meanwhile is discarded
    (``cacheguard.watched``)."""
    registries = _registries()
    saved = [dict(mapping) for mapping in registries]
    modules_before = {n for n in sys.modules if n.startswith(_DYNAMIC_MODULE_PREFIX)}
    try:
        with withheld(), watched(foreign):  # a checkpoint's code may run here: no credentials, caches watched
            yield
    finally:
        for mapping, contents in zip(registries, saved, strict=False):
            if dict(mapping) != contents:
                mapping.clear()
                mapping.update(contents)
        for name in [n for n in sys.modules if n.startswith(_DYNAMIC_MODULE_PREFIX)]:
            if name not in modules_before:
                del sys.modules[name]
