"""The file names a snapshot manifest may use: plain names inside the folder being assembled.

A local folder is data: whatever names its manifest holds, assembling never writes (or reads
its origin) outside the cache entry being built. Shared by assembling and deriving.
"""

from __future__ import annotations

from pathlib import Path

from pytest_tokcompat.errors import SnapshotError

SOURCES_FILE = "tokcompat-sources.json"
COMPLETE_MARK = ".tokcompat-complete"
_RESERVED_NAMES = {SOURCES_FILE, COMPLETE_MARK}


def member_name(name: object, manifest: Path, what: str) -> str:
    """A file name from a manifest, refused unless it is one plain name inside the snapshot folder.

    A local folder is data: its manifest must never make assembling write (or read
    its origin) outside the cache entry being built, whatever names it holds.
    """
    bad = (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or name in _RESERVED_NAMES
        or any(ch in name for ch in ("/", "\\", "\x00", ":"))
        or name != name.strip()
        or Path(name).is_absolute()
        or len(name) > 255
    )
    if bad:
        raise SnapshotError(
            f"{manifest}: {what} {name!r} is not a plain file name; a manifest may only name files "
            "directly inside the snapshot folder (no '/', '..', absolute paths or drive letters)"
        )
    assert isinstance(name, str)
    return name


def inside(staging: Path, name: str, manifest: Path, what: str) -> Path:
    """The path of ``name`` in the staging folder, checked to resolve inside it."""
    path = staging / member_name(name, manifest, what)
    root = staging.resolve()
    if path.is_symlink() or path.resolve().parent != root:
        raise SnapshotError(f"{manifest}: {what} {name!r} resolves outside the snapshot folder; refused")
    return path
