"""Collection cost: ``pytest --tokcompat --collect-only`` on a 500-entry matrix vs an empty run.

Generates a matrix of 500 entries (the bundled ones round-robin, same snapshot
folders, unique ids) in a temp folder, then times, in fresh subprocesses from an
empty folder, interleaved over several repetitions:

* empty:     ``pytest -q --collect-only``
* tokcompat: ``pytest --tokcompat --tokcompat-matrix <500-entry matrix> --collect-only -q``

and prints the medians and their difference against the target (< 1 s more than
empty). One more, untimed run with ``-p _importprobe`` checks that neither
transformers nor tokenizers (nor tiktoken, torch, huggingface_hub) is imported by
the end of collection; if one is, ``python -X importtime`` names the chain that
pulled it in.

Run:  python benchmarks/collection.py [--entries 500] [--reps 7] [--json OUT] [--no-wait]
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from _common import (
    PYTHON,
    bench_env,
    empty_dir,
    generate_matrix,
    median,
    run_timed,
    tail,
    verdict,
    wait_until_quiet,
    write_json,
)

TARGET_S = 1.0
FORBIDDEN = ("transformers", "tokenizers")


def import_chain(stderr: str, module: str) -> list[str]:
    """From ``-X importtime`` output: the chain of importers of ``module``, outermost first."""
    rows = []
    for line in stderr.splitlines():
        found = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if found:
            rows.append((len(found.group(2)), found.group(3), int(found.group(1))))
    for index, (depth, name, _) in enumerate(rows):
        if name == module:
            chain, level = [f"{name} ({rows[index][2] / 1e6:.2f}s cumulative)"], depth
            for later_depth, later_name, _ in rows[index + 1 :]:
                if later_depth < level:
                    chain.append(later_name)
                    level = later_depth
            return list(reversed(chain))
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=500)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--json", default=None)
    parser.add_argument("--no-wait", action="store_true")
    args = parser.parse_args(argv)

    print(f"== collection ({args.entries}-entry matrix) ==")
    matrix = generate_matrix(empty_dir("matrix500"), args.entries)
    cwd = empty_dir("collect")
    commands = {
        "empty": [PYTHON, "-m", "pytest", "-q", "--collect-only"],
        "tokcompat": [
            PYTHON,
            "-m",
            "pytest",
            "--tokcompat",
            "--tokcompat-matrix",
            str(matrix),
            "--collect-only",
            "-q",
        ],
    }
    load = 0.0 if args.no_wait else wait_until_quiet()
    for command in commands.values():
        run_timed(command, cwd)  # unmeasured: .pyc files, page cache
    times: dict[str, list[float]] = {"empty": [], "tokcompat": []}
    collected = ""
    for rep in range(args.reps):
        for name in ("empty", "tokcompat") if rep % 2 == 0 else ("tokcompat", "empty"):
            timed = run_timed(commands[name], cwd)
            if name == "tokcompat":
                if timed.returncode != 0:
                    raise SystemExit(
                        f"collection failed (exit {timed.returncode}):\n{tail(timed.stdout + timed.stderr)}"
                    )
                collected = next((line for line in timed.stdout.splitlines() if "collected" in line), "")
            times[name].append(timed.seconds)
    empty, tok = median(times["empty"]), median(times["tokcompat"])
    difference = tok - empty
    print(f"empty run        median {empty:.3f}s  ({', '.join(f'{t:.2f}' for t in times['empty'])})")
    print(
        f"--tokcompat      median {tok:.3f}s  ({', '.join(f'{t:.2f}' for t in times['tokcompat'])})  [{collected.strip()}]"
    )
    print(f"difference {difference:+.3f}s  target < {TARGET_S:.1f}s: {verdict(difference < TARGET_S)}")

    probe = cwd / "imports.json"
    done = run_timed(
        [*commands["tokcompat"], "-p", "_importprobe"], cwd, bench_env(TOKCOMPAT_BENCH_IMPORTS=str(probe))
    )
    heavy = json.loads(probe.read_text()) if probe.is_file() else ["<probe did not run>"]
    bad = [name for name in heavy if name in FORBIDDEN]
    print(f"heavy libraries imported by the end of collection: {heavy or 'none'}; "
          f"transformers/tokenizers not imported: {verdict(not bad and done.returncode == 0)}")  # fmt: skip
    for name in bad:
        traced = run_timed([PYTHON, "-X", "importtime", *commands["tokcompat"][1:]], cwd)
        print(f"  {name} was imported via: {' <- '.join(reversed(import_chain(traced.stderr, name)))}")
    write_json(
        args.json,
        {
            "name": "collection",
            "entries": args.entries,
            "load_before": load,
            "empty_s": times["empty"],
            "tokcompat_s": times["tokcompat"],
            "difference_s": difference,
            "target_s": TARGET_S,
            "met": difference < TARGET_S,
            "heavy_imports": heavy,
            "imports_met": not bad,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
