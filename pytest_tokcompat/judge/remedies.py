"""Applying an alias: registering it in transformers' auto registries, and undoing that.

The alias data lives in ``pytest_tokcompat.matrix.aliases``; this is the only place
that touches transformers with it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pytest_tokcompat.judge.isolation import isolated_transformers
from pytest_tokcompat.matrix.aliases import Alias


def _import_dotted(path: str) -> Any:
    module_name, _, attribute = path.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


def register_alias(alias: Alias) -> type:
    """Register ``alias`` in transformers' auto registries; ValueError where the model_type is native.

    Applied exactly as declared: the config always, the tokenizer mapping of ``base_model_type``
    only where the alias names one (a config-only alias borrows nothing more, as client shims do).
    Callers that must leave no trace use ``applied_alias`` instead.
    """
    from transformers import AutoConfig
    from transformers.models.auto import configuration_auto, tokenization_auto

    if alias.model_type in configuration_auto.CONFIG_MAPPING_NAMES:  # type: ignore[attr-defined]
        raise ValueError(
            f"transformers already registers {alias.model_type!r} natively; an alias never replaces it"
        )
    try:
        base = _import_dotted(alias.base_config)
    except (ImportError, AttributeError, ValueError) as error:
        raise ValueError(
            f"alias {alias.model_type!r} ({alias.declared_in}): base_config {alias.base_config!r} cannot be "
            f"imported here ({type(error).__name__}: {error}); fix the dotted path"
        ) from None
    config_class = type(f"TokcompatAlias_{alias.model_type}", (base,), {"model_type": alias.model_type})
    AutoConfig.register(alias.model_type, config_class)
    if alias.base_model_type is None:
        # A config-only alias, as declared: the tokenizer is whatever AutoTokenizer then picks.
        return config_class
    try:
        borrowed = tokenization_auto.TOKENIZER_MAPPING[base]
    except (KeyError, ValueError):
        borrowed = None
    if borrowed is not None:
        tokenization_auto.TOKENIZER_MAPPING.register(config_class, borrowed, exist_ok=True)
    names = tokenization_auto.TOKENIZER_MAPPING_NAMES
    if alias.base_model_type in names and alias.model_type not in names:
        names[alias.model_type] = names[alias.base_model_type]
    return config_class


@contextmanager
def applied_alias(alias: Alias) -> Iterator[type]:
    """``alias`` registered for the duration of the block, then every trace removed."""
    with isolated_transformers(foreign=False):  # an alias runs transformers' code, not the checkpoint's
        yield register_alias(alias)
