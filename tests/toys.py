"""Tiny checkpoints for self-tests: real tokenizers-library BPE files, built in milliseconds.

Each toy exercises one rung of the verdict ladder with the real transformers
loading path, so the self-tests show every verdict without the 8 MB DeepSeek file.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

CORPUS = [
    "hello world the quick brown fox",
    "def f(x): return x",
    "中文 测试 emoji 🤖",
    "  spaces\tand\ttabs\n",
] * 20

TOY_ALIAS_TYPE = "tokcompat_toy_new"

REMOTE_CONFIG = """
from transformers import PretrainedConfig


class ToyConfig(PretrainedConfig):
    model_type = "tokcompat_toy_remote"
"""

REMOTE_TOKENIZER = """
import os
from pathlib import Path

from transformers import PreTrainedTokenizerFast

_canary = os.environ.get("TOKCOMPAT_CANARY")
if _canary:
    Path(_canary).write_text("remote code ran")


class ToyTokenizerFast(PreTrainedTokenizerFast):
    pass
"""


def tokenizer_document() -> dict[str, Any]:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<s>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(CORPUS, trainer)
    return json.loads(tokenizer.to_str())


def _write(folder: Path, files: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _vocab_and_merges(document: dict[str, Any]) -> dict[str, Any]:
    merges = [m if isinstance(m, str) else " ".join(m) for m in document["model"]["merges"]]
    return {
        "vocab.json": document["model"]["vocab"],
        "merges.txt": "#version: 0.2\n" + "\n".join(merges) + "\n",
    }


def native_toy(folder: Path) -> Path:
    """model_type gpt2 with its tokenizer.json: plain AutoTokenizer loads it, ids right."""
    return _write(
        folder,
        {
            "config.json": {"model_type": "gpt2"},
            "tokenizer.json": tokenizer_document(),
            "tokenizer_config.json": {"tokenizer_class": "GPT2Tokenizer"},
        },
    )


def alias_toy(folder: Path) -> Path:
    """An unknown model_type with only vocab.json/merges.txt: loads only as a gpt2 alias."""
    return _write(
        folder,
        {
            "config.json": {"model_type": TOY_ALIAS_TYPE},
            "tokenizer_config.json": {},
            **_vocab_and_merges(tokenizer_document()),
        },
    )


def broken_toy(folder: Path) -> Path:
    """Like the alias toy, but with a model_type no alias covers: nothing loads it."""
    return _write(
        folder,
        {
            "config.json": {"model_type": "tokcompat_toy_unknown"},
            "tokenizer_config.json": {},
            **_vocab_and_merges(tokenizer_document()),
        },
    )


def remote_toy(folder: Path) -> Path:
    """A checkpoint that ships its own code (auto_map); its code leaves a canary file when it runs."""
    return _write(
        folder,
        {
            "config.json": {
                "model_type": "tokcompat_toy_remote",
                "auto_map": {"AutoConfig": "configuration_toy.ToyConfig"},
            },
            "tokenizer_config.json": {
                "tokenizer_class": "ToyTokenizerFast",
                "auto_map": {"AutoTokenizer": [None, "tokenization_toy.ToyTokenizerFast"]},
            },
            "tokenizer.json": tokenizer_document(),
            "configuration_toy.py": textwrap.dedent(REMOTE_CONFIG),
            "tokenization_toy.py": textwrap.dedent(REMOTE_TOKENIZER),
        },
    )


def golden_for(texts: list[str], folder: Path, case_id: str, shift: int = 0) -> Path:
    """Golden ids from the tokenizers library over the toy vocabulary (``shift`` makes them wrong)."""
    from tokenizers import Tokenizer

    reference = Tokenizer.from_str(json.dumps(tokenizer_document()))
    ids = {t: [i + shift for i in reference.encode(t, add_special_tokens=False).ids] for t in texts}
    decoded = {t: reference.decode(reference.encode(t, add_special_tokens=False).ids) for t in texts}
    path = folder / f"{case_id}.json"
    _write(folder, {path.name: {"case": case_id, "source": "toy", "ids": ids, "decoded": decoded}})
    return path


def alias_conftest() -> str:
    """A conftest that declares a toy alias for the run (the pytest_tokcompat_aliases hook): no global state."""
    return textwrap.dedent(
        f'''
        import pytest_tokcompat.matrix.aliases as aliases

        TOY = aliases.Alias(
            model_type="{TOY_ALIAS_TYPE}",
            base_config="transformers.models.gpt2.configuration_gpt2.GPT2Config",
            base_model_type="gpt2",
            upstream_issue="https://example.invalid/toy",
        )


        def pytest_tokcompat_aliases(config):
            return [TOY]
        '''
    )
