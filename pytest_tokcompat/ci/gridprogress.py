"""Progress of ``tokcompat grid``: a line per environment (built, judged N/M, ETA) while it runs.

A cold grid judges for many minutes between "judging N cell(s)" and the grid. Each
environment's run loads this module as a pytest plugin (``-p``) and appends one JSON
line per finished tokcompat item, with the seconds it took, to the file
``$TOKCOMPAT_GRID_PROGRESS`` names (the first line: how many items it will run); the
parent counts those lines while tox runs, and afterwards sums their seconds per cell
(:mod:`pytest_tokcompat.ci.schedule`).
On a terminal the lines are live (rich.progress); in CI logs (no TTY, or ``CI`` set)
they are plain lines, one when an environment is built and at most one every
:data:`PLAIN_EVERY` seconds per environment while it judges, and its last.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from pytest_tokcompat import environment

PROGRESS_ENV = "TOKCOMPAT_GRID_PROGRESS"
PLAIN_EVERY = 30.0
Out = Callable[[str], None]


# The environment's side: a pytest plugin.


def _append(entry: Mapping[str, Any]) -> None:
    where = environment.read(PROGRESS_ENV)
    if where:
        with open(where, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(entry) + "\n")


_SETUP_SECONDS: dict[str, float] = {}
"""Each running item's setup time, added to its call's: what the cell cost (:mod:`.schedule`)."""


_WORKER: list[str | None] = [None]
"""The pytest-xdist worker this process is (``gw0`` ...), None for the process that owns the run."""


def _worker() -> str | None:
    return _WORKER[0]


def pytest_configure(config: pytest.Config) -> None:
    workerinput = getattr(config, "workerinput", None)
    _WORKER[0] = str(workerinput["workerid"]) if isinstance(workerinput, dict) else None


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    if _worker() in (None, "gw0"):  # under xdist each worker collects every item: one of them counts
        _append({"total": len(session.items)})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _worker() is not None:
        return  # the owning process gets every worker's reports: it writes the lines
    if report.when == "setup" and report.passed:
        _SETUP_SECONDS[report.nodeid] = report.duration
    elif report.when == "call" or report.when == "setup":
        seconds = _SETUP_SECONDS.pop(report.nodeid, 0.0) + report.duration
        _append({"item": report.nodeid, "outcome": report.outcome, "seconds": round(seconds, 4)})


# The parent's side: reading the files and showing them.


@dataclass
class EnvProgress:
    name: str
    state: str = "building"
    total: int = 0
    done: int = 0
    started: float | None = None
    said_at: float = float("-inf")
    said: str = ""
    said_state: str = ""
    seconds: float = 0.0
    """What the items judged so far cost, as their lines say."""

    def text(self, now: float) -> str:
        if self.state != "judging":
            return f"{self.name}: {self.state}"
        line = f"{self.name}: built, judged {self.done}/{self.total}"
        if self.started is not None and 0 < self.done < self.total:
            # the items' own cost where their lines give it: an environment queued behind others (tox runs
            # a few at a time) has waited since ``started``, which says nothing of what it has left
            spent = self.seconds if self.seconds > 0 else now - self.started
            line += f", ETA {_duration(spent / self.done * (self.total - self.done))}"
        return line


def _duration(seconds: float) -> str:
    minutes, rest = divmod(int(seconds + 0.5), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def is_live(stream: IO[str] | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Live lines on a terminal; plain lines in CI (``CI`` set to anything but false) or without a TTY."""
    environ = os.environ if environ is None else environ
    in_ci = environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
    stream = sys.stderr if stream is None else stream
    return not in_ci and bool(getattr(stream, "isatty", lambda: False)())


class GridProgress:
    """What each environment has done, read from its progress file at every :meth:`tick`."""

    def __init__(
        self,
        folder: Path,
        out: Out,
        *,
        live: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.folder = folder
        self.out = out
        self.clock = clock
        self.envs: dict[str, EnvProgress] = {}
        self.built: Callable[[str], bool] = lambda env: False
        self._live = is_live() if live is None else live
        self._bars: Any = None
        self._tasks: dict[str, Any] = {}

    def file(self, env: str) -> Path:
        return self.folder / f"{env}.jsonl"

    def building(self, envs: list[str], built: Callable[[str], bool]) -> None:
        """These environments are being built; ``built(env)`` says when one is."""
        self.built = built
        for env in envs:
            self.envs[env] = EnvProgress(env)
        self.tick()

    def judging(self, totals: Mapping[str, int]) -> None:
        """These environments judge (about) this many items each; their files start empty."""
        self.folder.mkdir(parents=True, exist_ok=True)
        for env, total in totals.items():
            self.file(env).unlink(missing_ok=True)
            entry = self.envs.setdefault(env, EnvProgress(env))
            entry.state, entry.total, entry.done, entry.started = "judging", total, 0, self.clock()
        self.tick()

    def _read(self, entry: EnvProgress) -> None:
        try:
            lines = self.file(entry.name).read_text(encoding="utf-8").splitlines()
        except OSError:
            return
        entry.done, entry.seconds = 0, 0.0
        for line in lines:
            entry.done += line.startswith('{"item"')  # a line being written counts: its item has finished
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if not isinstance(data, dict):
                continue
            if isinstance(data.get("total"), int):
                entry.total = data["total"]
            if isinstance(data.get("seconds"), int | float):
                entry.seconds += float(data["seconds"])
        entry.total = max(entry.total, entry.done)

    def tick(self) -> None:
        now = self.clock()
        for entry in self.envs.values():
            if entry.state == "building" and self.built(entry.name):
                entry.state = "built"
            elif entry.state == "judging":
                self._read(entry)
            self._show(entry, now)

    def _show(self, entry: EnvProgress, now: float) -> None:
        text = entry.text(now)
        if self._live:
            self._show_live(entry, text)
            return
        judging = entry.state == "judging"
        finished = judging and entry.done >= entry.total > 0
        due = judging and now - entry.said_at >= PLAIN_EVERY
        if text != entry.said and (entry.state != entry.said_state or due or finished):
            self.out(f"tokcompat grid: {text}")
            entry.said, entry.said_state, entry.said_at = text, entry.state, now

    def _show_live(self, entry: EnvProgress, text: str) -> None:
        if self._bars is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(file=sys.stderr),
            )
            self._bars.start()
        description = f"{entry.name}: built, judging" if entry.state == "judging" else text
        if entry.name not in self._tasks:
            self._tasks[entry.name] = self._bars.add_task(description, total=entry.total or None)
        self._bars.update(
            self._tasks[entry.name], description=description, completed=entry.done, total=entry.total or None
        )

    def close(self) -> None:
        self.tick()
        if self._bars is not None:
            self._bars.stop()
            self._bars = None


def rich_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("rich") is not None


def make_progress(folder: Path, out: Out) -> GridProgress:
    """Live where a terminal shows it and rich is installed (the grid extra); plain lines otherwise."""
    return GridProgress(folder, out, live=is_live() and rich_available())
