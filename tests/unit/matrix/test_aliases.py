"""The alias registry: an alias applies for a block and leaves no trace, and never replaces a native type."""

from __future__ import annotations

import importlib

import pytest

from pytest_tokcompat.judge.isolation import registry_fingerprint
from pytest_tokcompat.judge.remedies import applied_alias
from pytest_tokcompat.matrix.aliases import REGISTRY, Alias, find_alias
from tests.helpers import toys

TOY = Alias(toys.TOY_ALIAS_TYPE, "transformers.models.gpt2.configuration_gpt2.GPT2Config", "gpt2", "x")


def test_an_applied_alias_is_known_inside_the_block_and_gone_after() -> None:
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    before = registry_fingerprint()
    with applied_alias(TOY) as config_class:
        assert AutoConfig.for_model(TOY.model_type).model_type == TOY.model_type
        # the configured base, as the registry imports it (pytester runs may re-import transformers
        # submodules, so the class object in CONFIG_MAPPING can be an older copy of the same class)
        base = importlib.import_module("transformers.models.gpt2.configuration_gpt2").GPT2Config
        assert issubclass(config_class, base)
        assert config_class.model_type == TOY.model_type
    assert TOY.model_type not in CONFIG_MAPPING
    assert registry_fingerprint() == before


def test_an_alias_never_replaces_a_native_registration() -> None:
    native = Alias("gpt2", "transformers.models.gpt2.configuration_gpt2.GPT2Config", "gpt2", "x")
    before = registry_fingerprint()
    with (
        pytest.raises(ValueError, match="registers 'gpt2' natively; an alias never replaces it"),
        applied_alias(native),
    ):
        pass
    assert registry_fingerprint() == before


def test_the_deepseek_v32_entry_records_what_was_measured() -> None:
    alias = find_alias("deepseek_v32")
    assert alias is REGISTRY["deepseek_v32"]
    assert alias.native_since == "5.11.0"
    assert alias.tokenizer_class == "PreTrainedTokenizerFast"
    assert alias.upstream_issue.endswith("/issues/42590")
    assert find_alias(None) is None and find_alias("no_such_type") is None
