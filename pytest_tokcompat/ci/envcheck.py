"""Whether a grid environment is still what its install put there.

A case with ``trust_remote_code: true`` runs the checkpoint's own code inside a grid
environment, and that code can write into it: a ``.pth`` file or a ``sitecustomize``
that runs in every later interpreter, an edited module, a dropped package that an
import finds. Verdicts judged in such an environment afterwards, and cells cached from
them, would be the code's and not transformers'. So right after a build the files the
install left that no RECORD hashes (the venv's own, each RECORD itself, scripts,
links) are noted outside the environment; an environment in which opted-in code ran
is checked before any cell from it is cached or reused: every installed file against
its RECORD hash, and nothing added, changed or removed beside them. Bytecode a run
wrote, which Python trusts by its source's size and time alone, is removed instead of
checked (a wheel's own ``.pyc`` files are in its RECORD, and checked like the rest).

What the checkout, tox and pytest write beside the venv (``tmp/``, ``log/``,
``.tox-info.json``) is not part of it: only what the interpreter reads is.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_tokcompat.contract import write_json_atomic

VENV_PARTS = ("pyvenv.cfg", "bin", "Scripts", "lib", "lib64", "Lib", "include")
"""What of a tox env folder is the virtual environment (the rest is tox's)."""
BYTECODE = "__pycache__"
SHOWN = 3


def _site_packages(env: Path) -> list[Path]:
    return sorted(env.glob("lib/python*/site-packages")) + sorted(env.glob("Lib/site-packages"))


def _digest(path: Path, mode: str = "sha256") -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    digest = hashlib.new(mode)
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()


def _recorded(env: Path) -> tuple[dict[Path, tuple[str, str]], list[str]]:
    """Every file a RECORD hashes, with (mode, hash); and the RECORD lines that name no file of the env."""
    found: dict[Path, tuple[str, str]] = {}
    outside: list[str] = []
    root = os.path.normpath(env.absolute()) + os.sep
    for site in _site_packages(env):
        for distribution in metadata.distributions(path=[str(site)]):
            for entry in distribution.files or []:
                if entry.hash is None:
                    continue
                path = Path(os.path.normpath(site / entry))
                if not str(path).startswith(root):  # ../ past the env; no realpath per file
                    outside.append(f"{distribution.metadata['Name']}: {entry}")
                    continue
                found[path] = (entry.hash.mode, entry.hash.value)
    return found, outside


def _venv_files(env: Path) -> list[Path]:
    """Every file and link of the venv proper, bytecode caches aside (no link is followed)."""
    files: list[Path] = []
    for part in VENV_PARTS:
        top = env / part
        if top.is_symlink() or top.is_file():
            files.append(top)
            continue
        for folder, dirs, names in os.walk(top):
            here = Path(folder)
            files += [here / d for d in dirs if (here / d).is_symlink()]
            dirs[:] = [d for d in dirs if d != BYTECODE and not (here / d).is_symlink()]
            files += [here / name for name in names]
    return files


def unrecorded(env: Path) -> dict[str, str]:
    """What the install left that no RECORD hashes, by path inside ``env``: the baseline of a built env."""
    recorded, _ = _recorded(env)
    return {
        path.relative_to(env).as_posix(): _digest(path)
        for path in _venv_files(env)
        if Path(os.path.normpath(path)) not in recorded
    }


def problems(env: Path, baseline: dict[str, str]) -> list[str]:
    """How ``env`` differs from its install: a file whose content is not its RECORD's, one missing, and any
    file no RECORD hashes that was added, changed or removed since ``baseline`` was taken."""
    found: list[str] = []
    recorded, outside = _recorded(env)
    found += [f"a RECORD names a file outside the environment ({line})" for line in outside]
    for path, (mode, value) in sorted(recorded.items()):
        where = path.relative_to(env).as_posix()
        if not path.exists() and not path.is_symlink():
            found.append(f"{where} is missing")
        elif mode not in hashlib.algorithms_available or _digest(path, mode) != value:
            found.append(f"{where} differs from its RECORD")
    now = unrecorded(env)
    found += [f"{name} was added" for name in sorted(set(now) - set(baseline))]
    found += [f"{name} was removed" for name in sorted(set(baseline) - set(now))]
    found += [
        f"{name} was changed" for name in sorted(set(now) & set(baseline)) if now[name] != baseline[name]
    ]
    return found


def remove_bytecode(env: Path) -> None:
    """Every bytecode file a run wrote; those a wheel installed (in its RECORD, so hash-checked) stay."""
    recorded, _ = _recorded(env)
    for part in VENV_PARTS:
        top = env / part
        if top.is_symlink() or not top.is_dir():
            continue
        for compiled in sorted(top.rglob(f"{BYTECODE}/*")):
            if Path(os.path.normpath(compiled)) not in recorded and not compiled.is_dir():
                compiled.unlink(missing_ok=True)


class Integrity:
    """The baselines of one work folder's envs (``<work>/integrity/<env>.json``), kept outside the envs."""

    def __init__(self, work: Path, tox_dir: Path) -> None:
        self.root = work / "integrity"
        self.tox_dir = tox_dir

    def _path(self, env: str) -> Path:
        return self.root / f"{env}.json"

    def _read(self, env: str) -> dict[str, Any] | None:
        try:
            document = json.loads(self._path(env).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return document if isinstance(document, dict) and isinstance(document.get("files"), dict) else None

    def built(self, env: str) -> None:
        """Note what a fresh build of ``env`` holds; it is clean, no opted-in code has run in it."""
        write_json_atomic(self._path(env), {"files": unrecorded(self.tox_dir / env), "exposed": False})

    def exposed(self, env: str) -> None:
        """Opted-in code is about to run in ``env``: it is checked before its cells count."""
        document = self._read(env)
        if document is not None:
            write_json_atomic(self._path(env), {**document, "exposed": True})

    def forget(self, env: str) -> None:
        self._path(env).unlink(missing_ok=True)

    def check(self, env: str) -> str | None:
        """Why ``env`` cannot be trusted (no baseline, or how it changed), or None; an env in which opted-in
        code ran and that passes has its bytecode caches removed."""
        document = self._read(env)
        if document is None:
            return "nothing records what its install put there"
        if not document.get("exposed"):
            return None
        folder = self.tox_dir / env
        found = problems(folder, document["files"])
        if not found:
            remove_bytecode(folder)
            return None
        more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
        return "; ".join(found[:SHOWN]) + more
