"""The truth cache: probes and ground truth computed once per checkpoint files, tokenizers and judge."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_tokcompat.judge.child as child
import pytest_tokcompat.judge.truthcache as truthcache
from pytest_tokcompat.settings import JudgeSettings, resolve_judge_settings
from tests.helpers import toys
from tests.helpers.ladder import judge_folder

TIMINGS = ("seconds",)


def stable(value: Any) -> Any:
    """A judgement's JSON without what differs between two runs of one judgement (timings)."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


@pytest.fixture
def truths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "truth"
    monkeypatch.setenv(truthcache.CACHE_ENV, str(root))
    environment = truthcache.truth_environment
    environment.cache_clear()
    yield root
    environment.cache_clear()


@pytest.fixture
def first_jobs(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each judgement, whether its first child had to read the probes and ground truth itself."""
    seen: list[bool] = []
    real = child.run

    def counted(job: Any, timeout: float | None) -> Any:
        if job.remedy == "native" and not job.repairs:
            seen.append(job.texts is None)
        return real(job, timeout)

    monkeypatch.setattr(child, "run", counted)
    return seen


def entries(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.truth"))


def test_a_second_judgement_reads_the_truth_from_the_cache(
    tmp_path: Path, truths: Path, first_jobs: list[bool]
) -> None:
    folder = toys.native_toy(tmp_path / "native")
    cold = judge_folder(folder)
    assert first_jobs == [True] and len(entries(truths)) == 1
    warm = judge_folder(folder)
    assert first_jobs == [True, False], "the warm judgement's child computed the truth again"
    assert stable(warm.to_json()) == stable(cold.to_json())
    assert warm.truth == cold.truth and warm.probe_texts == cold.probe_texts
    assert cold.verdict == "native" and cold.parity.ok


def change_a_file(folder: Path) -> None:
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": 77}))


def other_tokenizers(monkeypatch: pytest.MonkeyPatch) -> None:
    environment = truthcache.truth_environment()
    changed = {**environment, "versions": {**environment["versions"], "tokenizers": "0.0.1"}}
    monkeypatch.setattr(truthcache, "truth_environment", lambda: changed)


def other_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(truthcache, "judge_identity", lambda: "0.0.0+another")
    truthcache.truth_environment.cache_clear()


def other_truth_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(truthcache, "TRUTH_VERSION", truthcache.TRUTH_VERSION + 1)
    truthcache.truth_environment.cache_clear()


@pytest.mark.parametrize(
    "change",
    [change_a_file, other_tokenizers, other_judge, other_truth_code],
    ids=["checkpoint-file", "tokenizers-version", "judge-version", "truth-version"],
)
def test_a_change_of_what_determines_the_truth_misses(
    change: Any, tmp_path: Path, truths: Path, first_jobs: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = toys.native_toy(tmp_path / "native")
    judge_folder(folder)
    judge_folder(folder)
    assert first_jobs == [True, False]  # control: unchanged, it hits
    if change is change_a_file:
        change(folder)
    else:
        change(monkeypatch)
    judge_folder(folder)
    assert first_jobs == [True, False, True], f"{change.__name__}: the old truth was trusted"
    assert len(entries(truths)) == 2


def test_the_entrys_texts_are_part_of_the_key(tmp_path: Path, truths: Path, first_jobs: list[bool]) -> None:
    folder = toys.native_toy(tmp_path / "native")
    judge_folder(folder, extra_texts=["a text of the entry"])
    judge_folder(folder, extra_texts=["another text"])
    assert first_jobs == [True, True]
    assert "another text" in (judge_folder(folder, extra_texts=["another text"]).probe_texts or [])
    assert first_jobs == [True, True, False]


def corrupt_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-10] = ord("0") if data[-10] != ord("0") else ord("1")
    path.write_bytes(bytes(data))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-100])


def no_header(path: Path) -> None:
    path.write_bytes(b"{}")


@pytest.mark.parametrize(
    "damage", [corrupt_a_byte, truncate, no_header], ids=["byte", "truncated", "garbage"]
)
def test_a_damaged_entry_is_discarded_with_a_note_and_recomputed(
    damage: Any, tmp_path: Path, truths: Path, first_jobs: list[bool], caplog: pytest.LogCaptureFixture
) -> None:
    folder = toys.native_toy(tmp_path / "native")
    cold = judge_folder(folder)
    (entry,) = entries(truths)
    intact = entry.read_bytes()
    with caplog.at_level(logging.WARNING, logger="pytest_tokcompat.truth"):
        judge_folder(folder)
        assert first_jobs == [True, False] and not caplog.records  # control: the intact entry is used
        damage(entry)
        again = judge_folder(folder)
    assert first_jobs == [True, False, True]
    (note,) = caplog.records
    assert str(entry) in note.getMessage() and "discarded" in note.getMessage()
    assert "\n" not in note.getMessage()
    assert stable(again.to_json()) == stable(cold.to_json())
    assert entry.read_bytes() == intact  # rewritten whole


def test_an_entry_under_another_key_is_discarded(
    tmp_path: Path, truths: Path, first_jobs: list[bool]
) -> None:
    first, second = toys.native_toy(tmp_path / "one"), toys.native_toy(tmp_path / "two")
    change_a_file(second)
    judge_folder(first)
    judge_folder(second)
    one, two = (truthcache.key_of(truthcache.key_fields(f, [], None)) for f in (first, second))
    cache = truthcache.TruthCache(truths)
    assert cache.get(one) is not None and cache.get(two) is not None  # control
    cache.path(two).write_bytes(cache.path(one).read_bytes())
    assert cache.get(two) is None
    assert not cache.path(two).exists()


@pytest.mark.parametrize("value", ["off", "0", "OFF"])
def test_off_keeps_nothing_and_reads_nothing(
    value: str, tmp_path: Path, first_jobs: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKCOMPAT_CACHE", str(tmp_path / "tokcompat"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv(truthcache.CACHE_ENV, value)
    folder = toys.native_toy(tmp_path / "native")
    judge_folder(folder)
    judge_folder(folder)
    assert first_jobs == [True, True]
    assert not list(tmp_path.rglob("*.truth"))
    monkeypatch.delenv(truthcache.CACHE_ENV)  # control: by default it lands in $TOKCOMPAT_CACHE/truth
    judge_folder(folder)
    assert len(entries(tmp_path / "tokcompat" / "truth")) == 1


def test_where_the_cache_lives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(truthcache.CACHE_ENV, str(tmp_path / "explicit"))
    monkeypatch.setenv("TOKCOMPAT_CACHE", str(tmp_path / "tokcompat"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))

    def root(configured: str | None = None) -> Path | None:
        ini = ("ini", {"truth_cache": configured}, tmp_path)
        cache = truthcache.default_cache(resolve_judge_settings(ini=ini))
        return cache.root if cache is not None else None

    assert root("elsewhere") == tmp_path / "explicit"  # the variable wins over the ini key
    monkeypatch.delenv(truthcache.CACHE_ENV)
    assert root(str(tmp_path / "ini")) == tmp_path / "ini"
    assert root("off") is None
    assert root() == tmp_path / "tokcompat" / "truth"
    monkeypatch.delenv("TOKCOMPAT_CACHE")
    assert root() == tmp_path / "xdg" / "pytest-tokcompat" / "truth"


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pytest_tokcompat.judge.parity import Truth
    from pytest_tokcompat.judge.truthcache import TruthCache

    cache = TruthCache(Path(sys.argv[1]))
    writer = int(sys.argv[2])
    texts = [f"text {i}" for i in range(300)]
    truth = Truth("the same truth", {t: list(range(40)) for t in texts}, {t: t for t in texts})
    bad = 0
    for round in range(20):
        cache.put("ab" * 32, {"writer": 0}, texts, truth)
        found = cache.get("ab" * 32)
        bad += found is None or found.truth.ids != truth.ids
    print(bad)
    """
)


def test_concurrent_writers_and_readers_never_see_half_an_entry(tmp_path: Path) -> None:
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path / "truth"), str(n)], stdout=subprocess.PIPE, text=True
        )
        for n in range(4)
    ]
    outputs = [process.communicate(timeout=120)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0, 0, 0]
    assert [int(output.strip()) for output in outputs] == [0, 0, 0, 0]
    assert len(entries(tmp_path / "truth")) == 1
    assert not [p for p in (tmp_path / "truth").rglob("*") if p.name.startswith(".")]  # no temp left


def test_a_truth_cut_short_by_a_resource_limit_is_not_kept(
    tmp_path: Path, truths: Path, first_jobs: list[bool]
) -> None:
    folder = toys.native_toy(tmp_path / "native")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    recursive = "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": recursive}))
    limited = judge_folder(folder)
    assert limited.truth is not None and limited.truth.contract is not None
    assert any(truthcache.RESOURCE_LIMIT in r for r in limited.truth.contract.not_checked.values())
    assert entries(truths) == []
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": "{{ 'x' }}"}))
    judge_folder(folder)
    assert len(entries(truths)) == 1  # control: the same checkpoint with a template that renders is kept


def test_a_truth_that_could_not_be_computed_is_not_kept(tmp_path: Path, truths: Path) -> None:
    panics = judge_folder(toys.panic_toy(tmp_path / "panic"))
    assert panics.truth is None and "could not be computed" in json.dumps(panics.to_json())
    assert entries(truths) == []


def test_the_runs_ini_folder_is_used_where_the_variable_is_unset(
    tmp_path: Path, first_jobs: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(truthcache.CACHE_ENV)
    monkeypatch.setenv("TOKCOMPAT_CACHE", str(tmp_path / "tokcompat"))
    folder = toys.native_toy(tmp_path / "native")
    run = resolve_judge_settings(ini=("ini", {"truth_cache": "ini"}, tmp_path))  # as the plugin builds it
    for _ in range(2):
        judge_folder(folder, settings=run)
    assert first_jobs == [True, False]
    assert len(entries(tmp_path / "ini")) == 1 and not (tmp_path / "tokcompat" / "truth").exists()
    judge_folder(folder, settings=resolve_judge_settings(ini=("ini", {"truth_cache": "off"}, tmp_path)))
    assert first_jobs == [True, False, True]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("truths", "{root}/truths"), ("off", "off"), ("", None), ("/abs/truths", "/abs/truths")],
)
def test_the_ini_key_resolves_against_the_ini_file(
    value: str, expected: str | None, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_tokcompat.pytest_plugin.session import run_settings

    monkeypatch.delenv(truthcache.CACHE_ENV, raising=False)  # the variable would win over the ini key

    pytester.makeini(f"[pytest]\ntokcompat_truth_cache = {value}\n")
    config = pytester.parseconfig()
    root = str(pytester.path)
    found = run_settings(config).judge.truth_cache
    if expected is None:  # unset: the default, beside the snapshots
        assert found == resolve_judge_settings().truth_cache
    else:
        assert found == (None if expected == "off" else Path(expected.format(root=root)))


def test_the_key_is_the_same_under_another_transformers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two grid environments with other transformers releases but one tokenizers share every entry."""
    from importlib import metadata

    folder = toys.native_toy(tmp_path / "native")
    real = metadata.version

    def key_with(versions: dict[str, str]) -> str:
        monkeypatch.setattr(metadata, "version", lambda name: versions.get(name) or real(name))
        truthcache.truth_environment.cache_clear()
        try:
            return truthcache.key_of(truthcache.key_fields(folder, [], None))
        finally:
            monkeypatch.setattr(metadata, "version", real)
            truthcache.truth_environment.cache_clear()

    today = key_with({})
    assert key_with({"transformers": "4.57.6"}) == key_with({"transformers": "5.24.0"}) == today
    assert key_with({"tokenizers": "0.0.1"}) != today  # control: the key does see a library's version


def test_the_cache_is_pruned_to_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_tokcompat.judge.parity import Truth

    cache = truthcache.TruthCache(tmp_path / "truth", JudgeSettings(truth_cache_max_mb=0).truth_cache_bytes)
    truth = Truth("a truth", {"a": [1]}, {"a": "a"})
    first, second = (cache.put(key * 64, {}, ["a"], truth) for key in "ab")
    assert second is not None and second.is_file() and first is not None and not first.exists()
    cache = truthcache.TruthCache(tmp_path / "truth", JudgeSettings(truth_cache_max_mb=1).truth_cache_bytes)
    cache.put("c" * 64, {}, ["a"], truth)
    assert len(entries(tmp_path / "truth")) == 2


def test_a_cache_that_cannot_be_written_costs_nothing_but_the_computation(
    tmp_path: Path, first_jobs: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(truthcache.CACHE_ENV, str(blocked))
    folder = toys.native_toy(tmp_path / "native")
    assert judge_folder(folder).verdict == judge_folder(folder).verdict == "native"
    assert first_jobs == [True, True]
    assert blocked.read_text() == "not a folder"
