"""Credentials: a checkpoint's code never sees them, and no text the run publishes carries them.

The hostile checkpoint prints what it can find of ``HF_TOKEN`` and raises an exception that
carries a secret it read another way (a file, standing for any route past the environment).
Each test has its control: a non-secret canary printed beside it shows the output is captured
(so the secret's absence means something), and the masked value shows it was masked, not lost.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_tokcompat import credentials
from pytest_tokcompat.ci.grid import load_reports, merge
from pytest_tokcompat.ci.issues_text import issue_texts
from pytest_tokcompat.ci.render import render
from pytest_tokcompat.judge import child
from tests.helpers import toys
from tests.helpers.ladder import judge_folder

pytest_plugins = ["pytester"]

SECRET = "hf_tokcompatSecretValue0123456789"
CANARY = "canary-not-a-secret-4711"

PRINTS_SECRETS = """
import os

_route = os.environ.get("TOKCOMPAT_TEST_SECRET_FILE")
_other = open(_route, encoding="utf-8").read() if _route else "-"
_proc = open("/proc/self/environ", "rb").read()
print("canary:", os.environ.get("TOKCOMPAT_TEST_CANARY"))
print("env HF_TOKEN:", os.environ.get("HF_TOKEN"), "| in /proc/self/environ:", b"HF_TOKEN=" in _proc)
print("read another way:", _other)
raise RuntimeError("remote code failed with " + _other)
"""


@pytest.fixture
def secret_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HF_TOKEN set in this process, the same value in a file the remote code reads, and a canary."""
    route = tmp_path / "secret.txt"
    route.write_text(SECRET, encoding="utf-8")
    monkeypatch.setenv("HF_TOKEN", SECRET)
    monkeypatch.setenv("TOKCOMPAT_TEST_SECRET_FILE", str(route))
    monkeypatch.setenv("TOKCOMPAT_TEST_CANARY", CANARY)
    return route


@pytest.mark.parametrize(
    ("name", "credential"),
    [
        ("HF_TOKEN", True),
        ("HUGGING_FACE_HUB_TOKEN", True),
        ("GITHUB_TOKEN", True),
        ("GH_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("OPENAI_API_KEY", True),
        ("PYPI_PASSWORD", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("HF_TOKEN_PATH", False),
        ("HF_HOME", False),
        ("TOKCOMPAT_CACHE", False),
    ],
)
def test_credential_names(name: str, credential: bool) -> None:
    assert credentials.is_credential_name(name, {}) is credential


def test_extra_credential_names_come_from_the_environment() -> None:
    environ = {credentials.EXTRA_NAMES_ENV: "ROBOT_SEED, deploy_seed"}
    assert credentials.is_credential_name("ROBOT_SEED", environ)
    assert credentials.is_credential_name("DEPLOY_SEED", environ)
    assert not credentials.is_credential_name("ROBOT_SEED", {})


def test_the_childrens_environment_has_no_credentials_and_no_token_file() -> None:
    kept = credentials.without_credentials({"HF_TOKEN": SECRET, "GH_TOKEN": "x" * 10, "PATH": "/bin"})
    assert kept["PATH"] == "/bin" and "HF_TOKEN" not in kept and "GH_TOKEN" not in kept
    assert kept["HF_TOKEN_PATH"] == credentials.os.devnull


def test_scrub_masks_values_in_nested_data_and_leaves_short_ones() -> None:
    secrets = credentials.credential_values({"HF_TOKEN": SECRET, "X_TOKEN": "1", "HF_TOKEN_PATH": "/nope"})
    assert secrets == (SECRET,)  # "1" is too short to mask; the path is not a secret
    data = {"a": [f"say {SECRET}!", 3], SECRET: (SECRET, None)}
    assert credentials.scrub_data(data, secrets) == {"a": ["say ***!", 3], "***": ("***", None)}


def test_a_spawned_attempt_starts_without_the_credentials_in_its_first_environment(
    tmp_path: Path, secret_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TOKCOMPAT_ISOLATION=spawn: the child's /proc/self/environ is the environment it was started with."""
    monkeypatch.setenv("TOKCOMPAT_ISOLATION", "spawn")
    judgement = judge_folder(
        toys.hostile_remote_toy(tmp_path / "leaky", PRINTS_SECRETS), trust_remote_code=True
    )
    attempt = judgement.attempt("auto_map")
    said = (attempt.stdout or "") if attempt is not None else ""
    assert f"canary: {CANARY}" in said  # control: the code ran in a spawned child and its output is captured
    assert "env HF_TOKEN: None | in /proc/self/environ: False" in said
    assert os.environ.get("HF_TOKEN") == SECRET  # and the parent has it back


def test_the_stored_hub_token_is_masked_too(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(SECRET + "\n", encoding="utf-8")
    assert credentials.credential_values({"HF_HOME": str(tmp_path)}) == (SECRET,)


def test_a_secret_cut_by_the_kept_tail_of_an_output_is_masked_too(secret_env: Path) -> None:
    """A child's output is kept as its last bytes: printed so that the cut falls inside the secret, the
    secret's end no longer equals the secret. Masked all the same; the control is a text whose start
    only looks like a short end of the secret."""
    from pytest_tokcompat.judge.wire import CAPTURE_BYTES, Tail

    secrets = (SECRET,)
    for cut in range(1, len(SECRET) - credentials.MIN_SECRET_LENGTH + 2):
        kept = SECRET[cut:] + "\nafter"
        assert credentials.scrub_cut(kept, secrets) == "***\nafter", cut
    short_end = SECRET[-(credentials.MIN_SECRET_LENGTH - 2) :]
    assert credentials.scrub_cut(short_end + " x", secrets) == short_end + " x"  # too short to tell
    tail = Tail()  # the output as a child's stdout is kept: the cut falls one character into the secret
    tail.feed(SECRET.encode() + b"\n" + b"y" * (CAPTURE_BYTES - len(SECRET)))
    assert bytes(tail.data).startswith(SECRET[1:].encode())  # control: the kept bytes hold the cut secret
    assert SECRET[1:] not in tail.text() and "1 earlier bytes dropped]\n***\ny" in tail.text()


def test_remote_code_cannot_read_hf_token_and_what_it_prints_is_masked(
    tmp_path: Path, secret_env: Path
) -> None:
    child._shutdown()  # the next fork server starts now, with HF_TOKEN in this process's environment
    judgement = judge_folder(
        toys.hostile_remote_toy(tmp_path / "leaky", PRINTS_SECRETS), trust_remote_code=True
    )
    attempt = judgement.attempt("auto_map")
    assert attempt is not None and attempt.status == "load-error"
    said = attempt.stdout or ""
    assert f"canary: {CANARY}" in said  # control: what the code prints is captured
    assert "env HF_TOKEN: None | in /proc/self/environ: False" in said
    assert "read another way: ***" in said  # masked, not dropped
    assert "***" in (attempt.detail or "")
    assert SECRET not in json.dumps(judgement.to_json())


def test_no_published_text_carries_the_secret(pytester: pytest.Pytester, secret_env: Path) -> None:
    root = pytester.path
    toys.hostile_remote_toy(root / "leaky", PRINTS_SECRETS)
    (root / "models.yaml").write_text(
        "version: 1\ncases:\n  - {id: leaky, snapshot: leaky, expect: auto_map, trust_remote_code: true}\n",
        encoding="utf-8",
    )
    result = pytester.runpytest(
        "--tokcompat", "--tokcompat-matrix=models.yaml", "--tokcompat-report=report.json", "-p", "no:randomly"
    )
    report = (root / "report.json").read_text(encoding="utf-8")
    assert CANARY in report  # control: the attempt's output reached the report
    grid = merge(load_reports([root / "report.json"]))
    assert grid.alarms  # control: an unexpected verdict, so there is an issue body to check
    published = {
        "report": report,
        "terminal": result.stdout.str() + result.stderr.str(),
        **{form: render(grid, form) for form in ("markdown", "html", "json")},
        "issues": json.dumps([text.to_json() for text in issue_texts(grid.alarms)]),
    }
    assert {name: SECRET in text for name, text in published.items()} == dict.fromkeys(published, False)


CI_FILES = ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STEP_SUMMARY", "GITHUB_STATE", "BASH_ENV")

SEES_CI_FILES = """
import json, os
_proc = open("/proc/self/environ", "rb").read()
_seen = {{name: [name in os.environ, (name + "=").encode() in _proc] for name in {names!r}}}
_seen["canary"] = [os.environ.get("TOKCOMPAT_TEST_CANARY"), b"TOKCOMPAT_TEST_CANARY=" in _proc]
with open({outcome!r}, "w") as _stream:
    json.dump(_seen, _stream)
"""


def test_ci_command_files_are_withheld_but_not_masked() -> None:
    environ = {name: f"/runner/_temp/{name.lower()}" for name in CI_FILES} | {"GITHUB_WORKSPACE": "/w"}
    kept = credentials.without_credentials(environ)
    assert [name for name in CI_FILES if name in kept] == []
    assert kept["GITHUB_WORKSPACE"] == "/w"  # control: other CI variables pass
    assert credentials.credential_values(environ) == ()  # paths, not secrets: nothing masked


def test_remote_code_finds_no_ci_command_file(
    tmp_path: Path, secret_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attempt that appends to ``GITHUB_ENV`` would set variables for the job's later steps."""
    for name in CI_FILES:
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    child._shutdown()  # the fork server starts with these in this process's environment
    outcome = tmp_path / "seen.json"
    code = SEES_CI_FILES.format(names=CI_FILES, outcome=str(outcome))
    judgement = judge_folder(toys.hostile_remote_toy(tmp_path / "ci", code), trust_remote_code=True)
    assert judgement.attempt("auto_map") is not None
    seen = json.loads(outcome.read_text(encoding="utf-8"))
    assert seen.pop("canary") == [CANARY, True]  # control: the parent's other variables reach the attempt
    assert seen == {name: [False, False] for name in CI_FILES}
