"""Recovering BPE merges from a tiktoken rank file: today's ``bpe_vocab_and_merges`` vs the plain run it replaced.

Per pinned rank file of the bundled snapshots (Qwen3's, 151,643 ranks; Llama 3.1's, 128,000), in one
process: the median time of the old algorithm (the baseline: tests/helpers/plain_bpe.py, the tests' oracle, BPE
on every token's bytes with every pair's rank recomputed at every step) and of the current one,
interleaved, wall and CPU time; both results must be equal. This is the bulk of assembling those snapshots on a cold cache.

Run:  python benchmarks/tiktoken_merges.py [--reps 3] [--no-wait] [--json OUT]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

from _common import REPO, wait_until_quiet, write_json

from pytest_tokcompat.sources.tiktoken_bpe import bpe_vocab_and_merges, load_ranks

sys.path.insert(0, str(REPO))  # the tests' oracle is this benchmark's baseline: one copy of it
from tests.helpers.plain_bpe import RANK_FILES, bundled_rank_file, plain_vocab_and_merges

Result = tuple[dict[str, int], list[tuple[str, str]]]


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
        ranks = load_ranks(bundled_rank_file(snapshot))
        times: dict[str, list[tuple[float, float]]] = {"baseline": [], "now": []}
        results: dict[str, Result] = {}
        for rep in range(args.reps):
            order = [("baseline", plain_vocab_and_merges), ("now", bpe_vocab_and_merges)]
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
