"""Recovering BPE merges from a tiktoken rank file: today's ``bpe_vocab_and_merges`` vs the plain run it replaced.

Per pinned rank file of the bundled snapshots (Qwen3's, 151,643 ranks; Llama 3.1's, 128,000), in one
process: the median time of the old algorithm (copied below as the baseline: BPE on every token's
bytes with every pair's rank recomputed at every step) and of the current one, interleaved, wall and
CPU time; both results must be equal. This is the bulk of assembling those snapshots on a cold cache.

Run:  python benchmarks/tiktoken_merges.py [--reps 3] [--no-wait] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from _common import BUNDLED_MATRIX, wait_until_quiet, write_json

from pytest_tokcompat.sources.snapshots import packaged_file
from pytest_tokcompat.sources.tiktoken_bpe import bpe_vocab_and_merges, bytes_to_unicode, load_ranks

RANK_FILES = {"qwen3-0.6b": "qwen.tiktoken", "llama-3.1-8b-instruct": "original_tokenizer.model"}
Result = tuple[dict[str, int], list[tuple[str, str]]]


def baseline_parts(ranks: dict[bytes, int], token: bytes, max_rank: int) -> list[bytes]:
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


def baseline(ranks: dict[bytes, int]) -> Result:
    """``bpe_vocab_and_merges`` as it was before it was sped up."""
    table = bytes_to_unicode()

    def token_str(token: bytes) -> str:
        return "".join(table[byte] for byte in token)

    vocab = {token_str(token): rank for token, rank in ranks.items()}
    if len(vocab) != len(ranks):
        raise ValueError("two tokens map to the same byte-level string")
    merges: list[tuple[str, str]] = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        if len(token) < 2:
            continue
        parts = baseline_parts(ranks, token, rank)
        if len(parts) == 2:
            merges.append((token_str(parts[0]), token_str(parts[1])))
    return vocab, merges


def rank_file(snapshot: str, name: str) -> Path:
    manifest = BUNDLED_MATRIX.parent / "snapshots" / snapshot / "tokcompat-sources.json"
    spec = json.loads(manifest.read_text(encoding="utf-8"))["files"][name]
    return packaged_file(name, spec, manifest)


def timed(action: Callable[[], Result]) -> tuple[float, float, Result]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--no-wait", action="store_true", help="measure without waiting for a quiet machine")
    parser.add_argument("--json", default=None, help="write the figures to this file")
    args = parser.parse_args()
    if not args.no_wait:
        wait_until_quiet()
    figures: dict[str, dict[str, float]] = {}
    print(f"{'rank file':<24} {'ranks':>7} {'baseline s':>11} {'now s':>7} {'ratio':>7} {'cpu ratio':>10}")
    for snapshot, name in RANK_FILES.items():
        ranks = load_ranks(rank_file(snapshot, name))
        times: dict[str, list[tuple[float, float]]] = {"baseline": [], "now": []}
        results: dict[str, Result] = {}
        for rep in range(args.reps):
            order = [("baseline", baseline), ("now", bpe_vocab_and_merges)]
            for label, function in order if rep % 2 == 0 else order[::-1]:
                wall, cpu, results[label] = timed(partial(function, ranks))
                times[label].append((wall, cpu))
        old_wall = statistics.median(w for w, _ in times["baseline"])
        new_wall = statistics.median(w for w, _ in times["now"])
        old_cpu = statistics.median(c for _, c in times["baseline"])
        new_cpu = statistics.median(c for _, c in times["now"])
        if results["baseline"] != results["now"]:
            raise SystemExit(f"{snapshot}/{name}: the two algorithms disagree; the figures mean nothing")
        figures[snapshot] = {
            "ranks": len(ranks),
            "baseline_s": old_wall,
            "now_s": new_wall,
            "ratio": old_wall / new_wall,
            "cpu_ratio": old_cpu / new_cpu,
        }
        print(
            f"{snapshot:<24} {len(ranks):>7} {old_wall:>11.2f} {new_wall:>7.2f} {old_wall / new_wall:>6.2f}x "
            f"{old_cpu / new_cpu:>9.2f}x"
        )
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
