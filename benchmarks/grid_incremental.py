"""The incremental grid: a rerun of an unchanged matrix over unchanged releases vs the cold run.

A project holding only a user matrix (two snapshot entries copied from the bundled
ones) runs ``tokcompat grid --releases R`` three times, in one temp folder:

* cold: no tokcompat state at all (no environments, no cell cache, no wheel); uv's
  own package cache is used as it is (``--cold-uv`` gives uv an empty cache too);
* rerun: the same command again: nothing changed, so every cell is reused and no
  environment is built or run;
* fresh runner: the same again into a new output folder (a CI runner that restored
  only the cell cache): the environments are built, no cell is judged.

Target: rerun / cold <= 0.10.

Run:  python benchmarks/grid_incremental.py [--releases 5.10.4,5.11.0] [--cold-uv] [--json OUT] [--no-wait]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from _common import REPO, bench_env, empty_dir, run_timed, tail, verdict, wait_until_quiet, write_json

TARGET = 0.10
BUNDLED = REPO / "matrix"
ENTRIES = ("deepseek-v3.2-exp", "qwen3-0.6b")


def user_project(folder: Path) -> Path:
    matrix = folder / "matrix"
    (matrix / "golden").mkdir(parents=True)
    cases = []
    for name in ENTRIES:
        shutil.copytree(BUNDLED / "snapshots" / name, matrix / "snapshots" / name)
        golden = BUNDLED / "golden" / f"{name}.json"
        if golden.is_file():
            shutil.copy(golden, matrix / "golden")
    source = (BUNDLED / "models.yaml").read_text(encoding="utf-8")
    for name in ENTRIES:
        block = re.search(rf"  - id: {re.escape(name)}\n(?:    .*\n|      .*\n)*", source)
        if block is None:
            raise SystemExit(f"the bundled matrix has no case {name}")
        cases.append(block.group(0))
    (matrix / "models.yaml").write_text("version: 1\ncases:\n" + "".join(cases), encoding="utf-8")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", default="5.10.4,5.11.0")
    parser.add_argument(
        "--cold-uv", action="store_true", help="give uv an empty package cache for the cold run"
    )
    parser.add_argument("--json", default=None)
    parser.add_argument("--no-wait", action="store_true")
    args = parser.parse_args(argv)

    work = empty_dir("incremental")
    project = user_project(work / "project")
    extra = {"TOKCOMPAT_GRID_CACHE": str(work / "cache"), "TOKCOMPAT_CACHE": str(work / "snapshots")}
    if args.cold_uv:
        extra["UV_CACHE_DIR"] = str(work / "uv-cache")
    env = bench_env(**extra)
    env.pop("PYTHONPATH", None)
    command = [str(Path(sys.executable).with_name("tokcompat")), "grid", "--releases", args.releases]
    print(f"== incremental grid ({args.releases}; {', '.join(ENTRIES)}) in {work} ==")
    runs = {}
    for label, output in (("cold", "out"), ("rerun", "out"), ("fresh runner", "out-fresh")):
        load = 0.0 if args.no_wait else wait_until_quiet()
        timed = run_timed([*command, "--output", str(project / output)], project, env)
        if timed.returncode not in (0, 1):
            raise SystemExit(
                f"{label}: tokcompat grid exited {timed.returncode}:\n{tail(timed.stdout + timed.stderr, 30)}"
            )
        cells = next((line for line in timed.stdout.splitlines() if line.startswith("cells:")), "?")
        runs[label] = {"seconds": timed.seconds, "cells": cells, "load_before": load}
        print(f"{label:>12}: {timed.seconds:7.2f}s  {cells}")
    ratio = runs["rerun"]["seconds"] / runs["cold"]["seconds"]
    fresh = runs["fresh runner"]["seconds"] / runs["cold"]["seconds"]
    print(f"rerun / cold = {ratio:.3f}  target <= {TARGET}: {verdict(ratio <= TARGET)}")
    print(f"fresh runner (environments rebuilt, cells reused) / cold = {fresh:.3f}")
    write_json(args.json, {"name": "grid_incremental", "releases": args.releases, "runs": runs, "ratio": ratio,
                           "fresh_ratio": fresh, "target": TARGET, "met": ratio <= TARGET})  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
