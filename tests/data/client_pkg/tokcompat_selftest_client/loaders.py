"""Two client loaders as benchmark clients write them, for the loader self-tests (copied to a tmp dir).

``config_only_alias`` registers ``deepseek_v32`` as the DeepSeek-V3 config and nothing else (the
tokenizer mapping is not borrowed), then loads with AutoTokenizer: on a release that does not
register ``deepseek_v32``, transformers then falls back to the ``tokenizer_class`` the checkpoint
names (LlamaTokenizerFast) and rebuilds it. ``RepairedTokenizer.from_pretrained`` does the same and
then repairs the result after loading, swapping in the backend read from tokenizer.json; it is a
wrapper whose tokenizer sits under ``.tokenizer``.
"""

from __future__ import annotations

import os
from typing import Any


def _register_config_only() -> None:
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.deepseek_v3.configuration_deepseek_v3 import DeepseekV3Config

    if "deepseek_v32" in CONFIG_MAPPING_NAMES:
        return  # registered natively: the client's shim steps aside
    config_class = type("ClientDeepseekV32Config", (DeepseekV3Config,), {"model_type": "deepseek_v32"})
    AutoConfig.register("deepseek_v32", config_class, exist_ok=True)


def config_only_alias(path: str, **kwargs: Any) -> Any:
    from transformers import AutoTokenizer

    _register_config_only()
    return AutoTokenizer.from_pretrained(path, **kwargs)


class RepairedTokenizer:
    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    @classmethod
    def from_pretrained(cls, path: str, **kwargs: Any) -> RepairedTokenizer:
        from tokenizers import Tokenizer

        tokenizer = config_only_alias(path, **kwargs)
        tokenizer._tokenizer = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
        return cls(tokenizer)
