"""The bundled checkpoints: each assembles from pinned, hash-checked package files, says what is real,
and its golden ids come from an independent implementation of its own format."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
import zipfile
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

from pytest_tokcompat.errors import SnapshotError
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.sources import derive, snapshots
from pytest_tokcompat.sources.members import SOURCES_FILE
from pytest_tokcompat.sources.snapshots import materialize, packaged_file
from tests.helpers.paths import REPO

if TYPE_CHECKING:
    from conftest import SessionDirs

MATRIX_DIR = REPO / "matrix"
CASES = {case.id: case for case in load_matrix(MATRIX_DIR / "models.yaml").cases}
SNAPSHOT_CASES = sorted(case_id for case_id, case in CASES.items() if case.snapshot is not None)
STAND_INS = {"kimi-k2-instruct"}
IMPLEMENTATION_OF_FORMAT = {"tokenizer.model": "sentencepiece", "tekken.json": "mistral-common"}
GOLDEN_FILES = sorted(p.stem for p in (MATRIX_DIR / "golden").glob("*.json"))


def manifest_of(case_id: str) -> dict[str, Any]:
    snapshot = CASES[case_id].snapshot
    assert snapshot is not None
    return json.loads((Path(snapshot) / SOURCES_FILE).read_text(encoding="utf-8"))


def golden_of(case_id: str) -> dict[str, Any]:
    return json.loads((MATRIX_DIR / "golden" / f"{case_id}.json").read_text(encoding="utf-8"))


class AssembledSnapshots(dict[str, Path]):
    """Each bundled snapshot assembled on first use into the session's snapshot cache (a tmp dir): an
    xdist worker assembles only the cases its tests ask for, and reuses what another worker or test
    assembled there (after the cache's own verification of the entry)."""

    def __missing__(self, case_id: str) -> Path:
        snapshot = CASES[case_id].snapshot
        assert snapshot is not None, case_id
        folder = self[case_id] = materialize(snapshot)
        return folder


@pytest.fixture(scope="module")
def assembled(session_dirs: SessionDirs) -> AssembledSnapshots:
    assert snapshots.cache_root() == session_dirs.snapshots  # never the user's cache
    return AssembledSnapshots()


def load_tool(name: str) -> ModuleType:
    """A script of matrix/tools, imported without leaving its sys.path entry or helper module behind."""
    spec = importlib.util.spec_from_file_location(name, MATRIX_DIR / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved_path, saved_modules = list(sys.path), {n: sys.modules.get(n) for n in (name, "golden_common")}
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved_path
        for module_name, saved in saved_modules.items():
            if saved is None:
                sys.modules.pop(module_name, None)
            else:
                sys.modules[module_name] = saved
    return module


# ---- the matrix ---------------------------------------------------------------------------------------


def test_the_bundled_matrix_has_at_least_twelve_real_checkpoints() -> None:
    real = [case_id for case_id in SNAPSHOT_CASES if not manifest_of(case_id).get("stand_in")]
    assert len(real) >= 12, real
    families = {
        "llama-3.1-8b-instruct",
        "deepseek-v3",
        "deepseek-v3.2",
        "deepseek-v4-flash",
        "deepseek-r1-distill-qwen-7b",
        "qwen3-0.6b",
        "qwen3.5-35b-a3b",
        "glm-4.7-flash",
        "mistral-7b-v0.1",
        "mistral-nemo-instruct-2407",
    }
    assert families <= set(real)


@pytest.mark.parametrize("case_id", SNAPSHOT_CASES)
def test_each_pin_verifies_and_names_the_version_pyproject_installs(case_id: str) -> None:
    pinned = dict(re.findall(r'"([A-Za-z0-9_.-]+)==([^";\s]+)', (REPO / "pyproject.toml").read_text()))
    manifest_path = Path(str(CASES[case_id].snapshot)) / SOURCES_FILE
    for name, spec in manifest_of(case_id)["files"].items():
        assert pinned.get(spec["package"]) == spec["version"], (name, spec["package"])
        assert metadata.version(spec["package"]) == spec["version"]
        located = packaged_file(name, spec, manifest_path)  # raises unless the sha256 matches
        assert hashlib.sha256(located.read_bytes()).hexdigest() == spec["sha256"]


def test_every_package_is_pinned_to_one_version_across_all_snapshots() -> None:
    versions: dict[str, set[str]] = {}
    for case_id in SNAPSHOT_CASES:
        for spec in manifest_of(case_id)["files"].values():
            versions.setdefault(spec["package"], set()).add(spec["version"])
    assert {package: len(found) for package, found in versions.items()} == dict.fromkeys(versions, 1)


@pytest.mark.parametrize("case_id", SNAPSHOT_CASES)
def test_stand_ins_are_labelled_and_every_kept_file_is_explained(case_id: str) -> None:
    manifest = manifest_of(case_id)
    note = CASES[case_id].note or ""
    if case_id in STAND_INS:
        assert manifest.get("stand_in") is True
        assert "STAND-IN" in manifest["comment"]
        assert note.startswith("stand-in"), note
    else:
        assert "stand_in" not in manifest
        assert "stand-in" not in note.lower()
        assert "REAL:" in manifest["comment"]
    snapshot = Path(str(CASES[case_id].snapshot))
    kept = {p.name for p in snapshot.iterdir() if p.is_file() and p.name != SOURCES_FILE}
    for name in kept:  # a file in the repository is a copy or a reconstruction: the manifest says which
        assert name in manifest["comment"], f"{case_id}: {name} is not explained in its manifest's comment"
    if "config.json" in kept:  # hub configs are not on any package index: reconstructed, or matched to a copy
        assert (
            "reconstructed" in manifest["comment"].lower()
            or "matches stored public copies" in manifest["comment"]
        )


# ---- golden ids -------------------------------------------------------------------------------------


@pytest.mark.parametrize("case_id", GOLDEN_FILES)
def test_golden_files_name_their_implementation_and_version(case_id: str) -> None:
    golden = golden_of(case_id)
    implementation = golden["implementation"]
    assert implementation["name"] in {"sentencepiece", "tiktoken", "mistral-common"}
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", implementation["version"])
    assert f"{implementation['name']} {implementation['version']}" in golden["source"]
    assert golden["case"] == case_id and set(golden["ids"]) == set(golden["decoded"])


@pytest.mark.parametrize(
    ("case_id", "fmt"),
    [("mistral-7b-v0.1", "tokenizer.model"), ("mistral-nemo-instruct-2407", "tekken.json")],
)
def test_a_checkpoint_without_tokenizer_json_has_golden_ids_from_its_formats_implementation(
    assembled: AssembledSnapshots, case_id: str, fmt: str
) -> None:
    folder = assembled[case_id]
    assert not (folder / "tokenizer.json").exists() and (folder / fmt).is_file()
    assert golden_of(case_id)["implementation"]["name"] == IMPLEMENTATION_OF_FORMAT[fmt]


KNOWN_DIVERGENCES: dict[str, dict[str, list[int]]] = {
    # A vocabulary probe (ids 115804-115806): tiktoken merges any adjacent pair whose bytes are a token, so it joins
    # "и" and "цин" into "ицин" (115806); a tokenizer.json holds one merge per token (here "иц" + "ин"), which this
    # text never reaches, and stops at "и", "цин". The derived file has that limit of the format (whether the hub's
    # converted file has it too was not checked); the judge's ground truth for this case is the derived file.
    "llama-3.1-8b-instruct": {" jinak блюицин": [115804, 115805, 1840, 123919]},
}


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
    monkeypatch.setattr(derive, "ZIP_MEMBER_MAX_BYTES", 8)
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


def test_the_tools_import_nothing_from_transformers_for_their_ground_truth() -> None:
    """Golden ids must not come from the implementation being judged."""
    for path in (MATRIX_DIR / "tools").glob("record_*_golden.py"):
        imports = re.findall(r"^\s*(?:import|from)\s+(\w+)", path.read_text(encoding="utf-8"), re.MULTILINE)
        assert "transformers" not in imports, path.name


# ---- the added-tokens derivation ---------------------------------------------------------------------


def _added_tokens_folder(tmp_path: Path, declared: dict[str, str]) -> Path:
    """A snapshot whose tokenizer.json (a WordLevel toy, ids 0-2 and added token 3) is completed from the
    added tokens its tokenizer_config.json declares."""
    folder = tmp_path / "added"
    folder.mkdir()
    document = {
        "version": "1.0",
        "added_tokens": [
            {
                "id": 3,
                "content": "<s>",
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
        ],
        "pre_tokenizer": {"type": "Whitespace"},
        "model": {"type": "WordLevel", "vocab": {"a": 0, "b": 1, "[UNK]": 2}, "unk_token": "[UNK]"},
    }
    (folder / "package.json").write_text(json.dumps(document))
    config = {
        "added_tokens_decoder": {key: {"content": value, "special": True} for key, value in declared.items()}
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    derived = {"tokenizer.json": {"kind": "added-tokens", "from": "package.json"}}
    (folder / SOURCES_FILE).write_text(json.dumps({"files": {}, "derived": derived}))
    return folder


def test_added_tokens_the_config_declares_are_appended_and_encode_as_tokens(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    folder = _added_tokens_folder(tmp_path, {"3": "<s>", "4": "<|audio|>"})
    assembled = materialize(folder, root=tmp_path / "cache")
    tokenizer = Tokenizer.from_file(str(assembled / "tokenizer.json"))
    assert tokenizer.encode("a<|audio|>b", add_special_tokens=False).ids == [0, 4, 1]
    without = Tokenizer.from_file(str(assembled / "package.json"))
    assert without.encode("a<|audio|>b", add_special_tokens=False).ids != [0, 4, 1]


@pytest.mark.parametrize("declared", [{"4": "<s>"}, {"1": "<|audio|>"}])
def test_an_added_token_that_clashes_with_the_file_is_refused(
    tmp_path: Path, declared: dict[str, str]
) -> None:
    folder = _added_tokens_folder(tmp_path, declared)
    with pytest.raises(SnapshotError, match=re.escape("clashes with a token package.json holds")):
        materialize(folder, root=tmp_path / "cache")
