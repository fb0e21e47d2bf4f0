"""The checkpoint's files as the judge read them: what checkpoint code changes in them is seen, and undone.

Remote code opted in for the auto_map attempt, and a client's loader, run as the user: they can rewrite
``tokenizer.json``, add a file, or write through a hub cache snapshot's symlink into its blob, which every
later attempt, the in-process reload, the caches and every later run and client would then read. So before
the first attempt the judge takes a fingerprint of the files (each entry's kind, symlink target, size and
sha256, keeping the bytes) and, once checkpoint code has run, checks it after every attempt: a change makes
that attempt's result, and every later one, not trusted; the files are put back as they were.

The parent keeps the bytes rather than judging a private copy: the checkpoint is loaded by the name its
client gives (a folder's path as written, a repo id's hub layout), which a copy would change, and a copy
costs a write of every file per judgement; the bytes cost memory the size of the tokenizer files (weights
are left out, as in the truth cache's key, whose hashes the fingerprint provides). A check costs a
``stat`` per file: a file whose inode, size, mtime or ctime moved is hashed again, so a touch is no change.
What it cannot see: a write that lands after the last check (the attempt's processes are dead by then),
and files outside the checkpoint (transformers' copy of the remote modules, the user's home).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pytest_tokcompat.inert import terminal
from pytest_tokcompat.judge.diskcache import WEIGHT_SUFFIXES, write_atomically
from pytest_tokcompat.sources.names import LoadTarget

CHECKED = True
"""Whether the judge fingerprints the files it judges (a seam for the tests that prove the check sees)."""
CHECKPOINT = "checkpoint"
"""The root that is the checkpoint folder itself (the others: the hub layout it is loaded through)."""
SHOWN = 5
"""Names a message lists before it counts the rest."""
ITSELF = ""
"""The key of a root's own entry: a folder replaced by a link, or removed, is a change too."""

Stamp = tuple[int, int, int, int, int]
"""What moves when a file's content is written: device, inode, size, mtime and ctime (which no user can set)."""


@dataclass
class Entry:
    """One name under a root, as the judge found it."""

    kind: str
    """``dir``, ``file`` or ``link``."""
    target: str | None = None
    """A link's text (what ``readlink`` gives)."""
    real: str | None = None
    """The regular file whose content it is (itself, or where its link resolves); None: no content kept."""
    mode: int = 0


@dataclass
class Content:
    """A regular file's bytes as the judge read them."""

    digest: str
    stamp: Stamp
    data: bytes
    mode: int


def _stamp(status: os.stat_result) -> Stamp:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def _skipped(relative: str) -> bool:
    """What the truth cache's key leaves out too: weights (no tokenizer load reads them), bytecode caches
    and dot files (a clone's ``.git``, huggingface_hub's ``.cache``, our own marks)."""
    parts = relative.split("/")
    if any(part == "__pycache__" or part.startswith(".") for part in parts):
        return True
    return Path(relative).suffix.lower() in WEIGHT_SUFFIXES


def _entry_of(path: str) -> Entry:
    status = os.lstat(path)
    if stat.S_ISLNK(status.st_mode):
        return Entry("link", os.readlink(path))
    return Entry("dir" if stat.S_ISDIR(status.st_mode) else "file", mode=stat.S_IMODE(status.st_mode))


def _scan(root: Path) -> dict[str, Entry]:
    """``root`` itself and every name under it (links not followed into directories): kind, link text, mode."""
    found: dict[str, Entry] = {}
    with contextlib.suppress(OSError):  # gone: every name it held is gone
        found[ITSELF] = _entry_of(str(root))
    for here, dirs, files in os.walk(root, followlinks=False):
        for name in (*dirs, *files):
            path = os.path.join(here, name)
            relative = os.path.relpath(path, root).replace(os.sep, "/")
            if not _skipped(relative):
                with contextlib.suppress(FileNotFoundError):  # removed while the folder is read
                    found[relative] = _entry_of(path)
        dirs[:] = [d for d in dirs if not _skipped(os.path.relpath(os.path.join(here, d), root))]
    return found


@dataclass
class Fingerprint:
    """The files under each root (the checkpoint folder; the hub layout it is loaded through), and the
    bytes of every regular file they hold or link to."""

    roots: dict[str, Path]
    entries: dict[str, dict[str, Entry]] = field(default_factory=dict)
    contents: dict[str, Content] = field(default_factory=dict)
    """By real path: a blob that the folder's link and the layout's link both reach is read once."""
    linked_dirs: bool = False

    @classmethod
    def take(cls, roots: dict[str, Path]) -> Fingerprint:
        """Read every file under ``roots`` (raises OSError where one cannot be read)."""
        taken = cls(roots)
        for label, root in roots.items():
            entries = _scan(root)
            for relative, entry in entries.items():
                if entry.kind == "dir" or relative == ITSELF:
                    continue
                real = os.path.realpath(root / relative)
                if not os.path.isfile(real):
                    taken.linked_dirs = taken.linked_dirs or os.path.isdir(real)
                    continue
                entry.real = real
                if real not in taken.contents:
                    taken.contents[real] = _read(real)
            taken.entries[label] = entries
        return taken

    def digests(self, label: str) -> dict[str, str] | None:
        """sha256 of the files under one root by relative path, as ``diskcache.folder_digests`` gives them
        (None where a link to a directory makes the two walks differ: let that hash the folder itself)."""
        if self.linked_dirs:
            return None
        return {
            relative: self.contents[entry.real].digest
            for relative, entry in self.entries.get(label, {}).items()
            if entry.real is not None
        }

    def changes(self) -> list[str]:
        """What differs now from what the judge read, one phrase per name (empty: nothing)."""
        changed: list[str] = []
        moved: dict[str, bool] = {}
        reported: set[str] = set()
        for label, root in self.roots.items():
            now, then = _scan(root), self.entries[label]
            prefix = "" if label == CHECKPOINT else f"{label} "
            for relative in sorted(then.keys() | now.keys()):
                name = prefix + (terminal(relative) if relative != ITSELF else "folder")
                was, seen = then.get(relative), now.get(relative)
                if was is None:
                    changed.append(f"{name} (added)")
                elif seen is None:
                    changed.append(f"{name} (removed)")
                elif seen.kind != was.kind or seen.target != was.target:
                    changed.append(f"{name} (replaced)")
                elif was.real is not None and was.real not in reported and self._moved(was.real, moved):
                    via = " (through its symlink)" if was.kind == "link" else ""
                    changed.append(f"{name}{via}")
                    reported.add(was.real)  # a blob reached by the folder's link and the layout's
        return changed

    def _moved(self, real: str, moved: dict[str, bool]) -> bool:
        """Whether the content at ``real`` is not what was read (hashed again only where its stamp moved)."""
        if real not in moved:
            kept = self.contents[real]
            try:
                status = os.stat(real)
                moved[real] = _stamp(status) != kept.stamp and (
                    not stat.S_ISREG(status.st_mode) or _digest_of(real) != kept.digest
                )
            except OSError:
                moved[real] = True
        return moved[real]

    def restore(self) -> list[str]:
        """Put every root back as it was read; what could not be put back (empty: all was)."""
        problems: list[str] = []
        for label, root in self.roots.items():
            then = self.entries[label]
            with _noting(problems, str(root)):  # the folder itself first: replaced by a link, or gone
                self._put_back(root, then[ITSELF], _scan(root).get(ITSELF))
            now = _scan(root)
            for relative, was in then.items():  # a folder made read-only would refuse what follows
                seen = now.get(relative)
                if was.kind == "dir" and seen is not None and seen.kind == "dir" and seen.mode != was.mode:
                    with _noting(problems, relative):
                        os.chmod(root / relative, was.mode)
            for relative in sorted(now.keys() - then.keys(), key=len, reverse=True):
                with _noting(problems, relative):
                    _remove(root / relative)
            for relative in sorted(then.keys() - {ITSELF}, key=lambda name: name.count("/")):
                with _noting(problems, relative):
                    self._put_back(root / relative, then[relative], now.get(relative))
        for real, kept in self.contents.items():
            if self._moved(real, {}):
                with _noting(problems, real):
                    _write_back(Path(real), kept)
            with contextlib.suppress(OSError):
                kept.stamp = _stamp(os.stat(real))
        return problems

    def _put_back(self, path: Path, was: Entry, seen: Entry | None) -> None:
        if seen is not None and seen.kind == was.kind and seen.target == was.target:
            return
        if seen is not None:
            _remove(path)
        if was.kind == "dir":
            path.mkdir(mode=was.mode or 0o755, parents=True)
        elif was.kind == "link":
            assert was.target is not None
            os.symlink(was.target, path)
        elif was.real is not None:
            _write_back(path, self.contents[was.real])


def _read(real: str) -> Content:
    with open(real, "rb") as stream:
        status = os.fstat(stream.fileno())
        data = stream.read()
    return Content(hashlib.sha256(data).hexdigest(), _stamp(status), data, stat.S_IMODE(status.st_mode))


def _digest_of(real: str) -> str:
    digest = hashlib.sha256()
    with open(real, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_back(path: Path, kept: Content) -> None:
    """The bytes as they were read, with their mode and mtime, renamed into place (a blob stays a blob)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    write_atomically(path, kept.data)
    os.chmod(path, kept.mode)
    os.utime(path, ns=(kept.stamp[3], kept.stamp[3]))


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def _noting(problems: list[str], name: str) -> Iterator[None]:
    try:
        yield
    except OSError as error:
        problems.append(f"{terminal(name)} ({error.strerror or error})")


def roots_of(folder: Path, target: LoadTarget | None) -> dict[str, Path]:
    """The checkpoint folder, and where it is loaded by a repo id, the hub layout's snapshot and its marks."""
    roots = {CHECKPOINT: folder}
    if target is not None:
        roots.update(target.layout_folders())
    return {label: root for label, root in roots.items() if root.is_dir()}


class Watch:
    """One judgement's check of its files: after each attempt once checkpoint code has run.

    ``changed`` is the one line that says which attempt changed what, once it did; every attempt from
    then on is not run, and the judgement is not-checked."""

    def __init__(self, folder: Path, target: LoadTarget | None, enabled: bool) -> None:
        self.fingerprint: Fingerprint | None = None
        self.changed: str | None = None
        self.ran: str | None = None
        """The last attempt that ran checkpoint code: what a change seen later is put down to."""
        if enabled and CHECKED:
            with contextlib.suppress(OSError):  # unreadable files are the judgement's to report
                self.fingerprint = Fingerprint.take(roots_of(folder, target))

    def not_tried(self) -> str | None:
        """Why a later attempt is not run, once the files were changed (the attempt that did says what)."""
        return f"attempt {self.ran} changed the checkpoint's files" if self.changed is not None else None

    def digests(self) -> dict[str, str] | None:
        """The checkpoint's hashes for the truth cache's key (None: not taken here)."""
        return self.fingerprint.digests(CHECKPOINT) if self.fingerprint is not None else None

    def after(self, attempt: str, *, ran_code: bool) -> str | None:
        """Check the files after ``attempt`` (which ran checkpoint code, or ran after some did); where
        they changed, put them back and return the line that says so."""
        if ran_code:
            self.ran = attempt
        if self.fingerprint is None or self.ran is None or self.changed is not None:
            return None
        changes = self.fingerprint.changes()
        if not changes:
            return None
        shown = ", ".join(changes[:SHOWN]) + (
            f" and {len(changes) - SHOWN} more" if len(changes) > SHOWN else ""
        )
        line = f"attempt {self.ran} changed {shown} of the checkpoint: its result and every later one is not trusted"
        problems = self.fingerprint.restore()
        if problems:
            line += f"; could not put back {', '.join(problems[:SHOWN])}: re-download the checkpoint"
        else:
            line += "; the files were put back as the judge read them"
        self.changed = line
        return line
