"""The JSON Schema of the matrix format, for editors and CI linters.

It ships as package data next to this module. It describes the same format that
matrix.py validates (the tests keep the two in step); matrix.py remains the judge.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

SCHEMA_NAME = "matrix.schema.json"


def _resource() -> Traversable:
    try:
        return files("pytest_tokcompat") / SCHEMA_NAME
    except (NotADirectoryError, TypeError):
        # A setuptools editable install can expose the package as a namespace (package-dir maps
        # pytest_tokcompat.bundled elsewhere), which importlib.resources cannot read on 3.10/3.11.
        return Path(__file__).with_name(SCHEMA_NAME)


def schema_path() -> Path:
    """The path of the bundled matrix.schema.json."""
    return Path(str(_resource()))


def load_schema() -> dict[str, Any]:
    """The matrix schema as a dict (JSON Schema draft 2020-12)."""
    schema: dict[str, Any] = json.loads(_resource().read_text(encoding="utf-8"))
    return schema
