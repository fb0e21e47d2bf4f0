"""The judge's cost per cell, now (repairs, hub-id loading, graded findings) vs. a baseline commit, one run.

Issue "Judge what the client gets" asks the judge's cost per cell with repairs and hub-id loading to stay
within 1.1x of c3394de's. Each side is ``pytest --tokcompat`` on the bundled matrix (16 cases), from an
empty folder, in a venv of its own made by uv with the same third-party pins (``suite_speed``'s helpers):

* baseline: a ``git worktree`` of the baseline commit (default c3394de);
* current: this checkout.

Runs alternate (baseline, current, ...); each run's snapshot cache is warm (assembled once per side
before measuring) and the verdict cache is off, so every cell is judged. The figure is the ratio of the
median CPU time of the process trees per cell (current / baseline), with the wall times beside it. The
verdicts of both sides are printed per case: the current judge gives other verdicts on purpose (that
is the issue), so the cost is compared cell for cell, not the results.

Run:  python benchmarks/judge_cost.py [--reps 3] [--baseline c3394de] [--json OUT] [--no-wait] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from _common import median, run_timed, tail, verdict, wait_until_quiet, write_json
from suite_speed import baseline_and_current, cpu_seconds_of_children, suite_env

BASELINE = "c3394de"
TARGET = 1.1
COMMAND = ["-m", "pytest", "--tokcompat", "-p", "no:randomly", "-p", "no:cacheprovider", "-q"]


def _verdicts(report: Path) -> dict[str, str]:
    document = json.loads(report.read_text(encoding="utf-8"))
    return {r["id"]: str(r.get("verdict") or r.get("state")) for r in document["cases"]}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with baseline_and_current("judge-cost", args.baseline, args.keep) as sides:
        work, commit, pythons = sides.work, sides.commit, sides.pythons
        envs = {label: {**suite_env(work, label), "TOKCOMPAT_VERDICT_CACHE": "off"} for label in pythons}
        for label, python in pythons.items():  # warm each side's snapshot cache, untimed
            folder = work / f"warm-{label}"
            folder.mkdir()
            run_timed([str(python), *COMMAND], cwd=folder, env=envs[label])
        cpu: dict[str, list[float]] = {label: [] for label in pythons}
        wall: dict[str, list[float]] = {label: [] for label in pythons}
        verdicts: dict[str, dict[str, str]] = {}
        for rep in range(args.reps):
            for label in ("baseline", "current"):
                if not args.no_wait:
                    wait_until_quiet()
                folder = work / f"run-{label}-{rep}"
                folder.mkdir()
                before = cpu_seconds_of_children()
                timed = run_timed(
                    [str(pythons[label]), *COMMAND, "--tokcompat-report", "report.json"],
                    cwd=folder,
                    env=envs[label],
                )
                cpu[label].append(cpu_seconds_of_children() - before)
                wall[label].append(timed.seconds)
                print(
                    f"rep {rep + 1}/{args.reps} {label}: {timed.seconds:.1f} s wall, {cpu[label][-1]:.1f} s CPU, "
                    f"exit {timed.returncode}",
                    flush=True,
                )
                if (folder / "report.json").is_file():
                    verdicts[label] = _verdicts(folder / "report.json")
                else:
                    print(tail(timed.stdout + timed.stderr, 30))
        cells = max(len(verdicts.get("current", {})), 1)
        ratio = median(cpu["current"]) / median(cpu["baseline"])
        return {
            "baseline_commit": commit,
            "cells": cells,
            "baseline_cpu_s": cpu["baseline"],
            "current_cpu_s": cpu["current"],
            "baseline_wall_s": wall["baseline"],
            "current_wall_s": wall["current"],
            "baseline_cpu_per_cell_s": median(cpu["baseline"]) / cells,
            "current_cpu_per_cell_s": median(cpu["current"]) / cells,
            "wall_ratio": median(wall["current"]) / median(wall["baseline"]),
            "ratio": ratio,
            "target": TARGET,
            "verdicts": verdicts,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--json", default=None, help="write the figures to this file")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for a quiet machine")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (worktree, venvs)")
    args = parser.parse_args()
    os.environ.pop("VIRTUAL_ENV", None)
    found = measure(args)
    print()
    for case in sorted(
        set(found["verdicts"].get("baseline", {})) | set(found["verdicts"].get("current", {}))
    ):
        before = found["verdicts"].get("baseline", {}).get(case, "-")
        now = found["verdicts"].get("current", {}).get(case, "-")
        print(f"  {case:<32} {before:<12} -> {now}")
    print(
        f"\nCPU per cell: baseline {found['baseline_cpu_per_cell_s']:.2f} s, current "
        f"{found['current_cpu_per_cell_s']:.2f} s ({found['cells']} cells); wall ratio {found['wall_ratio']:.2f}x"
    )
    print(
        f"judge cost per cell, current / baseline: {found['ratio']:.2f}x (target <= {TARGET}x): "
        f"{verdict(found['ratio'] <= TARGET)}"
    )
    write_json(args.json, found)


if __name__ == "__main__":
    main()
