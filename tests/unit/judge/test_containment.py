"""Containment: what an attempt starts dies with it, what its child says is bound to the job the parent
sent, and a limit or an unreadable file is not-checked (issue 21, classes 2, 3 and 5).

Each hostile test proves its hostile code ran (a marker file it writes) and has a control: the same setup
without the hostile step gives the verdict it should, so the setup can see what it looks for.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat import cli
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.judge import child, reaper
from pytest_tokcompat.judge.evaluate import FAILED, evaluate
from pytest_tokcompat.judge.frames import Binding
from pytest_tokcompat.judge.job import Job
from pytest_tokcompat.matrix.loader import parse_matrix
from pytest_tokcompat.model import AttemptStatus, Verdict
from pytest_tokcompat.request import Request
from pytest_tokcompat.settings import JudgeSettings, Limits
from tests.helpers import toys
from tests.helpers.ladder import judge_folder
from tests.unit.judge.test_isolation import judge_within

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="prctl and PID namespaces are Linux's"
)


def wait_for(path: Path, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} was never written: the hostile code did not run"
        time.sleep(0.01)


def alive(pid: int) -> bool:
    state = reaper._stat(pid)
    return state is not None and state[0] not in "ZX"


@pytest.fixture(params=[reaper.NAMESPACE, reaper.SUBREAPER])
def containment(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A fork server of its own that contains its attempts as asked (and the default one again after)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("containment beyond the process group is Linux's")
    monkeypatch.setattr(child, "CONTAINMENT", request.param)
    child._shutdown()
    judge_folder(toys.native_toy(tmp_path_factory.mktemp("warm") / "native"))
    assert child._SERVER is not None and child._SERVER.ready is not None
    mode = child._SERVER.ready["containment"]
    if request.param == reaper.NAMESPACE and mode != reaper.NAMESPACE:
        pytest.skip(f"this kernel gives the fork server no PID namespace (it runs as {mode})")
    assert mode == request.param, "the fork server does not contain its attempts as this test asked"
    yield mode
    child._shutdown()  # the next test's server is the default one


# ---- class 2: processes ------------------------------------------------------------------------------

ESCAPE = """
import os, time
_marker = {marker!r}
_pid = os.fork()
if _pid == 0:  # the child leaves the session and forks the grandchild, then exits: it is an orphan
    os.setsid()
    if os.fork() == 0:
        with open(_marker + ".tmp", "w") as stream:
            stream.write(os.readlink("/proc/self"))  # its pid as the run sees it (also in a namespace)
        os.replace(_marker + ".tmp", _marker)
        while True:
            time.sleep(0.05)
    os._exit(0)
os.waitpid(_pid, 0)
while not os.path.exists(_marker):
    time.sleep(0.01)
"""


SIGNAL_SERVER = """
import os, signal, time
_server = int(os.environ.get("TOKCOMPAT_TEST_SERVER_PID") or os.getppid())
def _say(outcome):
    with open({outcome!r} + ".tmp", "w") as stream:
        stream.write(outcome)
    os.replace({outcome!r} + ".tmp", {outcome!r})
_say("sent")  # first: once its server is gone the run may kill this attempt at any moment
try:
    os.kill(_server, signal.{name})
    _outcome = "sent"
except OSError as error:
    _outcome = type(error).__name__
    _say(_outcome)
_deadline = time.monotonic() + 60
while _outcome == "sent" and time.monotonic() < _deadline:  # the signal has struck before the attempt
    try:  # goes on, however loaded the machine (a killed server takes a while to exit)
        with open(f"/proc/{{_server}}/stat") as _stream:
            _state = _stream.read().rpartition(")")[2].split()[0]
    except OSError:
        break
    if _state in {settled!r}:
        break
    time.sleep(0.01)
"""
SETTLED = {"SIGKILL": "ZX", "SIGSTOP": "Tt"}
"""The server's state once the signal has struck: dead (a zombie until the run reaps it), or stopped."""


@linux_only
def test_a_setsid_grandchild_after_a_double_fork_dies_with_its_attempt(
    containment: str, tmp_path: Path
) -> None:
    marker = tmp_path / "grandchild.pid"
    folder = toys.hostile_remote_toy(tmp_path / "escapes", ESCAPE.format(marker=str(marker)))
    judgement = judge_within(folder, trust_remote_code=True)
    assert judgement.verdict == Verdict.AUTO_MAP  # the attempt itself is fine: only its grandchild is hostile
    wait_for(marker)
    grandchild = int(marker.read_text(encoding="utf-8"))
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(grandchild), f"the grandchild {grandchild} outlived its attempt ({containment})"


@linux_only
def test_a_grandchild_dies_with_its_attempt_even_when_the_attempt_kills_its_fork_server(
    containment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert child._SERVER is not None
    monkeypatch.setenv("TOKCOMPAT_TEST_SERVER_PID", str(child._SERVER.process.pid))
    marker, outcome = tmp_path / "grandchild.pid", tmp_path / "outcome"
    prelude = ESCAPE.format(marker=str(marker)) + SIGNAL_SERVER.format(
        name="SIGKILL", outcome=str(outcome), settled=SETTLED["SIGKILL"]
    )
    judgement = judge_within(toys.hostile_remote_toy(tmp_path / "kills", prelude), trust_remote_code=True)
    grandchild = int(marker.read_text(encoding="utf-8"))
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(grandchild), (
        f"the grandchild {grandchild} outlived its attempt and its server ({containment})"
    )
    remote = judgement.attempt("auto_map")
    assert remote is not None
    if containment == reaper.NAMESPACE:  # the server is out of its reach
        assert outcome.read_text(encoding="utf-8") == "ProcessLookupError"
        assert judgement.verdict == Verdict.AUTO_MAP
        return
    assert outcome.read_text(encoding="utf-8") == "sent"
    assert (remote.status, judgement.verdict) == (AttemptStatus.NOT_CHECKED, Verdict.NOT_CHECKED)
    assert "the judge's fork server died during the attempt (killed by signal SIGKILL)" in (
        remote.detail or ""
    )
    assert judge_within(toys.native_toy(tmp_path / "after")).verdict == Verdict.NATIVE


@linux_only
def test_the_liveness_check_sees_a_setsid_grandchild_that_nothing_contains(tmp_path: Path) -> None:
    """Control: the same double fork from this process (no attempt around it) leaves a living grandchild."""
    marker = tmp_path / "grandchild.pid"
    pid = os.fork()
    if pid == 0:
        try:
            exec(ESCAPE.format(marker=str(marker)), {})
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    wait_for(marker)
    grandchild = int(marker.read_text(encoding="utf-8"))
    try:
        assert alive(grandchild)
    finally:
        os.kill(grandchild, signal.SIGKILL)


@linux_only
def test_an_attempt_that_stops_its_fork_server_is_not_checked_and_the_server_replaced(
    containment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert child._SERVER is not None
    server = child._SERVER.process.pid
    monkeypatch.setenv("TOKCOMPAT_TEST_SERVER_PID", str(server))
    marker = tmp_path / "outcome"
    folder = toys.hostile_remote_toy(
        tmp_path / "stops",
        SIGNAL_SERVER.format(name="SIGSTOP", outcome=str(marker), settled=SETTLED["SIGSTOP"]),
    )
    started = time.monotonic()
    judgement = judge_within(folder, trust_remote_code=True, limits=Limits(load_timeout=3))
    assert time.monotonic() - started < 30
    remote = judgement.attempt("auto_map")
    assert remote is not None
    if containment == reaper.NAMESPACE:  # from inside its namespace the code cannot even see the server
        assert marker.read_text(encoding="utf-8") == "ProcessLookupError"
        assert (judgement.verdict, remote.status) == (Verdict.AUTO_MAP, AttemptStatus.OK)
        assert not reaper.stopped(server) and child._SERVER.process.pid == server
        return
    assert marker.read_text(encoding="utf-8") == "sent"
    assert (judgement.verdict, remote.status) == (Verdict.NOT_CHECKED, AttemptStatus.NOT_CHECKED)
    assert (remote.detail or "").startswith(
        "not checked: the judge's fork server was stopped during the attempt"
    )
    assert "it and everything it started were killed, and it was replaced" in (remote.detail or "")
    assert child._SERVER.process.poll() is not None, "the stopped server was not killed"
    after = judge_within(toys.native_toy(tmp_path / "after"))
    assert after.verdict == Verdict.NATIVE and child._SERVER.process.pid != server


@linux_only
def test_a_fork_server_stopped_from_outside_mid_attempt_never_hangs_the_run(tmp_path: Path) -> None:
    marker = tmp_path / "reached"
    prelude = f"import time\nopen({str(marker)!r}, 'w').close()\ntime.sleep(1.0)\n"
    folder = toys.hostile_remote_toy(tmp_path / "slow", prelude)
    judge_folder(toys.native_toy(tmp_path / "warm"))  # the server is up: its pid is known before the attempt
    assert child._SERVER is not None
    server = child._SERVER.process.pid

    def stop_it() -> None:
        wait_for(marker)
        os.kill(server, signal.SIGSTOP)

    stopper = threading.Thread(target=stop_it, daemon=True)
    stopper.start()
    judgement = judge_within(folder, trust_remote_code=True, limits=Limits(load_timeout=3))
    stopper.join(5)
    remote = judgement.attempt("auto_map")
    assert remote is not None and remote.status == AttemptStatus.NOT_CHECKED
    assert "fork server" in (remote.detail or "") and "stopped" in (remote.detail or "")
    assert judgement.verdict == Verdict.NOT_CHECKED
    assert judge_within(toys.native_toy(tmp_path / "after")).verdict == Verdict.NATIVE


@linux_only
def test_a_fork_server_slowed_past_a_second_is_not_dead_however_short_the_time_limit(tmp_path: Path) -> None:
    """A loaded machine: the server is not scheduled for 1.5 s while the parent waits for its answer. The
    attempt's own limit (0.001 s) is what strikes, never a false 'fork server did not answer'."""
    judge_folder(toys.native_toy(tmp_path / "warm"))
    assert child._SERVER is not None
    server = child._SERVER.process.pid

    def resume() -> None:
        with contextlib.suppress(ProcessLookupError):  # gone: the run took it for dead and replaced it
            os.kill(server, signal.SIGCONT)

    os.kill(server, signal.SIGSTOP)
    timer = threading.Timer(1.5, resume)
    timer.start()
    try:
        judgement = judge_within(toys.native_toy(tmp_path / "slow"), limits=Limits(load_timeout=0.001))
    finally:
        timer.join()
        resume()
    attempt = judgement.attempt("native")
    assert attempt is not None and attempt.status == AttemptStatus.TIMEOUT, attempt
    assert "took longer than 0.001 s" in (attempt.detail or "") and "fork server" not in (
        attempt.detail or ""
    )
    assert child._SERVER.process.pid == server, "a slow server was replaced as if it were dead"


def test_a_fork_server_that_never_answers_counts_as_dead_at_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reads from the server are bounded: a silent one raises ServerUnresponsive, never blocks."""
    ours, theirs = socket.socketpair()
    fake = child._Server.__new__(child._Server)
    fake.sock = ours
    fake.process = type("P", (), {"pid": os.getpid()})()  # not stopped: the state says hung
    started = time.monotonic()
    with pytest.raises(child.ServerUnresponsive, match="hung"):
        fake.reply(0.2)
    assert 0.15 < time.monotonic() - started < 2
    theirs.sendall(child.encode_frame({"pid": 7}))
    assert fake.reply(0.2) == {"pid": 7}  # control: an answer within the limit is read
    ours.close()
    theirs.close()


# ---- class 3: results ---------------------------------------------------------------------------------

FORGE = """
import json, os, struct
_marker = {marker!r}

def _frame(message):
    body = json.dumps(message).encode()
    return struct.pack(">I", len(body)) + body

_pipes = []
for _name in os.listdir("/proc/self/fd"):
    try:
        if int(_name) > 2 and os.readlink(f"/proc/self/fd/{{_name}}").startswith("pipe:"):
            _pipes.append(int(_name))
    except OSError:
        pass
with open(_marker + ".tmp", "w") as stream:  # first: a forged end may end the attempt at once
    stream.write(str(len(_pipes)))
os.replace(_marker + ".tmp", _marker)
for _fd in _pipes:
    try:
        os.write(_fd, {payload})
    except OSError:
        pass
{after}
"""

_CLAIM = (
    '{"remedy": "%s", "loaded": true, "detail": null, "tokenizer_class": "GPT2TokenizerFast", '
    '"warnings": [], "seconds": 0.0, "loaded_as": null, "undecided": false, "observations": null}'
)
FORGERIES = {
    "another-remedy": (
        f"_frame({{'kind': 'attempt', 'attempt': json.loads({_CLAIM % 'native'!r})}})",
        "os._exit(0)",
        "an 'attempt' frame for remedy 'native', not 'auto_map'",
    ),
    "a-second-attempt": (
        f"_frame({{'kind': 'attempt', 'attempt': json.loads({_CLAIM % 'auto_map'!r})}})",
        "",
        "a second 'attempt' frame",
    ),
    "an-early-end": ("_frame({'kind': 'end'})", "", "an end frame before any attempt frame"),
    "after-the-end": (
        f"_frame({{'kind': 'attempt', 'attempt': json.loads({_CLAIM % 'auto_map'!r})}}) + _frame({{'kind': 'end'}})"
        " + _frame({'kind': 'phase', 'phase': 'encode'})",
        "",
        "frame after its end frame",
    ),
    "a-forged-truth": (
        "_frame({'kind': 'truth', 'texts': ['x'], 'truth': None})",
        "",
        "a 'truth' frame after the load began",
    ),
    "malformed": ("struct.pack('>I', 5) + b'{nope'", "", "not JSON"),
    "oversized": ("struct.pack('>I', 2 ** 31)", "", "over the"),
}


@pytest.mark.parametrize(("payload", "after", "seen"), FORGERIES.values(), ids=FORGERIES.keys())
def test_a_frame_that_is_not_the_jobs_makes_the_attempt_not_checked(
    tmp_path: Path, payload: str, after: str, seen: str
) -> None:
    marker = tmp_path / "written"
    prelude = FORGE.format(marker=str(marker), payload=payload, after=after)
    judgement = judge_within(toys.hostile_remote_toy(tmp_path / "forges", prelude), trust_remote_code=True)
    assert int(marker.read_text(encoding="utf-8")) >= 1, "the forgery found no pipe to write to"
    remote = judgement.attempt("auto_map")
    assert remote is not None and remote.status == AttemptStatus.NOT_CHECKED
    assert seen in (remote.detail or "") and "nothing it reported is used" in (remote.detail or "")
    assert judgement.verdict == Verdict.NOT_CHECKED
    assert [a.remedy for a in judgement.attempts] == ["native", "auto_map"]  # the ladder stops undecided


def test_the_forgery_setup_writes_to_the_result_pipe_and_an_honest_frame_passes(tmp_path: Path) -> None:
    """Control: the same code writing nothing (an empty payload) leaves the verdict auto_map."""
    marker = tmp_path / "written"
    prelude = FORGE.format(marker=str(marker), payload="b''", after="")
    judgement = judge_within(toys.hostile_remote_toy(tmp_path / "honest", prelude), trust_remote_code=True)
    assert int(marker.read_text(encoding="utf-8")) >= 1
    assert judgement.verdict == Verdict.AUTO_MAP


def test_check_expect_native_cannot_be_turned_green_by_a_forged_native_frame(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "written"
    payload, after, _ = FORGERIES["another-remedy"]
    folder = toys.hostile_remote_toy(
        tmp_path / "forges", FORGE.format(marker=str(marker), payload=payload, after=after)
    )
    code = cli.main(["check", str(folder), "--trust-remote-code", "--expect", "native", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert (code, record["verdict"]) == (ExitCode.NOT_CHECKED, "not-checked")


def _job(**overrides: Any) -> Job:
    fields: dict[str, Any] = {
        "folder": "/x",
        "remedy": "auto_map",
        "alias": None,
        "registry": {},
        "extra_texts": [],
        "golden_path": None,
        "record": False,
        "view": {},
        "texts": ["a"],
        "questions": None,
        "truth_error": None,
        "environ": {},
        "cwd": "/",
        "sys_path": [],
        "max_memory_mb": None,
    }
    return Job(**{**fields, **overrides})


def _attempt(remedy: str = "auto_map") -> dict[str, Any]:
    return {"kind": "attempt", "attempt": json.loads(_CLAIM % remedy)}


def test_binding_accepts_the_protocol_of_each_job_in_order() -> None:
    """Control for the binding: the frames a child of each job sends are all accepted."""
    first = Binding(_job(remedy="native", view=None, texts=None))
    frames = [
        {"kind": "view"},
        {"kind": "truth"},
        {"kind": "phase", "phase": "load"},
        {"kind": "phase", "phase": "encode"},
        _attempt("native"),
        {"kind": "end"},
    ]
    assert all(first.accept(frame) for frame in frames) and first.problem is None
    first.finish(ended=True)
    assert first.problem is None
    prepare_only = Binding(_job(remedy=None, view=None, texts=None))
    assert all(prepare_only.accept(f) for f in ({"kind": "view"}, {"kind": "truth"}, {"kind": "end"}))


@pytest.mark.parametrize(
    ("job", "frames", "problem"),
    [
        ({}, [_attempt(), _attempt()], "a second 'attempt' frame"),
        ({}, [_attempt("alias")], "for remedy 'alias', not 'auto_map'"),
        ({}, [_attempt(), {"kind": "end"}, {"kind": "phase", "phase": "load"}], "after its end frame"),
        ({}, [{"kind": "phase", "phase": "load"}, {"kind": "end"}], "an end frame before any attempt frame"),
        ({}, [{"kind": "view"}], "whose view the parent already had"),
        (
            {"view": None, "texts": None},
            [{"kind": "phase", "phase": "load"}, {"kind": "truth"}],
            "after the load began",
        ),
        ({}, [{"kind": "registry"}], "unknown kind"),
        ({}, [{"kind": "registers", "registers": []}], "calls no client loader"),
        ({}, [{"kind": "differing", "differing": 0, "compared": 1}], "unknown kind"),
        ({"remedy": None}, [_attempt()], "asked for no attempt"),
        (
            {},
            [{"kind": "attempt", "attempt": {**_attempt()["attempt"], "loaded": "yes"}}],
            "does not say whether the tokenizer loaded",
        ),
        (
            {},
            [{"kind": "attempt", "attempt": {**_attempt()["attempt"], "status": "ok"}}],
            "claims a status or parity",
        ),
    ],
)
def test_binding_refuses_frames_that_are_not_the_jobs(
    job: dict[str, Any], frames: list[dict[str, Any]], problem: str
) -> None:
    binding = Binding(_job(**job))
    results = [binding.accept(frame) for frame in frames]
    assert results[-1] is False and all(results[:-1])
    assert problem in (binding.problem or "")


def test_an_attempt_frame_without_its_end_frame_is_not_trusted() -> None:
    binding = Binding(_job())
    assert binding.accept(_attempt())
    binding.finish(ended=False)
    assert "not followed by an end frame" in (binding.problem or "")


# ---- class 5: limits and unreadable input -------------------------------------------------------------

LIMIT_TEMPLATES = {
    "memory": "{{ 'x' * (2 ** 62) }}",
    "recursion": "{% macro deeper() %}{{ deeper() }}{% endmacro %}{{ deeper() }}",
}


def with_template(folder: Path, template: str) -> Path:
    config = folder / "tokenizer_config.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    config.write_text(json.dumps({**data, "chat_template": template}), encoding="utf-8")
    return folder


@pytest.mark.parametrize("template", LIMIT_TEMPLATES.values(), ids=LIMIT_TEMPLATES.keys())
def test_a_resource_limit_while_rendering_the_chat_template_is_not_checked(
    tmp_path: Path, template: str
) -> None:
    judgement = judge_folder(with_template(toys.native_toy(tmp_path / "limit"), template))
    chat = judgement.parity.dimensions["chat_template"]
    assert chat["status"] == "not-checked", chat
    assert "hit a resource limit" in chat["reason"]
    assert ("MemoryError" in chat["reason"]) or ("RecursionError" in chat["reason"])


def test_check_says_which_dimension_a_limit_left_unchecked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The verdict is decided by ids, so ``--expect native`` still holds; but the chat template the limit
    stopped is named as not checked, never left out of what ``check`` says (the control: a template both
    sides reject is a match, and nothing is said to be unchecked)."""
    limited = with_template(toys.native_toy(tmp_path / "limit"), LIMIT_TEMPLATES["recursion"])
    assert cli.main(["check", str(limited), "--expect", "native"]) == ExitCode.OK
    said = capsys.readouterr().out
    assert "not checked: chat_template: " in said and "hit a resource limit" in said, said
    rejecting = with_template(toys.native_toy(tmp_path / "rejects"), "{{ raise_exception('no') }}")
    assert cli.main(["check", str(rejecting), "--expect", "native"]) == ExitCode.OK
    assert "not checked: chat_template" not in capsys.readouterr().out


def test_a_template_that_rejects_on_both_sides_still_matches(tmp_path: Path) -> None:
    """Control: a genuine rejection by both sides (raise_exception) is the same answer, a match."""
    template = "{{ raise_exception('no conversations here') }}"
    judgement = judge_folder(with_template(toys.native_toy(tmp_path / "rejects"), template))
    assert judgement.parity.dimensions["chat_template"]["status"] == "match"
    assert judgement.verdict == Verdict.NATIVE


def _dangling(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.parent / "blobs" / "deleted-0123abcd")


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.unlink()
    path.mkdir()


SPECIAL = {
    "dangling-symlink": (_dangling, "which does not exist (a deleted hub cache blob?)"),
    "fifo": (_fifo, "is a FIFO (named pipe), not a regular file"),
    "directory": (_directory, "is a directory, not a regular file"),
}


@pytest.mark.parametrize(("make", "said"), SPECIAL.values(), ids=SPECIAL.keys())
@pytest.mark.parametrize("name", ["tokenizer.json", "tokenizer_config.json"])
def test_a_special_or_dangling_tokenizer_file_is_not_checked_and_fails_expect_broken(
    tmp_path: Path, make: Any, said: str, name: str
) -> None:
    folder = toys.native_toy(tmp_path / "special")
    make(folder / name)
    matrix = tmp_path / "models.yaml"
    text = "cases:\n  - {id: special, snapshot: special, expect: broken}\n"
    matrix.write_text(text, encoding="utf-8")
    started = time.monotonic()
    outcome = evaluate(
        Request(parse_matrix(text, matrix).cases[0], settings=JudgeSettings(limits=Limits(load_timeout=5)))
    )
    assert time.monotonic() - started < 4, "the judge waited on the file instead of refusing it"
    assert (outcome.status, outcome.verdict) == (FAILED, "not-checked")
    assert f"{folder / name}" in outcome.message and said in outcome.message
    assert "\n" not in outcome.message


def test_expect_broken_still_passes_on_a_truly_broken_checkpoint(tmp_path: Path) -> None:
    """Control: the same matrix passes where nothing loads the (regular, readable) files."""
    toys.broken_toy(tmp_path / "special")
    matrix = tmp_path / "models.yaml"
    text = "cases:\n  - {id: special, snapshot: special, expect: broken}\n"
    matrix.write_text(text, encoding="utf-8")
    outcome = evaluate(Request(parse_matrix(text, matrix).cases[0]))
    assert (outcome.status, outcome.verdict) == ("passed", "broken")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_tokenizer_file_is_not_checked(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "locked")
    (folder / "tokenizer.json").chmod(0)
    judgement_error = None
    try:
        judge_folder(folder)
    except Exception as error:
        judgement_error = str(error)
    assert judgement_error is not None and "cannot be read" in judgement_error
