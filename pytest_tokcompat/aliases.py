"""The alias registry: config aliases for model_types that transformers does not know yet.

Benchmark clients carry these shims by hand and retire them from memory; here each
alias says what it borrows, which upstream issue tracks native support, and since
which transformers release it is obsolete, so that a test can tell when to retire it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from pytest_tokcompat.isolation import isolated_transformers


@dataclass(frozen=True)
class Alias:
    """A config alias: ``model_type`` loads as ``base_config`` until transformers knows it natively."""

    model_type: str
    base_config: str
    """Dotted path of the transformers config class whose schema the checkpoint reuses."""
    base_model_type: str
    """The model_type whose tokenizer mapping the alias borrows, so the same tokenizer class is chosen."""
    upstream_issue: str
    native_since: str | None = None
    """The first transformers release that loads this model_type natively with right ids, once known."""
    native_drift: str | None = None
    """Releases (a PEP 440 range) where the native registration is known to give wrong ids."""
    tokenizer_class: str | None = None
    """A transformers tokenizer class to load with instead of the one tokenizer_config.json names,
    where the config alias alone does not give right ids (the checkpoint names the wrong class)."""
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "model_type": self.model_type,
            "base_config": self.base_config,
            "base_model_type": self.base_model_type,
            "upstream_issue": self.upstream_issue,
            "native_since": self.native_since,
            "native_drift": self.native_drift,
            "tokenizer_class": self.tokenizer_class,
        }


REGISTRY: dict[str, Alias] = {
    alias.model_type: alias
    for alias in (
        Alias(
            model_type="deepseek_v32",
            base_config="transformers.models.deepseek_v3.configuration_deepseek_v3.DeepseekV3Config",
            base_model_type="deepseek_v3",
            upstream_issue="https://github.com/huggingface/transformers/issues/42590",
            native_since="5.11.0",
            tokenizer_class="PreTrainedTokenizerFast",
            reason="DeepSeek-V3.2 reuses the V3 config schema and tokenizer. Its tokenizer_config.json names "
            "LlamaTokenizerFast, and transformers 5.3 and 5.6 rebuild a Llama tokenizer from it that gives "
            "other ids (DeepSeek-V3 itself drifts there); loading tokenizer.json as it is keeps parity on "
            "every release measured.",
        ),
    )
}


def find_alias(model_type: str | None, registry: dict[str, Alias] | None = None) -> Alias | None:
    if model_type is None:
        return None
    return (REGISTRY if registry is None else registry).get(model_type)


def _import_dotted(path: str) -> Any:
    module_name, _, attribute = path.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


def register_alias(alias: Alias) -> type:
    """Register ``alias`` in transformers' auto registries; ValueError where the model_type is native.

    Callers that must leave no trace use ``applied_alias`` instead.
    """
    from transformers import AutoConfig
    from transformers.models.auto import configuration_auto, tokenization_auto

    if alias.model_type in configuration_auto.CONFIG_MAPPING_NAMES:
        raise ValueError(
            f"transformers already registers {alias.model_type!r} natively; an alias never replaces it"
        )
    base = _import_dotted(alias.base_config)
    config_class = type(f"TokcompatAlias_{alias.model_type}", (base,), {"model_type": alias.model_type})
    AutoConfig.register(alias.model_type, config_class)
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
    with isolated_transformers():
        yield register_alias(alias)
