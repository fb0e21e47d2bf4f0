"""Writing reports and output folders so that no finished run is ever lost or half-written.

Two runs may write one reports folder at once (tflatest and tfpre on one release): they decide one
after the other under a folder lock, and a report is replaced only by one that supersedes it.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_tokcompat.contract.records import is_full_run
from pytest_tokcompat.contract.schema import SCHEMA_VERSION
from pytest_tokcompat.credentials import scrub_data
from pytest_tokcompat.errors import ReportError

LOCK_NAME = ".tokcompat-report.lock"
"""The lock file a reports folder gets, so that two runs writing it at once decide one after the other."""


def _atomic_write(path: Path, document: Mapping[str, Any]) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(scrub_data(document), stream, indent=2, ensure_ascii=False)
            stream.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """Hold the folder's report lock (fcntl; where there is none, writes still never replace a
    kept report, but two deciding at once are not ordered)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on the platforms CI runs
        yield
        return
    with open(folder / LOCK_NAME, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def parse_timestamp(value: Any) -> datetime | None:
    """A report's ``started_at``/``finished_at`` as an aware datetime, or None when absent or unreadable."""
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return moment if moment is None or moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _read_existing(path: Path) -> dict[str, Any] | None:
    """The report at ``path``, or None when it is no report (such a file is never replaced)."""
    try:
        existing = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    return existing if isinstance(existing, dict) and "schema_version" in existing else None


def superseded(existing: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether ``new`` may replace ``existing``: a report in an older format, or an earlier run of the
    same matrix (it finished before ``new``'s run started) that is not complete where ``new`` is.

    A run that finished while ``new``'s ran (two runs at once), another matrix's run, a report
    without timestamps, and a complete run that ``new`` (incomplete or partial) would replace are
    never superseded.
    """
    version = existing.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version < SCHEMA_VERSION:
        return True
    if existing.get("matrix") != new.get("matrix"):
        return False
    finished, started = parse_timestamp(existing.get("finished_at")), parse_timestamp(new.get("started_at"))
    if finished is None or started is None or finished >= started:
        return False
    return is_full_run(new) or not is_full_run(existing)


def _siblings(target: Path) -> list[Path]:
    """The reports written beside ``target`` by ``write_report`` (``<name>.run-N.json``)."""
    pattern = re.compile(re.escape(target.stem) + r"\.run-\d+" + re.escape(target.suffix))
    return sorted(path for path in target.parent.iterdir() if pattern.fullmatch(path.name))


def _unique_sibling(target: Path) -> Path:
    for number in range(2, 10_000):
        candidate = target.with_name(f"{target.stem}.run-{number}{target.suffix}")
        try:
            os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            continue
        return candidate
    raise ReportError(f"{target.parent}: 10000 reports named {target.stem}.run-N; clear the folder")


def write_report(target: Path, document: Mapping[str, Any]) -> Path:
    """Write a run's report to ``target`` without ever losing a finished run; returns the path written.

    Under an exclusive lock on the folder's ``.tokcompat-report.lock``, so that two runs decide
    one after the other: a report at ``target`` is replaced only when ``superseded`` by this one;
    otherwise it stays and this one is written beside it as ``<name>.run-N.json`` (two runs at
    once, e.g. tflatest and tfpre on one release; a partial run after a complete one; another
    matrix; a file that is no report). A complete report also removes the ``.run-N`` reports it
    supersedes, so reruns do not pile up. The merge reads them all: the newest complete report
    per cell, and any incomplete or partial one marks the grid incomplete.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with _folder_lock(target.parent):
        destination = target
        if target.exists() or target.is_symlink():
            existing = _read_existing(target)
            if existing is None or not superseded(existing, document):
                destination = _unique_sibling(target)
        try:
            _atomic_write(destination, document)
        except BaseException:
            if destination != target:  # the empty placeholder _unique_sibling reserved
                destination.unlink(missing_ok=True)
            raise
        if is_full_run(document):
            for sibling in _siblings(target):
                old = _read_existing(sibling) if sibling != destination else None
                if old is not None and superseded(old, document):
                    sibling.unlink(missing_ok=True)
    return destination


OUTPUT_GITIGNORE = "# Written by pytest-tokcompat: its output stays out of your repository.\n*\n"


def make_output_folder(folder: Path) -> Path:
    """Create an output folder (the grid's, the reports') with a ``.gitignore`` of ``*`` when this creates
    it, so the tool's output never lands untracked in the user's repository; a folder that already exists
    is the user's and is left as it is."""
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)  # a file in its place raises, as before
    if created:
        (folder / ".gitignore").write_text(OUTPUT_GITIGNORE, encoding="utf-8")
    return folder


def write_json_atomic(path: Path, document: Mapping[str, Any]) -> Path:
    """Write JSON atomically (never half a file); a report (``schema_version`` and ``cases``) goes
    through ``write_report``'s rule, so no caller can replace a finished run. Returns the path written."""
    if "schema_version" in document and "cases" in document:
        return write_report(path, document)
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, document)
    return path
