"""The judge's identity, for every cache of its results: a cached result is only as good as its code."""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def judge_identity(package_dir: Path = PACKAGE_DIR) -> str:
    """This package's version and a hash of every source that judges (all but the CI tools).

    A cached result (a grid cell, a verdict on disk) is only as good as the code that produced
    it: any change to the judge, the probes or the resolver gives another identity.
    """
    try:
        version = metadata.version("pytest-tokcompat")
    except metadata.PackageNotFoundError:
        version = "unknown"
    digest = hashlib.sha256()
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir)
        if relative.parts[0] in ("ci", "bundled") or "__pycache__" in relative.parts:
            continue
        digest.update(relative.as_posix().encode() + b"\0" + _file_sha(path).encode())
    return f"{version}+{digest.hexdigest()[:16]}"


def probe_set_identity(package_dir: Path = PACKAGE_DIR) -> str:
    """The probe corpus and its derivation, by the hash of the module that holds them."""
    probes = package_dir / "judge" / "probes.py"
    return _file_sha(probes)[:16] if probes.is_file() else "none"
