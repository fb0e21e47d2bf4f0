"""A real huggingface_hub cache, built offline from the bundled snapshots.

The layout is what snapshot_download writes: ``models--owner--name/`` with
``blobs/<sha256>``, ``snapshots/<commit>/<file>`` as relative symlinks to the
blobs, ``refs/<branch>`` holding the commit, and ``trees/<commit>.json``, the
listing of the whole repo, by which huggingface_hub tells an incomplete snapshot
offline. The listing also names weights and modeling code that are never cached,
so any request for them would fail the tests.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from pytest_tokcompat.matrix.cases import Case
from pytest_tokcompat.matrix.discovery import bundled_matrix
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.sources.members import SOURCES_FILE
from pytest_tokcompat.sources.snapshots import materialize

NOT_CACHED = {
    "model-00001-of-00002.safetensors": 5_000_000_000,
    "model.safetensors.index.json": 1_000,
    "modeling_deepseek.py": 70_000,
    "README.md": 2_000,
}
"""Listed in the repo's tree, never cached: tokenizer loading must not ask for them."""


def commit_for(repo: str, files: dict[str, bytes]) -> str:
    digest = hashlib.sha1(repo.encode())
    for name in sorted(files):
        digest.update(name.encode() + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


def _git_blob_id(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def add_repo(
    cache: Path,
    repo: str,
    files: dict[str, bytes],
    *,
    refs: tuple[str, ...] = ("main",),
    commit: str | None = None,
    omit: tuple[str, ...] = (),
    listed: dict[str, int] | None = None,
) -> str:
    """Cache ``files`` of ``repo`` at a commit (returned); ``omit`` are listed in the tree but not cached."""
    commit = commit or commit_for(repo, files)
    storage = cache / f"models--{repo.replace('/', '--')}"
    snapshot = storage / "snapshots" / commit
    (storage / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True, exist_ok=True)
    tree: dict[str, dict[str, object]] = {}
    for name, content in files.items():
        sha256 = hashlib.sha256(content).hexdigest()
        entry: dict[str, object] = {"size": len(content), "blob_id": _git_blob_id(content)}
        if len(content) > 1_000_000:
            entry.update(lfs_sha256=sha256, lfs_size=len(content))
        tree[name] = entry
        if name in omit:
            continue
        blob = storage / "blobs" / sha256
        if not blob.exists():
            blob.write_bytes(content)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(os.path.relpath(blob, link.parent))
    for name, size in (NOT_CACHED if listed is None else listed).items():
        tree.setdefault(name, {"size": size, "blob_id": hashlib.sha1(name.encode()).hexdigest()})
    (storage / "trees").mkdir(exist_ok=True)
    document = {"format_version": 1, "files": dict(sorted(tree.items()))}
    (storage / "trees" / f"{commit}.json").write_text(json.dumps(document, indent=1), encoding="utf-8")
    for ref in refs:
        (storage / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (storage / "refs" / ref).write_text(commit)  # no newline: huggingface_hub reads it verbatim
    return commit


def bundled_case(case_id: str) -> Case:
    return load_matrix(bundled_matrix()).by_id(case_id)


def snapshot_files(case: Case) -> dict[str, bytes]:
    """The real files of a bundled snapshot, assembled by snapshots.materialize."""
    assert case.snapshot is not None
    folder = materialize(case.snapshot)
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.name.startswith(".") and p.name != SOURCES_FILE
    }


def add_bundled(cache: Path, case_id: str, **options: object) -> tuple[str, str]:
    """Cache the bundled snapshot of ``case_id`` under its hub repo id: (repo, commit)."""
    case = bundled_case(case_id)
    assert case.repo is not None
    return case.repo, add_repo(cache, case.repo, snapshot_files(case), **options)  # type: ignore[arg-type]
