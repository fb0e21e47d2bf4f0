"""The grid: environment build cost vs the test work inside, with a cold and a warm uv cache.

Runs the repository's tox.ini for a few envs (default tf4576, tf5110, tflatest),
sequentially, twice:

* cold: a fresh, empty uv cache (UV_CACHE_DIR in a temp folder) and ``tox -r``;
* warm: the same cache, ``tox -r`` again (every env and the wheel rebuilt, packages
  come from the cache).

tox runs with its own ``--workdir`` in the temp folder (the project's .tox is left
alone) and the reports go to the temp folder (``-- --tokcompat-report``; the last
option wins). From tox's ``--result-json``: the test work is the elapsed time of
each env's pytest command; the build is the whole tox invocation's wall time less
that (env creation, installs, the wheel build, tox's own start). Packages come
through uv's normal index configuration.

Note: TOKCOMPAT_CACHE lives in tox's work dir, so the cold run's tests also
assemble the snapshots; the warm run's test time is the steady-state one, and the
target compares warm build with warm test.

Run:  python benchmarks/grid_build.py [--envs tf4576,tf5110,tflatest] [--json OUT] [--no-wait]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from _common import (
    PYTHON,
    REPO,
    bench_env,
    empty_dir,
    run_timed,
    tail,
    verdict,
    wait_until_quiet,
    write_json,
)

TARGET = 1.0


def tox_run(work: Path, envs: list[str], label: str, cache: Path) -> dict[str, Any]:
    result_json = work / f"{label}.json"
    command = [
        PYTHON, "-m", "tox", "run", "-r", "-e", ",".join(envs),
        "-c", str(REPO / "tox.ini"), "--root", str(REPO), "--workdir", str(work / "tox"),
        "--result-json", str(result_json),
        "--", "--tokcompat-report", str(work / "reports") + "/",
    ]  # fmt: skip
    env = bench_env(UV_CACHE_DIR=str(cache))
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    timed = run_timed(command, work, env)
    if timed.returncode != 0:
        raise SystemExit(
            f"tox ({label}) failed (exit {timed.returncode}):\n{tail(timed.stdout + timed.stderr, 30)}"
        )
    document = json.loads(result_json.read_text())
    per_env: dict[str, dict[str, float]] = {}
    for name, data in document.get("testenvs", {}).items():
        if name not in envs:
            continue
        test = sum(
            c["elapsed"] for c in data.get("test", []) if str(c.get("run_id", "")).startswith("commands")
        )
        duration = float(data.get("result", {}).get("duration", 0.0))
        per_env[name] = {"total": duration, "test": test, "build": duration - test}
    test_total = sum(e["test"] for e in per_env.values())
    return {"wall": timed.seconds, "test": test_total, "build": timed.seconds - test_total, "envs": per_env}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", default="tf4576,tf5110,tflatest")
    parser.add_argument("--json", default=None)
    parser.add_argument("--no-wait", action="store_true")
    args = parser.parse_args(argv)
    envs = [e.strip() for e in args.envs.split(",") if e.strip()]

    print(f"== grid build ({', '.join(envs)}; sequential) ==")
    work = empty_dir("grid")
    cache = work / "uv-cache"
    runs = {}
    for label in ("cold", "warm"):
        load = 0.0 if args.no_wait else wait_until_quiet()
        runs[label] = tox_run(work, envs, label, cache)
        runs[label]["load_before"] = load
        run = runs[label]
        print(f"{label}: wall {run['wall']:.1f}s = build {run['build']:.1f}s + test {run['test']:.1f}s")
        for name, figures in run["envs"].items():
            print(f"    {name:<10} env total {figures['total']:6.1f}s  build {figures['build']:6.1f}s  "
                  f"test {figures['test']:6.1f}s")  # fmt: skip
    warm = runs["warm"]
    ratio = warm["build"] / warm["test"] if warm["test"] else float("inf")
    print(
        f"cold build {runs['cold']['build']:.1f}s, warm build {warm['build']:.1f}s, warm test {warm['test']:.1f}s"
    )
    print(f"warm build / test = {ratio:.2f}  target <= {TARGET}: {verdict(ratio <= TARGET)}")
    write_json(args.json, {"name": "grid", "envs": envs, "runs": runs, "ratio": ratio, "target": TARGET,
                           "met": ratio <= TARGET})  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
