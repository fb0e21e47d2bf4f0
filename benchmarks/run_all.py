"""Runs every benchmark in sequence and prints one summary table of figures against targets.

Each benchmark runs as its own subprocess (its output streams through) and
writes its figures as JSON to a temp folder; the table is built from those.
``--quick`` shrinks every size for a smoke test (figures then mean nothing);
``--skip grid`` (or any names, comma-separated) leaves benchmarks out.

Run:  python benchmarks/run_all.py [--quick] [--skip grid,scale] [--no-wait]
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from _common import BENCH_DIR, PYTHON, empty_dir

BENCHMARKS: dict[str, tuple[list[str], list[str]]] = {
    # name: (full-size arguments, --quick arguments)
    "overhead": ([], ["--reps", "1"]),
    "isolation": ([], ["--reps", "1"]),
    "collection": ([], ["--reps", "2"]),
    "scale": ([], ["--entries", "12"]),
    "grid": ([], ["--envs", "tflatest"]),
    "bisect": ([], ["--max", "16"]),
    "incremental": ([], ["--releases", "5.11.0"]),
    "suite": ([], []),
}
SCRIPTS = {"overhead": "overhead.py", "isolation": "isolation.py", "collection": "collection.py", "scale": "scale.py",
           "grid": "grid_build.py", "bisect": "bisect_builds.py", "incremental": "grid_incremental.py",
           "suite": "suite_speed.py"}  # fmt: skip


def rows(name: str, data: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """(figure, measured, target, met) lines of one benchmark's JSON."""
    if name == "overhead":
        return [
            ("plugin / baseline loop", f"{data['ratio']:.2f}x ({data['plugin_median_s']:.2f}s / "
             f"{data['baseline_median_s']:.2f}s)", "<= 1.2x", data["met"]),
            ("  same, plugin autoload off", f"{data['ratio_isolated']:.2f}x ({data['isolated_median_s']:.2f}s)",
             "<= 1.2x", data["ratio_isolated"] <= 1.2),
            ("tokenizer.json parses vs loop", "same or fewer" if data["parses_met"] else "more", "<= loop",
             data["parses_met"]),
            ("ground truth per case", "1" if data["ground_truth_once"] else "not 1", "== 1",
             data["ground_truth_once"]),
        ]  # fmt: skip
    if name == "isolation":
        return [
            ("child-process / in-process judging", f"{data['ratio']:.2f}x ({data['child_process_median_s']:.2f}s / "
             f"{data['in_process_median_s']:.2f}s)", "<= 1.15x", data["met"]),
        ]  # fmt: skip
    if name == "collection":
        return [
            (f"collect {data['entries']} entries - empty run", f"{data['difference_s']:+.2f}s", "< 1 s", data["met"]),
            ("heavy imports during collection", ", ".join(data["heavy_imports"]) or "none",
             "no transformers/tokenizers", data["imports_met"]),
        ]  # fmt: skip
    if name == "scale":
        n0, n2 = data["runs"]
        return [
            (f"throughput -n 2 / -n 0 ({data['entries']} cases)",
             f"{data['ratio']:.2f}x ({n2['cases_per_s']:.2f} / {n0['cases_per_s']:.2f} cases/s)", ">= 1.7x",
             data["met"]),
            ("peak RSS per worker", f"{data['peak_rss_gib']:.2f} GiB", "< 2 GiB", data["memory_met"]),
        ]  # fmt: skip
    if name == "grid":
        cold, warm = data["runs"]["cold"], data["runs"]["warm"]
        return [
            (f"grid build, {len(data['envs'])} envs: warm build / test",
             f"{data['ratio']:.2f} (build cold {cold['build']:.1f}s, warm {warm['build']:.1f}s; "
             f"test {warm['test']:.1f}s)", "<= 1.0", data["met"]),
        ]  # fmt: skip
    if name == "incremental":
        runs = data["runs"]
        return [
            (f"grid rerun / cold ({data['releases']})",
             f"{data['ratio']:.3f} ({runs['rerun']['seconds']:.1f}s / {runs['cold']['seconds']:.1f}s)", "<= 0.10",
             data["met"]),
        ]  # fmt: skip
    if name == "bisect":
        worst = max(data["rows"], key=lambda r: r["worst"])
        return [
            (f"bisect builds, n={data['rows'][0]['n']}..{data['rows'][-1]['n']}",
             f"worst {worst['worst']} at n={worst['n']}, least slack {data['slack']}", "<= ceil(log2 n)+2",
             data["met"] and data["found_right"]),
        ]  # fmt: skip
    if name == "suite":
        return [
            (f"default test suite: {data['baseline_commit'][:7]} / now",
             f"{data['ratio']:.2f}x ({data['baseline_median_s']:.0f}s / {data['current_median_s']:.0f}s)",
             ">= 2x", data["met"]),
        ]  # fmt: skip
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip", default="")
    parser.add_argument("--no-wait", action="store_true")
    args = parser.parse_args(argv)
    skipped = {s.strip() for s in args.skip.split(",") if s.strip()}
    out = empty_dir("results")
    table: list[tuple[str, str, str, str]] = []
    for name, (full, quick) in BENCHMARKS.items():
        if name in skipped:
            continue
        target = out / f"{name}.json"
        command = [
            PYTHON,
            str(BENCH_DIR / SCRIPTS[name]),
            *(quick if args.quick else full),
            "--json",
            str(target),
        ]
        if args.no_wait and name != "bisect":
            command.append("--no-wait")
        print(f"\n$ {' '.join(command[1:])}", flush=True)
        code = subprocess.run(command, check=False).returncode
        if code != 0 or not target.is_file():
            table.append((name, f"did not finish (exit {code})", "", "ERROR"))
            continue
        for figure, measured, goal, met in rows(name, json.loads(target.read_text())):
            table.append((figure, measured, goal, "met" if met else "MISSED"))
    print(
        f"\n== summary ({datetime.date.today().isoformat()}{', QUICK: figures mean nothing' if args.quick else ''}) =="
    )
    widths = [max(len(row[i]) for row in table) for i in range(4)] if table else [0] * 4
    for row in [("figure", "measured", "target", "result"), *table]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print(f"(raw figures: {Path(out)})")
    return 0 if all(row[3] == "met" for row in table) else 1


if __name__ == "__main__":
    sys.exit(main())
