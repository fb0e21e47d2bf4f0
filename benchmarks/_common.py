"""Shared helpers of the benchmark scripts: generated matrices, timed subprocesses, quiet-machine checks.

Not a benchmark itself; every script under benchmarks/ imports it (they run as
``python benchmarks/<name>.py``, so this folder is on ``sys.path``).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
BUNDLED_MATRIX = REPO / "matrix" / "models.yaml"
PYTHON = sys.executable
PLUGIN_FLAGS = ["--tokcompat", "-p", "no:randomly", "-p", "no:cacheprovider", "-q"]
QUIET_LOAD = 1.5


@dataclass
class Timed:
    seconds: float
    returncode: int
    stdout: str
    stderr: str


def bench_env(**extra: str) -> dict[str, str]:
    """The environment of every measured subprocess: offline hub, this folder importable for -p probes."""
    env = dict(os.environ)
    env["HF_HUB_OFFLINE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BENCH_DIR), env.get("PYTHONPATH", "")) if p)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_AUTO_NUM_WORKERS", None)
    env.update(extra)
    return env


def run_timed(command: Sequence[str], cwd: Path, env: dict[str, str] | None = None) -> Timed:
    """Wall-clock seconds of one subprocess, start to exit."""
    started = time.perf_counter()
    done = subprocess.run(
        list(command), cwd=cwd, env=env or bench_env(), capture_output=True, text=True, check=False
    )
    return Timed(time.perf_counter() - started, done.returncode, done.stdout, done.stderr)


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def wait_until_quiet(limit: float = QUIET_LOAD, patience: float = 600.0, poll: float = 15.0) -> float:
    """Wait (up to ``patience`` s) for the 1-minute load average to drop to ``limit``; return it."""
    deadline = time.monotonic() + patience
    load = os.getloadavg()[0]
    while load > limit and time.monotonic() < deadline:
        print(f"  load average {load:.2f} > {limit}: waiting for a quiet machine ...", flush=True)
        time.sleep(poll)
        load = os.getloadavg()[0]
    if load > limit:
        print(f"  WARNING: load average still {load:.2f}; figures below are taken on a busy machine")
    return load


def empty_dir(prefix: str) -> Path:
    """A fresh empty folder under the system temp dir (no pytest.ini above it: rootdir is the folder)."""
    return Path(tempfile.mkdtemp(prefix=f"tokcompat-bench-{prefix}-"))


def bundled_entries() -> list[dict[str, Any]]:
    data = yaml.safe_load(BUNDLED_MATRIX.read_text(encoding="utf-8"))
    return list(data["cases"])


def generate_matrix(folder: Path, count: int) -> Path:
    """A ``count``-entry matrix: the bundled entries round-robin, same snapshot folders, unique ids.

    Snapshot paths are absolute, so every copy materializes to the same cached folder;
    golden ids are copied under each new id (golden files are looked up by case id).
    served_names is dropped (two entries may not claim one served name).
    """
    entries = bundled_entries()
    golden_src = BUNDLED_MATRIX.parent / "golden"
    golden_dst = folder / "golden"
    golden_dst.mkdir(parents=True, exist_ok=True)
    cases: list[dict[str, Any]] = []
    for index in range(count):
        entry = dict(entries[index % len(entries)])
        original = entry["id"]
        entry["id"] = f"{original}-{index:04d}"
        entry["snapshot"] = str((BUNDLED_MATRIX.parent / entry["snapshot"]).resolve())
        entry.pop("served_names", None)
        golden = golden_src / f"{original}.json"
        if golden.is_file():
            shutil.copyfile(golden, golden_dst / f"{entry['id']}.json")
        cases.append(entry)
    path = folder / "models.yaml"
    path.write_text(
        yaml.safe_dump({"version": 1, "cases": cases}, sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    return path


def warm_snapshot_cache() -> None:
    """Assemble every bundled snapshot once, so no measured run pays for it."""
    from pytest_tokcompat.sources.snapshots import materialize

    for entry in bundled_entries():
        materialize(BUNDLED_MATRIX.parent / entry["snapshot"])


def write_json(path: str | None, document: dict[str, Any]) -> None:
    if path:
        Path(path).write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def verdict(met: bool) -> str:
    return "MET" if met else "MISSED"
