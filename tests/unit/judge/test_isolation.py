"""Isolation: nothing an attempt does reaches another attempt, another case, the run's exit status or output.

Each test opts in to a checkpoint whose own code (tests/helpers/toys.py) does one hostile thing at import:
monkeypatches transformers, exits the process, raises a BaseException, hangs in ways a SIGALRM
cannot stop, starts a non-daemon thread, floods stdout, or changes process state. Plus one checkpoint
that is data only: a tokenizer.json that makes the tokenizers library panic.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat import cli
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.judge import child
from pytest_tokcompat.judge.evaluate import FAILED, evaluate
from pytest_tokcompat.judge.judgement import Judgement
from pytest_tokcompat.judge.probes import probe_texts
from pytest_tokcompat.matrix.loader import parse_matrix
from pytest_tokcompat.model import AttemptStatus, Verdict
from pytest_tokcompat.request import Request
from pytest_tokcompat.settings import Limits
from tests.helpers import toys
from tests.helpers.ladder import judge_folder
from tests.helpers.matrices import write_matrix

pytest_plugins = ["pytester"]


def cases_of(report_path: Path) -> dict[str, dict[str, Any]]:
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return {record["id"]: record for record in report["cases"] if record["kind"] == "case"}


def attempts_of(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {attempt["remedy"]: attempt for attempt in record["attempts"]}


def check_json(*args: str) -> subprocess.CompletedProcess[str]:
    """`tokcompat check ... --json` in a process of its own, as a CI script runs it (bounded in time)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_tokcompat.cli", "check", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def judge_within(folder: Path, seconds: float = 240.0, **kwargs: Any) -> Judgement:
    """judge_folder() in a thread, so that a judge that never returns fails this test instead of hanging it."""
    result: list[Judgement] = []
    worker = threading.Thread(target=lambda: result.append(judge_folder(folder, **kwargs)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"judge_folder() did not return within {seconds} s"
    return result[0]


# ---- one case cannot change the next -----------------------------------------------------------------


def test_a_monkeypatch_of_autotokenizer_does_not_change_the_next_cases_verdict(
    pytester: pytest.Pytester,
) -> None:
    root = pytester.path
    toys.hostile_remote_toy(root / "patcher", toys.PATCH_AUTOTOKENIZER)
    toys.alias_toy(root / "alias")
    toys.native_toy(root / "native")
    toys.golden_for(probe_texts(), root / "golden", "alias")
    pytester.makeconftest(toys.alias_conftest())
    matrix = write_matrix(
        root,
        "  - {id: patcher, snapshot: patcher, expect: auto_map, trust_remote_code: true}\n"
        "  - {id: alias, snapshot: alias, expect: alias}\n"
        "  - {id: native, snapshot: native, expect: native}\n",
    )
    result = pytester.runpytest(
        "--tokcompat", f"--tokcompat-matrix={matrix}", "--tokcompat-report=report.json", "-p", "no:randomly"
    )
    verdicts = {case_id: record["verdict"] for case_id, record in cases_of(root / "report.json").items()}
    assert verdicts == {"patcher": "auto_map", "alias": "alias", "native": "native"}
    result.assert_outcomes(passed=4, skipped=1)  # + the toy alias item; deepseek_v32's has no case here


def test_process_state_set_by_remote_code_is_gone_for_the_next_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "seen.json"
    monkeypatch.setenv("TOKCOMPAT_SEEN", str(seen))
    levels = (logging.getLogger("transformers").level, logging.getLogger("tokcompat.leak").level)
    leaking = judge_folder(
        toys.hostile_remote_toy(tmp_path / "leak", toys.LEAK_STATE), trust_remote_code=True
    )
    patching = judge_folder(
        toys.hostile_remote_toy(tmp_path / "patch", toys.PATCH_AUTOTOKENIZER), trust_remote_code=True
    )
    assert (leaking.verdict, patching.verdict) == (Verdict.AUTO_MAP, Verdict.AUTO_MAP)
    assert "TOKCOMPAT_LEAKED" not in os.environ and "tokcompat_leaked_module" not in sys.modules
    assert (logging.getLogger("transformers").level, logging.getLogger("tokcompat.leak").level) == levels
    seeing = judge_folder(toys.hostile_remote_toy(tmp_path / "see", toys.SEE_STATE), trust_remote_code=True)
    assert seeing.verdict == Verdict.AUTO_MAP
    found = json.loads(seen.read_text(encoding="utf-8"))
    assert found == {
        "env": None,
        "transformers_level": found["transformers_level"],
        "leak_level": logging.NOTSET,
        "module": False,
        "patched": False,
    }
    assert found["transformers_level"] != logging.CRITICAL


# ---- exits and exceptions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prelude", "shown"),
    [("import sys\nsys.exit(0)\n", "SystemExit: 0"), ("raise SystemExit(3)\n", "SystemExit: 3")],
    ids=["sys-exit-0", "system-exit-3"],
)
def test_an_exit_in_remote_code_is_that_attempts_load_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], prelude: str, shown: str
) -> None:
    folder = toys.hostile_remote_toy(tmp_path / "exits", prelude)
    code = cli.main(["check", str(folder), "--trust-remote-code", "--expect", "auto_map", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == ExitCode.BROKEN  # expected auto_map: an unexpected verdict
    assert record["verdict"] == "backend"
    remote = attempts_of(record)["auto_map"]
    assert (remote["status"], remote["detail"]) == ("load-error", shown)


def test_a_base_exception_of_remote_code_is_that_attempts_load_error(tmp_path: Path) -> None:
    prelude = "class Sabotage(BaseException):\n    pass\n\nraise Sabotage('not an Exception')\n"
    judgement = judge_folder(toys.hostile_remote_toy(tmp_path / "base", prelude), trust_remote_code=True)
    remote = judgement.attempt("auto_map")
    assert judgement.verdict == Verdict.BACKEND
    assert remote is not None and (remote.status, remote.detail) == (
        AttemptStatus.LOAD_ERROR,
        "Sabotage: not an Exception",
    )


def test_a_rust_panic_from_data_alone_is_reported_and_never_broken(tmp_path: Path) -> None:
    folder = toys.panic_toy(tmp_path / "panics")
    judgement = judge_folder(folder)
    native = judgement.attempt("native")
    assert judgement.verdict == Verdict.NOT_CHECKED
    assert native is not None and native.status == AttemptStatus.ENCODE_ERROR
    assert (native.detail or "").startswith("PanicException: Onig: Regex search error")
    assert "the tokenizers library fails on" in (judgement.parity.reason or "")
    matrix = tmp_path / "models.yaml"
    text = "cases:\n  - {id: panics, snapshot: panics, expect: broken}\n"
    matrix.write_text(text)
    outcome = evaluate(Request(parse_matrix(text, matrix).cases[0]))
    assert (outcome.status, outcome.verdict) == (FAILED, "not-checked")
    assert "not checked: the ground truth could not be computed" in outcome.message


# ---- hangs: killed at the limit, whatever the code does with signals ------------------------------------

HANGS = {
    "swallows-the-timeout": "import time\nwhile True:\n    try:\n        time.sleep(60)\n    except BaseException:\n        pass\n",
    "cancels-the-timer": (
        "import signal, time\nsignal.setitimer(signal.ITIMER_REAL, 0)\n"
        "signal.signal(signal.SIGALRM, signal.SIG_IGN)\ntime.sleep(3600)\n"
    ),
    "loops-inside-c": "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')\n",
    "ignores-sigterm": (
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "while True:\n    try:\n        time.sleep(60)\n    except BaseException:\n        pass\n"
    ),
}


@pytest.mark.parametrize("prelude", HANGS.values(), ids=HANGS.keys())
def test_remote_code_that_hangs_is_killed_at_the_limit(
    tmp_path: Path, prelude: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(child, "GRACE_SECONDS", 0.2)  # SIGKILL this soon after an ignored SIGTERM, not 1 s
    reached = tmp_path / "reached"  # written by the remote code just before it hangs
    folder = toys.hostile_remote_toy(tmp_path / "hangs", f"open({str(reached)!r}, 'w').close()\n{prelude}")
    # The hostile code runs 60-90 ms into the attempt under a whole `-n 2` run; should a machine ever take
    # longer than the limit, the marker makes the test fail instead of passing on a slow load.
    judgement = judge_within(folder, trust_remote_code=True, limits=Limits(load_timeout=0.5))
    remote = judgement.attempt("auto_map")
    assert remote is not None and remote.status == AttemptStatus.TIMEOUT
    assert reached.is_file(), "the limit struck before the hostile code ran: this tested a slow load instead"
    assert (remote.detail or "").startswith("the load took longer than 0.5 s")
    assert judgement.verdict == Verdict.NOT_CHECKED, "a remedy the judge could not finish is not a broken one"


# ---- threads, floods, memory -----------------------------------------------------------------------------


def test_an_attempt_over_the_memory_cap_is_not_judged_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKCOMPAT_MAX_MEMORY_MB", "1024")
    folder = toys.hostile_remote_toy(tmp_path / "greedy", "hoard = bytearray(3 * 1024 ** 3)\n")
    judgement = judge_folder(folder, trust_remote_code=True)
    remote = judgement.attempt("auto_map")
    assert remote is not None and remote.status == AttemptStatus.LOAD_ERROR
    assert (remote.detail or "").startswith("MemoryError")
    assert "1024 MB memory cap" in (remote.detail or "")
    assert judgement.verdict == Verdict.NOT_CHECKED
