"""The grid's logs roll over instead of growing without bound."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat.ci import gridlog, gridrun, toxrun


def test_a_full_log_rolls_over_and_old_runs_are_dropped(tmp_path: Path) -> None:
    log = tmp_path / "judge.log"
    gridlog.rotate_log(log, max_bytes=10)  # no log yet: nothing to do
    assert list(tmp_path.iterdir()) == []
    log.write_text("small")
    gridlog.rotate_log(log, max_bytes=10)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["judge.log"], "the control: under the cap, kept"
    for run in range(5):
        log.write_text(f"run {run} " + "x" * 20)
        gridlog.rotate_log(log, max_bytes=10, backups=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["judge.log.1", "judge.log.2"]
    assert (tmp_path / "judge.log.1").read_text().startswith("run 4")
    assert (tmp_path / "judge.log.2").read_text().startswith("run 3")


def test_every_tox_run_appends_to_a_rolled_over_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gridlog, "LOG_MAX_BYTES", 1000)

    class FakeTox:
        def __init__(self, command: list[str], *, stdout: Any, **_: Any) -> None:
            stdout.write("tox says " + "y" * 600 + "\n")

        def wait(self, timeout: float | None = None) -> int:
            return 0

    monkeypatch.setattr(toxrun.subprocess, "Popen", FakeTox)
    log = tmp_path / "logs" / "judge.log"
    log.parent.mkdir()
    for _ in range(8):
        gridrun.run_tox(tmp_path, ["tf-5.11.0"], jobs=1, notest=False, recreate=False, log=log)
    sizes = {p.name: p.stat().st_size for p in log.parent.iterdir()}
    assert set(sizes) == {"judge.log", "judge.log.1", "judge.log.2", "judge.log.3"}
    assert all(size < 2 * 1000 for size in sizes.values()), sizes
