"""Nothing a checkpoint's code writes into the judge's caches while it runs is trusted afterwards.

An opted-in attempt (remote code, a client's loader) runs as the same user: it can write a
well-formed truth or verdict entry, content hash and all, for its own checkpoint or another, set
its mtime back, or put links where the cache's folders are. What it cannot set back is an inode's
change time (ctime). So before every attempt that may run checkpoint code each cache root is
touched and its ctime read back (the watermark), and after it the root is listed once
(``os.scandir`` and ``lstat``, no hashing); every name whose ctime is at or past the watermark,
and that this process did not write itself, is deleted
(the name, never what a link points to) with one line in the log, before anything reads the
cache again. A legitimate writer at the same moment (another xdist worker, a second run) loses
its entry to the same rule: that costs a recomputation, never a verdict.

Not covered here: what another process reads from the cache while the attempt still runs, and
code that outlives its attempt (the reaper's job); see docs/explanation/isolation.md.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pytest_tokcompat.judge import cachefiles
from pytest_tokcompat.settings import JudgeSettings, judge_settings_from_environment

log = logging.getLogger("pytest_tokcompat.cache")


class _Watching(threading.local):
    active = False
    """A watched block is running on this thread (an inner one adds nothing)."""


_LOCAL = _Watching()
SHOWN = 5
"""Names one discard line lists before it counts the rest."""


WITHHELD = ("TOKCOMPAT_CACHE",)
"""Where the snapshot cache is: a child loads the folder it is given, assembled already (never this)."""
SWITCHED_OFF = ("TOKCOMPAT_TRUTH_CACHE", "TOKCOMPAT_VERDICT_CACHE")
"""Only the parent reads and writes these caches: a child gets ``off`` (not the default folder)."""


def child_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the cache folders a child has no use for (the hub cache, HF_*, stays: a
    client loads a repo id from it). The default folders are no secret; the guard is what holds."""
    kept = {name: value for name, value in environ.items() if name not in WITHHELD + SWITCHED_OFF}
    kept.update(dict.fromkeys(SWITCHED_OFF, "off"))
    return kept


def runs_checkpoint_code(job: Any) -> bool:
    """Whether an attempt's job may run code of the checkpoint's or the client's: remote code
    (``auto_map``) or a client's own loader."""
    return getattr(job, "loader", None) is not None or getattr(job, "remedy", None) == "auto_map"


_SETTINGS: ContextVar[JudgeSettings | None] = ContextVar("tokcompat_cacheguard_settings", default=None)


@contextmanager
def judging_with(settings: JudgeSettings) -> Iterator[None]:
    """The settings whose caches the attempts of the block guard: the judgement's (its in-process
    reload guards the same caches); as they were before once it ends."""
    token = _SETTINGS.set(settings)
    try:
        yield
    finally:
        _SETTINGS.reset(token)


def cache_roots() -> list[Path]:
    """The truth and verdict caches' folders as this judgement uses them (those switched on): its
    settings where a ladder runs, else the environment's and the defaults."""
    from pytest_tokcompat.judge import truthcache, verdicts

    settings = _SETTINGS.get() or judge_settings_from_environment()
    found = [truthcache.default_cache(settings), verdicts.default_cache(settings)]
    return sorted({cache.root for cache in found if cache is not None})


@contextmanager
def watched(foreign: bool = True) -> Iterator[None]:
    """Discard what appeared or changed in the caches while the block ran checkpoint code
    (``foreign``; a block inside another watched one is covered by the outer one)."""
    if not foreign or _LOCAL.active:
        yield
        return
    marks = {root: (watermark(root), _root_seen(root)) for root in cache_roots()}
    _LOCAL.active = True
    try:
        yield
    finally:
        _LOCAL.active = False
        for root, (since, root_before) in marks.items():
            discard_changes(root, since, root_before)


def watermark(root: Path) -> int:
    """The change time (ns) that whatever changes under ``root`` from now on carries at least: the
    root folder touched and its change time read back, so the kernel's own clock and granularity
    (and a network file system's server's) decide. 0 where there is no root yet (all in it is new);
    a root this process cannot touch: the clock a second back (a false discard costs a recomputation)."""
    try:
        os.utime(root)
        return os.stat(root).st_ctime_ns
    except FileNotFoundError:
        return 0
    except OSError:
        return time.time_ns() - 1_000_000_000


def _root_seen(root: Path) -> cachefiles.Seen | None:
    try:
        found = root.lstat()
    except OSError:
        return None
    kind = "link" if root.is_symlink() else "folder" if root.is_dir() else "other"
    return cachefiles.Seen(kind, found.st_ino, found.st_ctime_ns, found.st_size, found.st_mtime)


def discard_changes(root: Path, since: int, root_before: cachefiles.Seen | None = None) -> list[str]:
    """Delete every name under ``root`` changed at or after ``since`` (a ``watermark``) that is not
    this process's own write; the names deleted, which one log line lists. One listing, no hashing."""
    now = _root_seen(root)
    same = (
        root_before is not None and root_before[:3] == now[:3] if now is not None else True
    )  # kind, inode, ctime
    if now is not None and now.kind == "link" and not same:  # an inode number may be reused: ctime tells
        root.unlink()  # the cache's folder itself replaced by a link: the link goes, never its target
        _note(root, ["(the cache folder itself, a symbolic link)"])
        return [root.name]
    discarded: list[str] = []
    for name, seen in sorted(cachefiles.listing(root).items()):
        if seen.kind == "folder" or seen.changed_ns < since:
            continue  # a folder's entries are looked at one by one; an older change was before the code ran
        path = root / name
        if cachefiles.is_ours(path, seen):
            continue
        if cachefiles.remove(root, path) if "/" in name else _remove_top(root, name):
            discarded.append(name)
    if discarded:
        _note(root, discarded)
    return discarded


def _remove_top(root: Path, name: str) -> bool:
    """A name directly in the root (a link where a folder should be, a stray file): unlinked, not followed."""
    try:
        (root / name).unlink()
    except OSError:
        return False
    return True


def _note(root: Path, names: list[str]) -> None:
    shown = ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
    log.warning(
        "tokcompat: cache %s: %d name(s) that appeared or changed while checkpoint code ran, not "
        "written by this process, discarded (computed again when needed): %s",
        root,
        len(names),
        shown,
    )
