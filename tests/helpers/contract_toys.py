"""Tiny checkpoints whose tokenizer drifts in exactly one place of the contract, built in milliseconds.

Every toy is the same small Qwen-style byte-level BPE checkpoint (``model_type:
qwen3``, ``tokenizer_class: Qwen2Tokenizer``, a tokenizer.json with Qwen's own
normalizer and split pattern), so that with no drift it passes under every
transformers release. Each drift changes one declaration in the checkpoint's own
files, the way real checkpoints make transformers disagree with their
tokenizer.json:

* ``script``: tokenizer.json keeps combining marks with their letters
  (``[\\p{L}\\p{M}]+``); transformers 5 rebuilds Qwen2Tokenizer from vocab and
  merges with Qwen's hard-coded pattern, which splits them off. Only Devanagari
  text shows it (the built-in corpus has no combining mark after NFC).
* ``special_rstrip``: tokenizer_config.json gives the sixth special token
  ``rstrip: true``; tokenizer.json does not.
* ``high_ids``: tokenizer.json's BPE has ``ignore_merges: true`` and whole words
  appended at the top of the vocabulary (a vocabulary extension); transformers 5
  rebuilds the BPE without ``ignore_merges``.
* ``digits``: tokenizer.json keeps digit runs whole (``\\p{N}+``) and has one merge,
  ``9 9``, which only the 9-digit probe run contains; transformers 5 splits every digit.
* ``default_call``: tokenizer_config.json sets ``add_bos_token: true``, which
  neither Qwen2TokenizerFast (4.x) nor transformers 5 (with a tokenizer.json) applies.
* ``decode``: tokenizer_config.json sets ``clean_up_tokenization_spaces: true``.
* ``chat_template``: the toy's template reads the reasoning as ``message.thinking``
  (as gpt-oss templates do) instead of ``message.reasoning_content``; transformers
  releases that copy ``reasoning_content`` into ``thinking`` render what the
  documented sandbox does not.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

QWEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
MARKS_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{M}\p{N}]?[\p{L}\p{M}]+|\p{N}"""
    r"""| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
DIGIT_RUNS_PATTERN = QWEN_PATTERN.replace(r"|\p{N}|", r"|\p{N}+|")
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<s>", "</s>", "<|tool_call|>")
RSTRIP_TOKEN = SPECIALS[5]
"""The sixth special token: beyond the four the first corpus probed."""
APPENDED_WORDS = ("Ġquokka", "Ġnarwhal", "Ġaxolotl", "Ġpangolin")
"""Whole words appended at the top of the vocabulary without merges (reachable only with ignore_merges)."""
CORPUS = [
    "hello world, the quick brown fox jumps over the lazy dog.",
    "def add(x, y): return x + y  # a sum",
    "नमस्ते दुनिया, हिन्दी भाषा में स्वागत है।",
    "कि के लिए है और में से",
    "a != b, isn't it? don't they're",
    "  spaces\tand\ttabs\nnew lines\n",
    "中文 测试 emoji 🤖",
] * 20
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message.role }}\n"
    "{% if message.reasoning_content %}<think>{{ message.reasoning_content }}</think>{% endif %}"
    "{{ message.content if message.content is not none else '' }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
GPT_OSS_STYLE_TEMPLATE = CHAT_TEMPLATE.replace("reasoning_content", "thinking")
"""The same template reading the reasoning under the name gpt-oss templates use."""
DRIFTS = ("script", "special_rstrip", "high_ids", "digits", "default_call", "decode", "chat_template")


@cache
def _trained(pattern: str) -> str:
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=700, special_tokens=list(SPECIALS), initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    return str(tokenizer.to_str())


def _set_pattern(document: dict[str, Any], pattern: str) -> None:
    document["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": pattern}


def _append_token(document: dict[str, Any], token: str, merge: list[str] | None = None) -> int:
    vocab = document["model"]["vocab"]
    token_id = max(vocab.values()) + 1
    vocab[token] = token_id
    if merge is not None:
        document["model"]["merges"].append(merge)
    return token_id


def tokenizer_document(drift: str | None) -> dict[str, Any]:
    """The toy's tokenizer.json (``drift``: one of DRIFTS, or None for the clean checkpoint)."""
    document = json.loads(_trained(MARKS_PATTERN))
    _set_pattern(document, QWEN_PATTERN)
    _append_token(document, "99", ["9", "9"])
    for word in APPENDED_WORDS:
        _append_token(document, word)
    if drift == "script":
        _set_pattern(document, MARKS_PATTERN)
    elif drift == "digits":
        _set_pattern(document, DIGIT_RUNS_PATTERN)
    elif drift == "high_ids":
        document["model"]["ignore_merges"] = True
    return document


def tokenizer_config(drift: str | None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "tokenizer_class": "Qwen2Tokenizer",
        "added_tokens_decoder": {
            str(index): {
                "content": content,
                "lstrip": False,
                "normalized": False,
                "rstrip": drift == "special_rstrip" and content == RSTRIP_TOKEN,
                "single_word": False,
                "special": True,
            }
            for index, content in enumerate(SPECIALS)
        },
        "bos_token": "<s>",
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "clean_up_tokenization_spaces": drift == "decode",
        "model_max_length": 4096,
        "chat_template": GPT_OSS_STYLE_TEMPLATE if drift == "chat_template" else CHAT_TEMPLATE,
    }
    if drift == "default_call":
        config["add_bos_token"] = True
    return config


def contract_toy(folder: Path, drift: str | None = None) -> Path:
    """Write the toy checkpoint into ``folder``: clean with ``drift=None``, else drifting in one place."""
    if drift is not None and drift not in DRIFTS:
        raise ValueError(f"unknown drift {drift!r}; use one of {DRIFTS}")
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "config.json": {"model_type": "qwen3", "vocab_size": 1024},
        "tokenizer.json": tokenizer_document(drift),
        "tokenizer_config.json": tokenizer_config(drift),
    }
    for name, content in files.items():
        (folder / name).write_text(json.dumps(copy.deepcopy(content), ensure_ascii=False), encoding="utf-8")
    return folder


def with_chat_template(folder: Path, template: str) -> Path:
    """The toy in ``folder`` with ``template`` as tokenizer_config.json's chat template."""
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = template
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder
