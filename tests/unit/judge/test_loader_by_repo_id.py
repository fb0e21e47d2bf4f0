"""A client's loader is called as the client calls it: by the hub repo id where the checkpoint has one.

The toy client below branches as aiperf 0.13.0's ``Tokenizer.from_pretrained`` does: on HF_HUB_OFFLINE
(then ``snapshot_download(name, local_files_only=True)``, which refuses a folder's path) and on whether
the name is a local folder. It writes what it was called with, so each test reads the branch it took.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat.ci.loaders import loader_text
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.sources.names import LoadTarget, lay_out_as_hub, served_offline
from tests.helpers.contract_toys import contract_toy
from tests.helpers.ladder import judge_folder

CLIENT = """
import json, os

def load(name, **kwargs):
    from transformers import AutoTokenizer
    from huggingface_hub import constants, snapshot_download

    offline = bool(os.environ.get("HF_HUB_OFFLINE"))
    seen = {"name": name, "isdir": os.path.isdir(name), "offline": offline, "kwargs": kwargs,
            "cache": os.environ.get("HF_HUB_CACHE"), "constants_cache": constants.HF_HUB_CACHE}
    with open(os.environ["TOYCLIENT_LOG"], "a", encoding="utf-8") as stream:
        stream.write(json.dumps(seen) + "\\n")
    if offline:  # aiperf's offline branch: the cached snapshot of the repo id, then its path
        return AutoTokenizer.from_pretrained(snapshot_download(name, local_files_only=True, **kwargs))
    return AutoTokenizer.from_pretrained(name, **kwargs)
"""
LOADER = ClientLoader("toy", "toy_client_by_id", "load", kwargs={"revision": "main"})


@pytest.fixture
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "client").mkdir()
    (tmp_path / "client" / "toy_client_by_id.py").write_text(CLIENT, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "client"))
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("TOYCLIENT_LOG", str(log))
    return log


def _judged(folder: Path, target: LoadTarget, log: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    judgement = judge_folder(folder, target=target, loaders=[LOADER])
    result = judgement.loaders[0].to_json()
    return result, [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("users_offline", [False, True])
def test_a_hub_checkpoint_reaches_the_loader_by_its_repo_id_served_offline(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch, users_offline: bool
) -> None:
    if users_offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    folder = contract_toy(tmp_path / "toy")
    target = lay_out_as_hub("owner/Toy-Model", folder, tmp_path / "hub")
    result, seen = _judged(folder, target, calls)
    assert result["status"] == "ok", result
    assert seen == [
        {
            "name": "owner/Toy-Model",
            "isdir": False,
            "offline": True,
            "kwargs": {"revision": "main"},
            "cache": str(tmp_path / "hub"),
            "constants_cache": str(tmp_path / "hub"),
        }
    ]
    assert result["loaded_as"] == "owner/Toy-Model"
    assert result["set_by_tool"] == {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    assert result["environment"] == {}  # what the tool set is not the user's setting
    assert os.environ.get("HF_HUB_CACHE") != str(tmp_path / "hub")  # nothing stays set here


def test_a_folder_reaches_the_loader_by_its_path_and_the_users_offline_setting_shows(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Control: by its path, the client's online branch loads it; the user's HF_HUB_OFFLINE sends it into
    its offline branch, which refuses a path (the load-error aiperf gave on every release)."""
    folder = contract_toy(tmp_path / "toy")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    result, seen = _judged(folder, LoadTarget(str(folder)), calls)
    assert result["status"] == "ok" and result["set_by_tool"] == {}, result
    assert [(call["name"], call["isdir"], call["offline"]) for call in seen] == [(str(folder), True, False)]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result, _ = _judged(folder, LoadTarget(str(folder)), calls)
    assert result["status"] == "load-error" and "HFValidationError" in str(result["detail"]), result
    assert "called with HF_HUB_OFFLINE=1" in loader_text(result)


def test_a_failing_repo_id_call_says_what_the_tool_set(
    tmp_path: Path, calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = contract_toy(tmp_path / "toy")
    target = lay_out_as_hub("owner/Toy-Model", folder, tmp_path / "hub")
    (Path(str(target.cache_dir)) / "models--owner--Toy-Model" / "refs" / "main").unlink()
    result, _ = _judged(folder, target, calls)  # laid out again by nobody: "main" names no snapshot
    assert result["status"] == "load-error", result
    text = loader_text(result)
    assert (
        f"called as 'owner/Toy-Model' by repo id with HF_HUB_CACHE={tmp_path / 'hub'}, HF_HUB_OFFLINE=1"
        in text
    )


def test_served_offline_restores_what_it_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)

    def now() -> tuple[str, bool, str | None]:
        return constants.HF_HUB_CACHE, constants.HF_HUB_OFFLINE, os.environ.get("HF_HUB_CACHE")

    before = now()
    with served_offline(LoadTarget("o/r", "0" * 40, str(tmp_path / "hub"))):
        assert now() == (str(tmp_path / "hub"), True, str(tmp_path / "hub"))
        assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert now() == before
    assert "HF_HUB_OFFLINE" not in os.environ
    with served_offline(LoadTarget("/a/folder")):  # a path: nothing is set
        assert now() == before
