"""Matrices the tests write and run: one writer and one run, so every test's matrix reads and runs alike."""

from __future__ import annotations

from pathlib import Path

import pytest


def write_matrix(root: Path, body: str) -> Path:
    """Write `root/models.yaml`: a version 1 matrix whose `cases:` list is `body` (YAML lines, as given).

    `root` is created if missing. The cases begin on the file's line 3, which is what a test that checks a
    located problem (`models.yaml:3`) counts from.
    """
    root.mkdir(parents=True, exist_ok=True)
    path = root / "models.yaml"
    path.write_text("version: 1\ncases:\n" + body, encoding="utf-8")
    return path


def run_plugin(pytester: pytest.Pytester, matrix: Path, *extra: str) -> pytest.RunResult:
    """`pytest --tokcompat` on `matrix` in the pytester's folder, in file order (pytest-randomly off)."""
    return pytester.runpytest("--tokcompat", f"--tokcompat-matrix={matrix}", "-p", "no:randomly", *extra)
