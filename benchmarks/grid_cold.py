"""The cold grid against its floor, in the same run; the same grid at a baseline commit beside it.

(a) ``tokcompat grid`` of the bundled matrix over a release set from empty output and
    cache folders (the uv package cache stays warm: packages are not downloaded again,
    every environment is built anew);
(b) the floor, in the very environments (a) built: per release one process that loads
    each tokenizer with the remedy the grid found and encodes the same probes
    (``baseline_loop.py``), its truth part (reference parse, probes, ground truth)
    counted once per tokenizers version, plus (a)'s environment builds;
(c) (a) at a baseline commit (``git archive`` into a temp folder, its own venv);
(d) a rerun of the unchanged grid; (e) a 200-entry against a 20-entry matrix on one
    release: cost per cell.
Costs are CPU seconds of the processes each step starts (and their children), wall beside.
Every cell's verdict is compared with the baseline's and the result is printed.

Run:  python benchmarks/grid_cold.py [--releases 4.57.6,5.0.0,...] [--quick] [--baseline f8e1ebe]
      [--no-baseline] [--no-scale] [--no-wait] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import (
    BENCH_DIR,
    BUNDLED_MATRIX,
    REPO,
    bench_env,
    generate_matrix,
    tail,
    wait_until_quiet,
    write_json,
)

DEFAULT_RELEASES = "4.57.6,5.0.0,5.5.4,5.10.4,5.15.1,5.16.1,5.20.2,5.24.0"
"""4.57.6 and seven minor lines of 5.x: both tokenizers versions of the 26 (0.22.2 up to 5.15, 0.23.3 from
5.16 on; the floor prints the ones it measured)."""
QUICK_RELEASES = "5.24.0"
BASELINE = "f8e1ebe"
TARGET, SCALE_TARGET, SHARD_TARGET = 1.5, 1.2, 1.15

FLOOR = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import baseline_loop
from pytest_tokcompat.judge import parity
spent = {"truth": 0.0}
original = parity.ground_truth
def timed(*args, **kwargs):
    started = time.process_time()
    try:
        return original(*args, **kwargs)
    finally:
        spent["truth"] += time.process_time() - started
parity.ground_truth = timed
import tokenizers
started = time.process_time()
results = baseline_loop.run_baseline()
print(json.dumps({"cpu": time.process_time() - started, "truth": spent["truth"],
                  "tokenizers": tokenizers.__version__, "cases": len(results)}))
"""


@dataclass
class Measured:
    wall: float
    cpu: float
    code: int
    out: str


def measure(command: list[str], env: dict[str, str], cwd: Path) -> Measured:
    """Wall and CPU seconds (user + system, children included) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Measured(wall, cpu, done.returncode, done.stdout + done.stderr)


def grid_env(cache: Path) -> dict[str, str]:
    env = bench_env(TOKCOMPAT_GRID_CACHE=str(cache), TOKCOMPAT_CACHE=str(cache / "snapshots"))
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    env.pop("TOKCOMPAT_TRUTH_CACHE", None)
    return env


def run_grid(
    tokcompat: Path, releases: str, output: Path, cache: Path, matrix: Path = BUNDLED_MATRIX
) -> Measured:
    command = [
        str(tokcompat),
        "grid",
        "--matrix",
        str(matrix),
        "--releases",
        releases,
        "--output",
        str(output),
    ]
    done = measure(command, grid_env(cache), output.parent)
    if done.code not in (0, 1, 3):
        raise SystemExit(f"tokcompat grid exited {done.code}:\n{tail(done.out, 30)}")
    return done


def verdicts(output: Path) -> dict[tuple[str, str], tuple[Any, ...]]:
    """(release, record id) -> what the cell says: status, verdict, state."""
    found: dict[tuple[str, str], tuple[Any, ...]] = {}
    for path in sorted((output / "reports").glob("transformers-*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        for record in document["cases"]:
            found[(document["transformers_version"], record["id"])] = (
                record.get("status"),
                record.get("verdict"),
                record.get("state"),
            )
    return found


def floor(output: Path, cache: Path) -> dict[str, Any]:
    """The floor loop in each environment the grid built; the truth counted once per tokenizers version."""
    per_release: dict[str, Any] = {}
    env = grid_env(cache)
    for python in sorted((output / ".work" / ".tox").glob("tf-*/bin/python")):
        done = subprocess.run(
            [str(python), "-c", FLOOR, str(BENCH_DIR)], env=env, capture_output=True, text=True, check=False
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        if not lines:
            raise SystemExit(f"the floor loop failed in {python}:\n{tail(done.stdout + done.stderr, 30)}")
        per_release[python.parent.parent.name] = json.loads(lines[-1])
    truth_once: dict[str, float] = {}
    for result in per_release.values():
        version = result["tokenizers"]
        truth_once[version] = min(truth_once.get(version, result["truth"]), result["truth"])
    cpu = sum(r["cpu"] - r["truth"] for r in per_release.values()) + sum(truth_once.values())
    return {"per_release": per_release, "tokenizers": sorted(truth_once), "cpu": cpu}


def builds(output: Path, work: Path) -> Measured:
    """The environment builds alone: the grid's own tox configuration, ``--notest``, into a fresh folder."""
    envs = sorted(path.name for path in (output / ".work" / ".tox").glob("tf-*"))
    command = [
        sys.executable, "-m", "tox", "run-parallel", "-p", str(os.cpu_count() or 1), "--parallel-no-spinner",
        "--notest", "-c", str(output / ".work" / "tox.ini"), "--root", str(output / ".work"),
        "--workdir", str(work / "floor-tox"), "-e", ",".join(envs),
    ]  # fmt: skip
    env = grid_env(work / "floor-cache")
    return measure(command, env, work)


def baseline_tokcompat(commit: str, folder: Path) -> Path:
    """``tokcompat`` of ``commit``, installed from a ``git archive`` of it into a venv of its own."""
    source = folder / "src"
    source.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    from pytest_tokcompat.ci.install import uv_binary

    uv = [uv_binary()]
    venv = folder / "venv"
    subprocess.run([*uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    env = dict(os.environ, VIRTUAL_ENV=str(venv))
    subprocess.run([*uv, "pip", "install", "-q", f"{source}[grid]"], env=env, check=True)
    return venv / "bin" / "tokcompat"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", default=None, help=f"the release set (default {DEFAULT_RELEASES})")
    parser.add_argument(
        "--quick", action="store_true", help=f"one release ({QUICK_RELEASES}), small scale step"
    )
    parser.add_argument(
        "--baseline", default=BASELINE, help="the commit measured beside (default %(default)s)"
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip (c) and the verdict comparison")
    parser.add_argument("--no-scale", action="store_true", help="skip (e)")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for a quiet machine")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    releases = args.releases or (QUICK_RELEASES if args.quick else DEFAULT_RELEASES)
    if not args.no_wait:
        wait_until_quiet()
    tokcompat = Path(sys.executable).with_name("tokcompat")
    work = Path(tempfile.mkdtemp(prefix="tokcompat-bench-gridcold-"))
    print(f"releases: {releases}; {os.cpu_count()} cores; fresh output and cache folders under {work}; "
          "the uv package cache stays warm (no download, every environment built anew)")  # fmt: skip
    result: dict[str, Any] = {"releases": releases}

    cold = run_grid(tokcompat, releases, work / "cold", work / "cache")
    result["cold"] = cold.__dict__ | {"out": tail(cold.out, 5)}
    floor_run = floor(work / "cold", work / "cache")
    built = builds(work / "cold", work)
    floor_cpu = floor_run["cpu"] + built.cpu
    ratio = cold.cpu / floor_cpu if floor_cpu else float("inf")
    result["floor"] = floor_run | {"builds": built.cpu, "total": floor_cpu, "ratio": ratio}
    print(f"(a) cold grid: {cold.wall:.0f} s wall, {cold.cpu:.0f} CPU-s")
    print(f"(b) floor: {floor_cpu:.0f} CPU-s (loops {floor_run['cpu']:.0f}, builds {built.cpu:.0f}; tokenizers "
          f"{', '.join(floor_run['tokenizers'])}); grid/floor {ratio:.2f}x (target <= {TARGET}x: "
          f"{'MET' if ratio <= TARGET else 'MISSED'})")  # fmt: skip

    if not args.no_baseline:
        base = baseline_tokcompat(args.baseline, work / "baseline")
        then = run_grid(base, releases, work / "base-cold", work / "base-cache")
        result["baseline"] = then.__dict__ | {"out": tail(then.out, 5), "ratio": then.cpu / floor_cpu}
        print(f"(c) the same cold grid at {args.baseline}: {then.wall:.0f} s wall, {then.cpu:.0f} CPU-s "
              f"({then.cpu / floor_cpu:.2f}x the floor)")  # fmt: skip
        now, before = verdicts(work / "cold"), verdicts(work / "base-cold")
        differ = sorted(key for key in now.keys() | before.keys() if now.get(key) != before.get(key))
        result["same_records"] = not differ
        print(
            f"    every cell's record equals {args.baseline}'s: {'yes' if not differ else 'NO'} "
            f"({len(now)} cells{'; differ: ' + ', '.join(map(str, differ[:10])) if differ else ''})"
        )

    again = run_grid(tokcompat, releases, work / "cold", work / "cache")
    result["rerun"] = again.__dict__ | {"out": tail(again.out, 5)}
    print(f"(d) rerun of the unchanged grid: {again.wall:.1f} s wall, {again.cpu:.1f} CPU-s")

    if not args.no_scale:
        one = releases.split(",")[-1]
        small, large = (4, 40) if args.quick else (20, 200)
        per_cell: dict[int, float] = {}
        for count in (small, large):
            folder = work / f"matrix-{count}"
            folder.mkdir()
            matrix = generate_matrix(folder, count)
            run = run_grid(tokcompat, one, work / "cold", work / f"scale-cache-{count}", matrix)
            per_cell[count] = run.cpu / (count + 1)
            print(
                f"(e) {count}-entry matrix on {one}: {run.cpu:.0f} CPU-s, {per_cell[count]:.2f} CPU-s per cell"
            )
        scale = per_cell[large] / per_cell[small]
        result["scale"] = {"per_cell": per_cell, "ratio": scale}
        print(f"    per cell {large} vs {small}: {scale:.2f}x (target <= {SCALE_TARGET}x: "
              f"{'MET' if scale <= SCALE_TARGET else 'MISSED'})")  # fmt: skip

    from pytest_tokcompat.ci import schedule

    recorded = REPO / "tests" / "data" / "grid_costs_bundled.json"
    costs = schedule.load_costs(recorded)
    cells = [(label, cell) for label, by_cell in costs.items() for cell in by_cell]
    cost = {cell: costs[cell[0]][cell[1]] for cell in cells}
    totals = schedule.shard_costs(schedule.split(cells, 4, cost), cost)
    spread = max(totals) / min(totals)
    result["shards"] = {"costs": totals, "spread": spread}
    print(
        f"shards of --shard I/4 over the bundled grid's recorded costs: {', '.join(f'{t:.0f}' for t in totals)} "
        f"s, spread {spread:.2f}x (target <= {SHARD_TARGET}x: {'MET' if spread <= SHARD_TARGET else 'MISSED'})"
    )
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
