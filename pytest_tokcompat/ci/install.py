"""Putting this very package into throwaway environments (the grid's tox envs, bisect's uv envs).

The package may run from a plain install of a local path, a wheel, a git URL or an
editable checkout, and may not be published at all, so it is never looked up on the
package index: a wheel is written from the files this process imports (the package
folder, the bundled matrix, the installed distribution's metadata and entry points),
once per content, into a cache keyed by a hash of those files. Its dependencies come
from the index as usual. Nothing here needs pip, hatchling or a network.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

from pytest_tokcompat import environment
from pytest_tokcompat.errors import BuildError
from pytest_tokcompat.settings import TRUTH_CACHE, JudgeSettings, value_text

DISTRIBUTION = "pytest-tokcompat"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
SKIPPED_PARTS = {"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same files give the same wheel, byte for byte


def cache_home() -> Path:
    """pytest-tokcompat's folder in the user's cache: $TOKCOMPAT_GRID_CACHE, else the XDG cache."""
    explicit = environment.read("TOKCOMPAT_GRID_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-tokcompat"


TRUTH_CACHE_VAR = TRUTH_CACHE.variable
"""The judge's on-disk truth cache (reference parse, probes, ground truth), keyed by what determines it."""


def truth_cache(settings: JudgeSettings) -> str:
    """The one truth cache every throwaway environment shares: the ``truth_cache`` setting where the user
    gave one (a folder, or ``off``), else ``truth`` in :func:`cache_home`. The truth depends on the
    checkpoint's files, the tokenizers version and the judge, never on transformers, so it is computed once
    per tokenizers version."""
    if TRUTH_CACHE.key in settings.origin:
        return value_text(settings, TRUTH_CACHE)
    return str(cache_home() / "truth")


def _files_under(root: Path, prefix: str) -> Iterator[tuple[str, Path]]:
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_dir() or SKIPPED_PARTS & set(relative.parts) or path.suffix in (".pyc", ".pyo"):
            continue
        yield f"{prefix}/{relative.as_posix()}", path


def package_files() -> list[tuple[str, Path]]:
    """Archive name and file of everything the wheel holds: the package, and the bundled matrix where an
    editable checkout keeps it outside the package (``matrix/`` becomes ``pytest_tokcompat/bundled``)."""
    files = list(_files_under(PACKAGE_DIR, PACKAGE_DIR.name))
    if not (PACKAGE_DIR / "bundled" / "models.yaml").is_file():
        from pytest_tokcompat.matrix.discovery import bundled_dir

        bundled = bundled_dir()
        if not (bundled / "models.yaml").is_file():
            raise BuildError(
                f"the bundled matrix is neither in {PACKAGE_DIR / 'bundled'} nor in {bundled}; "
                "reinstall pytest-tokcompat"
            )
        files += list(_files_under(bundled, f"{PACKAGE_DIR.name}/bundled"))
    return files


def _installed_metadata() -> tuple[str, str, str]:
    """(version, METADATA text, entry_points.txt text) of the installed distribution."""
    try:
        found = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise BuildError(
            f"{DISTRIBUTION} is not installed in {sys.executable}, so its files cannot be put into a "
            "throwaway environment; install it there (pip install PATH, a wheel or an editable checkout)"
        ) from None
    text = found.read_text("METADATA")
    if not text:
        raise BuildError(f"the installed {DISTRIBUTION} has no METADATA; reinstall it")
    return found.version, text, found.read_text("entry_points.txt") or ""


LINK_MODE = "copy"
"""How uv puts packages into a throwaway environment: as copies. uv's default links files from its shared
cache; an in-place write by code that runs in the environment (a checkpoint's remote code) would then
change that package for every later install on the machine. Set as ``UV_LINK_MODE`` or ``--link-mode``."""

RUN_EXTRAS = ("pytest", "bundled")
"""What a throwaway environment runs the matrix with: the pytest plugin and the bundled snapshots' data."""


def extra_requirements(extras: tuple[str, ...] = RUN_EXTRAS) -> list[str]:
    """The requirements the installed distribution declares for ``extras``, as plain requirements.

    A wheel of this package brings only the client library's dependencies; an environment that
    runs the matrix needs these beside it (the same pins as ``pip install 'pytest-tokcompat[...]'``).
    """
    from packaging.requirements import Requirement

    try:
        declared = metadata.distribution(DISTRIBUTION).requires or []
    except metadata.PackageNotFoundError:
        return []
    found: list[str] = []
    for text in declared:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or marker.evaluate({"extra": ""}):
            continue  # a core dependency: the wheel brings it
        if not any(marker.evaluate({"extra": extra}) for extra in extras):
            continue
        if requirement.name.lower().replace("_", "-") == DISTRIBUTION:
            continue
        requirement.marker = None
        if str(requirement) not in found:
            found.append(str(requirement))
    return sorted(found)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def own_wheel(cache: Path | None = None) -> Path:
    """This package as a wheel, written once per content into ``cache`` (default: the user cache)."""
    version, metadata_text, entry_points = _installed_metadata()
    files = [(name, path.read_bytes()) for name, path in package_files()]
    digest = hashlib.sha256()
    for name, data in [*files, ("METADATA", metadata_text.encode()), ("entry_points", entry_points.encode())]:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    key = digest.hexdigest()[:20]
    stem = f"{DISTRIBUTION.replace('-', '_')}-{version}"
    target = (cache or cache_home() / "wheels") / key / f"{stem}-py3-none-any.whl"
    if target.is_file():
        return target
    info = f"{stem}.dist-info"
    generator = f"pytest-tokcompat {version} (from its own files)"
    members = [
        *files,
        (f"{info}/METADATA", metadata_text.encode()),
        (
            f"{info}/WHEEL",
            f"Wheel-Version: 1.0\nGenerator: {generator}\nRoot-Is-Purelib: true\nTag: py3-none-any\n".encode(),
        ),
    ]
    if entry_points:
        members.append((f"{info}/entry_points.txt", entry_points.encode()))
    record = [_record_line(name, data) for name, data in members] + [f"{info}/RECORD,,"]
    members.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".wheel-", suffix=".tmp", dir=target.parent)
    os.close(handle)
    try:
        with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in members:
                entry = zipfile.ZipInfo(name, _EPOCH)
                entry.compress_type = zipfile.ZIP_DEFLATED
                entry.external_attr = 0o644 << 16
                archive.writestr(entry, data)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def uv_binary() -> str:
    """The uv executable: on PATH, beside this Python (a venv with the grid extra), or the uv package's."""
    found = shutil.which("uv")
    if found:
        return found
    beside = Path(sys.executable).with_name("uv.exe" if os.name == "nt" else "uv")
    if beside.is_file():
        return str(beside)
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found,unused-ignore]

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        raise BuildError(
            "uv is not installed: install the grid extra (pip install 'pytest-tokcompat[grid]') or put uv on PATH"
        ) from None
