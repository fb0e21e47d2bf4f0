"""`tokcompat check` and `tokcompat resolve`: exit statuses and the JSON record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tokcompat.cli import main
from tests.helpers import toys


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
    assert main(["check", str(folder)]) == 0  # the backend override loads its tokenizer.json, no code
    assert not canary.exists()
    assert main(["check", str(folder), "--trust-remote-code"]) == 0
    assert canary.exists()


def test_check_an_unreadable_checkpoint_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = toys.native_toy(tmp_path / "bad")
    (folder / "config.json").write_text("{")
    assert main(["check", str(folder)]) == 2
    assert "config.json is not valid JSON" in capsys.readouterr().err


def test_check_a_name_that_is_neither_folder_nor_repo_exits_2(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "no such model"]) == 2  # cannot be a hub repo id either
    err = capsys.readouterr().err
    assert "'no such model' names no checkpoint here; tried, in order: a folder" in err
    assert "a hub repo id (not one: " in err and "served_names: [no such model]" in err
    # A bare name that can be a hub repo id is looked up on the hub: offline and not cached, not checked.
    assert main(["check", "no-such-model"]) == 3
    err = capsys.readouterr().err
    assert "'no-such-model' could not be had here; tried, in order: a folder" in err
    assert "a hub repo id (no-such-model@main is not in the hub cache" in err
    assert "deepseek" not in err.lower(), "the hints cite the name given, not an example"


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
    assert main(["resolve", "mystery model"]) == 2
    assert "'mystery model' names no checkpoint here; tried, in order" in capsys.readouterr().err
    assert main(["resolve", "--json", "mystery model"]) == 2
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["name"] == "mystery model" and "tried, in order" in document["error"]
    assert "tried, in order" in captured.err


def test_bad_arguments_exit_2() -> None:
    assert main(["check"]) == 2


# ---- one resolver, one evaluator: names, cases and exit statuses ------------------------------------------


def test_check_uses_the_given_matrix_for_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toys.native_toy(tmp_path / "native")
    matrix = tmp_path / "models.yaml"
    matrix.write_text(
        "version: 1\ncases:\n  - {id: mine, snapshot: native, expect: alias, texts: [mine only]}\n"
    )
    assert (
        main(["check", "mine", "--matrix", str(matrix), "--json"]) == 1
    )  # native, but the case expects alias
    record = json.loads(capsys.readouterr().out)
    assert (record["id"], record["verdict"], record["expected"]) == ("mine", "native", "alias")
    assert record["alarms"][0]["kind"] == "unexpected-verdict"
    assert main(["check", str(tmp_path / "native"), "--json"]) == 0  # the same folder, without its case
    assert (
        record["probe_texts"] == json.loads(capsys.readouterr().out)["probe_texts"] + 1
    )  # texts: [mine only]


def test_an_uncached_hub_id_is_not_checked_exit_3_with_a_record(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "owner/absent", "--json"]) == 3
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert (record["status"], record["verdict"], record["id"]) == ("not-checked", None, "owner/absent")
    assert "not in the hub cache" in record["message"] and "not in the hub cache" in captured.err
    assert main(["check", "owner/absent"]) == 3


def test_bad_input_prints_a_record_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "no such model", "--json"]) == 2
    record = json.loads(capsys.readouterr().out)
    assert (record["status"], record["failure"]) == ("failed", "bad-input")
    assert "Pass a checkpoint folder or the tokenizer's hub repo id" in record["message"]


def test_a_case_that_cannot_be_had_keeps_its_identity_in_the_record(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # its repo id: the hub (offline, nothing cached), never its stand-in snapshot
    assert main(["check", "moonshotai/Kimi-K2-Instruct", "--json"]) == 3
    record = json.loads(capsys.readouterr().out)
    assert (record["id"], record["repo"], record["expected"], record["status"]) == (
        "kimi-k2-instruct",
        "moonshotai/Kimi-K2-Instruct",
        "auto_map",
        "not-checked",
    )
    assert "stand-in tokenizer data" in record["message"]
