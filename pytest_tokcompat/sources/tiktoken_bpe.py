"""Turn a tiktoken "token rank" vocabulary into Hugging Face tokenizer files.

Some checkpoints ship only a tiktoken file, and some bundled snapshots cannot
carry the real (large) tokenizer files, so they are derived at materialization
time from a pinned tiktoken vocabulary. Byte-level BPE in tiktoken and in the
``tokenizers`` library are the same algorithm once the merges are recovered
from the ranks, which is what this module does.
"""

from __future__ import annotations

import base64
import json
from functools import lru_cache
from pathlib import Path
from typing import Any


def load_ranks(path: Path) -> dict[bytes, int]:
    """Read tiktoken's format: one ``<base64 token> <rank>`` per line, blank lines ignored."""
    ranks: dict[bytes, int] = {}
    with Path(path).open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.strip()
            if not line:
                continue
            try:
                token, rank = line.split()
                ranks[base64.b64decode(token, validate=True)] = int(rank)
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not a '<base64> <rank>' line") from exc
    return ranks


@lru_cache(maxsize=1)
def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table, which byte-level BPE files are written in."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    table = {byte: chr(byte) for byte in printable}
    extra = 0
    for byte in range(256):
        if byte not in table:
            table[byte] = chr(256 + extra)
            extra += 1
    return table


def _token_str(token: bytes, table: dict[int, str]) -> str:
    return "".join(table[byte] for byte in token)


def _bpe_parts(ranks: dict[bytes, int], token: bytes, max_rank: int) -> list[bytes]:
    """BPE on ``token`` with only the merges ranked below ``max_rank``, lowest rank first (as tiktoken)."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 1:
        best_index = -1
        best_rank = max_rank
        for index in range(len(parts) - 1):
            rank = ranks.get(parts[index] + parts[index + 1])
            if rank is not None and rank < best_rank:
                best_index, best_rank = index, rank
        if best_index < 0:
            break
        parts[best_index : best_index + 2] = [parts[best_index] + parts[best_index + 1]]
    return parts


def bpe_vocab_and_merges(ranks: dict[bytes, int]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The byte-level vocab and the merges, in rank order, that make ``tokenizers`` BPE reproduce tiktoken.

    Each multi-byte token's merge is recovered by running BPE on its bytes with only the lower-ranked
    merges: that must leave exactly two parts, whose merge is the token. A token for which it does not
    is unreachable by BPE (tiktoken still emits it when a whole pre-token equals it); it gets no merge.
    """
    table = bytes_to_unicode()
    vocab = {_token_str(token, table): rank for token, rank in ranks.items()}
    if len(vocab) != len(ranks):
        raise ValueError("two tokens map to the same byte-level string")
    merges: list[tuple[str, str]] = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) < 2:
            continue
        parts = _bpe_parts(ranks, token, rank)
        if len(parts) == 2:
            merges.append((_token_str(parts[0], table), _token_str(parts[1], table)))
    return vocab, merges


def vocab_text(vocab: dict[str, int]) -> str:
    """``vocab.json`` as Qwen2-family repos have it."""
    return json.dumps(vocab, ensure_ascii=False)


def merges_text(merges: list[tuple[str, str]]) -> str:
    """``merges.txt`` as Qwen2-family repos have it, version line first."""
    return "\n".join(["#version: 0.2", *(f"{left} {right}" for left, right in merges)]) + "\n"


def build_tokenizer_json(
    ranks: dict[bytes, int], pattern: str, added_tokens: list[dict[str, Any]]
) -> dict[str, Any]:
    """A ``tokenizers`` JSON equivalent to ``tiktoken.Encoding(pat_str=pattern, mergeable_ranks=ranks)``.

    The pre-tokenizer splits on ``pattern`` (isolated) and then maps bytes with ByteLevel, so the pieces
    are exactly tiktoken's; ``added_tokens`` are taken as given (each needs ``id`` and ``content``).
    """
    vocab, merges = bpe_vocab_and_merges(ranks)
    tokens = []
    for token in sorted(added_tokens, key=lambda entry: int(entry["id"])):
        tokens.append(
            {
                "id": int(token["id"]),
                "content": token["content"],
                "single_word": bool(token.get("single_word", False)),
                "lstrip": bool(token.get("lstrip", False)),
                "rstrip": bool(token.get("rstrip", False)),
                "normalized": bool(token.get("normalized", False)),
                "special": bool(token.get("special", True)),
            }
        )
    byte_level = {"add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": tokens,
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", **byte_level},
            ],
        },
        "post_processor": {"type": "ByteLevel", **byte_level},
        "decoder": {"type": "ByteLevel", **byte_level},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": "",
            "end_of_word_suffix": "",
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [[left, right] for left, right in merges],
        },
    }
