"""The name a checkpoint is loaded by: the one its client gives ``from_pretrained``.

transformers chooses a tokenizer class by that name (``MODEL_IDS_TO_TOKENIZERS_BACKEND`` from
5.13: globs such as ``deepseek-ai/deepseek-r1-distill-llama-*``), so the same files loaded by
their snapshot folder's path and by their repo id can give other ids. A hub checkpoint is
loaded by its repo id, offline, from the hub cache it is in; a bundled snapshot that stands for
a hub repo by that repo id from a private hub cache laid out as ``snapshot_download`` leaves one
(symlinks to the verified files); a folder by its path exactly as the caller wrote it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_tokcompat.sources.snapshots import cache_root

if TYPE_CHECKING:
    from pytest_tokcompat.sources.resolve import Checkpoint


@dataclass(frozen=True)
class LoadTarget:
    """What ``from_pretrained`` is given, as the client gives it: a hub repo id (with the revision and
    cache its files are in, offline), or a folder's path exactly as the caller wrote it."""

    name: str
    revision: str | None = None
    cache_dir: str | None = None
    """The hub cache holding the repo's snapshot; with it the load never reaches the network."""

    @property
    def by_repo_id(self) -> bool:
        return self.cache_dir is not None

    def kwargs(self) -> dict[str, Any]:
        if not self.by_repo_id:
            return {}
        return {"revision": self.revision, "cache_dir": self.cache_dir, "local_files_only": True}

    def describe(self) -> str:
        return (
            f"repo id {self.name!r} (offline, from {self.cache_dir})" if self.by_repo_id else repr(self.name)
        )


def hub_layout_root() -> Path:
    """Where bundled snapshots are laid out as a hub cache (beside the assembled snapshots)."""
    return cache_root() / "hub"


def _files_of(folder: Path) -> list[Path]:
    return sorted(
        path
        for path in folder.iterdir()
        if not path.name.startswith(".") and (path.is_file() or path.is_dir())
    )


def lay_out_as_hub(repo: str, folder: Path, root: Path | None = None) -> LoadTarget:
    """``folder``'s files as the snapshot of ``repo`` in a hub cache under ``root``, and the target that
    loads them by the repo id.

    The revision is content-addressed (the folder, its file names, sizes and times), so a changed
    folder gets a new snapshot, and a finished one is never rewritten: made in a temporary folder
    and renamed into place (another process that won the race leaves the same content).
    """
    root = root or hub_layout_root()
    files = _files_of(folder)
    digest = hashlib.sha1(str(folder.resolve()).encode("utf-8"))
    for path in files:
        stat = path.stat()
        digest.update(f"\0{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    revision = digest.hexdigest()
    repo_folder = root / ("models--" + repo.replace("/", "--"))
    snapshot = repo_folder / "snapshots" / revision
    if not snapshot.is_dir():
        (repo_folder / "snapshots").mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{revision}.", dir=repo_folder / "snapshots"))
        try:
            for path in files:
                (staging / path.name).symlink_to(path.resolve())
            os.rename(staging, snapshot)
        except OSError:
            if not snapshot.is_dir():
                raise
        finally:
            if staging.exists():
                for link in staging.iterdir():
                    link.unlink()
                staging.rmdir()
    refs = repo_folder / "refs"
    refs.mkdir(exist_ok=True)
    with contextlib.suppress(OSError):
        (refs / "main").write_text(revision, encoding="utf-8")
    return LoadTarget(repo, revision, str(root))


def load_target(checkpoint: Checkpoint) -> LoadTarget:
    """The name the client loads ``checkpoint`` by (see the module's docstring)."""
    from pytest_tokcompat.sources.resolve import Source

    folder = checkpoint.folder
    if checkpoint.source is Source.HUB and checkpoint.repo is not None:
        # <cache>/models--owner--name/snapshots/<commit>
        return LoadTarget(checkpoint.repo, folder.name, str(folder.parent.parent.parent))
    if checkpoint.source in (Source.SNAPSHOT, Source.FALLBACK) and checkpoint.repo is not None:
        return lay_out_as_hub(checkpoint.repo, folder)
    given = Path(checkpoint.target)
    with contextlib.suppress(OSError):
        if checkpoint.source is Source.FOLDER and given.resolve() == folder.resolve():
            return LoadTarget(checkpoint.target)
    return LoadTarget(str(folder))
