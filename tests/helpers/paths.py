"""Where the tests find the repository's files, named once: a test file moves between folders freely."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
"""The tests' folder (tests/)."""
REPO = TESTS.parent
"""The checkout's root."""
DATA = TESTS / "data"
"""The tests' data files (tests/data/)."""
MATRIX_DIR = REPO / "matrix"
"""The bundled matrix's folder (matrix/)."""
SIMPLE_INDEX = DATA / "transformers-simple-v1.json"
"""A package index's JSON simple-API page for transformers, captured (release discovery, bisect, the grid)."""
