"""What the judge's caches on disk share: how an entry is written, how the cache is kept to its size.

The verdict cache (``verdicts.py``) and the truth cache (``truthcache.py``) follow one set of rules:
their folder and size are settings (``pytest_tokcompat.settings``: a folder, ``off``, else a subfolder
of ``$TOKCOMPAT_CACHE`` or the user's XDG cache), resolved by the front-end; entries written to a temp
file and renamed into place, so that a reader (another xdist worker, another grid environment) sees a
whole entry or none; and pruned to a size, least recently used first, after each write.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from pytest_tokcompat.judge import cachefiles
from pytest_tokcompat.sources.snapshots import sha256_of

WEIGHT_SUFFIXES = frozenset(
    {".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".onnx", ".h5", ".msgpack", ".npz"}
)
"""Files no tokenizer load reads (a full model folder holds gigabytes of them): not hashed."""


def write_atomically(path: Path, data: bytes) -> None:
    """``data`` at ``path``, through a temp file in its folder renamed into place (raises OSError)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def prune(root: Path, max_size: int, keep: Path | None = None, suffix: str = ".json") -> list[Path]:
    """Remove the least recently used entries until the cache fits ``max_size``; ``keep`` stays.

    Only regular files in the root's own real folders count and go (never through a link); another
    process may prune at the same time: an entry already gone is skipped."""
    found = [
        (seen.modified, seen.size, root / name)
        for name, seen in cachefiles.listing(root).items()
        if seen.kind == "file" and _is_entry(name, suffix)
    ]
    total = sum(size for _, size, _ in found)
    removed: list[Path] = []
    for _, size, path in sorted(found, key=lambda item: item[0]):
        if total <= max_size:
            break
        if keep is not None and path == keep:
            continue
        if not cachefiles.remove(root, path):
            continue
        total -= size
        removed.append(path)
    return removed


def _is_entry(name: str, suffix: str) -> bool:
    """``<folder>/<entry><suffix>``, not a temp file being written (a dot file)."""
    _, slash, entry = name.partition("/")
    return bool(slash) and entry.endswith(suffix) and not entry.startswith(".")


def folder_digests(folder: Path) -> dict[str, str]:
    """sha256 of every file in ``folder`` a tokenizer load may read, by relative path; dot files (our own
    marks), caches and weight files are left out."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        if path.suffix.lower() in WEIGHT_SUFFIXES or not path.is_file():
            continue
        found[relative.as_posix()] = sha256_of(path)
    return found


def versions_of(distributions: Iterable[str]) -> dict[str, str | None]:
    """The installed version of each distribution (None: not installed), for a cache's key."""
    versions: dict[str, str | None] = {}
    for name in distributions:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions
