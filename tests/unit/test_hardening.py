"""Issue 21, second round: what the independent hostile set still broke.

Each test pairs the attack with a control that shows the setup sees what it looks for.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pytest_tokcompat import credentials
from pytest_tokcompat.errors import CheckpointError
from pytest_tokcompat.judge.inputs import check_checkpoint_files
from tests.helpers import toys

pytest_plugins = ["pytester"]


@pytest.mark.parametrize("name", ["OPENAI_KEY", "DEEPSEEK_KEY", "GH_PAT", "PAT", "REGISTRY_PASS", "KEY"])
def test_key_pat_and_pass_names_are_credentials(name: str) -> None:
    environ = {name: "s3cr3t-value-0123456789", "HOSTILE_PLAIN": "plain-value-0123456789"}
    assert credentials.is_credential_name(name, environ)
    kept = credentials.without_credentials(environ)
    assert name not in kept
    assert kept["HOSTILE_PLAIN"] == "plain-value-0123456789"  # control: the channel keeps plain names
    assert (
        credentials.scrub("x s3cr3t-value-0123456789 y", credentials.credential_values(environ)) == "x *** y"
    )


@pytest.mark.parametrize(
    "name",
    [
        "HF_HUB_DISABLE_TELEMETRY",
        "HF_HUB_DISABLE_PROGRESS_BARS",
        "SSH_KEY_PATH",
        "GH_PAT_FILE",
        "API_KEY_DIR",
        "MONKEY",
        "KEYBOARD",
        "PATH",
        "PATTERN",
        "PASSTHROUGH",
        "TOKCOMPAT_BYPASS",
        "SORT_KEYS",
    ],
)
def test_look_alike_names_are_not_credentials(name: str) -> None:
    environ = {name: "not-a-secret-0123456789"}
    assert not credentials.is_credential_name(name, environ)
    assert credentials.scrub("not-a-secret-0123456789", credentials.credential_values(environ)) != "***"


def test_short_flag_values_stay_unmasked() -> None:
    """``HF_HUB_DISABLE_IMPLICIT_TOKEN=1`` names a token but holds a flag: the min length keeps "1" readable."""
    environ = {"HF_HUB_DISABLE_IMPLICIT_TOKEN": "1", "GH_PAT": "ghp_0123456789abcdef"}
    assert credentials.scrub("1 ghp_0123456789abcdef", credentials.credential_values(environ)) == "1 ***"


ANSI_RAISER = """
import sys
print("\\x1b[2J\\x1b]0;pwned\\x07REMOTE-OUT")
print("\\x1b[31mREMOTE-ERR\\x1b[0m", file=sys.stderr)
raise RuntimeError("\\x1b[2JREMOTE-EXC @octocat #4242")
"""


def test_remote_exception_escapes_reach_the_terminal_escaped(pytester: pytest.Pytester) -> None:
    root = pytester.path
    toys.hostile_remote_toy(root / "ansi", ANSI_RAISER)
    (root / "models.yaml").write_text(
        "version: 1\ncases:\n  - {id: ansi, snapshot: ansi, expect: native, trust_remote_code: true}\n",
        encoding="utf-8",
    )
    result = pytester.runpytest("--tokcompat", "--tokcompat-matrix=models.yaml", "-p", "no:randomly", "-rA")
    said = result.stdout.str() + result.stderr.str()
    assert "REMOTE-EXC" in said  # control: the remote exception reached the terminal
    assert "\\x1b[2JREMOTE-EXC" in said  # shown escaped
    assert "\x1b" not in said


def _with_specials(folder: Path) -> Path:
    """A FIFO ``added_tokens.json`` (a file slow tokenizers read, outside the named list) and a FIFO in
    a subfolder (``additional_chat_templates/``, which transformers reads)."""
    os.mkfifo(folder / "added_tokens.json")
    (folder / "additional_chat_templates").mkdir()
    os.mkfifo(folder / "additional_chat_templates" / "tool.jinja")
    return folder


def test_a_special_file_anywhere_in_the_folder_is_refused_without_blocking(tmp_path: Path) -> None:
    folder = _with_specials(toys.native_toy(tmp_path / "fifo"))
    with pytest.raises(CheckpointError, match=r"added_tokens\.json is a FIFO \(named pipe\)"):
        check_checkpoint_files(folder, 512)
    (folder / "added_tokens.json").unlink()
    with pytest.raises(CheckpointError, match=r"tool\.jinja is a FIFO"):
        check_checkpoint_files(folder, 512)


@pytest.mark.parametrize("name", ["tokenizer.json", "tekken.json", "tiktoken.model"])
def test_every_tokenizer_file_is_held_to_the_size_cap(tmp_path: Path, name: str) -> None:
    """Mistral's ``tekken.json`` is parsed like ``tokenizer.json``: over the cap it is refused before
    parsing; the control, a cap it fits under, lets the same folder through."""
    folder = toys.native_toy(tmp_path / "big")
    (folder / name).write_bytes(b" " * (2 * 1024 * 1024))
    with pytest.raises(CheckpointError, match=rf"{re.escape(name)} is 2 MB, over the 1 MB cap"):
        check_checkpoint_files(folder, 1)
    check_checkpoint_files(folder, 3)


def test_a_dangling_link_anywhere_in_the_folder_is_refused(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "dangling")
    (folder / "added_tokens.json").symlink_to(tmp_path / "deleted-blob")
    with pytest.raises(
        CheckpointError, match=r"added_tokens\.json is a symlink to something that does not exist"
    ):
        check_checkpoint_files(folder, 512)


def test_links_to_regular_files_and_folders_elsewhere_are_no_alarm(tmp_path: Path) -> None:
    """Control: a hub cache snapshot is links out of the folder; extra files and subfolders are normal."""
    folder = toys.native_toy(tmp_path / "linked")
    blob = tmp_path / "blobs" / "0123abcd"
    blob.parent.mkdir()
    blob.write_text("{}", encoding="utf-8")
    (folder / "added_tokens.json").symlink_to(blob)
    (folder / "extras").mkdir()
    (folder / "extras" / "notes.txt").write_text("x", encoding="utf-8")
    (folder / "loop").symlink_to(folder)
    check_checkpoint_files(folder, 512)


def test_expect_broken_fails_on_a_special_file_the_named_list_misses(pytester: pytest.Pytester) -> None:
    root = pytester.path
    toys.broken_toy(root / "plain_broken")
    _with_specials(toys.broken_toy(root / "fifo_broken"))
    (root / "models.yaml").write_text(
        "version: 1\ncases:\n"
        "  - {id: plain_broken, snapshot: plain_broken, expect: broken}\n"
        "  - {id: fifo_broken, snapshot: fifo_broken, expect: broken}\n",
        encoding="utf-8",
    )
    result = pytester.runpytest(
        "--tokcompat",
        "--tokcompat-matrix=models.yaml",
        "--tokcompat-load-timeout=30",
        "-p",
        "no:randomly",
        "-rA",
    )
    said = result.stdout.str()
    assert "PASSED models.yaml::plain_broken" in said  # control: the broken toy alone is broken
    assert "FAILED models.yaml::fifo_broken" in said
    assert "added_tokens.json is a FIFO" in said


def test_withheld_removes_credentials_and_restores_them_whatever_happens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from huggingface_hub import constants

    monkeypatch.setenv("HF_TOKEN", "hf_withheldSecret0123")
    monkeypatch.setenv("GH_PAT", "ghp_withheldSecret0123")
    monkeypatch.setenv("HOSTILE_PLAIN", "plain")
    monkeypatch.delenv("HF_TOKEN_PATH", raising=False)
    token_path = constants.HF_TOKEN_PATH
    with pytest.raises(RuntimeError), credentials.withheld():
        with credentials.withheld():  # nested: the inner exit restores nothing yet
            pass
        assert "HF_TOKEN" not in os.environ and "GH_PAT" not in os.environ
        assert os.environ["HOSTILE_PLAIN"] == "plain"  # control: plain variables stay
        assert os.environ["HF_TOKEN_PATH"] == os.devnull == constants.HF_TOKEN_PATH
        raise RuntimeError("the load failed")
    assert os.environ["HF_TOKEN"] == "hf_withheldSecret0123"
    assert os.environ["GH_PAT"] == "ghp_withheldSecret0123"
    assert "HF_TOKEN_PATH" not in os.environ
    assert token_path == constants.HF_TOKEN_PATH


FIXTURE_SPY = """
import os
with open(os.environ["TOKCOMPAT_TEST_SPY"], "a", encoding="utf-8") as _spy:
    _spy.write(f"{os.getpid()} {os.environ.get('HF_TOKEN')} {os.environ.get('HF_TOKEN_PATH')}\\n")
"""


def test_the_fixtures_reload_runs_remote_code_without_credentials(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = pytester.path
    spy = root / "spy.txt"
    monkeypatch.setenv("TOKCOMPAT_TEST_SPY", str(spy))
    monkeypatch.setenv("HF_TOKEN", "hf_fixtureSecret0123456")
    toys.hostile_remote_toy(root / "leak", FIXTURE_SPY)
    (root / "models.yaml").write_text(
        "version: 1\ncases:\n  - {id: leak, snapshot: leak, expect: auto_map, trust_remote_code: true}\n",
        encoding="utf-8",
    )
    (root / "test_mine.py").write_text(
        "import os\n\n\ndef test_it(tokcompat_case, tokcompat_tokenizer):\n"
        "    with open(os.environ['TOKCOMPAT_TEST_SPY'], 'a', encoding='utf-8') as spy:\n"
        "        spy.write(f\"test {os.getpid()} {os.environ.get('HF_TOKEN')}\\n\")\n",
        encoding="utf-8",
    )
    result = pytester.runpytest_subprocess(
        "--tokcompat", "--tokcompat-matrix=models.yaml", "-p", "no:randomly", "test_mine.py"
    )
    assert result.ret == 0
    lines = spy.read_text(encoding="utf-8").splitlines()
    test_pid = next(line.split()[1] for line in lines if line.startswith("test "))
    in_test_process = [line for line in lines if line.split()[0] == test_pid]
    assert in_test_process  # control: the remote code ran in the test process (the fixture's reload)
    assert in_test_process == [f"{test_pid} None {os.devnull}"] * len(in_test_process)
    assert f"test {test_pid} hf_fixtureSecret0123456" in lines  # restored for the test itself


@pytest.mark.parametrize("name", ["config.json", "tokenizer_config.json"])
def test_resolving_with_remote_code_opted_in_never_opens_a_fifo(tmp_path: Path, name: str) -> None:
    """``check --trust-remote-code`` reads the auto_map before the judge's file check: it must not block."""
    import threading

    from pytest_tokcompat.sources.remote_code import refuse_cross_repo_code

    folder = toys.native_toy(tmp_path / "fifo")
    (folder / name).unlink()
    os.mkfifo(folder / name)
    done = threading.Event()
    worker = threading.Thread(
        target=lambda: (refuse_cross_repo_code(folder, "the test"), done.set()), daemon=True
    )
    worker.start()
    if not done.wait(10):
        with open(folder / name, "w", encoding="utf-8") as unblock:  # let the reader go, then fail
            unblock.write("{}")
        pytest.fail(f"reading {name} (a FIFO) blocked")
    with pytest.raises(CheckpointError, match="is a FIFO"):  # control: the judge's check still refuses it
        check_checkpoint_files(folder, 512)
