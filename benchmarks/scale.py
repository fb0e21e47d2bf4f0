"""Scale: a generated 200-entry matrix under ``-n 0`` and ``-n 2``: throughput and peak memory per worker.

The matrix reuses the bundled snapshots round-robin (unique ids, same snapshot
folders, golden ids copied per id). Why not toy checkpoints (tests/helpers/toys.py)? A toy
loads in milliseconds, so a 200-toy run measures xdist's fixed cost (two workers
each importing transformers) rather than per-case throughput, and its memory says
nothing about the 2 GiB limit; the bundled snapshots are the real workload
(7.8 MB tokenizer.json files, tiktoken vocabularies, remote code) at a cost of about
a second a case.

Each run is a fresh ``pytest --tokcompat -p no:randomly -p no:cacheprovider -q``
subprocess from an empty folder with a warm snapshot cache and ``-p _rssprobe``,
which writes every process's ru_maxrss at session finish. Prints cases/s of
each run (wall clock, start to exit), the ratio (target >= 1.7x) and the peak
RSS of every worker (target < 2 GiB).

Run:  python benchmarks/scale.py [--entries 200] [--json OUT] [--no-wait]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from _common import (
    PLUGIN_FLAGS,
    PYTHON,
    bench_env,
    empty_dir,
    generate_matrix,
    run_timed,
    tail,
    verdict,
    wait_until_quiet,
    warm_snapshot_cache,
    write_json,
)

TARGET_RATIO = 1.7
LIMIT_KIB = 2 * 1024 * 1024


def run(matrix: Path, workers: int) -> dict[str, Any]:
    cwd = empty_dir(f"scale-n{workers}")
    rss_dir = cwd / "rss"
    rss_dir.mkdir()
    command = [PYTHON, "-m", "pytest", *PLUGIN_FLAGS, "--tokcompat-matrix", str(matrix), "-n", str(workers),
               "-p", "_rssprobe"]  # fmt: skip
    timed = run_timed(command, cwd, bench_env(TOKCOMPAT_BENCH_RSS=str(rss_dir)))
    if timed.returncode != 0:
        raise SystemExit(
            f"-n {workers} failed (exit {timed.returncode}):\n{tail(timed.stdout + timed.stderr)}"
        )
    processes = [json.loads(p.read_text()) for p in sorted(rss_dir.glob("*.json"))]
    return {"workers": workers, "seconds": timed.seconds, "processes": processes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--json", default=None)
    parser.add_argument("--no-wait", action="store_true")
    args = parser.parse_args(argv)

    print(f"== scale ({args.entries}-entry matrix, bundled snapshots round-robin; {os.cpu_count()} cores) ==")
    warm_snapshot_cache()
    matrix = generate_matrix(empty_dir("matrix-scale"), args.entries)
    results = []
    for workers in (0, 2):
        load = 0.0 if args.no_wait else wait_until_quiet()
        result = run(matrix, workers)
        result["load_before"] = load
        result["cases_per_s"] = args.entries / result["seconds"]
        results.append(result)
        print(
            f"-n {workers}: {args.entries} cases in {result['seconds']:.1f}s = {result['cases_per_s']:.2f} cases/s"
        )
        for process in result["processes"]:
            gib = process["max_rss_kib"] / 1024 / 1024
            print(f"    {process['worker']:<5} pid {process['pid']:<7} peak RSS {gib:.2f} GiB "
                  f"({process['tests']} test reports)")  # fmt: skip
    ratio = results[1]["cases_per_s"] / results[0]["cases_per_s"]
    peak = max(p["max_rss_kib"] for r in results for p in r["processes"])
    print(
        f"throughput -n 2 / -n 0 = {ratio:.2f}x  target >= {TARGET_RATIO}x: {verdict(ratio >= TARGET_RATIO)}"
    )
    print(
        f"largest peak RSS of any process {peak / 1024 / 1024:.2f} GiB  target < 2 GiB: {verdict(peak < LIMIT_KIB)}"
    )
    write_json(
        args.json,
        {
            "name": "scale",
            "entries": args.entries,
            "runs": results,
            "ratio": ratio,
            "target_ratio": TARGET_RATIO,
            "met": ratio >= TARGET_RATIO,
            "peak_rss_gib": peak / 1024 / 1024,
            "memory_met": peak < LIMIT_KIB,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
