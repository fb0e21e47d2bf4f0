"""Records each pytest process's peak resident memory; a pytest plugin (``-p _rssprobe``).

Not a benchmark itself; scale.py injects it. At session finish every process
(the controller, and each xdist worker) writes ``resource.getrusage(RUSAGE_SELF)
.ru_maxrss`` (KiB on Linux) and the number of tests it ran to
$TOKCOMPAT_BENCH_RSS/<worker id or "main">.json.
"""

from __future__ import annotations

import json
import os
import resource
from pathlib import Path

import pytest

_ran = {"tests": 0}


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _ran["tests"] += 1


def pytest_sessionfinish(session: pytest.Session) -> None:
    folder = os.environ.get("TOKCOMPAT_BENCH_RSS")
    if not folder:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    record = {"worker": worker, "pid": os.getpid(), "max_rss_kib": peak_kib, "tests": _ran["tests"]}
    (Path(folder) / f"{worker}.json").write_text(json.dumps(record), encoding="utf-8")
