"""The JSON report of one run: versions, one record per case, and the alarms.

Written once, atomically, by the process that owns the session (the xdist
controller), so that an interrupted run never leaves half a file behind.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1


def library_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("transformers", "tokenizers", "huggingface_hub", "pytest-tokcompat"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def build_report(records: list[dict[str, Any]], matrix: str | None) -> dict[str, Any]:
    alarms = [alarm for record in records for alarm in record.get("alarms", [])]
    versions = library_versions()
    return {
        "schema_version": SCHEMA_VERSION,
        "versions": versions,
        "transformers_version": versions["transformers"],
        "matrix": matrix,
        "cases": sorted(records, key=lambda r: (r.get("kind", "case"), r.get("id", ""))),
        "alarms": alarms,
    }


def write_json_atomic(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(document, stream, indent=2, ensure_ascii=False)
            stream.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
