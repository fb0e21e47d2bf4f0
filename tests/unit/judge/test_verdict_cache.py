"""The verdict cache on disk: a second process skips judging, and an entry is never trusted blindly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import pytest_tokcompat.judge.child as child
import pytest_tokcompat.matrix.aliases as aliases
from pytest_tokcompat.api import load_tokenizer
from pytest_tokcompat.contract import report_document, schema_problems
from pytest_tokcompat.errors import TokenizerBroken
from pytest_tokcompat.judge.parity import reference_tokenizer
from pytest_tokcompat.judge.probes import probe_texts
from pytest_tokcompat.judge.verdicts import CACHE_ENV, MAX_MB_ENV, VerdictCache
from pytest_tokcompat.settings import SettingError, judge_settings_from_environment
from tests.helpers import hubcache, toys

LOAD = """
import json, sys
from pytest_tokcompat import load_tokenizer
result = load_tokenizer(sys.argv[1])
print(json.dumps({"verdict": result.verdict, "from_cache": result.from_cache,
                  "cache": result.record.get("verdict_cache"),
                  "ids": result.tokenizer.encode("hello world", add_special_tokens=False)}))
"""


def entries(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.json"))


@pytest.fixture
def verdicts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "verdicts"
    monkeypatch.setenv(CACHE_ENV, str(root))
    return root


def test_a_hit_judges_nothing_and_still_loads_in_the_callers_process(
    tmp_path: Path, verdicts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = toys.native_toy(tmp_path / "native")
    judged = load_tokenizer(folder)
    assert not judged.from_cache and len(entries(verdicts)) == 1

    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("a cached verdict started a judging child")

    monkeypatch.setattr(child, "run", no_child)
    cached = load_tokenizer(folder)
    assert cached.from_cache and cached.verdict == judged.verdict == "native"
    assert cached.judgement.attempts[0].status == "ok"
    assert cached.tokenizer is not judged.tokenizer
    for record in (judged.record, cached.record):  # the fields it adds are part of the report contract
        assert (
            schema_problems(
                json.loads(json.dumps(report_document([record], None, exit_status=0, complete=True)))
            )
            == []
        )
    text = "the quick brown fox 中文"
    assert (
        cached.tokenizer.encode(text, add_special_tokens=False)
        == reference_tokenizer(folder).encode(text).ids
    )


def test_the_alias_remedy_is_reused_and_leaves_no_registration(
    tmp_path: Path, verdicts: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    alias = aliases.Alias(
        model_type=toys.TOY_ALIAS_TYPE,
        base_config="transformers.models.gpt2.configuration_gpt2.GPT2Config",
        base_model_type="gpt2",
        upstream_issue="https://example.invalid/toy",
    )
    monkeypatch.setitem(aliases.REGISTRY, alias.model_type, alias)
    folder = toys.alias_toy(tmp_path / "alias")
    hubcache.add_repo(cache, "toy/alias", {p.name: p.read_bytes() for p in folder.iterdir()})
    golden = toys.golden_for(probe_texts(), tmp_path / "golden", "toy-alias")
    matrix = tmp_path / "models.yaml"
    matrix.write_text("version: 1\ncases:\n  - {id: toy-alias, repo: toy/alias, expect: alias}\n")
    first, second = load_tokenizer("toy-alias", matrix=matrix), load_tokenizer("toy-alias", matrix=matrix)
    assert (first.verdict, first.from_cache, second.verdict, second.from_cache) == (
        "alias",
        False,
        "alias",
        True,
    )
    assert alias.model_type not in CONFIG_MAPPING_NAMES  # used for the load, not left registered
    expected = json.loads(golden.read_text())["ids"]["Hello world"]
    assert second.tokenizer.encode("Hello world", add_special_tokens=False) == expected
    # Another alias registry, or other golden ids, is another question: judged afresh.
    monkeypatch.setitem(
        aliases.REGISTRY, alias.model_type, aliases.Alias(**{**alias.__dict__, "reason": "x"})
    )
    assert not load_tokenizer("toy-alias", matrix=matrix).from_cache
    toys.golden_for(probe_texts(), tmp_path / "golden", "toy-alias", shift=0)
    golden.write_text(golden.read_text() + "\n")
    assert not load_tokenizer("toy-alias", matrix=matrix).from_cache
    assert len(entries(verdicts)) == 3


def test_what_changes_the_verdict_changes_the_key(tmp_path: Path, verdicts: Path) -> None:
    folder = toys.native_toy(tmp_path / "native")
    assert not load_tokenizer(folder).from_cache
    assert load_tokenizer(folder).from_cache
    assert not load_tokenizer(folder, texts=["another probe text"]).from_cache
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": 77}))
    assert not load_tokenizer(folder).from_cache  # a file changed
    assert len(entries(verdicts)) == 3


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"",
        b'{"format": 999}',
        b"[1, 2, 3]",
    ],
    ids=["corrupt", "empty", "foreign-format", "not-an-object"],
)
def test_a_corrupt_or_foreign_entry_is_ignored_and_rewritten(
    tmp_path: Path, verdicts: Path, content: bytes
) -> None:
    folder = toys.native_toy(tmp_path / "native")
    load_tokenizer(folder)
    (entry,) = entries(verdicts)
    entry.write_bytes(content)
    again = load_tokenizer(folder)
    assert (again.from_cache, again.record["verdict_cache"]["state"], again.verdict) == (
        False,
        "stored",
        "native",
    )
    assert json.loads(entry.read_text())["format"] == 1
    assert load_tokenizer(folder).from_cache


def test_an_entry_under_another_key_is_not_trusted(tmp_path: Path, verdicts: Path) -> None:
    one, other = toys.native_toy(tmp_path / "one"), toys.alias_toy(tmp_path / "other")
    load_tokenizer(one)
    (entry,) = entries(verdicts)
    document = json.loads(entry.read_text())
    document["judgement"]["verdict"] = "auto_map"  # a planted verdict under the right name, the wrong key
    document["key"] = "0" * 64
    entry.write_text(json.dumps(document))
    assert not load_tokenizer(one).from_cache
    assert other.is_dir()


def test_a_tampered_truth_cannot_hand_out_a_tokenizer_unchecked(tmp_path: Path, verdicts: Path) -> None:
    folder = toys.native_toy(tmp_path / "native")
    load_tokenizer(folder)
    (entry,) = entries(verdicts)
    document = json.loads(entry.read_text())
    first = next(iter(document["truth"]["ids"]))
    document["truth"]["ids"][first] = [0, 0, 0]
    entry.write_text(json.dumps(document))
    with pytest.raises(TokenizerBroken, match="in this process the native remedy gives"):
        load_tokenizer(folder)


def test_switched_off_by_argument_or_environment(
    tmp_path: Path, verdicts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = toys.native_toy(tmp_path / "native")
    result = load_tokenizer(folder, cache=False)
    assert not result.from_cache and "verdict_cache" not in result.record and not verdicts.exists()
    for value in ("off", "0"):
        monkeypatch.setenv(CACHE_ENV, value)
        assert judge_settings_from_environment().verdict_cache is None
        assert "verdict_cache" not in load_tokenizer(folder).record
    assert not verdicts.exists()


def test_the_default_place_follows_the_cache_conventions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("TOKCOMPAT_CACHE", str(tmp_path / "tc"))
    assert judge_settings_from_environment().verdict_cache == tmp_path / "tc" / "verdicts"
    monkeypatch.delenv("TOKCOMPAT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert (
        judge_settings_from_environment().verdict_cache == tmp_path / "xdg" / "pytest-tokcompat" / "verdicts"
    )
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "mine"))
    assert judge_settings_from_environment().verdict_cache == tmp_path / "mine"


def test_a_broken_checkpoint_is_not_kept(tmp_path: Path, verdicts: Path) -> None:
    folder = toys.broken_toy(tmp_path / "broken")
    for _ in range(2):
        with pytest.raises(TokenizerBroken):
            load_tokenizer(folder)
    assert entries(verdicts) == []


# ---- its size --------------------------------------------------------------------------------------------


def _entry(root: Path, name: str, size: int, mtime: float) -> Path:
    path = root / name[:2] / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (mtime, mtime))
    return path


def test_pruning_removes_the_least_recently_used_entries_until_the_cache_fits(tmp_path: Path) -> None:
    root = tmp_path / "verdicts"
    oldest, older, newer, newest = (
        _entry(root, name, 1000, when) for name, when in (("aa1", 1), ("ab2", 2), ("aa3", 3), ("ac4", 4))
    )
    cache = VerdictCache(root, max_bytes=2500)
    assert cache.prune(keep=oldest) == [older, newer]  # the entry just written stays, however old
    assert entries(root) == sorted([oldest, newest])
    assert VerdictCache(root, max_bytes=0).prune() == [oldest, newest]


def test_a_write_prunes_and_a_hit_counts_as_a_use(
    tmp_path: Path, verdicts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = toys.native_toy(tmp_path / "first"), toys.native_toy(tmp_path / "second")
    (second / "README.md").write_text("another checkpoint, another key\n")

    def entry_of(folder: Path) -> Path:
        (found,) = (
            p
            for p in entries(verdicts)
            if ("README.md" in json.loads(p.read_text())["fields"]["files"]) == (folder == second)
        )
        return found

    load_tokenizer(first)
    load_tokenizer(second)
    first_entry, second_entry = entry_of(first), entry_of(second)
    for path in (first_entry, second_entry):
        os.utime(path, (1, 1))  # both long unused
    assert load_tokenizer(first).from_cache  # a hit: the first entry is used now
    assert first_entry.stat().st_mtime > 1
    assert VerdictCache(verdicts, max_bytes=first_entry.stat().st_size).prune() == [second_entry]
    assert entries(verdicts) == [first_entry]
    monkeypatch.setenv(MAX_MB_ENV, "0")  # room for nothing but the entry a write just made
    assert not load_tokenizer(second).from_cache
    assert entries(verdicts) == [second_entry]


@pytest.mark.parametrize(("value", "expected"), [("", 256), ("1.5", 1.5), ("0", 0)])
def test_the_size_limit_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: float
) -> None:
    monkeypatch.setenv(MAX_MB_ENV, value)
    assert judge_settings_from_environment().verdict_cache_bytes == int(expected * 1024 * 1024)


@pytest.mark.parametrize(("value", "why"), [("-3", "is negative"), ("lots", "is not a number of megabytes")])
def test_a_size_limit_that_cannot_be_used_is_refused_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, why: str
) -> None:
    """Once silently the default (256 MB): a typo kept a cache growing to a size nobody asked for."""
    folder = toys.native_toy(tmp_path / "native")
    monkeypatch.setenv(MAX_MB_ENV, value)
    with pytest.raises(SettingError, match=rf"^\${MAX_MB_ENV}={value}: '{value}' {why}"):
        load_tokenizer(folder)
    monkeypatch.setenv(MAX_MB_ENV, "1")  # control: a usable value loads
    assert load_tokenizer(folder).verdict == "native"
