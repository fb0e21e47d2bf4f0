"""End to end: Isolation: nothing an attempt does reaches another attempt, another case, the run's exit status or output.

The rest of this subject's tests, and the helpers these use, are in tests/unit/judge/test_isolation.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.judge.wire import CAPTURE_BYTES
from pytest_tokcompat.model import AttemptStatus, Verdict
from tests.helpers import toys
from tests.helpers.ladder import judge_folder
from tests.helpers.matrices import write_matrix
from tests.unit.judge.test_isolation import attempts_of, cases_of, check_json


def test_os_exit_at_import_cannot_end_the_run_green(pytester: pytest.Pytester) -> None:
    root = pytester.path
    toys.hostile_remote_toy(root / "exits", "import os\nos._exit(0)\n")
    toys.native_toy(root / "after")
    matrix = write_matrix(
        root,
        "  - {id: exits, snapshot: exits, expect: auto_map, trust_remote_code: true}\n"
        "  - {id: after, snapshot: after, expect: native}\n",
    )
    result = pytester.runpytest_subprocess(
        "--tokcompat",
        f"--tokcompat-matrix={matrix}",
        "--tokcompat-report=report.json",
        "-n",
        "0",
        "-p",
        "no:randomly",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    records = cases_of(root / "report.json")
    assert (records["exits"]["status"], records["exits"]["verdict"]) == (
        "failed",
        "backend",
    )  # its tokenizer.json as it is; expected auto_map
    crashed = attempts_of(records["exits"])["auto_map"]
    assert crashed["status"] == AttemptStatus.CRASHED
    assert crashed["detail"].startswith("the attempt's process exited with status 0 before it reported")
    assert (records["after"]["status"], records["after"]["verdict"]) == ("passed", "native")


def test_a_non_daemon_thread_does_not_keep_the_run_alive(tmp_path: Path) -> None:
    prelude = "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,)).start()\n"
    folder = toys.hostile_remote_toy(tmp_path / "thread", prelude)
    done = check_json(str(folder), "--trust-remote-code")
    assert done.returncode == ExitCode.OK, done.stderr[-2000:]
    assert json.loads(done.stdout)["verdict"] == "auto_map"


def test_twenty_megabytes_of_output_leave_the_json_parseable_and_a_bounded_excerpt(tmp_path: Path) -> None:
    prelude = "import sys\nsys.stdout.write('x' * (20 * 1024 * 1024) + 'END')\nsys.stdout.flush()\n"
    folder = toys.hostile_remote_toy(tmp_path / "flood", prelude)
    done = check_json(str(folder), "--trust-remote-code")
    record = json.loads(done.stdout)
    assert (done.returncode, record["verdict"]) == (ExitCode.OK, "auto_map")
    excerpt = attempts_of(record)["auto_map"]["stdout"]
    assert excerpt.endswith("xxxxEND") and len(excerpt) < CAPTURE_BYTES + 100
    assert excerpt.startswith(f"[... {20 * 1024 * 1024 + 3 - CAPTURE_BYTES} earlier bytes dropped]")


# spawn: every attempt a fresh interpreter that imports transformers
def test_spawn_mode_where_fork_is_missing_gives_the_same_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKCOMPAT_ISOLATION", "spawn")
    judgement = judge_folder(
        toys.hostile_remote_toy(tmp_path / "exits", "raise SystemExit(3)\n"), trust_remote_code=True
    )
    remote = judgement.attempt("auto_map")
    assert judgement.verdict == Verdict.BACKEND
    assert remote is not None and (remote.status, remote.detail) == (
        AttemptStatus.LOAD_ERROR,
        "SystemExit: 3",
    )
