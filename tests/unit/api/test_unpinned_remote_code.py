"""Remote code at a branch: refused by default; allowed only explicitly, with the commit that ran recorded."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from pytest_tokcompat import cli
from pytest_tokcompat.api import UnpinnedRemoteCode, load_tokenizer
from pytest_tokcompat.contract import report_document, schema_problems
from pytest_tokcompat.errors import NotRunnable
from pytest_tokcompat.judge.evaluate import FAILED, evaluate
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.request import Request
from tests.helpers import hubcache, toys

REPO = "toy/remote"


@pytest.fixture
def remote_repo(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """The remote-code toy in the hub cache at a commit that ``main`` and ``dev`` point to; its canary file."""
    canary = tmp_path / "canary"
    monkeypatch.setenv("TOKCOMPAT_CANARY", str(canary))
    folder = toys.remote_toy(tmp_path / "toy")
    commit = hubcache.add_repo(
        cache, REPO, {p.name: p.read_bytes() for p in folder.iterdir()}, refs=("main", "dev")
    )
    return commit, canary


def test_a_branch_is_still_refused_by_default(remote_repo: tuple[str, Path]) -> None:
    _, canary = remote_repo
    with pytest.raises(NotRunnable, match="allow_unpinned_remote_code=True"):
        load_tokenizer(REPO, trust_remote_code=True)
    assert not canary.exists()


@pytest.mark.parametrize("revision", [None, "dev"])
def test_allowed_explicitly_the_commit_that_ran_is_recorded_and_warned(
    remote_repo: tuple[str, Path], revision: str | None
) -> None:
    commit, canary = remote_repo
    with pytest.warns(UnpinnedRemoteCode) as caught:
        result = load_tokenizer(
            REPO, revision=revision, trust_remote_code=True, allow_unpinned_remote_code=True
        )
    (warning,) = [w for w in caught if issubclass(w.category, UnpinnedRemoteCode)]
    assert REPO in str(warning.message) and commit in str(warning.message)
    assert warning.filename == __file__  # points at the caller's line
    assert result.verdict == "auto_map" and result.revision == commit
    assert result.record["unpinned_remote_code"] == {
        "repo": REPO,
        "branch": revision or "main",
        "commit": commit,
    }
    assert (
        schema_problems(
            json.loads(json.dumps(report_document([result.record], None, exit_status=0, complete=True)))
        )
        == []
    )
    assert {(f["repo"], f["revision"]) for f in result.remote_files_ran} == {(REPO, commit)}
    assert any("not pinned" in note and f"{REPO}@{commit}" in note for note in result.notes)
    assert canary.read_text() == "remote code ran"


def test_the_flag_never_turns_remote_code_on(remote_repo: tuple[str, Path]) -> None:
    _, canary = remote_repo
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnpinnedRemoteCode)  # no code runs, so nothing to warn about
        loaded = load_tokenizer(REPO, allow_unpinned_remote_code=True)
    skipped = loaded.judgement.attempt("auto_map")
    assert skipped is not None and skipped.status == "skipped"
    assert "trust_remote_code is off" in (skipped.detail or "")
    assert loaded.verdict == "backend" and not canary.exists()


def test_a_pinned_commit_is_not_reported_as_unpinned(remote_repo: tuple[str, Path]) -> None:
    commit, _ = remote_repo
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnpinnedRemoteCode)
        result = load_tokenizer(
            REPO, revision=commit, trust_remote_code=True, allow_unpinned_remote_code=True
        )
    assert result.verdict == "auto_map" and "unpinned_remote_code" not in result.record


def test_a_matrix_run_never_takes_the_flag(remote_repo: tuple[str, Path], tmp_path: Path) -> None:
    matrix = tmp_path / "models.yaml"
    matrix.write_text(
        f"version: 1\ncases:\n  - {{id: t, repo: {REPO}, trust_remote_code: true, expect: auto_map}}\n"
    )
    outcome = evaluate(Request(load_matrix(matrix).cases[0]))
    assert outcome.status == FAILED and "trust_remote_code is refused" in outcome.message


def test_the_cli_flag(remote_repo: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    commit, canary = remote_repo
    assert cli.main(["check", REPO, "--trust-remote-code"]) == 2
    assert "--allow-unpinned-remote-code" in capsys.readouterr().err
    assert not canary.exists()
    argv = ["check", REPO, "--trust-remote-code", "--allow-unpinned-remote-code", "--json"]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    record = json.loads(out)
    assert record["verdict"] == "auto_map" and record["revision"] == commit
    assert record["unpinned_remote_code"]["commit"] == commit
    assert "remote code ran from branch 'main'" in err and commit in err
