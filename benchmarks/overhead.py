"""Plugin overhead: ``pytest --tokcompat`` on the bundled matrix vs the plain loop of baseline_loop.py.

Each side runs in a fresh subprocess (so both pay their imports), several
repetitions interleaved A-B-B-A, with a warm snapshot cache, from an empty
folder (so the bundled matrix is the one collected). Prints both medians and
the ratio against the target (<= 1.2x). Then one extra, untimed run of each
side with ``_parsecount`` injected counts how often tokenizer.json is parsed and
the ground truth computed, per case, and the report of that run breaks the
plugin's time down by ladder attempt.

Run:  python benchmarks/overhead.py [--reps 5] [--json OUT] [--no-wait]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from _common import (
    BENCH_DIR,
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

TARGET = 1.2
KINDS = ("from_file", "from_str", "from_buffer", "py_open", "ground_truth")


def _commands() -> dict[str, tuple[list[str], dict[str, str]]]:
    isolated = bench_env(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return {
        "baseline": ([PYTHON, str(BENCH_DIR / "baseline_loop.py"), "--quiet"], bench_env()),
        # the command of the target, in this venv: every installed pytest plugin autoloads
        "plugin": ([PYTHON, "-m", "pytest", *PLUGIN_FLAGS], bench_env()),
        # only pytest and this plugin, as in a grid env (which installs no other pytest plugin)
        "isolated": ([PYTHON, "-m", "pytest", "-p", "pytest_tokcompat.pytest_plugin.plugin", *PLUGIN_FLAGS], isolated),
        # pytest's own start in this venv, no tests: the share of "plugin" that is not tokcompat's
        "pytest-start": ([PYTHON, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-q",
                          "--collect-only"], bench_env()),
    }  # fmt: skip


def measure(reps: int) -> dict[str, list[float]]:
    cwd = empty_dir("overhead")
    commands = _commands()
    times: dict[str, list[float]] = {name: [] for name in commands}
    for command, env in commands.values():  # one unmeasured run each: page cache, .pyc files
        run_timed(command, cwd, env)
    for rep in range(reps):
        order = list(commands) if rep % 2 == 0 else list(reversed(commands))
        for name in order:
            command, env = commands[name]
            timed = run_timed(command, cwd, env)
            if timed.returncode not in (0, 5 if name == "pytest-start" else 0):
                raise SystemExit(
                    f"{name} failed (exit {timed.returncode}):\n{tail(timed.stdout + timed.stderr)}"
                )
            times[name].append(timed.seconds)
        print(
            "  rep " + str(rep + 1) + ": " + "  ".join(f"{n} {times[n][-1]:.2f}s" for n in commands),
            flush=True,
        )
    return times


def count_parses() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    cwd = empty_dir("parses")
    plugin_counts, baseline_counts, report = cwd / "plugin.json", cwd / "baseline.json", cwd / "report.json"
    done = run_timed(
        [PYTHON, "-m", "pytest", "-p", "_parsecount", *PLUGIN_FLAGS, "--tokcompat-report", str(report)],
        cwd,
        # counted in this process: the probe is not in the judge's child processes
        bench_env(TOKCOMPAT_BENCH_COUNTS=str(plugin_counts), TOKCOMPAT_ISOLATION="inprocess"),
    )
    if done.returncode != 0:
        raise SystemExit(f"counting run of the plugin failed:\n{tail(done.stdout + done.stderr)}")
    done = run_timed(
        [PYTHON, str(BENCH_DIR / "baseline_loop.py"), "--quiet", "--count-parses", str(baseline_counts)], cwd
    )
    if done.returncode != 0:
        raise SystemExit(f"counting run of the baseline failed:\n{tail(done.stdout + done.stderr)}")
    return (
        json.loads(plugin_counts.read_text()),
        json.loads(baseline_counts.read_text()),
        json.loads(report.read_text()),
    )


def _fmt(counts: dict[str, int]) -> str:
    parses = sum(counts.get(k, 0) for k in ("from_file", "from_str", "from_buffer", "py_open"))
    return f"{parses} (rust {counts.get('from_file', 0) + counts.get('from_str', 0)}, json {counts.get('py_open', 0)})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", default=None, help="write the figures to this JSON file")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for a quiet machine")
    args = parser.parse_args(argv)

    print("== plugin overhead (bundled matrix) ==")
    warm_snapshot_cache()
    load = 0.0 if args.no_wait else wait_until_quiet()
    times = measure(args.reps)
    meds = {name: median(values) for name, values in times.items()}
    base, plug, iso = meds["baseline"], meds["plugin"], meds["isolated"]
    ratio, ratio_isolated = plug / base, iso / base
    for name, label in (
        ("baseline", "baseline loop"),
        ("plugin", "pytest --tokcompat"),
        ("isolated", "  same, autoload off"),
        ("pytest-start", "pytest start, no tests"),
    ):
        print(f"{label:<24} median {meds[name]:6.2f}s  ({', '.join(f'{t:.2f}' for t in times[name])})")
    print(f"ratio plugin/baseline {ratio:.3f}x  target <= {TARGET}x: {verdict(ratio <= TARGET)}")
    print(
        f"ratio with plugin autoload off (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 -p pytest_tokcompat.pytest_plugin.plugin): "
        f"{ratio_isolated:.3f}x: {verdict(ratio_isolated <= TARGET)}"
    )
    print(f"(pytest's own start in this venv, no tests collected: {meds['pytest-start']:.2f}s)")

    plugin_counts, baseline_counts, report = count_parses()
    print("\ntokenizer.json parses per case (rust = Tokenizer.from_file/from_str, json = Python json load)")
    print(f"  {'case':<22} {'plugin':<22} {'baseline':<22} ground truth plugin/baseline")
    parse_ok = truth_ok = True
    for case_id, counts in baseline_counts.items():
        mine = plugin_counts.get(case_id, {})
        print(f"  {case_id:<22} {_fmt(mine):<22} {_fmt(counts):<22} "
              f"{mine.get('ground_truth', 0)}/{counts.get('ground_truth', 0)}")  # fmt: skip
        parse_ok &= sum(mine.get(k, 0) for k in KINDS[:4]) <= sum(counts.get(k, 0) for k in KINDS[:4])
        truth_ok &= mine.get("ground_truth", 0) == 1
    extra = {k: v for k, v in plugin_counts.items() if k not in baseline_counts and sum(v.values())}
    for label, counts in extra.items():
        print(f"  {label:<22} {_fmt(counts):<22} {'-':<22} {counts.get('ground_truth', 0)}/-")
        parse_ok &= sum(counts.get(k, 0) for k in KINDS[:4]) == 0
        truth_ok &= counts.get("ground_truth", 0) == 0
    print(
        f"parses no more than the baseline's: {verdict(parse_ok)}; ground truth once per case: {verdict(truth_ok)}"
    )

    print("\nplugin time by ladder attempt (from the counting run's report):")
    for record in report.get("cases", []):
        if record.get("kind") != "case":
            continue
        steps = ", ".join(
            f"{a['remedy']} {a['status']} {a['seconds']:.2f}s"
            for a in record.get("attempts", [])
            if a["status"] != "skipped"
        )
        print(f"  {record['id']:<22} {steps}")
    write_json(
        args.json,
        {
            "name": "overhead",
            "load_before": load,
            "times_s": times,
            "baseline_median_s": base,
            "plugin_median_s": plug,
            "isolated_median_s": iso,
            "pytest_start_median_s": meds["pytest-start"],
            "ratio": ratio,
            "ratio_isolated": ratio_isolated,
            "target": TARGET,
            "met": ratio <= TARGET,
            "parses_plugin": plugin_counts,
            "parses_baseline": baseline_counts,
            "parses_met": parse_ok,
            "ground_truth_once": truth_ok,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
