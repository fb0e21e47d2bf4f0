"""A checkpoint folder is data: its manifest can never make assembling write or read outside the cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_tokcompat.cli import main
from pytest_tokcompat.errors import SnapshotError
from pytest_tokcompat.sources.members import COMPLETE_MARK
from pytest_tokcompat.sources.snapshots import materialize, sha256_of, verify_entry
from tests.helpers.paths import MATRIX_DIR

QWEN = MATRIX_DIR / "snapshots/qwen3-0.6b"


def _hostile_folder(
    tmp_path: Path, files: dict[str, object], derived: dict[str, object] | None = None
) -> Path:
    folder = tmp_path / "hostile"
    shutil.copytree(QWEN, folder)
    manifest = json.loads((folder / "tokcompat-sources.json").read_text())
    manifest["files"] = files
    manifest["derived"] = derived if derived is not None else {}
    (folder / "tokcompat-sources.json").write_text(json.dumps(manifest))
    return folder


def _qwen_spec() -> dict[str, object]:
    return json.loads((QWEN / "tokcompat-sources.json").read_text())["files"]["qwen.tiktoken"]


def _files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


@pytest.mark.parametrize(
    "name",
    ["../escaped.txt", "/tmp/tokcompat-absolute-escape.txt", "sub/dir.txt", "..", ".", "", "a\\b", "C:x"],
)
def test_a_file_name_outside_the_folder_is_refused_and_nothing_is_written(tmp_path: Path, name: str) -> None:
    folder = _hostile_folder(tmp_path, {name: _qwen_spec()})
    cache = tmp_path / "cache"
    before = _files_under(tmp_path)
    with pytest.raises(SnapshotError, match="not a plain file name"):
        materialize(folder, root=cache)
    assert _files_under(tmp_path) - _files_under(cache) - {cache} == before
    assert not Path("/tmp/tokcompat-absolute-escape.txt").exists()
    assert not (tmp_path / "escaped.txt").exists()
    assert [p for p in cache.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize(
    "derived",
    [
        {"../vocab.json": {"kind": "bpe-vocab", "from": "qwen.tiktoken"}},
        {"vocab.json": {"kind": "bpe-vocab", "from": "../../etc/passwd"}},
        {
            "tokenizer.json": {
                "kind": "tokenizer-json",
                "from": "qwen.tiktoken",
                "pattern": ".",
                "added_tokens_from": "/etc/hostname",
            }
        },
    ],
)
def test_derived_names_and_their_origins_stay_inside(tmp_path: Path, derived: dict[str, object]) -> None:
    folder = _hostile_folder(tmp_path, {"qwen.tiktoken": _qwen_spec()}, derived)
    with pytest.raises(SnapshotError, match="not a plain file name"):
        materialize(folder, root=tmp_path / "cache")
    assert not (tmp_path / "vocab.json").exists()


def test_a_package_path_that_climbs_out_of_the_package_is_refused(tmp_path: Path) -> None:
    spec = dict(_qwen_spec())
    spec["path"] = "../../../../etc/passwd"
    folder = _hostile_folder(tmp_path, {"qwen.tiktoken": spec})
    with pytest.raises(SnapshotError, match="relative path inside the package"):
        materialize(folder, root=tmp_path / "cache")


def test_a_symlink_in_the_folder_is_refused(tmp_path: Path) -> None:
    folder = _hostile_folder(tmp_path, {"qwen.tiktoken": _qwen_spec()})
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the cache")
    (folder / "special_tokens_map.json").symlink_to(secret)
    with pytest.raises(SnapshotError, match="symbolic links"):
        materialize(folder, root=tmp_path / "cache")
    copied = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert not any("not for the cache" in p.read_text(errors="ignore") for p in copied)


def test_tokcompat_check_and_load_tokenizer_refuse_a_hostile_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("TOKCOMPAT_CACHE", str(tmp_path / "cache"))
    target = home / "planted.pth"
    folder = _hostile_folder(tmp_path, {str(target): _qwen_spec()})
    assert main(["check", str(folder)]) == 2
    assert "not a plain file name" in capsys.readouterr().err
    from pytest_tokcompat import load_tokenizer

    with pytest.raises(SnapshotError, match="not a plain file name"):
        load_tokenizer(folder)
    assert not target.exists()
    assert list(home.iterdir()) == []


def test_a_cache_entry_whose_completion_mark_is_a_link_is_rebuilt_not_followed(tmp_path: Path) -> None:
    """The snapshot cache's one file read by name: a link there (into a folder of the user's) is refused."""
    entry = tmp_path / "cache" / "toy-0123"
    entry.mkdir(parents=True)
    (entry / "a.txt").write_text("a")
    mark = {"origin": "toy", "files": {"a.txt": sha256_of(entry / "a.txt")}}
    (entry / COMPLETE_MARK).write_text(json.dumps(mark))
    assert verify_entry(entry, {"files": {}}) is None  # control: the entry with a regular mark verifies
    elsewhere = tmp_path / "users-folder" / "mark.json"
    elsewhere.parent.mkdir()
    (entry / COMPLETE_MARK).rename(elsewhere)
    (entry / COMPLETE_MARK).symlink_to(elsewhere)
    assert verify_entry(entry, {"files": {}}) == "its completion mark is a symbolic link (not followed)"


def test_a_copied_file_rewritten_with_its_completion_mark_is_rebuilt(tmp_path: Path) -> None:
    """Code running as the user can rewrite an entry's file and the hash its mark records (the mark is in
    the cache); a file copied from the snapshot folder is checked against that folder's own bytes."""
    from pytest_tokcompat.sources.snapshots import assemble

    cache = tmp_path / "cache"
    first = assemble(QWEN, root=cache)
    assert assemble(QWEN, root=cache).rebuilt is None  # control: an untouched entry is reused as it is
    config = first.folder / "tokenizer_config.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["added_tokens_decoder"] = {"1782": {"content": "the", "special": False}}
    config.write_text(json.dumps(data), encoding="utf-8")
    mark = json.loads((first.folder / COMPLETE_MARK).read_text(encoding="utf-8"))
    mark["files"]["tokenizer_config.json"] = sha256_of(config)
    (first.folder / COMPLETE_MARK).write_text(json.dumps(mark), encoding="utf-8")
    again = assemble(QWEN, root=cache)
    assert again.rebuilt is not None and "the snapshot's own" in again.rebuilt, again.rebuilt
    assert sha256_of(again.folder / "tokenizer_config.json") == sha256_of(QWEN / "tokenizer_config.json")
