"""The alias registry: config aliases for model_types that transformers does not know yet.

Benchmark clients carry these shims by hand and retire them from memory; here each
alias says what it borrows, which upstream issue tracks native support, and since
which transformers release it is obsolete, so that a test can tell when to retire it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_tokcompat.errors import AliasError
from pytest_tokcompat.matrix.versions import parse_range

BUILT_IN = "built-in"


@dataclass(frozen=True)
class Alias:
    """A config alias: ``model_type`` loads as ``base_config`` until transformers knows it natively."""

    model_type: str
    base_config: str
    """Dotted path of the transformers config class whose schema the checkpoint reuses."""
    base_model_type: str | None
    """The model_type whose tokenizer mapping the alias borrows, so the same tokenizer class is chosen;
    None for a config-only alias (it registers the config and nothing else, as many client shims do)."""
    upstream_issue: str
    native_since: str | None = None
    """The first transformers release that loads this model_type natively with right ids, once known."""
    native_drift: str | None = None
    """Releases (a PEP 440 range) where the native registration is known to give wrong ids."""
    tokenizer_class: str | None = None
    """A transformers tokenizer class to load with instead of the one tokenizer_config.json names,
    where the config alias alone does not give right ids (the checkpoint names the wrong class)."""
    reason: str = ""
    declared_in: str = BUILT_IN
    """Where the alias comes from: built-in, FILE:LINE of a matrix, a pytest_tokcompat_aliases hook, or
    load_tokenizer(aliases=...); alarms name it as the place to record what changed."""

    @property
    def config_only(self) -> bool:
        return self.base_model_type is None and self.tokenizer_class is None

    def to_json(self) -> dict[str, Any]:
        return {
            "model_type": self.model_type,
            "base_config": self.base_config,
            "base_model_type": self.base_model_type,
            "upstream_issue": self.upstream_issue,
            "native_since": self.native_since,
            "native_drift": self.native_drift,
            "tokenizer_class": self.tokenizer_class,
            "declared_in": self.declared_in,
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


# --- declared aliases: the same fields, from a matrix, a hook or a caller -------------------------------

ALIAS_KEYS = {
    "model_type": "the model_type config.json names, which transformers does not register (yet)",
    "base_config": "dotted path of the transformers config class it loads as, e.g. "
    "transformers.models.deepseek_v3.configuration_deepseek_v3.DeepseekV3Config",
    "base_model_type": "the model_type whose tokenizer mapping it borrows; omit it for a config-only alias",
    "tokenizer_class": "a transformers tokenizer class to load with instead of the one the checkpoint names",
    "upstream_issue": "the upstream issue or pull request that tracks native support",
    "native_since": "the first transformers release that loads the model_type natively with right ids",
    "native_drift": "a PEP 440 range of releases whose native registration gives wrong ids",
    "reason": "free text: why the alias exists",
}
REQUIRED_ALIAS_KEYS = ("model_type", "base_config", "upstream_issue")
MODEL_TYPE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
DOTTED_PATH_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+\Z")
CLASS_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")

AliasProblem = tuple[str | None, str, str]
"""(the key it is about, or None for the entry; what is wrong; how to fix it)."""


def alias_problems(data: Mapping[Any, Any]) -> list[AliasProblem]:
    """Everything wrong with one declared alias, each with its fix; no import of transformers (the
    config class is imported when the alias is applied, and a failure there is that attempt's error)."""
    problems: list[AliasProblem] = []
    for key in data:
        if key not in ALIAS_KEYS:
            problems.append(
                (str(key), f"unknown alias key {key!r}", f"use one of {', '.join(sorted(ALIAS_KEYS))}")
            )
    for key in REQUIRED_ALIAS_KEYS:
        if key not in data:
            problems.append((None, f"no {key!r}", f"add '{key}: ...' ({ALIAS_KEYS[key]})"))

    def text(key: str, pattern: re.Pattern[str] | None, what: str, example: str) -> None:
        value = data.get(key)
        if value is None and key not in REQUIRED_ALIAS_KEYS:
            return
        if key in data and (not isinstance(value, str) or (pattern is not None and not pattern.match(value))):
            problems.append((key, f"'{key}' must be {what}, got {value!r}", f"write '{key}: {example}'"))

    text("model_type", MODEL_TYPE_PATTERN, "a model_type (letters, digits, '_', '.', '-')", "deepseek_v32")
    text(
        "base_config",
        DOTTED_PATH_PATTERN,
        "the dotted path of a config class",
        "transformers.models.deepseek_v3.configuration_deepseek_v3.DeepseekV3Config",
    )
    text("base_model_type", MODEL_TYPE_PATTERN, "a model_type", "deepseek_v3")
    text(
        "tokenizer_class",
        CLASS_NAME_PATTERN,
        "a transformers tokenizer class name",
        "PreTrainedTokenizerFast",
    )
    text("upstream_issue", None, "text (a URL)", "https://github.com/huggingface/transformers/issues/N")
    text("reason", None, "text", "why the alias exists")
    since = data.get("native_since")
    if since is not None:
        try:
            Version(since if isinstance(since, str) else "")
        except InvalidVersion:
            problems.append(
                (
                    "native_since",
                    f"'native_since' must be a quoted release, got {since!r}",
                    "write e.g. 'native_since: \"5.11.0\"'",
                )
            )
    drift = data.get("native_drift")
    if drift is not None:
        try:
            if not isinstance(drift, str):
                raise ValueError(f"{drift!r} is not text")
            parse_range(drift)
        except ValueError as error:
            problems.append(
                ("native_drift", f"'native_drift' is not a version range: {error}", "write e.g. '>=5.3,<5.4'")
            )
    return problems


def alias_from_mapping(data: Mapping[str, Any], declared_in: str) -> Alias:
    """An Alias from its declared fields; AliasError naming every problem (for hook results and callers)."""
    problems = alias_problems(data)
    if problems:
        name = data.get("model_type")
        label = f"alias {name!r}" if isinstance(name, str) else "an alias"
        raise AliasError(
            f"{declared_in}: {label}: " + "; ".join(f"{what} ({fix})" for _, what, fix in problems)
        )
    return Alias(
        model_type=data["model_type"],
        base_config=data["base_config"],
        base_model_type=data.get("base_model_type"),
        upstream_issue=data["upstream_issue"],
        native_since=data.get("native_since"),
        native_drift=data.get("native_drift"),
        tokenizer_class=data.get("tokenizer_class"),
        reason=data.get("reason") or "",
        declared_in=declared_in,
    )


def effective_registry(*declared: Iterable[Alias]) -> dict[str, Alias]:
    """The registry one run uses: the built-in aliases, then each declared layer in order (a matrix's,
    then the hooks'); a declared alias replaces a built-in one of its model_type and is applied exactly
    as declared. The module-level REGISTRY is never changed."""
    registry = dict(REGISTRY)
    for layer in declared:
        for alias in layer:
            registry[alias.model_type] = alias
    return registry
