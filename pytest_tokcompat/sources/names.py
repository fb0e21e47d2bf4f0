"""The name a checkpoint is loaded by: the one its client gives ``from_pretrained``.

transformers chooses a tokenizer class by that name (``MODEL_IDS_TO_TOKENIZERS_BACKEND`` from
5.13: globs such as ``deepseek-ai/deepseek-r1-distill-llama-*``), so the same files loaded by
their snapshot folder's path and by their repo id can give other ids. A hub checkpoint, and a
bundled snapshot that stands for a hub repo, is loaded by its repo id, offline, from a private
hub cache laid out as ``snapshot_download`` leaves one: symlinks to the verified files, and
``.no_exist`` marks for the files the repo does not have (what huggingface_hub records when the
hub answers 404, so a tokenizer-only repo loads offline as it does online). A folder is loaded
by its path exactly as the caller wrote it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_tokcompat.sources.checkpoint import Checkpoint, Source
from pytest_tokcompat.sources.snapshots import cache_root


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

    def layout_folders(self) -> dict[str, Path]:
        """Where a repo id's files are found in its hub cache: the snapshot and the absent-file marks."""
        if not self.by_repo_id or self.revision is None:
            return {}
        assert self.cache_dir is not None
        repo_folder = _repo_folder(Path(self.cache_dir), self.name)
        return {
            "hub layout": repo_folder / "snapshots" / self.revision,
            "hub layout .no_exist": repo_folder / ".no_exist" / self.revision,
        }

    def client_environment(self) -> dict[str, str]:
        """What a client's own loader needs set to find the repo by its id with no cache_dir of its own:
        the hub cache holding it, offline (the snapshot is only there, and the hub is not asked)."""
        if not self.by_repo_id:
            return {}
        assert self.cache_dir is not None
        return {"HF_HUB_CACHE": self.cache_dir, "HF_HUB_OFFLINE": "1"}


_HUB_CACHE_COPIES = ("TRANSFORMERS_CACHE", "PYTORCH_PRETRAINED_BERT_CACHE", "PYTORCH_TRANSFORMERS_CACHE")
"""transformers 4.x's import-time copies of the hub cache (``transformers.utils.hub``); 5.x reads the hub's."""


@contextlib.contextmanager
def served_offline(target: LoadTarget) -> Iterator[None]:
    """``target.client_environment()`` in force for code that reads it at call time (``os.environ``) and for
    what read it at import (huggingface_hub's constants, transformers 4.x's copies), then as it was."""
    setting = target.client_environment()
    if not setting:
        yield
        return
    from huggingface_hub import constants

    transformers_hub = sys.modules.get("transformers.utils.hub")
    cache, offline = setting["HF_HUB_CACHE"], setting["HF_HUB_OFFLINE"] == "1"
    patches: list[tuple[Any, str, Any]] = [
        (constants, "HF_HUB_CACHE", cache),
        (constants, "HF_HUB_OFFLINE", offline),
    ]
    if transformers_hub is not None:
        patches += [
            (transformers_hub, name, cache) for name in _HUB_CACHE_COPIES if hasattr(transformers_hub, name)
        ]
        if hasattr(transformers_hub, "_is_offline_mode"):
            patches.append((transformers_hub, "_is_offline_mode", offline))
    saved_environ = {key: os.environ.get(key) for key in setting}
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    os.environ.update(setting)
    for owner, name, value in patches:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)
        for key, value in saved_environ.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


LOADER_FILES = (
    "config.json",
    "tokenizer_config.json",
    "tokenizer.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
    "vocab.json",
    "merges.txt",
    "vocab.txt",
    "tokenizer.model",
    "tiktoken.model",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tekken.json",
    "generation_config.json",
    "processor_config.json",
    "preprocessor_config.json",
)
"""Files a tokenizer load may ask the hub for; those the folder lacks are marked as absent from the repo."""


def hub_layout_root(cache: Path | None = None) -> Path:
    """Where bundled snapshots are laid out as a hub cache: beside the assembled snapshots.

    Never under a folder named ``snapshots``: transformers finds a cached file's commit with the first
    ``snapshots/<name>/`` in its path, and remote code from a repo then has no commit to live under.
    """
    root = cache if cache is not None else cache_root()
    for candidate in (
        root.parent / f"{root.name}-hub",
        Path(tempfile.gettempdir()) / f"tokcompat-hub-{os.getuid()}",
    ):
        if not _looks_like_a_snapshot_path(candidate):
            return candidate
    raise OSError(f"no folder for the hub layout outside a 'snapshots' folder (tried beside {root})")


def _looks_like_a_snapshot_path(path: Path) -> bool:
    import re

    return re.search(r"snapshots/[^/]+/", path.resolve().as_posix() + "/x/") is not None


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
    if _looks_like_a_snapshot_path(root):
        raise ValueError(
            f"{root}: a hub layout cannot live under a folder named 'snapshots' (see hub_layout_root)"
        )
    files = _files_of(folder)
    digest = hashlib.sha1(str(folder.resolve()).encode("utf-8"))
    for path in files:
        stat = path.stat()
        digest.update(f"\0{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    revision = digest.hexdigest()
    repo_folder = _repo_folder(root, repo)
    snapshot = repo_folder / "snapshots" / revision
    absent = repo_folder / ".no_exist" / revision
    target = LoadTarget(repo, revision, str(root))
    if snapshot.is_dir() and absent.is_dir():
        _point_main_at(repo_folder, revision)  # another folder of the same repo may have moved it
        return target  # laid out by an earlier call: its content address says nothing changed
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
    absent.mkdir(parents=True, exist_ok=True)
    present = {path.name for path in files}
    for name in LOADER_FILES:
        if name not in present:
            (absent / name).touch()
    _point_main_at(repo_folder, revision)
    return target


def _repo_folder(root: Path, repo: str) -> Path:
    return root / ("models--" + repo.replace("/", "--"))


def _point_main_at(repo_folder: Path, revision: str) -> None:
    """``refs/main`` names ``revision``: a client that loads the repo id without a revision gets it."""
    main = repo_folder / "refs" / "main"
    with contextlib.suppress(OSError):
        if main.is_file() and main.read_text(encoding="utf-8") == revision:
            return
        main.parent.mkdir(exist_ok=True)
        main.write_text(revision, encoding="utf-8")


def _by_repo_id(checkpoint: Checkpoint) -> bool:
    return checkpoint.source in (Source.HUB, Source.SNAPSHOT, Source.FALLBACK) and checkpoint.repo is not None


def load_name(checkpoint: Checkpoint) -> str:
    """The name alone, without laying anything out (what the verdict cache keys on)."""
    if _by_repo_id(checkpoint):
        assert checkpoint.repo is not None
        return checkpoint.repo
    with contextlib.suppress(OSError):
        if (
            checkpoint.source is Source.FOLDER
            and Path(checkpoint.target).resolve() == checkpoint.folder.resolve()
        ):
            return checkpoint.target
    return str(checkpoint.folder)


def load_target(checkpoint: Checkpoint, cache: Path | None = None) -> LoadTarget:
    """The name the client loads ``checkpoint`` by (see the module's docstring), ready to load; a hub
    layout of our own goes beside ``cache`` (the settings' snapshot cache)."""
    if _by_repo_id(checkpoint):
        assert checkpoint.repo is not None
        # a layout of our own, even for the user's hub cache: it is never written to
        return lay_out_as_hub(checkpoint.repo, checkpoint.folder, hub_layout_root(cache))
    return LoadTarget(load_name(checkpoint))
