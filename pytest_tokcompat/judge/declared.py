"""What a checkpoint declares of its tokenizer: the special tokens, flags and chat template in its files.

Read from tokenizer_config.json, special_tokens_map.json and config.json, never from the tokenizer
being judged: the reference both the contract's ground truth and the declared-tokens repair start from."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat.judge.probes import read_json_dict, token_content

SPECIAL_NAMES = ("bos", "eos", "pad", "unk")
"""The named special tokens whose strings and ids are checked (eos drives stop conditions)."""


TEMPLATE_TOKEN_NAMES = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")


@dataclass
class Declared:
    """What the checkpoint's files declare about the contract (README, "The contract")."""

    add_bos_token: bool | None = None
    add_eos_token: bool | None = None
    clean_up_tokenization_spaces: bool = False
    special_tokens: dict[str, str | None] = field(default_factory=dict)
    """bos/eos/pad/unk as declared (None: declared as null); names not declared are not checked."""
    special_ids: dict[str, int | None] = field(default_factory=dict)
    template_tokens: dict[str, Any] = field(default_factory=dict)
    chat_template: str | None = None
    chat_template_source: str | None = None


def read_declared(folder: Path, reference: Any = None) -> Declared:
    """The contract the checkpoint declares: flags, special tokens (with ids) and its chat template."""
    config = read_json_dict(folder / "tokenizer_config.json")
    tokens_map = read_json_dict(folder / "special_tokens_map.json")
    declared = Declared()
    for flag in ("add_bos_token", "add_eos_token"):
        if isinstance(config.get(flag), bool):
            setattr(declared, flag, config[flag])
    declared.clean_up_tokenization_spaces = config.get("clean_up_tokenization_spaces") is True
    ids_by_content: dict[str, int] = {}
    decoder = config.get("added_tokens_decoder")
    for key, value in decoder.items() if isinstance(decoder, dict) else []:
        content = token_content(value)
        if content is not None and str(key).isdigit():
            ids_by_content.setdefault(content, int(key))

    def id_of(token: str | None) -> int | None:
        if token is None:
            return None
        if reference is not None:
            found = reference.token_to_id(token)
            return int(found) if found is not None else None
        return ids_by_content.get(token)

    for name in TEMPLATE_TOKEN_NAMES:
        key = f"{name}_token"
        source = config if key in config else tokens_map if key in tokens_map else None
        if source is None:
            continue
        token = token_content(source[key])
        if token is None and source[key] is not None:
            continue  # neither a token nor null: not a declaration this check can read
        if name in SPECIAL_NAMES:
            declared.special_tokens[name] = token
            declared.special_ids[name] = id_of(token)
        if token is not None:
            declared.template_tokens[key] = token
    extra = config.get("additional_special_tokens", tokens_map.get("additional_special_tokens"))
    if isinstance(extra, list):
        declared.template_tokens["additional_special_tokens"] = [
            t for t in (token_content(v) for v in extra) if t is not None
        ]
    declared.chat_template, declared.chat_template_source = _declared_template(folder, config)
    return declared


def _declared_template(folder: Path, config: dict[str, Any]) -> tuple[str | None, str | None]:
    """chat_template.jinja wins over tokenizer_config.json's chat_template, as in transformers."""
    jinja_file = folder / "chat_template.jinja"
    if jinja_file.is_file():
        try:
            return jinja_file.read_text(encoding="utf-8"), "chat_template.jinja"
        except (OSError, UnicodeDecodeError):
            return None, None
    value = config.get("chat_template")
    if isinstance(value, str):
        return value, "tokenizer_config.json"
    if isinstance(value, list):  # named templates: the one called "default"
        for entry in value:
            if (
                isinstance(entry, dict)
                and entry.get("name") == "default"
                and isinstance(entry.get("template"), str)
            ):
                return str(entry["template"]), "tokenizer_config.json (default)"
    return None, None
