"""The default test suite, now vs. at commit d73e36e (before issue 9), measured in the same run.

Both suites run the default test command, ``python -m pytest -n 2 -q``, from their own checkout (since issue 9
the current one leaves the ``e2e``-marked runs out by ``addopts``; the baseline had no such marker and runs all of
its tests). The e2e part of the current suite (``-m e2e``, which Quickstart step 2 and .ci/run also run) is timed
once after the reps and printed beside the ratio, with the ratio of baseline / (default + e2e), so nothing hides:

* baseline: a ``git worktree`` of d73e36e in a temp folder, with its own venv made by uv;
* current: this checkout, with its own venv made by uv the same way.

Both venvs get the same third-party versions: the packages of the interpreter running this
script (``uv pip freeze``) are the constraints of both installs, byte-compiled at install time
as pip (and so .ci/run) does. The baseline suite keeps its
snapshots in the user's cache; here that cache is a temp folder, assembled once before any
measured run (a developer's cache is warm). The current suite assembles its snapshots into its
own session tmp dir on every run, by design, and that is measured. Runs alternate (baseline,
current, baseline, ...); the figure is the ratio of the median wall times (the CPU time of the
process trees is printed beside it: a busy machine stretches wall time). Nothing is left behind: the
worktree, the venvs and every cache are removed at the end.

Run:  python benchmarks/suite_speed.py [--reps 1] [--baseline d73e36e] [--json OUT] [--no-wait] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import REPO, Timed, empty_dir, median, run_timed, tail, verdict, wait_until_quiet, write_json

BASELINE = "d73e36e"
TARGET = 2.0
COMMAND = ["-m", "pytest", "-n", "2", "-q"]
OUTCOME = re.compile(r"^=*\s*(?P<counts>(\d+ \w+(, )?)+) in [\d.]+s")


def find_uv() -> str:
    """uv as the grid finds it (``pytest_tokcompat.ci.install.uv_binary``), or a one-line exit."""
    from pytest_tokcompat.ci.install import uv_binary
    from pytest_tokcompat.errors import TokcompatError

    try:
        return uv_binary()
    except TokcompatError as error:
        sys.exit(f"suite_speed: {error}")


def run(command: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"suite_speed: {' '.join(command)} failed:\n{tail(done.stdout + done.stderr, 30)}")
    return done.stdout


def constraints(uv: str, work: Path) -> Path:
    """This interpreter's third-party packages, pinned, so both venvs get the same versions."""
    frozen = run([uv, "pip", "freeze", "--python", sys.executable])
    pinned = [
        line for line in frozen.splitlines() if "==" in line and not line.startswith("pytest-tokcompat")
    ]
    path = work / "constraints.txt"
    path.write_text("\n".join(pinned) + "\n", encoding="utf-8")
    return path


def make_venv(uv: str, checkout: Path, venv: Path, pins: Path) -> Path:
    # --seed: pip in the venv, as in .ci/run's `python3 -m venv` (a test reads pip's default index)
    run([uv, "venv", "-q", "--seed", "--python", sys.executable, str(venv)])
    python = venv / "bin" / "python"
    # --compile-bytecode: pip (and so .ci/run) writes every package's .pyc at install time, uv does not;
    # without them each process that imports transformers compiles ~500 modules again (1-2 s of CPU).
    run(
        [
            uv,
            "pip",
            "install",
            "-q",
            "--compile-bytecode",
            "--python",
            str(python),
            "-c",
            str(pins),
            "-e",
            f"{checkout}[test]",
        ]
    )
    return python


def suite_env(work: Path, label: str) -> dict[str, str]:
    """A user's environment whose caches are temp folders; hypothesis at its default profile."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS_", "TOKCOMPAT_"))}
    env.update(
        XDG_CACHE_HOME=str(work / f"xdg-{label}"), HF_HOME=str(work / f"hf-{label}"), HF_HUB_OFFLINE="1"
    )
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_MODULES_CACHE", "VIRTUAL_ENV"):
        env.pop(key, None)
    return env


def cpu_seconds_of_children() -> float:
    """User + system CPU time of every finished child process (and the children they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def counts(timed: Timed) -> str:
    for line in reversed(timed.stdout.splitlines()):
        match = OUTCOME.match(line.strip("= "))
        if match:
            return match.group("counts")
    return "no summary line"


@dataclass
class Sides:
    """A baseline worktree and this checkout, each with a venv of the same third-party pins."""

    work: Path
    commit: str
    baseline_tree: Path
    pythons: dict[str, Path]


@contextmanager
def baseline_and_current(prefix: str, baseline: str, keep: bool) -> Iterator[Sides]:
    """A temp folder with a ``git worktree`` of ``baseline`` and both venvs; all removed at the end
    unless ``keep``."""
    uv = find_uv()
    work = empty_dir(prefix)
    baseline_tree = work / "baseline"
    try:
        commit = run(["git", "-C", str(REPO), "rev-parse", baseline]).strip()
        run(["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(baseline_tree), commit])
        pins = constraints(uv, work)
        print(f"building the venvs (baseline {commit[:12]}, current {REPO}) ...", flush=True)
        pythons = {
            "baseline": make_venv(uv, baseline_tree, work / "venv-baseline", pins),
            "current": make_venv(uv, REPO, work / "venv-current", pins),
        }
        yield Sides(work, commit, baseline_tree, pythons)
    finally:
        if not keep:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(baseline_tree)],
                capture_output=True,
                check=False,
            )
            subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True, check=False)
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with baseline_and_current("suite", args.baseline, args.keep) as sides:
        work, commit, baseline_tree, pythons = sides.work, sides.commit, sides.baseline_tree, sides.pythons
        checkouts = {"baseline": baseline_tree, "current": REPO}
        envs = {label: suite_env(work, label) for label in pythons}
        # A developer's user cache is warm: assemble the baseline's bundled snapshots before measuring.
        warm = work / "warm"
        warm.mkdir()
        run(
            [
                str(pythons["baseline"]),
                "-m",
                "pytest",
                "--tokcompat",
                "-q",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
            ],
            cwd=warm,
            env=envs["baseline"],
        )
        times: dict[str, list[float]] = {label: [] for label in pythons}
        cpu: dict[str, list[float]] = {label: [] for label in pythons}
        outcomes: dict[str, list[str]] = {label: [] for label in pythons}
        for rep in range(args.reps):
            for label in ("baseline", "current"):
                if not args.no_wait:
                    wait_until_quiet()
                load = os.getloadavg()[0]
                print(f"rep {rep + 1}/{args.reps}: {label} suite (load {load:.2f}) ...", flush=True)
                cpu_before = cpu_seconds_of_children()
                timed = run_timed([str(pythons[label]), *COMMAND], cwd=checkouts[label], env=envs[label])
                cpu[label].append(cpu_seconds_of_children() - cpu_before)
                summary = counts(timed)
                print(
                    f"  {timed.seconds:.1f} s wall, {cpu[label][-1]:.1f} s CPU, exit {timed.returncode}: {summary}",
                    flush=True,
                )
                if timed.returncode != 0:
                    print(tail(timed.stdout, 40))
                times[label].append(timed.seconds)
                outcomes[label].append(f"exit {timed.returncode}: {summary}")
        if not args.no_wait:
            wait_until_quiet()
        print("the current suite's e2e part (-m e2e), once ...", flush=True)
        cpu_before = cpu_seconds_of_children()
        e2e = run_timed([str(pythons["current"]), *COMMAND, "-m", "e2e"], cwd=REPO, env=envs["current"])
        e2e_cpu = cpu_seconds_of_children() - cpu_before
        print(
            f"  {e2e.seconds:.1f} s wall, {e2e_cpu:.1f} s CPU, exit {e2e.returncode}: {counts(e2e)}",
            flush=True,
        )
        ratio = median(times["baseline"]) / median(times["current"])
        cpu_ratio = median(cpu["baseline"]) / median(cpu["current"])
        return {
            "baseline_commit": commit,
            "command": "python " + " ".join(COMMAND),
            "baseline_s": times["baseline"],
            "current_s": times["current"],
            "baseline_median_s": median(times["baseline"]),
            "current_median_s": median(times["current"]),
            "baseline_cpu_s": cpu["baseline"],
            "current_cpu_s": cpu["current"],
            "cpu_ratio": cpu_ratio,
            "load_average_at_end": os.getloadavg()[0],
            "outcomes": outcomes,
            "ratio": ratio,
            "e2e_s": e2e.seconds,
            "e2e_outcome": f"exit {e2e.returncode}: {counts(e2e)}",
            "ratio_with_e2e": median(times["baseline"]) / (median(times["current"]) + e2e.seconds),
            "target": TARGET,
            "met": ratio >= TARGET,
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1, help="runs of each suite, alternating (default 1)")
    parser.add_argument(
        "--baseline", default=BASELINE, help=f"the commit to compare with (default {BASELINE})"
    )
    parser.add_argument("--json", help="write the figures as JSON to this file")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for a quiet machine")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (worktree, venvs)")
    args = parser.parse_args()
    data = measure(args)
    print()
    print(f"suite `{data['command']}`, medians of {args.reps}:")
    print(
        f"  baseline {data['baseline_commit'][:12]}: {data['baseline_median_s']:.1f} s  {data['outcomes']['baseline']}"
    )
    print(f"  current:               {data['current_median_s']:.1f} s  {data['outcomes']['current']}")
    print(f"  ratio baseline / current: {data['ratio']:.2f}x (target >= {TARGET}x): {verdict(data['met'])}")
    print(f"  the current e2e part (-m e2e): {data['e2e_s']:.1f} s  {data['e2e_outcome']}")
    print(f"  ratio baseline / (current default + e2e): {data['ratio_with_e2e']:.2f}x (for information)")
    print(
        f"  CPU time (less sensitive to a busy machine): {median(data['baseline_cpu_s']):.0f} s / "
        f"{median(data['current_cpu_s']):.0f} s = {data['cpu_ratio']:.2f}x"
    )
    write_json(args.json, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
