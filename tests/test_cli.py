"""`tokcompat check` and `tokcompat resolve`: exit statuses and the JSON record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import toys

from pytest_tokcompat.cli import main


def test_check_a_native_folder_prints_the_record_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = toys.native_toy(tmp_path / "native")
    assert main(["check", str(folder), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    for key in ("transformers_version", "model_type", "static", "verdict", "parity", "attempts", "alarms"):
        assert key in record
    assert (record["model_type"], record["verdict"], record["parity"]["status"]) == (
        "gpt2",
        "native",
        "match",
    )


def test_check_a_broken_folder_exits_1_and_lists_the_attempts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = toys.broken_toy(tmp_path / "broken")
    assert main(["check", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "verdict: broken" in out and "native    load-error" in out


def test_check_never_runs_remote_code_without_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = tmp_path / "canary"
    monkeypatch.setenv("TOKCOMPAT_CANARY", str(canary))
    folder = toys.remote_toy(tmp_path / "remote")
    assert main(["check", str(folder)]) == 1
    assert not canary.exists()
    assert main(["check", str(folder), "--trust-remote-code"]) == 0
    assert canary.exists()


def test_check_an_unreadable_checkpoint_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = toys.native_toy(tmp_path / "bad")
    (folder / "config.json").write_text("{")
    assert main(["check", str(folder)]) == 2
    assert "config.json is not valid JSON" in capsys.readouterr().err


def test_check_a_name_that_is_neither_folder_nor_repo_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "no-such-model"]) == 2
    assert "pass the tokenizer's repo" in capsys.readouterr().err


def test_check_with_an_expectation_raises_the_alarm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = toys.native_toy(tmp_path / "native")
    assert main(["check", str(folder), "--expect", "alias", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["alarms"][0]["kind"] == "unexpected-verdict"


def test_resolve_a_served_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resolve", "glm-5-nvfp4"]) == 0
    assert capsys.readouterr().out.startswith("glm-5-nvfp4 -> lukealonso/GLM-5-NVFP4")


def test_resolve_an_unknown_name_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resolve", "mystery-model"]) == 2
    assert "mystery-model" in capsys.readouterr().err


def test_bad_arguments_exit_2() -> None:
    assert main(["check"]) == 2
