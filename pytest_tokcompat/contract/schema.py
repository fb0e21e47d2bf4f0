"""The report's JSON Schema and version: the one description every reader validates against."""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 2
"""2: alias lifecycles under ``state`` (not ``verdict``); ``exit_status``, ``complete`` required."""
REPORT_SCHEMA_NAME = "report.schema.json"
REGENERATE = "regenerate it with `pytest --tokcompat --tokcompat-report` of this tokcompat version"


def report_schema_path() -> Path:
    """The path of the bundled report.schema.json (package data, beside matrix.schema.json)."""
    return Path(__file__).resolve().parents[1] / REPORT_SCHEMA_NAME


@lru_cache(maxsize=1)
def report_schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(report_schema_path().read_text(encoding="utf-8"))
    return loaded


def load_report_schema() -> dict[str, Any]:
    """The report schema (JSON Schema draft 2020-12), a fresh copy the caller may change."""
    return copy.deepcopy(report_schema())
