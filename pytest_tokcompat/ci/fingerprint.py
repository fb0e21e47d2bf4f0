"""Fingerprints of what a cell is judged from: a checkpoint folder's files, a local package's sources.

Stable across machines and checkouts (sorted relative paths and contents), so a cell cached on one run is
found again on the next whenever nothing that determines it changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

DEFAULT_OUTPUT = "tokcompat-grid"


# What determines a cell: its key.


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def folder_hash(folder: Path) -> str:
    """Every file of a folder (names and contents), the snapshot manifest included."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(
                path.relative_to(folder).as_posix().encode() + b"\0" + sha(path.read_bytes()).encode()
            )
    return digest.hexdigest()


NOT_SOURCES = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".hypothesis", "build", "dist", "node_modules", DEFAULT_OUTPUT}
)  # fmt: skip
"""Folder names that are never a package's sources (even where a repository's .gitignore leaves them out)."""


def package_files(folder: Path, outputs: tuple[Path, ...] = ()) -> list[Path]:
    """The files a local package is built from: what git tracks or would track (``git ls-files --cached
    --others --exclude-standard``: the repository's .gitignore applies) in a git work tree, else every file;
    never version-control folders, caches, build outputs, ``*.egg-info`` or anything inside ``outputs``."""
    root = folder.resolve()
    skipped = [output.resolve() for output in outputs]
    listed: list[Path] | None = None
    command = [
        "git",
        "-C",
        str(root),
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
        "--",
        ".",
    ]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(command, capture_output=True, check=False, timeout=60)
        if done.returncode == 0:
            names = done.stdout.decode("utf-8", "surrogateescape").split("\0")
            listed = [root / name for name in names if name]
    return sorted(
        path
        for path in (root.rglob("*") if listed is None else listed)
        if path.is_file()
        and not any(
            part in NOT_SOURCES or part.endswith(".egg-info") for part in path.relative_to(root).parts
        )
        and not any(path == out or out in path.parents for out in skipped)
    )


def package_hash(folder: Path, outputs: tuple[Path, ...] = ()) -> str:
    """A local package's sources (:func:`package_files`), names and contents."""
    digest = hashlib.sha256()
    root = folder.resolve()
    for path in package_files(root, outputs):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + sha(path.read_bytes()).encode())
    return digest.hexdigest()
