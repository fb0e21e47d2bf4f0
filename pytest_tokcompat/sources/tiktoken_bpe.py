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


def _merge_split(ranks: dict[bytes, int], token: bytes, max_rank: int) -> int:
    """Where BPE of ``token`` (3+ bytes) with only merges ranked below ``max_rank`` cuts it in two, else 0.

    Lowest-ranked adjacent pair first, leftmost on ties, as tiktoken merges. This runs once per token
    of a whole vocabulary, so each pair's rank is kept beside it and, after a merge, only the two pairs
    next to it are looked up again; the last merge, from three parts, is decided from their two pair
    ranks. A pair ranked ``max_rank`` or higher (or not a token) never merges, so it is stored as
    ``max_rank``; two parts are final, since their only pair is ``token`` itself, ranked ``max_rank``.
    """
    get = ranks.get
    length = len(token)
    parts = [token[index : index + 1] for index in range(length)]
    pair_ranks = [get(token[index : index + 2], max_rank) for index in range(length - 1)]
    while len(pair_ranks) > 2:
        best = min(pair_ranks)
        if best >= max_rank:
            return 0
        index = pair_ranks.index(best)
        merged = parts[index] + parts[index + 1]
        del parts[index + 1], pair_ranks[index]
        parts[index] = merged
        if index:
            pair_ranks[index - 1] = get(parts[index - 1] + merged, max_rank)
        if index < len(pair_ranks):
            pair_ranks[index] = get(merged + parts[index + 1], max_rank)
    left, right = pair_ranks  # three parts: one more merge leaves two, if either pair may merge
    if left <= right:
        return len(parts[0]) + len(parts[1]) if left < max_rank else 0
    return len(parts[0]) if right < max_rank else 0


def bpe_vocab_and_merges(ranks: dict[bytes, int]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """The byte-level vocab and the merges, in rank order, that make ``tokenizers`` BPE reproduce tiktoken.

    Each multi-byte token's merge is recovered by running BPE on its bytes with only the lower-ranked
    merges: that must leave exactly two parts, whose merge is the token. A token for which it does not
    is unreachable by BPE (tiktoken still emits it when a whole pre-token equals it); it gets no merge.
    A byte-level string has one character per byte, so a merge is its token's string cut in two.
    """
    table = bytes_to_unicode()
    texts = [token.decode("latin-1").translate(table) for token in ranks]
    vocab = dict(zip(texts, ranks.values(), strict=True))
    if len(vocab) != len(ranks):
        raise ValueError("two tokens map to the same byte-level string")
    merges: list[tuple[str, str]] = []
    # Sorted by rank, then file order (as a stable sort by rank would); the index keeps tokens uncompared.
    by_rank = sorted(zip(ranks.values(), range(len(texts)), ranks, texts, strict=True))
    for rank, _, token, text in by_rank:
        length = len(token)
        if length < 2:
            continue
        split = 1 if length == 2 else _merge_split(ranks, token, rank)
        if split:
            merges.append((text[:split], text[split:]))
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
