"""The alias registry: config aliases for model_types that transformers does not know yet.

Benchmark clients carry these shims by hand and retire them from memory; here each
alias says what it borrows, which upstream issue tracks native support, and since
which transformers release it is obsolete, so that a test can tell when to retire it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
