"""The grid's cell cache: a judged cell's records stored under its key, found again when nothing changed.

Kept apart from the run so reuse can be read (and tested) without tox or a build.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_tokcompat.ci.fingerprint import (
    canonical,
)
from pytest_tokcompat.contract import (
    write_json_atomic,
)


class CellCache:
    """Content-addressed results: ``<root>/<key[:2]>/<key>.json`` holding the records of one cell.

    A file is taken only when it fits its cell (:mod:`pytest_tokcompat.ci.cellcheck`); one that does not is
    deleted, and why is kept in ``discarded`` for the run to say."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.discarded: list[str] = []

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(
        self, key: str, fields: dict[str, Any], check: Callable[[Any], str | None]
    ) -> list[dict[str, Any]] | None:
        """The records kept under ``key``, if the file names that key, was made from ``fields`` (the cell's
        case, release versions, matrix and judge) and ``check`` finds nothing wrong with its records."""
        path = self._path(key)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(document, dict):
            why: str | None = "it is not a cell file"
        elif document.get("key") != key:
            why = "it names another key"
        elif canonical(document.get("fields")) != canonical(fields):
            why = "it was made from other inputs than its key says"
        else:
            why = check(document.get("records"))
        if why is None:
            return list(document["records"])
        self.discarded.append(f"{path}: {why}")
        path.unlink(missing_ok=True)
        return None

    def registry(self, key: str) -> dict[str, Any] | None:
        """The upstream watch kept with an extras cell (its release's ``registry``), if it has one."""
        try:
            document = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        found = document.get("registry") if isinstance(document, dict) else None
        return found if isinstance(found, dict) and document.get("key") == key else None

    def put(
        self,
        key: str,
        records: list[dict[str, Any]],
        fields: dict[str, Any] | None,
        registry: dict[str, Any] | None = None,
    ) -> None:
        document: dict[str, Any] = {"key": key, "fields": fields, "records": records}
        if registry is not None:
            document["registry"] = registry
        write_json_atomic(self._path(key), document)
