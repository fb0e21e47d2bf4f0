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


def hostile_remote_toy(folder: Path, prelude: str) -> Path:
    """The remote toy whose tokenization_toy.py first runs ``prelude`` (the hostile thing), then defines the class.

    Opted in with trust_remote_code, this is what an attempt's isolation must contain.
    """
    remote_toy(folder)
    code = (folder / "tokenization_toy.py").read_text(encoding="utf-8")
    (folder / "tokenization_toy.py").write_text(textwrap.dedent(prelude) + "\n" + code, encoding="utf-8")
    return folder


PATCH_AUTOTOKENIZER = """
import transformers
from transformers import AutoTokenizer, GPT2TokenizerFast

_original = AutoTokenizer.from_pretrained.__func__


def _everything_is_gpt2(cls, path, *args, **kwargs):
    try:
        return _original(cls, path, *args, **kwargs)
    except Exception:
        return GPT2TokenizerFast.from_pretrained(path)


AutoTokenizer.from_pretrained = classmethod(_everything_is_gpt2)
transformers.AutoTokenizer.from_pretrained = AutoTokenizer.from_pretrained
"""
"""Remote code that makes every later plain load 'work' (the alias toy then looks native)."""

LEAK_STATE = """
import logging
import os
import sys
import types

os.environ["TOKCOMPAT_LEAKED"] = "1"
logging.getLogger("transformers").setLevel(logging.CRITICAL)
logging.getLogger("tokcompat.leak").setLevel(logging.DEBUG)
sys.modules["tokcompat_leaked_module"] = types.ModuleType("tokcompat_leaked_module")
"""
"""Remote code that changes process state: an env var, logging levels, a sys.modules entry."""

SEE_STATE = """
import json
import logging
import os
import sys

_seen = os.environ.get("TOKCOMPAT_SEEN")
if _seen:
    with open(_seen, "w") as stream:
        json.dump(
            {
                "env": os.environ.get("TOKCOMPAT_LEAKED"),
                "transformers_level": logging.getLogger("transformers").level,
                "leak_level": logging.getLogger("tokcompat.leak").level,
                "module": "tokcompat_leaked_module" in sys.modules,
                "patched": "_everything_is_gpt2" in repr(
                    __import__("transformers").AutoTokenizer.from_pretrained
                ),
            },
            stream,
        )
"""
"""Remote code that writes down the state it finds (file named by TOKCOMPAT_SEEN)."""


def panic_toy(folder: Path) -> Path:
    """Data only: a tokenizer.json whose Split regex backtracks past Oniguruma's retry limit on ordinary
    text, so the tokenizers library panics (a pyo3 PanicException, a BaseException) while encoding."""
    native_toy(folder)
    document = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    split = {"type": "Split", "pattern": {"Regex": r"([a-z ]+)+\d"}, "behavior": "Isolated", "invert": False}
    document["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split, document["pre_tokenizer"]]}
    (folder / "tokenizer.json").write_text(json.dumps(document), encoding="utf-8")
    # transformers then uses tokenizer.json as it is (GPT2Tokenizer would rebuild its own pre-tokenizer)
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "PreTrainedTokenizerFast"}))
    return folder


TRANSFORMERS_TIKTOKEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
"""The split pattern transformers applies to a tiktoken file it converts; the toy's pat_str names the same."""


def tiktoken_toy(folder: Path) -> Path:
    """No tokenizer.json: a tiktoken-format tokenizer.model (the toy BPE's ranks) with its pat_str in
    tokenizer_config.json, so tiktoken (independent of transformers) can record its golden ids."""
    import base64

    from pytest_tokcompat.sources.tiktoken_bpe import bytes_to_unicode

    byte_of = {char: byte for byte, char in bytes_to_unicode().items()}
    ranks = [bytes([byte]) for byte in range(256)]
    for merge in tokenizer_document()["model"]["merges"]:
        left, right = merge if isinstance(merge, list) else merge.split(" ")
        token = bytes(byte_of[c] for c in left + right)
        if token not in ranks:
            ranks.append(token)
    lines = "".join(f"{base64.b64encode(token).decode()} {rank}\n" for rank, token in enumerate(ranks))
    return _write(
        folder,
        {
            "config.json": {"model_type": "llama"},
            "tokenizer.model": lines,
            "tokenizer_config.json": {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "pat_str": TRANSFORMERS_TIKTOKEN_PATTERN,
                "added_tokens_decoder": {str(len(ranks)): {"content": "<|end|>", "special": True}},
            },
        },
    )
