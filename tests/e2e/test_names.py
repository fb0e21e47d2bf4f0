# ruff: noqa: F811 (the fixtures tests/unit/sources/test_names.py defines, imported by name)
"""End to end: Names a client passes to ``load_tokenizer()`` and the CLI: tokenizer-only folders and repos, bare hub names (``gpt2``), case-insensitive served names and case ids, ``tokcompat resolve --json``, and errors that cite the name given.

The rest of this subject's tests, and the helpers these use, are in tests/unit/sources/test_names.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from pytest_tokcompat import load_tokenizer
from pytest_tokcompat.cli import main
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.sources.checkpoint import MatchedBy, Source
from pytest_tokcompat.sources.resolve import identify, resolve
from tests.helpers import hubcache, hubserver
from tests.unit.sources.test_names import (  # noqa: F401 (fixtures)
    _check_record,
    assert_judged_by_tokenizer_json,
    assert_loads_right_or_broken,
    local_hub,
    tokenizer_files,
    tokenizer_only_folder,
)


def test_a_tokenizer_only_folder_is_judged_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tokenizer_only_folder(tmp_path / "deepseek-tokenizer")
    code = main(["check", str(folder), "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == (1 if record["verdict"] == "broken" else 4 if record["findings"] else 0)
    assert (record["source"], record["matched_by"]) == ("folder", "folder")
    assert_judged_by_tokenizer_json(record)
    assert_loads_right_or_broken(folder, folder, record)
    assert main(["check", str(folder)]) == code
    assert "no config.json (tokenizer-only: judged by its tokenizer files alone)" in capsys.readouterr().out


def test_a_tokenizer_only_snapshot_is_a_valid_matrix_entry(tmp_path: Path) -> None:
    from pytest_tokcompat.judge.evaluate import evaluate
    from pytest_tokcompat.request import Request

    tokenizer_only_folder(tmp_path / "snap")
    matrix = tmp_path / "models.yaml"
    matrix.write_text("version: 1\ncases:\n  - {id: tok-only, snapshot: snap, expect: native}\n")
    outcome = evaluate(Request(load_matrix(matrix).cases[0]))
    assert outcome.judgement is not None and outcome.judgement.static.has_config is False
    assert outcome.verdict in ("native", "broken"), outcome.message


def test_a_tokenizer_only_hub_repo_is_fetched_and_judged(cache: Path, local_hub: hubserver.LocalHub) -> None:
    files = tokenizer_files("deepseek-v3")
    commit = local_hub.add("owner/tokenizer-only", {**files, "README.md": b"no config here"})
    (fetched,) = hubserver.resolve_online(local_hub.url, cache, [{"repo": "owner/tokenizer-only"}])
    assert fetched.get("files") == [".tokcompat-files.json", "tokenizer.json", "tokenizer_config.json"], (
        fetched
    )
    folder = Path(fetched["folder"])
    assert folder.name == commit
    checkpoint = resolve("owner/tokenizer-only")  # this process is offline: the cache filled above
    assert (checkpoint.source, checkpoint.folder, checkpoint.revision) == (Source.HUB, folder, commit)
    record = json.loads(json.dumps(_check_record("owner/tokenizer-only")))
    assert_judged_by_tokenizer_json(record)
    assert_loads_right_or_broken("owner/tokenizer-only", folder, record)


def test_a_bare_hub_name_loads_from_a_filled_hub_cache(cache: Path) -> None:
    # A bare repo id, as `gpt2`: DeepSeek-V3.2-Exp's real files cached under that name (a tokenizer that
    # loads with right ids on every release, by plain loading or by the alias).
    files = hubcache.snapshot_files(hubcache.bundled_case("deepseek-v3.2-exp"))
    commit = hubcache.add_repo(cache, "gpt2", files)
    assert (identify("gpt2").by, identify("gpt2").repo) == (MatchedBy.REPO_ID, "gpt2")
    loaded = load_tokenizer("gpt2")
    assert loaded.verdict in ("native", "alias")
    assert (loaded.source, loaded.repo, loaded.case_id) == (Source.HUB, "gpt2", None)
    assert loaded.folder == cache / "models--gpt2" / "snapshots" / commit
    truth = Tokenizer.from_file(str(loaded.folder / "tokenizer.json"))
    assert loaded.tokenizer.encode("Hello world", add_special_tokens=False) == truth.encode("Hello world").ids


def test_a_bare_hub_name_is_fetched_from_the_hub(cache: Path, local_hub: hubserver.LocalHub) -> None:
    files = hubcache.snapshot_files(hubcache.bundled_case("deepseek-v3.2-exp"))
    commit = local_hub.add("gpt2", files)
    (fetched,) = hubserver.resolve_online(local_hub.url, cache, [{"repo": "gpt2"}])
    assert fetched.get("folder") == str(cache / "models--gpt2" / "snapshots" / commit), fetched
    assert local_hub.paths_fetched("gpt2") == {"config.json", "tokenizer.json", "tokenizer_config.json"}
    assert (cache / "models--gpt2" / "refs" / "main").read_text() == commit


def test_a_name_the_hub_does_not_have_is_an_unknown_name(
    tmp_path: Path, local_hub: hubserver.LocalHub
) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT=local_hub.url, HF_HUB_OFFLINE="0", HF_HUB_CACHE=str(tmp_path / "hf-cache"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest_tokcompat.cli", "check", "nobody-knows"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "'nobody-knows' names no checkpoint here; tried, in order: a folder" in done.stderr
    assert "a hub repo id (nobody-knows was not found on the hub, or is private" in done.stderr
