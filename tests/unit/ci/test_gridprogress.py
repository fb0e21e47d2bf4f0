"""The grid's progress: each environment's run counts its items into a file; the parent shows them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tokcompat.ci.gridprogress import PLAIN_EVERY, PROGRESS_ENV, GridProgress, is_live
from tests.helpers import toys

pytest_plugins = ["pytester"]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_environment_s_run_counts_its_items(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    toys.native_toy(pytester.path / "native")
    matrix = pytester.path / "models.yaml"
    matrix.write_text("version: 1\ncases:\n  - {id: one, snapshot: native, expect: native}\n")
    progress = pytester.path / "progress.jsonl"
    monkeypatch.setenv(PROGRESS_ENV, str(progress))
    result = pytester.runpytest(
        "--tokcompat",
        f"--tokcompat-matrix={matrix}",
        "-p",
        "pytest_tokcompat.ci.gridprogress",
        "-p",
        "no:randomly",
    )
    outcomes = {k: v for k, v in result.parseoutcomes().items() if k in ("passed", "skipped", "failed")}
    lines = [json.loads(line) for line in progress.read_text().splitlines()]
    assert lines[0] == {"total": sum(outcomes.values())}
    assert [line["outcome"] for line in lines[1:]].count("passed") == outcomes["passed"]
    assert len(lines) - 1 == sum(outcomes.values()), "one line per item, skipped ones too"
    assert all(line["seconds"] >= 0 for line in lines[1:]), "what each item cost: the grid's cost records"
    assert sum(line["seconds"] for line in lines[1:]) > 0


def test_plain_lines_say_built_judged_and_eta_at_most_every_period(tmp_path: Path) -> None:
    said: list[str] = []
    clock = Clock()
    built: set[str] = set()
    progress = GridProgress(tmp_path, said.append, live=False, clock=clock)
    progress.building(["tf-5.10.4", "tf-5.11.0"], lambda env: env in built)
    assert said == ["tokcompat grid: tf-5.10.4: building", "tokcompat grid: tf-5.11.0: building"]
    progress.tick()
    assert len(said) == 2, "nothing new, nothing said"
    built.add("tf-5.10.4")
    progress.tick()
    assert said[-1] == "tokcompat grid: tf-5.10.4: built"
    progress.judging({"tf-5.10.4": 4})
    assert said[-1] == "tokcompat grid: tf-5.10.4: built, judged 0/4"
    file = progress.file("tf-5.10.4")
    file.write_text('{"total": 4}\n{"item": "a", "outcome": "passed"}\n')
    clock.now += 10
    progress.tick()
    assert said[-1] == "tokcompat grid: tf-5.10.4: built, judged 0/4", "within the period: no new line"
    clock.now += PLAIN_EVERY
    progress.tick()
    assert said[-1] == "tokcompat grid: tf-5.10.4: built, judged 1/4, ETA 2m00s"
    file.write_text(file.read_text() + "".join('{"item": "x", "outcome": "passed"}\n' for _ in range(3)))
    clock.now += 1
    progress.close()
    assert said[-1] == "tokcompat grid: tf-5.10.4: built, judged 4/4", "the last one is always said"


def test_the_eta_of_an_environment_that_waited_in_tox_s_queue_counts_only_its_items(tmp_path: Path) -> None:
    """tox runs a few environments at a time: one that waited 40 minutes for its turn and has judged one
    item of 17 in 30 s has about 8 minutes left, not 648 (the control: lines without their seconds fall
    back to the time since judging began)."""
    said: list[str] = []
    clock = Clock()
    progress = GridProgress(tmp_path, said.append, live=False, clock=clock)
    progress.building(["tf-5.24.0"], lambda env: True)
    progress.judging({"tf-5.24.0": 17})
    clock.now += 40 * 60
    progress.file("tf-5.24.0").write_text(
        '{"total": 17}\n{"item": "a", "outcome": "passed", "seconds": 30}\n'
    )
    progress.tick()
    assert said[-1] == "tokcompat grid: tf-5.24.0: built, judged 1/17, ETA 8m00s"
    progress.file("tf-5.24.0").write_text('{"total": 17}\n{"item": "a", "outcome": "passed"}\n')
    clock.now += PLAIN_EVERY
    progress.tick()
    assert said[-1] == "tokcompat grid: tf-5.24.0: built, judged 1/17, ETA 648m00s"


def test_live_only_on_a_terminal_outside_ci() -> None:
    class Terminal:
        def isatty(self) -> bool:
            return True

    assert is_live(Terminal(), {})  # type: ignore[arg-type]
    assert not is_live(Terminal(), {"CI": "true"})  # type: ignore[arg-type]
    assert is_live(Terminal(), {"CI": "false"})  # type: ignore[arg-type]


def test_live_lines_draw_with_rich(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    progress = GridProgress(tmp_path, print, live=True, clock=Clock())
    progress.building(["tf-5.11.0"], lambda env: True)
    progress.judging({"tf-5.11.0": 2})
    progress.file("tf-5.11.0").write_text('{"total": 2}\n{"item": "a", "outcome": "passed"}\n')
    progress.close()
    err = capsys.readouterr().err
    assert "tf-5.11.0: built, judging" in err and "1/2" in err
