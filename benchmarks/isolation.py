"""What process isolation costs: ``pytest --tokcompat`` on the bundled matrix, attempts in child processes
(the default) vs attempts in the pytest process (``TOKCOMPAT_ISOLATION=inprocess``, the code path before
isolation, kept for benchmarks and debuggers).

Both sides run the same command in fresh subprocesses, from an empty folder (so the bundled matrix is the
one collected), with a warm snapshot cache, interleaved A-B-B-A; prints both medians and the ratio against
the target (<= 1.15x). The child-process side pays for starting the fork server (one import of
transformers, as the in-process side pays in the pytest process) and for one fork per attempt.

Run:  python benchmarks/isolation.py [--reps 5] [--json OUT] [--no-wait]
"""

from __future__ import annotations

import argparse
import sys

from _common import (
    PLUGIN_FLAGS,
    PYTHON,
    bench_env,
    empty_dir,
    median,
    run_timed,
    tail,
    verdict,
    wait_until_quiet,
    warm_snapshot_cache,
    write_json,
)

TARGET = 1.15


def _commands() -> dict[str, tuple[list[str], dict[str, str]]]:
    command = [PYTHON, "-m", "pytest", *PLUGIN_FLAGS]
    return {
        "in-process": (command, bench_env(TOKCOMPAT_ISOLATION="inprocess")),
        "child-process": (command, bench_env(TOKCOMPAT_ISOLATION="process")),
    }


def measure(reps: int) -> dict[str, list[float]]:
    cwd = empty_dir("isolation")
    commands = _commands()
    times: dict[str, list[float]] = {name: [] for name in commands}
    for command, env in commands.values():  # one unmeasured run each: page cache, .pyc files
        run_timed(command, cwd, env)
    for rep in range(reps):
        order = list(commands) if rep % 2 == 0 else list(reversed(commands))
        for name in order:
            command, env = commands[name]
            timed = run_timed(command, cwd, env)
            if timed.returncode != 0:
                raise SystemExit(
                    f"{name} failed (exit {timed.returncode}):\n{tail(timed.stdout + timed.stderr)}"
                )
            times[name].append(timed.seconds)
        print(
            "  rep " + str(rep + 1) + ": " + "  ".join(f"{n} {times[n][-1]:.2f}s" for n in commands),
            flush=True,
        )
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", default=None, help="write the figures to this JSON file")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for a quiet machine")
    args = parser.parse_args(argv)

    print("== isolation cost (bundled matrix, pytest --tokcompat -p no:randomly) ==")
    warm_snapshot_cache()
    load = 0.0 if args.no_wait else wait_until_quiet()
    times = measure(args.reps)
    base, isolated = median(times["in-process"]), median(times["child-process"])
    ratio = isolated / base
    for name in times:
        print(
            f"{name:<14} median {median(times[name]):6.2f}s  ({', '.join(f'{t:.2f}' for t in times[name])})"
        )
    print(f"ratio child-process/in-process {ratio:.3f}x  target <= {TARGET}x: {verdict(ratio <= TARGET)}")
    write_json(
        args.json,
        {
            "name": "isolation",
            "load_before": load,
            "times_s": times,
            "in_process_median_s": base,
            "child_process_median_s": isolated,
            "ratio": ratio,
            "target": TARGET,
            "met": ratio <= TARGET,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
