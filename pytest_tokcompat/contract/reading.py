"""Reading a report: validated against the schema, every problem one line naming the file and the fix."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_tokcompat.contract.schema import REGENERATE, SCHEMA_VERSION, report_schema
from pytest_tokcompat.contract.validator import SchemaSubset, json_type, short
from pytest_tokcompat.errors import ReportError


def schema_problems(document: Any) -> list[str]:
    """Every way ``document`` breaks report.schema.json, each as ``$.json.path: what``."""
    schema = report_schema()
    reader = report_reader()
    try:
        if reader.valid(document, schema):
            return []
        return list(reader.errors(document, schema, ())) or ["$: does not fit report.schema.json"]
    except RecursionError:
        return ["$: nested too deeply to be a report"]


@lru_cache(maxsize=1)
def report_reader() -> SchemaSubset:
    return SchemaSubset(report_schema())


def validate_report(document: Any, source: str | os.PathLike[str] = "report") -> dict[str, Any]:
    """``document`` as a report, or ReportError: one line naming ``source``, the JSON path and the fix."""
    if not isinstance(document, dict):
        raise ReportError(
            f"{source}: not a tokcompat report (a JSON {json_type(document)}, not an object); {REGENERATE}"
        )
    if "schema_version" not in document:
        raise ReportError(f"{source}: not a tokcompat report (no schema_version); {REGENERATE}")
    if document["schema_version"] != SCHEMA_VERSION:
        raise ReportError(
            f"{source}: report schema version {short(document['schema_version'])}, this tokcompat reads "
            f"{SCHEMA_VERSION}; {REGENERATE}"
        )
    problems = schema_problems(document)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ReportError(f"{source}: {problems[0]}{more}; {REGENERATE}")
    return document


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_report(path: Path) -> dict[str, Any]:
    """Read and validate one report file; any problem is a one-line ReportError naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise ReportError(f"{path}: is a folder; pass the JSON files in it (reports/*.json)") from None
    except OSError as error:
        raise ReportError(f"{path}: cannot read it ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not UTF-8 text, so not a report; {REGENERATE}") from None
    try:
        document = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ReportError(f"{path}: JSON nested too deeply to be a report; {REGENERATE}") from None
    except ValueError as error:
        raise ReportError(f"{path}: not JSON ({error}); was the run interrupted? run its env again") from None
    return validate_report(document, source=path)
