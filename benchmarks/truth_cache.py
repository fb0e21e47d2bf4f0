"""The truth cache: ``pytest --tokcompat`` on the bundled matrix with the cache cold and warm vs off, one run.

Issue "The cold grid at its floor" measured the reference parse, the probes and the ground truth at
29-36% of a release's run, redone in every environment of the grid. With the truth cache, a second
run (another release with the same ``tokenizers``, a rerun) reads them instead. Each side is
``pytest --tokcompat`` on the bundled matrix, from an empty folder, offline (HF_HUB_OFFLINE=1), in this
venv, the verdict cache off and the snapshot cache warm (assembled before measuring):

* off: ``TOKCOMPAT_TRUTH_CACHE=off``, every truth computed (today's run);
* cold: an empty truth cache, filled by the run (what it costs to write the entries);
* warm: the cache the cold run of the same rep filled (what every later environment pays).

The figures are the median CPU time of the process trees (``RUSAGE_CHILDREN``), cold / off and
warm / off, wall time beside them; every case's record of the three sides must be the same (timings
left out), and the script says so or names the first that differs.

Run:  python benchmarks/truth_cache.py [--reps 2] [--json OUT] [--no-wait]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from _common import (
    PLUGIN_FLAGS,
    PYTHON,
    bench_env,
    empty_dir,
    median,
    run_timed,
    tail,
    wait_until_quiet,
    warm_snapshot_cache,
    write_json,
)
from suite_speed import cpu_seconds_of_children

SIDES = ("off", "cold", "warm")
UNSTABLE = {"seconds", "duration"}
"""Record keys that differ between two runs of the same judgement."""


def stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in UNSTABLE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def records(report: Path) -> dict[str, Any]:
    document = json.loads(report.read_text(encoding="utf-8"))
    return {str(r["id"]): stable(r) for r in document["cases"]}


def one_run(side: str, work: Path, rep: int) -> tuple[float, float, dict[str, Any]]:
    """CPU and wall seconds of one side's run, and its records by case."""
    truth = "off" if side == "off" else str(work / f"truth-{rep}")
    folder = work / f"run-{side}-{rep}"
    folder.mkdir()
    env = bench_env(TOKCOMPAT_TRUTH_CACHE=truth, TOKCOMPAT_VERDICT_CACHE="off")
    before = cpu_seconds_of_children()
    timed = run_timed(
        [PYTHON, "-m", "pytest", *PLUGIN_FLAGS, "--tokcompat-report", "report.json"], folder, env
    )
    cpu = cpu_seconds_of_children() - before
    print(
        f"rep {rep + 1} {side}: {timed.seconds:.1f} s wall, {cpu:.1f} s CPU, exit {timed.returncode}",
        flush=True,
    )
    if not (folder / "report.json").is_file():
        print(tail(timed.stdout + timed.stderr, 30))
        return cpu, timed.seconds, {}
    return cpu, timed.seconds, records(folder / "report.json")


def first_difference(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    for case in sorted(set(a) | set(b)):
        if a.get(case) != b.get(case):
            return case
    return None


def measure(reps: int, wait: bool) -> dict[str, Any]:
    warm_snapshot_cache()
    work = empty_dir("truth-cache")
    cpu: dict[str, list[float]] = {side: [] for side in SIDES}
    wall: dict[str, list[float]] = {side: [] for side in SIDES}
    differences: list[str] = []
    cells = 0
    for rep in range(reps):
        found: dict[str, dict[str, Any]] = {}
        order = SIDES if rep % 2 == 0 else ("cold", "warm", "off")  # warm always after its cold
        for side in order:
            if wait:
                wait_until_quiet()
            seconds, elapsed, found[side] = one_run(side, work, rep)
            cpu[side].append(seconds)
            wall[side].append(elapsed)
        cells = max(cells, len(found["off"]))
        for side in ("cold", "warm"):
            case = first_difference(found["off"], found[side])
            if case is not None or not found[side]:
                differences.append(
                    f"rep {rep + 1}: {side} differs from off on {case or 'every case (no report)'}"
                )
    entries = sorted(work.glob("truth-0/*/*.truth"))
    return {
        "cells": cells,
        "cpu_s": cpu,
        "wall_s": wall,
        "cold_ratio": median(cpu["cold"]) / median(cpu["off"]),
        "warm_ratio": median(cpu["warm"]) / median(cpu["off"]),
        "warm_wall_ratio": median(wall["warm"]) / median(wall["off"]),
        "entries": len(entries),
        "entry_bytes": sum(path.stat().st_size for path in entries),
        "differences": differences,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--json", default=None, help="write the figures to this file")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for a quiet machine")
    args = parser.parse_args()
    found = measure(args.reps, not args.no_wait)
    print(
        f"\n{found['cells']} cells; {found['entries']} truth entries, {found['entry_bytes'] / 1e6:.1f} MB\n"
        f"CPU, cold cache / off: {found['cold_ratio']:.2f}x (median {median(found['cpu_s']['cold']):.1f} s / "
        f"{median(found['cpu_s']['off']):.1f} s)\n"
        f"CPU, warm cache / off: {found['warm_ratio']:.2f}x (median {median(found['cpu_s']['warm']):.1f} s); "
        f"wall {found['warm_wall_ratio']:.2f}x"
    )
    print(
        "records: "
        + ("the same on every side" if not found["differences"] else "; ".join(found["differences"]))
    )
    write_json(args.json, found)


if __name__ == "__main__":
    main()
