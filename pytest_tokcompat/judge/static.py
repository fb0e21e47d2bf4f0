"""The static view: what the files and transformers' registries say, before any tokenizer loads.

It predicts the remedy a checkpoint needs; the verdict measures it. Where the two
disagree the report says so, because that is usually the interesting news (a
fallback that happens to work, or a registration that still drifts).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat.errors import CheckpointError
from pytest_tokcompat.matrix.aliases import REGISTRY, Alias

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "tiktoken.model",
    "tekken.json",
    "chat_template.jinja",
)
"""The files a tokenizer is read from: the static view lists them, the input checks refuse special or
oversized ones, and the probes' seed hashes them."""


@dataclass
class StaticView:
    model_type: str | None
    registered_natively: bool
    config_auto_map: bool
    tokenizer_auto_map: str | None
    tokenizer_class: str | None
    alias: str | None
    tokenizer_files: list[str] = field(default_factory=list)
    remote_code_files: list[str] = field(default_factory=list)
    has_config: bool = True
    """False for a tokenizer-only folder or repo (no config.json): no model_type, so no alias applies."""
    name_keyed: list[str] = field(default_factory=list)
    """The installed transformers' name-keyed rules (``MODEL_IDS_TO_TOKENIZERS_BACKEND`` globs) that the
    name the client loads it by matches: where the same files by another name load otherwise."""

    @property
    def has_auto_map(self) -> bool:
        return self.config_auto_map or self.tokenizer_auto_map is not None

    @property
    def predicted(self) -> str:
        """The remedy the files suggest: native registration first, then our alias, then remote code."""
        if self.registered_natively:
            return "native"
        if self.alias:
            return "alias"
        if self.has_auto_map:
            return "auto_map"
        return "native"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "has_auto_map": self.has_auto_map, "predicted": self.predicted}


def read_json_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path} is missing; copy it from the checkpoint") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise CheckpointError(f"{path} is not valid JSON ({error}); re-download it") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{path} must hold a JSON object, not {type(data).__name__}; re-download it")
    return data


def _auto_map_modules(auto_map: Any) -> set[str]:
    refs: list[str] = []
    if isinstance(auto_map, dict):
        for value in auto_map.values():
            refs.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str))
    elif isinstance(auto_map, list):
        refs.extend(v for v in auto_map if isinstance(v, str))
    return {ref.split("--")[-1].rsplit(".", 1)[0] + ".py" for ref in refs}


def name_keyed_rules(name: str | None) -> list[str]:
    """The name-keyed tokenizer rules of the installed transformers that ``name`` matches (lower-cased,
    as transformers matches them)."""
    if not name:
        return []
    import fnmatch

    from transformers.models.auto import tokenization_auto

    patterns = getattr(tokenization_auto, "MODEL_IDS_TO_TOKENIZERS_BACKEND", None) or []
    lowered = name.lower()
    return [str(p) for p in patterns if isinstance(p, str) and fnmatch.fnmatch(lowered, p)]


def static_view(
    folder: Path, registry: dict[str, Alias] | None = None, name: str | None = None
) -> StaticView:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES  # type: ignore[attr-defined]

    # A tokenizer-only checkpoint (no config.json) is what clients load too: AutoTokenizer reads
    # tokenizer_config.json alone there, so it is judged, with no model_type.
    has_config = (folder / "config.json").is_file()
    if not has_config and not any((folder / name).is_file() for name in TOKENIZER_FILES):
        raise CheckpointError(
            f"{folder} holds neither config.json nor tokenizer files ({', '.join(TOKENIZER_FILES)}); "
            "copy the checkpoint's files into it"
        )
    config = read_json_object(folder / "config.json") if has_config else {}
    tokenizer_config: dict[str, Any] = {}
    if (folder / "tokenizer_config.json").is_file():
        tokenizer_config = read_json_object(folder / "tokenizer_config.json")
    model_type = config.get("model_type") if isinstance(config.get("model_type"), str) else None
    token_map = tokenizer_config.get("auto_map")
    tokenizer_ref: str | None = None
    if isinstance(token_map, dict):
        value = token_map.get("AutoTokenizer")
        if isinstance(value, list):
            tokenizer_ref = next((v for v in reversed(value) if isinstance(v, str)), None)
        elif isinstance(value, str):
            tokenizer_ref = value
    elif isinstance(token_map, list):
        tokenizer_ref = next((v for v in reversed(token_map) if isinstance(v, str)), None)
    config_map = config.get("auto_map")
    # Only the config and tokenizer classes run when a tokenizer loads; modeling code never does.
    config_ref = {"AutoConfig": config_map.get("AutoConfig")} if isinstance(config_map, dict) else None
    modules = _auto_map_modules(config_ref) | _auto_map_modules(
        token_map.get("AutoTokenizer") if isinstance(token_map, dict) else token_map
    )
    alias = (REGISTRY if registry is None else registry).get(model_type or "")
    return StaticView(
        model_type=model_type,
        registered_natively=bool(model_type) and model_type in CONFIG_MAPPING_NAMES,
        config_auto_map=isinstance(config.get("auto_map"), dict),
        tokenizer_auto_map=tokenizer_ref,
        tokenizer_class=tokenizer_config.get("tokenizer_class"),
        alias=alias.model_type if alias else None,
        tokenizer_files=[name for name in TOKENIZER_FILES if (folder / name).is_file()],
        remote_code_files=sorted(modules),
        has_config=has_config,
        name_keyed=name_keyed_rules(name),
    )


def special_tokens(folder: Path, reference: Any = None) -> list[str]:
    """The checkpoint's special tokens in id order, for the special-token probes.

    ``reference`` is the already parsed ``tokenizers.Tokenizer`` of tokenizer.json, so the
    7.8 MB file is not parsed once more just for this.
    """
    found: dict[int, str] = {}
    if reference is not None:
        for token_id, token in reference.get_added_tokens_decoder().items():
            if token.special:
                found[int(token_id)] = str(token.content)
    if not found and (folder / "tokenizer_config.json").is_file():
        try:
            decoder = read_json_object(folder / "tokenizer_config.json").get("added_tokens_decoder", {})
        except CheckpointError:
            decoder = {}
        for token_id, token in decoder.items() if isinstance(decoder, dict) else []:
            if isinstance(token, dict) and token.get("special") and str(token_id).isdigit():
                found.setdefault(int(token_id), str(token.get("content")))
    return [found[key] for key in sorted(found)]
