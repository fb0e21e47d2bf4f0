"""Nothing a checkpoint's code writes into the judge's caches while it runs is trusted afterwards.

An opted-in attempt (remote code, a client's loader) runs as the same user: it can write a
well-formed truth or verdict entry, content hash and all, for its own checkpoint or another, set
its mtime back, or put links where the cache's folders are. What it cannot set back is an inode's
change time. So around every attempt that may run checkpoint code the cache roots are listed
(``os.scandir`` and ``lstat``, no hashing) before and after; every name that appeared or whose
inode or change time moved meanwhile, and that this process did not write itself, is deleted
(the name, never what a link points to) with one line in the log, before anything reads the
cache again. A legitimate writer at the same moment (another xdist worker, a second run) loses
its entry to the same rule: that costs a recomputation, never a verdict.

Not covered here: what another process reads from the cache while the attempt still runs, and
code that outlives its attempt (the reaper's job); see docs/explanation/isolation.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_tokcompat.judge import cachefiles

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


def cache_roots() -> list[Path]:
    """The truth and verdict caches' folders as this process uses them now (those switched on)."""
    from pytest_tokcompat.judge import truthcache, verdicts
    from pytest_tokcompat.judge.active import active_cache

    active = active_cache()
    found = [
        truthcache.default_cache(active.truth_cache if active is not None else None),
        verdicts.default_cache(),
    ]
    return sorted({cache.root for cache in found if cache is not None})


@contextmanager
def watched(foreign: bool = True) -> Iterator[None]:
    """Discard what appeared or changed in the caches while the block ran checkpoint code
    (``foreign``; a block inside another watched one is covered by the outer one)."""
    if not foreign or _LOCAL.active:
        yield
        return
    roots = cache_roots()
    before = {root: _state(root) for root in roots}
    _LOCAL.active = True
    try:
        yield
    finally:
        _LOCAL.active = False
        for root in roots:
            discard_changes(root, *before[root])


def _state(root: Path) -> tuple[cachefiles.Seen | None, dict[str, cachefiles.Seen]]:
    return _root_seen(root), cachefiles.listing(root)


def _root_seen(root: Path) -> cachefiles.Seen | None:
    try:
        found = root.lstat()
    except OSError:
        return None
    kind = "link" if root.is_symlink() else "folder" if root.is_dir() else "other"
    return cachefiles.Seen(kind, found.st_ino, found.st_ctime_ns, found.st_size, found.st_mtime)


def _same(old: cachefiles.Seen | None, new: cachefiles.Seen) -> bool:
    """A folder's change time moves with every entry added to it: its kind and inode decide."""
    if old is None or old.kind != new.kind or old.inode != new.inode:
        return False
    return new.kind == "folder" or old.changed_ns == new.changed_ns


def discard_changes(
    root: Path, root_before: cachefiles.Seen | None, before: dict[str, cachefiles.Seen]
) -> list[str]:
    """Delete every name under ``root`` that is new or changed since ``before`` and not this process's
    own write; the names deleted, which one log line lists."""
    now = _root_seen(root)
    if now is not None and now.kind == "link" and not _same(root_before, now):
        root.unlink()  # the cache's folder itself replaced by a link: the link goes, never its target
        _note(root, ["(the cache folder itself, a symbolic link)"])
        return [root.name]
    discarded: list[str] = []
    for name, seen in sorted(cachefiles.listing(root).items()):
        if _same(before.get(name), seen) or seen.kind == "folder":
            continue
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
