"""The judge's disk caches against an attempt's code: no link followed, nothing written meanwhile trusted.

Each test mirrors one way an opted-in checkpoint's code (same user, so it can compute the content
hash and set mtimes) attacks the truth or verdict cache, with a control that the attack is really
there and that the same operation without it works.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import pytest_tokcompat.judge.truthcache as truthcache
import pytest_tokcompat.judge.verdicts as verdicts
from pytest_tokcompat.judge import cachefiles, cacheguard
from pytest_tokcompat.judge.parity import Truth
from tests.helpers import toys
from tests.helpers.ladder import judge_folder

KEY = "ab" + "0" * 62
OTHER = "cd" + "1" * 62


def honest(text: str = "hello") -> Truth:
    return Truth("tokenizers", {text: [1, 2]}, {text: text})


@pytest.fixture
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """Both caches in this test's folder, whatever TOKCOMPAT_* the environment holds."""
    truth, verdict = tmp_path / "truth", tmp_path / "verdicts"
    monkeypatch.setenv(truthcache.CACHE_ENV, str(truth))
    monkeypatch.setenv(verdicts.CACHE_ENV, str(verdict))
    monkeypatch.delenv(truthcache.MAX_MB_ENV, raising=False)
    truthcache.truth_environment.cache_clear()
    yield truth, verdict
    truthcache.truth_environment.cache_clear()


@pytest.fixture
def users_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "users-folder"
    folder.mkdir()
    (folder / "notes.truth").write_text("the user's own file\n")
    os.utime(folder / "notes.truth", (1, 1))  # older than any entry: pruned first if it were the cache's
    return folder


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "pytest_tokcompat.cache"]


# ------------------------------------------------------------------ no link followed (every mode)


def test_a_linked_cache_folder_is_not_written_through(
    caches: tuple[Path, Path], users_folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = caches[0]
    cache = truthcache.TruthCache(root)
    root.mkdir()
    (root / KEY[:2]).symlink_to(users_folder)
    with caplog.at_level(logging.WARNING, logger="pytest_tokcompat.cache"):
        assert cache.put(KEY, {}, ["hello"], honest()) is None
    assert sorted(p.name for p in users_folder.iterdir()) == ["notes.truth"]
    assert (root / KEY[:2]).is_symlink()  # control: the link is really there
    (note,) = refusals(caplog)
    assert str(root / KEY[:2]) in note and "symbolic link" in note and "\n" not in note
    written = cache.put(OTHER, {}, ["hello"], honest())  # control: a real folder is written
    assert written is not None and cache.get(OTHER) is not None


def test_an_entry_read_through_a_link_is_a_miss(
    caches: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = caches[0]
    elsewhere = truthcache.TruthCache(tmp_path / "elsewhere")
    good = elsewhere.put(KEY, {}, ["hello"], honest())
    assert good is not None and elsewhere.get(KEY) is not None  # control: a whole, verified entry
    cache = truthcache.TruthCache(root)
    (root / KEY[:2]).mkdir(parents=True)
    cache.path(KEY).symlink_to(good)
    with caplog.at_level(logging.WARNING, logger="pytest_tokcompat.cache"):
        assert cache.get(KEY) is None
    assert any("symbolic link" in note for note in refusals(caplog))
    assert cache.path(KEY).resolve() == good.resolve()  # control: the link leads to a good entry


def test_a_fifo_entry_is_a_miss_and_never_blocks(caches: tuple[Path, Path]) -> None:
    root = caches[1]
    cache = verdicts.VerdictCache(root)
    cache.path(KEY).parent.mkdir(parents=True)
    os.mkfifo(cache.path(KEY))
    assert cache.get(KEY) is None
    with pytest.raises(cachefiles.Refused, match="not a regular file"):
        cachefiles.read(root, cache.path(KEY))


def test_prune_removes_only_regular_files_in_the_caches_own_folders(
    caches: tuple[Path, Path], users_folder: Path
) -> None:
    root = caches[0]
    (root / "ee").mkdir(parents=True)
    (root / "ee").rmdir()
    (root / "ee").symlink_to(users_folder)
    own_old = root / "ff" / "old.truth"
    own_old.parent.mkdir()
    own_old.write_text("an old entry of the cache's own\n")
    os.utime(own_old, (1, 1))
    kept = truthcache.TruthCache(root, max_size=0).put(KEY, {}, ["hello"], honest())  # prunes all it may
    assert kept is not None and kept.exists()
    assert not own_old.exists()  # control: a regular file of the cache's own, as old, is pruned
    assert (users_folder / "notes.truth").exists()


# ------------------------------------------------------------------ written during foreign code: discarded


def forge_in_place(path: Path, data: bytes) -> None:
    """What an attacker in the attempt does: rewrite the entry in place and set its times back."""
    before = path.stat()
    path.write_bytes(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_an_entry_forged_during_foreign_code_is_discarded_before_it_is_read(
    caches: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    root = caches[0]
    cache = truthcache.TruthCache(root)
    victim, template = cache.put(KEY, {}, ["hello"], honest()), cache.put(OTHER, {}, ["hello"], honest("x"))
    assert victim is not None and template is not None
    head, _, body = template.read_bytes().partition(b"\n")
    header = {**json.loads(head), "key": KEY}
    forged = json.dumps(header).encode() + b"\n" + body  # a valid entry under the victim's key
    with caplog.at_level(logging.WARNING, logger="pytest_tokcompat.cache"), cacheguard.watched():
        forge_in_place(victim, forged)
        found = truthcache._verified(victim.read_bytes(), KEY)
        assert "x" in found.truth.ids  # control: the forgery verifies: read now, it would be trusted
    assert not victim.exists() and cache.get(KEY) is None
    assert template.exists()  # what was not touched stays
    (note,) = refusals(caplog)
    assert victim.relative_to(root).as_posix() in note and "discarded" in note


def test_the_guard_keeps_what_this_process_wrote_and_what_foreign_code_left_alone(
    caches: tuple[Path, Path],
) -> None:
    root = caches[1]
    before = root / KEY[:2] / "before.json"
    with cacheguard.watched():
        cachefiles.write(root, before, b"{}")  # this process's own write while the block ran
    assert before.exists()
    with cacheguard.watched(foreign=False):  # control: a block that runs no checkpoint code is not watched
        (root / OTHER[:2]).mkdir()
        (root / OTHER[:2] / "planted.json").write_text("{}")
    assert (root / OTHER[:2] / "planted.json").exists()
    with cacheguard.watched():
        (root / OTHER[:2] / "planted2.json").write_text("{}")
    assert not (root / OTHER[:2] / "planted2.json").exists() and before.exists()


def test_links_and_a_sparse_filler_planted_during_foreign_code_are_removed_not_followed(
    caches: tuple[Path, Path], users_folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The third attack: every folder replaced by a link into the user's folder, and a sparse filler
    that makes the next prune think the cache is full."""
    root = caches[0]
    cache = truthcache.TruthCache(root)
    assert cache.put(KEY, {}, ["hello"], honest()) is not None
    with caplog.at_level(logging.WARNING, logger="pytest_tokcompat.cache"), cacheguard.watched():
        for sub in list(root.iterdir()):
            for entry in sub.iterdir():
                entry.unlink()
            sub.rmdir()
            sub.symlink_to(users_folder)
        (root / "00").symlink_to(users_folder)
        (root / "zz").mkdir()
        with (root / "zz" / "fill.truth").open("wb") as filler:
            filler.truncate(300 * 1024 * 1024)
        assert (root / KEY[:2]).is_symlink()  # control: the links are there while it runs
    assert sorted(p.name for p in root.iterdir()) == ["zz"] and not any((root / "zz").iterdir())
    assert sorted(p.name for p in users_folder.iterdir()) == ["notes.truth"]
    assert cache.put(OTHER, {}, ["hello"], honest()) is not None  # the next write lands in the cache
    assert sorted(p.name for p in users_folder.iterdir()) == ["notes.truth"]
    assert len(refusals(caplog)) == 1


def test_the_cache_folder_itself_replaced_by_a_link_is_unlinked(
    caches: tuple[Path, Path], users_folder: Path
) -> None:
    root = caches[1]
    root.mkdir()
    with cacheguard.watched():
        root.rmdir()
        root.symlink_to(users_folder)
    assert not root.exists() and not root.is_symlink()
    assert sorted(p.name for p in users_folder.iterdir()) == ["notes.truth"]


def test_a_remote_code_attempt_that_forges_another_checkpoints_truth_changes_nothing(
    caches: tuple[Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Through the judge: the forger runs in the auto_map attempt's child (every isolation mode)."""
    root = caches[0]
    native = toys.native_toy(tmp_path / "native")
    judge_folder(native)
    (entry,) = sorted(root.glob("*/*.truth"))
    mark = tmp_path / "forged"
    prelude = f"""
        import os, pathlib
        entry = pathlib.Path({str(entry)!r})
        times = entry.stat()
        entry.write_bytes(entry.read_bytes())  # the same bytes: only its change time tells
        os.utime(entry, ns=(times.st_atime_ns, times.st_mtime_ns))
        pathlib.Path({str(mark)!r}).write_text("forged")
    """
    with caplog.at_level(logging.WARNING, logger="pytest_tokcompat.cache"):
        judgement = judge_folder(
            toys.hostile_remote_toy(tmp_path / "attacker", prelude), trust_remote_code=True
        )
    assert mark.exists() and judgement.verdict == "auto_map"  # control: the forger ran in the attempt
    assert not entry.exists()
    assert any(entry.name in note for note in refusals(caplog))


def test_the_child_is_not_told_where_the_caches_are(caches: tuple[Path, Path], tmp_path: Path) -> None:
    seen = cacheguard.child_environ(
        {"TOKCOMPAT_CACHE": "/c", truthcache.CACHE_ENV: "/t", verdicts.CACHE_ENV: "/v", "HF_HOME": "/h"}
    )
    assert seen == {truthcache.CACHE_ENV: "off", verdicts.CACHE_ENV: "off", "HF_HOME": "/h"}
    mark = tmp_path / "environ.json"
    prelude = f"""
        import json, os
        open({str(mark)!r}, "w").write(json.dumps({{k: v for k, v in os.environ.items() if "CACHE" in k}}))
    """
    judge_folder(toys.hostile_remote_toy(tmp_path / "reader", prelude), trust_remote_code=True)
    told = json.loads(mark.read_text())
    assert told.get(truthcache.CACHE_ENV) == "off" and told.get(verdicts.CACHE_ENV) == "off"
    assert str(caches[0]) not in json.dumps(told) and str(caches[1]) not in json.dumps(told)


def test_a_remote_code_load_that_forges_another_checkpoints_verdict_changes_nothing(
    caches: tuple[Path, Path], tmp_path: Path
) -> None:
    """Through load_tokenizer(): the forger runs in the auto_map child and again in the caller's reload;
    the victim's next load is judged again (not from the forged entry) and gives its own ids."""
    from pytest_tokcompat.api import load_tokenizer

    root = caches[1]
    victim = toys.native_toy(tmp_path / "victim")
    first = load_tokenizer(victim)
    assert load_tokenizer(victim).from_cache  # control: a second load comes from the cache
    (entry,) = sorted(root.glob("*/*.json"))
    data = json.loads(entry.read_text())
    data["truth"]["ids"] = {text: [7] for text in data["truth"]["ids"]}  # the victim's ids made wrong
    mark = tmp_path / "forged"
    prelude = f"""
        import os, pathlib
        entry = pathlib.Path({str(entry)!r})
        if entry.exists():
            times = entry.stat()
            entry.write_text({json.dumps(data)!r})
            os.utime(entry, ns=(times.st_atime_ns, times.st_mtime_ns))
            pathlib.Path({str(mark)!r}).write_text("forged")
    """
    attacker = load_tokenizer(toys.hostile_remote_toy(tmp_path / "attacker", prelude), trust_remote_code=True)
    assert mark.exists() and attacker.verdict == "auto_map"  # control: the forger ran
    again = load_tokenizer(victim)
    assert not again.from_cache and again.verdict == first.verdict == "native"
    text = "hello world"
    assert again.tokenizer.encode(text, add_special_tokens=False) == first.tokenizer.encode(
        text, add_special_tokens=False
    )
