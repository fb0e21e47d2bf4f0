"""What containment costs per attempt: judge() now vs. at commit 285bdb3 (before issue 21's judge side),
measured in the same run.

Each side is one long-lived probe process: it judges a toy once (the fork server starts, unmeasured),
then, once per round and in turn with the other side, judges the native toy (one attempt: read the
checkpoint, load, check parity) and the remote-code toy (two attempts: native fails, auto_map loads)
``--loops`` times each, and reports the wall time per attempt. Short rounds in turn keep a shared
machine's load, which drifts over seconds, the same for both sides. Now pays for a PID and a mount namespace per attempt (or the subreaper's reaping), the frames' binding,
the checks of the checkpoint's files and the fork server's stopped check; the baseline is a
``git worktree`` of 285bdb3 imported first on ``PYTHONPATH`` by this same interpreter (the
dependencies did not change, and the probe checks which copy it imported). Rounds alternate
(baseline, now, now, baseline, ...); the figure is the ratio of the medians, against the target
(<= 1.1x). ``--subreaper`` measures the fallback (no PID namespace) on the current side as well,
``--pid-namespace`` a PID namespace without the mount namespace (what the fresh ``/proc`` costs).

``--baseline`` may be given more than once (``--baseline c3394de --baseline main``): each is a side of the same
run, and now is compared with each.

Run:  python benchmarks/containment.py [--reps 30] [--loops 2] [--baseline 285bdb3 ...] [--json OUT] [--no-wait]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import PYTHON, REPO, bench_env, median, verdict, wait_until_quiet, write_json

TARGET = 1.1
PROBE = """
import importlib.util, json, sys, tempfile, time
from pathlib import Path
# the toys of this checkout, by file: the repo on sys.path would shadow the side's own package
_spec = importlib.util.spec_from_file_location("_bench_toys", {toys!r})
toys = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(toys)
import pytest_tokcompat
from pytest_tokcompat.judge import child
from pytest_tokcompat.judge.ladder import judge as _judge
try:  # the ladder takes one Subject since issue 23; a baseline before it takes keywords
    from pytest_tokcompat.judge.subject import Subject
    from pytest_tokcompat.request import Request
    def judge(folder, trust_remote_code=False):
        return _judge(Subject(folder, Request(folder, trust_remote_code=trust_remote_code), trust_remote_code))
except ImportError:
    judge = _judge
if {containment!r}:
    child.CONTAINMENT = {containment!r}
folder = Path(tempfile.mkdtemp(prefix="tokcompat-bench-containment-"))
native, remote = toys.native_toy(folder / "native"), toys.remote_toy(folder / "remote")
judge(native)  # the fork server starts: not measured
ready = child._SERVER.ready if child._SERVER is not None else {{}}
print("@@", json.dumps({{"file": pytest_tokcompat.__file__, "containment": ready.get("containment", "process-group")}}))
sys.stdout.flush()
for line in sys.stdin:
    attempts, started = 0, time.perf_counter()
    for _ in range(int(line)):
        for target, trust in ((native, False), (remote, True)):
            judgement = judge(target, trust_remote_code=trust)
            assert judgement.verdict in ("native", "auto_map"), judgement.verdict
            attempts += sum(1 for a in judgement.attempts if a.status != "skipped")
    print("@@", json.dumps({{"per_attempt_ms": 1000 * (time.perf_counter() - started) / attempts}}))
    sys.stdout.flush()
"""


class Probe:
    """One side's long-lived process, its fork server warm: each round judges ``loops`` times on request."""

    def __init__(self, root: Path, containment: str | None) -> None:
        code = PROBE.format(toys=str(REPO / "tests" / "helpers" / "toys.py"), containment=containment)
        # caches of its own: the sides never share (or discard) truth entries, and the user's stay untouched
        self.cache = tempfile.mkdtemp(prefix="tokcompat-bench-containment-cache-")
        env = bench_env(PYTHONPATH=str(root), TOKCOMPAT_ISOLATION="process", XDG_CACHE_HOME=self.cache)
        self.process = subprocess.Popen(
            [PYTHON, "-c", code], cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        hello = self._line(root)
        if not str(hello["file"]).startswith(str(root)):
            raise SystemExit(f"the probe for {root} imported {hello['file']}: not the checkout it measures")
        self.root, self.containment = root, str(hello["containment"])

    def _line(self, root: Path) -> dict[str, object]:
        assert self.process.stdout is not None
        while True:  # what else the judged libraries print is not the probe's answer
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit(f"the probe in {root} ended (exit {self.process.wait()})")
            if line.startswith("@@ "):
                return dict(json.loads(line[3:]))

    def round(self, loops: int) -> float:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{loops}\n")
        self.process.stdin.flush()
        return float(self._line(self.root)["per_attempt_ms"])  # type: ignore[arg-type]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)
        shutil.rmtree(self.cache, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30, help="rounds, each side in turn")
    parser.add_argument("--loops", type=int, default=2, help="judgements of each toy per round")
    parser.add_argument("--baseline", action="append", help="a commit to compare with (repeatable; 285bdb3)")
    parser.add_argument(
        "--subreaper", action="store_true", help="also measure the fallback (no PID namespace)"
    )
    parser.add_argument(
        "--pid-namespace",
        action="store_true",
        help="also measure a PID namespace without the mount namespace",
    )
    parser.add_argument("--json", default=None, help="write the figures to this JSON file")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for a quiet machine")
    args = parser.parse_args(argv)
    revisions = args.baseline or ["285bdb3"]

    print(f"== containment cost per attempt (judge() on two toys, now vs {', '.join(revisions)}) ==")
    load = 0.0 if args.no_wait else wait_until_quiet()
    work = Path(tempfile.mkdtemp(prefix="tokcompat-bench-containment-"))
    commits = {
        revision: subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", revision], capture_output=True, text=True, check=True
        ).stdout.strip()
        for revision in revisions
    }
    bases = {f"base-{revision}": work / f"baseline-{index}" for index, revision in enumerate(revisions)}
    sides: dict[str, tuple[Path, str | None]] = {}
    for (name, folder), commit in zip(bases.items(), commits.values(), strict=True):
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(folder), commit], check=True
        )
        sides[name] = (folder, None)
    sides["now"] = (REPO, None)
    if args.subreaper:
        sides["now-subreaper"] = (REPO, "subreaper")
    if args.pid_namespace:
        sides["now-pid-ns"] = (REPO, "pid-namespace")
    times: dict[str, list[float]] = {name: [] for name in sides}
    probes: dict[str, Probe] = {}
    try:
        probes = {name: Probe(root, mode) for name, (root, mode) in sides.items()}
        for each in probes.values():  # unmeasured: the first forks, page cache
            each.round(1)
        for rep in range(args.reps):
            order = list(sides) if rep % 2 == 0 else list(reversed(sides))
            for name in order:
                times[name].append(probes[name].round(args.loops))
            print(
                "  round " + str(rep + 1) + ": " + "  ".join(f"{n} {times[n][-1]:.1f} ms" for n in sides),
                flush=True,
            )
    finally:
        for each in probes.values():
            each.close()
        for folder in bases.values():
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(folder)], check=False
            )
        subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], capture_output=True, check=False)
    modes = {name: each.containment for name, each in probes.items()}
    ratios = {
        f"{name}/{base}": median(times[name]) / median(times[base])
        for base in bases
        for name in sides
        if name not in bases
    }
    for name in sides:
        print(f"{name:<16} median {median(times[name]):7.1f} ms/attempt  ({modes[name]})")
    for name, ratio in ratios.items():
        print(f"ratio {name} {ratio:.3f}x  target <= {TARGET}x: {verdict(ratio <= TARGET)}")
    write_json(
        args.json,
        {
            "name": "containment",
            "baseline": commits,
            "load_before": load,
            "per_attempt_ms": times,
            "containment": modes,
            "ratios": ratios,
            "target": TARGET,
            "met": all(ratio <= TARGET for ratio in ratios.values()),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
