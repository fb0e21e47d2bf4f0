"""The bundled checkpoints: each assembles from pinned, hash-checked package files, says what is real,
and its golden ids come from an independent implementation of its own format."""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat.sources import snapshots
from pytest_tokcompat.sources.snapshots import SOURCES_FILE, SnapshotError, materialize

# ---- the zip-member derivation ----------------------------------------------------------------------


def _zip_folder(tmp_path: Path, members: dict[str, bytes], spec: dict[str, Any]) -> Path:
    folder = tmp_path / "zipped"
    folder.mkdir()
    with zipfile.ZipFile(folder / "data.zip", "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    derived = {"tokenizer.json": {"kind": "zip-member", "from": "data.zip", **spec}}
    (folder / SOURCES_FILE).write_text(json.dumps({"files": {}, "derived": derived}))
    return folder


PAYLOAD = b'{"version": "1.0"}'
PAYLOAD_SHA = hashlib.sha256(PAYLOAD).hexdigest()


def test_a_zip_member_is_extracted_and_verified(tmp_path: Path) -> None:
    folder = _zip_folder(
        tmp_path, {"tokenizer.json": PAYLOAD}, {"member": "tokenizer.json", "sha256": PAYLOAD_SHA}
    )
    assembled = materialize(folder, root=tmp_path / "cache")
    assert (assembled / "tokenizer.json").read_bytes() == PAYLOAD


def test_a_zip_member_with_another_hash_is_refused_and_nothing_is_cached(tmp_path: Path) -> None:
    folder = _zip_folder(
        tmp_path, {"tokenizer.json": PAYLOAD}, {"member": "tokenizer.json", "sha256": "0" * 64}
    )
    with pytest.raises(
        SnapshotError, match=r"member 'tokenizer.json' of data.zip has sha256 \w{64}, expected 0{64}"
    ):
        materialize(folder, root=tmp_path / "cache")
    assert [p for p in (tmp_path / "cache").rglob("*") if p.is_file()] == []


@pytest.mark.parametrize(
    "member", ["../tokenizer.json", "sub/tokenizer.json", "/etc/passwd", "..", "", "a\\b"]
)
def test_a_zip_member_must_be_a_plain_name(tmp_path: Path, member: str) -> None:
    folder = _zip_folder(tmp_path, {member or "x": PAYLOAD}, {"member": member, "sha256": PAYLOAD_SHA})
    with pytest.raises(SnapshotError, match=r"zip member .* is not a plain file name"):
        materialize(folder, root=tmp_path / "cache")
    assert not (tmp_path / "tokenizer.json").exists()
    assert [p for p in (tmp_path / "cache").rglob("*") if p.is_file()] == []


def test_a_missing_member_names_what_the_zip_holds(tmp_path: Path) -> None:
    folder = _zip_folder(
        tmp_path, {"other.json": PAYLOAD}, {"member": "tokenizer.json", "sha256": PAYLOAD_SHA}
    )
    with pytest.raises(
        SnapshotError, match=r"data.zip has no member 'tokenizer.json' \(it holds: other.json\)"
    ):
        materialize(folder, root=tmp_path / "cache")


def test_a_file_that_is_not_a_zip_is_refused(tmp_path: Path) -> None:
    folder = _zip_folder(
        tmp_path, {"tokenizer.json": PAYLOAD}, {"member": "tokenizer.json", "sha256": PAYLOAD_SHA}
    )
    (folder / "data.zip").write_bytes(b"not a zip at all")
    with pytest.raises(SnapshotError, match=re.escape("data.zip is not a readable zip")):
        materialize(folder, root=tmp_path / "cache")


def test_a_member_over_the_size_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshots, "ZIP_MEMBER_MAX_BYTES", 8)
    folder = _zip_folder(
        tmp_path, {"tokenizer.json": PAYLOAD}, {"member": "tokenizer.json", "sha256": PAYLOAD_SHA}
    )
    with pytest.raises(SnapshotError, match="over 0 MB; refused"):
        materialize(folder, root=tmp_path / "cache")


def test_a_zip_member_needs_its_hash(tmp_path: Path) -> None:
    folder = _zip_folder(tmp_path, {"tokenizer.json": PAYLOAD}, {"member": "tokenizer.json"})
    with pytest.raises(
        SnapshotError, match=re.escape("needs 'sha256', the sha256 of member 'tokenizer.json'")
    ):
        materialize(folder, root=tmp_path / "cache")


def test_an_unknown_derivation_kind_lists_the_known_ones(tmp_path: Path) -> None:
    folder = _zip_folder(
        tmp_path, {"tokenizer.json": PAYLOAD}, {"member": "tokenizer.json", "sha256": PAYLOAD_SHA}
    )
    manifest = json.loads((folder / SOURCES_FILE).read_text())
    manifest["derived"]["tokenizer.json"]["kind"] = "unzip"
    (folder / SOURCES_FILE).write_text(json.dumps(manifest))
    with pytest.raises(
        SnapshotError,
        match="unknown kind 'unzip'; use one of bpe-vocab, bpe-merges, tokenizer-json, zip-member",
    ):
        materialize(folder, root=tmp_path / "cache")
