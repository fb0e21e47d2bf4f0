"""The plain merge recovery ``tiktoken_bpe.bpe_vocab_and_merges`` replaced, and the bundled rank files.

The oracle of tests/unit/sources/test_tiktoken_bpe.py and the baseline of benchmarks/tiktoken_merges.py: BPE on each
token's bytes with only the merges ranked below it, every pair's rank recomputed at every step.
"""

from __future__ import annotations

from pathlib import Path

from pytest_tokcompat.matrix.discovery import bundled_dir
from pytest_tokcompat.sources.members import SOURCES_FILE
from pytest_tokcompat.sources.snapshots import packaged_file, read_sources
from pytest_tokcompat.sources.tiktoken_bpe import bytes_to_unicode

RANK_FILES = {"qwen3-0.6b": "qwen.tiktoken", "llama-3.1-8b-instruct": "original_tokenizer.model"}
"""The bundled snapshots that ship a tiktoken rank file, and its name in their manifests."""


def _plain_parts(ranks: dict[bytes, int], token: bytes, max_rank: int) -> list[bytes]:
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


def plain_vocab_and_merges(ranks: dict[bytes, int]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    table = bytes_to_unicode()

    def text(token: bytes) -> str:
        return "".join(table[byte] for byte in token)

    vocab = {text(token): rank for token, rank in ranks.items()}
    merges: list[tuple[str, str]] = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) < 2:
            continue
        parts = _plain_parts(ranks, token, rank)
        if len(parts) == 2:
            merges.append((text(parts[0]), text(parts[1])))
    return vocab, merges


def bundled_rank_file(snapshot: str) -> Path:
    """The snapshot's pinned rank file, found and hash-checked as assembling the snapshot does."""
    folder = bundled_dir() / "snapshots" / snapshot
    sources = read_sources(folder)
    assert sources is not None, f"{folder} has no manifest"
    name = RANK_FILES[snapshot]
    return packaged_file(name, sources["files"][name], folder / SOURCES_FILE)
