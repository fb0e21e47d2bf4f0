"""Files of the judge's disk caches, opened without following a link the judge did not make.

A cache is ``<root>/<folder>/<entry>``; code a checkpoint runs (an opted-in attempt) runs as the
same user and can put a symbolic link where a folder or an entry should be, into a folder of the
user's. Every operation below the root opens each component itself (``dir_fd``, ``O_NOFOLLOW``)
and takes only real folders and regular files: a link, a FIFO or a device is refused with one
line in the log and the entry is a miss (``Refused`` is an OSError, which every caller already
takes as "not cached"). The root is the user's configuration and is used as named. What this
process wrote is remembered (inode and change time), so that ``cacheguard`` keeps it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger("pytest_tokcompat.cache")

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_LINKED = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)
"""What ``open(O_NOFOLLOW)`` raises where the last component is a link (or a file stands for a folder)."""

OURS: dict[str, tuple[int, int]] = {}
"""Entries this process wrote or touched last, by path: (inode, change time in ns)."""


class Refused(OSError):
    """A link, or something other than a folder or a regular file, where the cache keeps its own."""


class Seen(NamedTuple):
    """One name in a cache as ``lstat`` saw it: what it is, its inode and its change time."""

    kind: str
    """``folder``, ``file``, ``link`` or ``other``."""
    inode: int
    changed_ns: int
    size: int
    modified: float
    """The time of last use (a hit touches its entry), for pruning least recently used first."""


def refuse(path: Path, what: str) -> Refused:
    """Say in one line what was refused, and the error that makes the entry a miss."""
    log.warning("tokcompat: cache %s %s: not followed, the entry is a miss", path, what)
    return Refused(errno.ELOOP, f"{path} {what}")


def _root(root: Path, create: bool) -> int:
    if create:
        root.mkdir(parents=True, exist_ok=True)
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


@contextlib.contextmanager
def folder(root: Path, name: str, *, create: bool = False) -> Iterator[int]:
    """A descriptor of the real folder ``root/name`` (made where ``create``); a link there is refused."""
    top = _root(root, create)
    try:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=top)
        try:
            handle = os.open(name, _FOLDER, dir_fd=top)
        except OSError as error:
            if error.errno in _LINKED:
                raise refuse(root / name, "is a symbolic link or not a folder") from None
            raise
    finally:
        os.close(top)
    try:
        yield handle
    finally:
        os.close(handle)


def _parts(root: Path, path: Path) -> tuple[str, str]:
    relative = path.relative_to(root).parts
    if len(relative) != 2:
        raise ValueError(f"{path}: not <root>/<folder>/<entry> of {root}")
    return relative[0], relative[1]


def _remember(path: Path, handle: int, name: str) -> None:
    found = os.stat(name, dir_fd=handle, follow_symlinks=False)
    OURS[str(path)] = (found.st_ino, found.st_ctime_ns)


def read(root: Path, path: Path) -> bytes:
    """The bytes of the regular file ``path`` (``<root>/<folder>/<entry>``); raises OSError."""
    sub, name = _parts(root, path)
    with folder(root, sub) as parent:
        try:
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
        except OSError as error:
            if error.errno in _LINKED:
                raise refuse(path, "is a symbolic link") from None
            raise
        with os.fdopen(handle, "rb") as stream:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                raise refuse(path, "is not a regular file")
            return stream.read()


def touch(root: Path, path: Path) -> None:
    """Mark ``path`` recently used (pruned last), never through a link."""
    sub, name = _parts(root, path)
    with contextlib.suppress(OSError), folder(root, sub) as parent:
        os.utime(name, dir_fd=parent, follow_symlinks=False)
        _remember(path, parent, name)


def write(root: Path, path: Path, data: bytes) -> None:
    """``data`` at ``path``, through a temp file in its folder renamed into place (raises OSError)."""
    sub, name = _parts(root, path)
    with folder(root, sub, create=True) as parent:
        temporary = f".{name}.{secrets.token_hex(6)}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        handle = os.open(temporary, flags, 0o600, dir_fd=parent)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=parent)
            raise
        _remember(path, parent, name)


def remove(root: Path, path: Path) -> bool:
    """Delete the name ``path`` (a link itself, never what it points to); False where it is gone."""
    sub, name = _parts(root, path)
    try:
        with folder(root, sub) as parent:
            os.unlink(name, dir_fd=parent)
    except OSError:
        return False
    OURS.pop(str(path), None)
    return True


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISDIR(mode):
        return "folder"
    return "file" if stat.S_ISREG(mode) else "other"


def listing(root: Path) -> dict[str, Seen]:
    """Every name at ``root/*`` and inside its real folders, by relative path (``os.scandir``, no hashing)."""
    found: dict[str, Seen] = {}
    try:
        top = _root(root, False)
    except OSError:
        return found
    try:
        for entry in _scan(top):
            seen = _seen(entry)
            if seen is None:
                continue
            found[entry.name] = seen
            if seen.kind != "folder":
                continue
            try:
                handle = os.open(entry.name, _FOLDER, dir_fd=top)
            except OSError:
                continue  # replaced or removed meanwhile: what is there now is seen on the next listing
            try:
                prefix = entry.name + "/"
                for inner in _scan(handle):
                    inner_seen = _seen(inner)
                    if inner_seen is not None:
                        found[prefix + inner.name] = inner_seen
            finally:
                os.close(handle)
    finally:
        os.close(top)
    return found


def _scan(handle: int) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(handle) as entries:
            return list(entries)
    except OSError:
        return []


def _seen(entry: os.DirEntry[str]) -> Seen | None:
    try:
        found = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    return Seen(_kind(found.st_mode), found.st_ino, found.st_ctime_ns, found.st_size, found.st_mtime)


def is_ours(path: Path, seen: Seen) -> bool:
    """Whether ``path`` is as this process last wrote or touched it."""
    return OURS.get(str(path)) == (seen.inode, seen.changed_ns)
