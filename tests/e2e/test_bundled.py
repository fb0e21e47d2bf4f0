"""End to end: The bundled matrix and its snapshots: real data, pinned and verified, and green on this transformers.

The rest of this subject's tests, and the helpers these use, are in tests/project/test_bundled.py.
"""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pytest

from pytest_tokcompat import load_tokenizer
from pytest_tokcompat.matrix.discovery import bundled_matrix
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.sources.snapshots import materialize
from tests.helpers.paths import MATRIX_DIR
from tests.project.test_bundled import check_json, load_script, swap_two_ids


def test_every_front_end_gives_the_same_verdict_and_parity_for_every_bundled_case(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest --tokcompat, `tokcompat check <case>`, `tokcompat check <assembled folder>` and
    load_tokenizer(<case>) go through one resolver and one evaluator: one record per checkpoint, offline."""
    monkeypatch.setenv("HF_HUB_CACHE", str(pytester.path / "empty-hub-cache"))  # offline, nothing cached
    result = pytester.runpytest_subprocess(
        "--tokcompat",
        f"--tokcompat-matrix={bundled_matrix()}",
        "--tokcompat-report=report.json",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=17)  # 16 cases and the deepseek_v32 alias item
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    from_pytest = {r["id"]: r for r in report["cases"] if r["kind"] == "case"}
    cases = load_matrix(bundled_matrix()).cases
    assert sorted(from_pytest) == sorted(case.id for case in cases)
    served_elsewhere = {name for case in cases for name in case.served_names if name != case.id}
    for case in cases:
        # A case id that is also a served name (glm-5 is served as lukealonso/GLM-5-NVFP4) is named by its node id.
        name = (
            f"{bundled_matrix()}::{case.id}" if case.id in served_elsewhere or case.served_names else case.id
        )
        trust = ["--trust-remote-code"] if case.trust_remote_code else []
        records = {"pytest": from_pytest[case.id]}
        code, records["check <case>"] = check_json(name, *trust)
        assert code == 0, records["check <case>"]["message"]
        assert case.snapshot is not None
        code, records["check <assembled folder>"] = check_json(str(materialize(case.snapshot)), *trust)
        assert code == 0, records["check <assembled folder>"]["message"]
        records["load_tokenizer(<case>)"] = load_tokenizer(
            name, trust_remote_code=case.trust_remote_code
        ).record
        seen = {
            front: (r["id"], r["verdict"], r["parity"], r["path"], r["ground_truth"], r["probe_texts"])
            for front, r in records.items()
        }
        for front, value in seen.items():
            assert value == seen["pytest"], f"{case.id}: {front} gives {value}, pytest {seen['pytest']}"
        assert records["pytest"]["verdict"] == case.expected_for(records["pytest"]["transformers_version"])


def test_qwen3_golden_ids_are_tiktokens_over_the_real_vocabulary() -> None:
    import tiktoken

    script = load_script("record_qwen3_golden")
    path, _ = script.vocabulary_file()
    config = json.loads((MATRIX_DIR / "snapshots/qwen3-0.6b/tokenizer_config.json").read_text())
    specials = {v["content"]: int(k) for k, v in config["added_tokens_decoder"].items()}
    encoding = tiktoken.Encoding(
        "check", pat_str=script.QWEN_PAT_STR, mergeable_ranks=script.load_ranks(path), special_tokens=specials
    )
    golden = json.loads((MATRIX_DIR / "golden/qwen3-0.6b.json").read_text())["ids"]
    assert len(golden) >= 20
    for text, ids in golden.items():
        assert encoding.encode(unicodedata.normalize("NFC", text), allowed_special="all") == ids, text


def test_materialized_snapshots_are_complete_and_reused(tmp_path: Path) -> None:
    first = materialize(MATRIX_DIR / "snapshots/qwen3-0.6b", root=tmp_path)
    assert {"config.json", "tokenizer_config.json", "vocab.json", "merges.txt"} <= {
        p.name for p in first.iterdir()
    }
    mtime = (first / "vocab.json").stat().st_mtime_ns
    assert materialize(MATRIX_DIR / "snapshots/qwen3-0.6b", root=tmp_path) == first
    assert (first / "vocab.json").stat().st_mtime_ns == mtime


def test_two_ids_swapped_in_the_assembled_cache_are_found_and_the_entry_rebuilt(tmp_path: Path) -> None:
    from pytest_tokcompat.sources.snapshots import sha256_of

    snapshot = MATRIX_DIR / "snapshots/deepseek-v3"
    pin = json.loads((snapshot / "tokcompat-sources.json").read_text())["derived"]["tokenizer.json"]["sha256"]
    entry = materialize(snapshot, root=tmp_path)
    swap_two_ids(entry / "tokenizer.json")
    assert materialize(snapshot, root=tmp_path) == entry and sha256_of(entry / "tokenizer.json") == pin
    swap_two_ids(entry / "tokenizer.json")
    from pytest_tokcompat.sources.snapshots import assemble

    again = assemble(snapshot, root=tmp_path)
    assert again.folder == entry and sha256_of(entry / "tokenizer.json") == pin
    assert again.rebuilt is not None and "tokenizer.json has sha256" in again.rebuilt
    assert f"expected {pin} (its sha256 pin)" in again.rebuilt and str(entry) in again.rebuilt
    assert assemble(snapshot, root=tmp_path).rebuilt is None  # verified, nothing to rebuild


def test_check_reports_the_rebuilt_entry_and_judges_the_real_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKCOMPAT_CACHE", str(tmp_path / "cache"))
    entry = materialize(MATRIX_DIR / "snapshots/deepseek-v3")
    swap_two_ids(entry / "tokenizer.json")
    code, record = check_json("deepseek-v3")
    assert (code, record["verdict"], record["parity"]["status"]) == (0, "native", "match")
    assert any(
        note.startswith(f"rebuilt the cache entry {entry}: tokenizer.json") for note in record["notes"]
    )


@pytest.mark.parametrize(
    ("snapshot_name", "damage"),
    [
        ("qwen3-0.6b", "truncate a derived file"),
        ("deepseek-v3", "truncate a copied file"),
        ("deepseek-v3", "remove the completion mark"),
        ("deepseek-v3", "a file in place of the entry"),
        ("deepseek-v3", "plant a file"),
    ],
)
def test_a_damaged_entry_is_rebuilt_never_a_traceback(
    tmp_path: Path, snapshot_name: str, damage: str
) -> None:
    from pytest_tokcompat.sources.snapshots import sha256_of

    snapshot = MATRIX_DIR / "snapshots" / snapshot_name
    entry = materialize(snapshot, root=tmp_path)
    digests = {p.name: sha256_of(p) for p in entry.iterdir() if not p.name.startswith(".")}
    if damage == "truncate a derived file":
        (entry / "vocab.json").write_bytes((entry / "vocab.json").read_bytes()[:1000])
    elif damage == "truncate a copied file":
        (entry / "tokenizer_config.json").write_bytes((entry / "tokenizer_config.json").read_bytes()[:100])
    elif damage == "remove the completion mark":
        next(p for p in entry.iterdir() if p.name.startswith(".")).unlink()
    elif damage == "a file in place of the entry":
        shutil.rmtree(entry)
        entry.write_text("not a folder")
    else:
        (entry / "special_tokens_map.json").write_text("{}")  # transformers would read it
    assert materialize(snapshot, root=tmp_path) == entry
    assert {p.name: sha256_of(p) for p in entry.iterdir() if not p.name.startswith(".")} == digests
    assert [p.name for p in tmp_path.iterdir()] == [entry.name]  # nothing left beside it


# assembles DeepSeek V3's full-size tokenizer from its pinned package first
def test_a_bad_file_in_an_assembled_snapshot_names_the_snapshot_not_re_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKCOMPAT_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "deepseek"
    shutil.copytree(MATRIX_DIR / "snapshots/deepseek-v3", folder)
    (folder / "config.json").write_text("{")
    code, record = check_json(str(folder))
    assert code == 2 and record["failure"] == "unreadable"
    assert "re-download it" not in record["message"]
    assert "so the file is wrong there: fix it in that snapshot folder" in record["message"]
    assert str(folder) in record["message"]
