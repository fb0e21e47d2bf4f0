"""The JSON Schema of the matrix format, for editors and CI linters.

It ships as package data at the package root, beside report.schema.json. It
describes the same format that ``pytest_tokcompat.matrix`` validates (the tests
keep the two in step); the validator remains the judge.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SCHEMA_NAME = "matrix.schema.json"


def schema_path() -> Path:
    """The path of the bundled matrix.schema.json."""
    return Path(__file__).resolve().parents[1] / SCHEMA_NAME


def load_schema() -> dict[str, Any]:
    """The matrix schema as a dict (JSON Schema draft 2020-12)."""
    schema: dict[str, Any] = json.loads(schema_path().read_text(encoding="utf-8"))
    return schema
