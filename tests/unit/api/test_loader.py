"""``load_tokenizer()``: one verdict ladder for benchmark clients, offline, leaving no global state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import pytest_tokcompat
import pytest_tokcompat.matrix.aliases as aliases
from pytest_tokcompat.api import FOLDER, LoadedTokenizer, load_tokenizer
from pytest_tokcompat.errors import (
    CheckpointError,
    NotReachable,
    NotRunnable,
    TokcompatError,
    TokenizerBroken,
    UnknownName,
)
from pytest_tokcompat.judge.parity import reference_tokenizer
from pytest_tokcompat.judge.probes import probe_texts
from tests.helpers import hubcache, toys
from tests.helpers.matrices import write_matrix

TOY_ALIAS = aliases.Alias(
    model_type=toys.TOY_ALIAS_TYPE,
    base_config="transformers.models.gpt2.configuration_gpt2.GPT2Config",
    base_model_type="gpt2",
    upstream_issue="https://example.invalid/toy",
)


@pytest.fixture
def toy_alias(monkeypatch: pytest.MonkeyPatch) -> aliases.Alias:
    """The toy alias in the registry for this test only (monkeypatch restores the registry)."""
    monkeypatch.setitem(aliases.REGISTRY, TOY_ALIAS.model_type, TOY_ALIAS)
    return TOY_ALIAS


def test_native_folder_unpacks_to_tokenizer_and_verdict(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "native")
    result = load_tokenizer(folder)
    tok, verdict = result
    assert verdict == "native" and result.source == FOLDER and result.case_id is None
    assert isinstance(result, LoadedTokenizer) and result.judgement.verdict == "native"
    reference = reference_tokenizer(folder)
    assert tok.encode("hello world", add_special_tokens=False) == reference.encode("hello world").ids
    with pytest.raises(AttributeError):
        result.verdict = "alias"  # type: ignore[misc]  # frozen
    assert pytest_tokcompat.load_tokenizer is load_tokenizer  # the package's lazy export


def test_alias_applies_only_the_needed_remedy_and_leaves_no_registration(
    cache: Path, tmp_path: Path, toy_alias: aliases.Alias
) -> None:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    folder = toys.alias_toy(tmp_path / "alias")
    hubcache.add_repo(cache, "toy/alias", {p.name: p.read_bytes() for p in folder.iterdir()})
    toys.golden_for(probe_texts(), tmp_path / "golden", "toy-alias")
    matrix = write_matrix(tmp_path, "  - {id: toy-alias, repo: toy/alias, expect: alias}\n")
    tok, verdict = load_tokenizer("toy-alias", matrix=matrix)  # by case id: its golden ids are the truth
    assert verdict == "alias"
    assert toy_alias.model_type not in CONFIG_MAPPING_NAMES  # used for the load, not left registered
    golden = json.loads((tmp_path / "golden" / "toy-alias.json").read_text())
    assert tok.encode("Hello world", add_special_tokens=False) == golden["ids"]["Hello world"]
    native = load_tokenizer("toy/alias", matrix=matrix)
    assert [a.remedy for a in native.judgement.attempts] == ["native", "auto_map", "alias"]
    assert native.judgement.attempts[0].status == "load-error"


def test_a_stand_in_snapshot_is_never_handed_out_for_the_real_tokenizer(cache: Path) -> None:
    with pytest.raises(NotReachable, match="stand-in tokenizer data, which would give other ids"):
        load_tokenizer("moonshotai/Kimi-K2-Instruct")  # its bundled snapshot has a stand-in vocabulary


def test_unreachable_without_a_snapshot_raises_not_reachable(cache: Path) -> None:
    with pytest.raises(NotReachable, match="not in the hub cache"):
        load_tokenizer("owner/absent")


def test_an_unknown_name_says_what_was_tried_and_how_to_pass_the_repo(cache: Path) -> None:
    with pytest.raises(UnknownName, match=r"tried, in order: .*served_names: \[l l m\]"):
        load_tokenizer("l l m")  # no folder, no matrix name, and no hub repo id can be named so
    with pytest.raises(
        NotReachable, match=r"tried, in order: .*llm@main is not in the hub cache.*served_names: \[llm\]"
    ):
        load_tokenizer("llm")  # a bare hub id (as gpt2): the hub cache is empty and offline


def test_broken_raises_with_every_attempt(tmp_path: Path) -> None:
    folder = toys.broken_toy(tmp_path / "broken")
    with pytest.raises(TokenizerBroken) as caught:
        load_tokenizer(folder)
    message = str(caught.value)
    assert "no remedy loads" in message
    assert "native    load-error" in message
    assert "auto_map  skipped" in message and "alias     skipped" in message
    assert "what to do" in message
    assert caught.value.judgement.verdict == "broken"


def test_the_caller_decides_whether_remote_code_runs_not_the_matrix(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = tmp_path / "canary"
    monkeypatch.setenv("TOKCOMPAT_CANARY", str(canary))
    folder = toys.remote_toy(tmp_path / "remote")
    commit = hubcache.add_repo(cache, "toy/remote", {p.name: p.read_bytes() for p in folder.iterdir()})
    pinned = write_matrix(
        tmp_path,
        f"  - {{id: r, repo: toy/remote, revision: '{commit}', trust_remote_code: true, expect: auto_map}}\n",
    )
    # The entry opts in for the matrix's runs; a caller who did not ask gets no remote code, and is told how.
    plain = load_tokenizer("toy/remote", matrix=pinned)
    assert plain.verdict == "backend"  # its tokenizer.json loaded as it is: no code runs
    skipped = plain.judgement.attempt("auto_map")
    assert skipped is not None and "load_tokenizer(..., trust_remote_code=True)" in (skipped.detail or "")
    assert not canary.exists()
    result = load_tokenizer(
        "toy/remote", matrix=pinned, trust_remote_code=True
    )  # the entry pins the revision
    assert result.verdict == "auto_map"
    assert result.remote_files_ran == [
        {"repo": "toy/remote", "revision": commit, "file": name, "folder": str(result.folder)}
        for name in ("configuration_toy.py", "tokenization_toy.py")
    ]
    assert canary.read_text() == "remote code ran"


def test_a_callers_opt_in_still_needs_a_commit_sha(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = tmp_path / "canary"
    monkeypatch.setenv("TOKCOMPAT_CANARY", str(canary))
    folder = toys.remote_toy(tmp_path / "remote")
    hubcache.add_repo(cache, "toy/remote", {p.name: p.read_bytes() for p in folder.iterdir()})
    branch = write_matrix(
        tmp_path, "  - {id: r, repo: toy/remote, trust_remote_code: true, expect: auto_map}\n"
    )
    with pytest.raises(NotRunnable, match="trust_remote_code is refused"):
        load_tokenizer("r", matrix=branch, trust_remote_code=True)
    assert not canary.exists()


def test_without_opt_in_remote_code_never_runs(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = tmp_path / "canary"
    monkeypatch.setenv("TOKCOMPAT_CANARY", str(canary))
    folder = toys.remote_toy(tmp_path / "remote")
    hubcache.add_repo(cache, "toy/remote", {p.name: p.read_bytes() for p in folder.iterdir()})
    other = write_matrix(tmp_path, "  - {id: x, repo: o/x, expect: native}\n")
    plain = load_tokenizer("toy/remote", matrix=other)
    skipped = plain.judgement.attempt("auto_map")
    assert plain.verdict == "backend" and skipped is not None
    assert "trust_remote_code is off; opt in" in (skipped.detail or "")
    assert not canary.exists()


def test_extra_probe_texts_are_checked_too(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "native")
    plain = load_tokenizer(folder)
    more = load_tokenizer(folder, texts=["an extra probe", "and another"])
    assert more.judgement.texts == plain.judgement.texts + 2 and more.judgement.parity.status == "match"


def test_an_unreadable_checkpoint_raises_a_documented_error(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "bad")
    (folder / "config.json").write_text("[]")
    with pytest.raises(TokcompatError, match="must hold a JSON object") as caught:
        load_tokenizer(folder)
    assert isinstance(caught.value, CheckpointError)
