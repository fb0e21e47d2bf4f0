"""The grid's cell cache: a judged cell's records stored under its key, found again when nothing changed.

Kept apart from the run so reuse can be read (and tested) without tox or a build.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_tokcompat.ci.cellcheck import records_problem
from pytest_tokcompat.ci.fingerprint import canonical, folder_hash, sha
from pytest_tokcompat.ci.install import PACKAGE_DIR
from pytest_tokcompat.ci.releaserun import ReleaseRun, extras_stubs
from pytest_tokcompat.ci.shards import EXTRAS
from pytest_tokcompat.ci.toxrun import LIBRARIES
from pytest_tokcompat.contract import judge_identity, probe_set_identity, write_json_atomic
from pytest_tokcompat.matrix.cases import Case, Matrix

NOT_CHECKED = "not-checked"
SETTINGS_IGNORED = {"cases", "floor"}
"""Top-level matrix keys that do not change any cell (every other one, golden_dir, ... may)."""


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


def judge_version() -> str:
    """This package's version and a hash of every source that judges (all but the CI tools)."""
    return judge_identity(PACKAGE_DIR)


def probe_set() -> str:
    return probe_set_identity(PACKAGE_DIR)


class Keys:
    """Cell keys for one matrix: the part that does not depend on the environment, computed once."""

    def __init__(
        self,
        matrix: Matrix,
        raw: dict[str, Any],
        clients: dict[str, Any] | None = None,
        judged_under: dict[str, str] | None = None,
    ) -> None:
        self.clients = clients or {}
        """``--with`` requirements and ``--loader`` specs: they change what a cell holds."""
        self.judged_under = judged_under or {}
        """The judge's settings given to the grid (``settings.passed_on``: a time limit, a memory cap, the
        isolation); a cell judged under other limits may hold another result. Left at their defaults: none."""
        self.judge = judge_version()
        self.probes = probe_set()
        self.settings = {k: v for k, v in raw.items() if k not in SETTINGS_IGNORED}
        listed = raw.get("cases")
        entries: list[Any] = listed if isinstance(listed, list) else []
        by_id = {str(e.get("id")): e for e in entries if isinstance(e, dict)}
        self.static: dict[str, dict[str, Any] | None] = {
            case.id: self._static(case, by_id.get(case.id)) for case in matrix.cases
        }

    @staticmethod
    def _static(case: Case, entry: dict[str, Any] | None) -> dict[str, Any] | None:
        """What determines a case apart from the environment, or None when it cannot be known unrun."""
        if entry is None:
            return None
        if case.snapshot is not None:
            if not case.snapshot.is_dir():
                return None
            checkpoint = {"snapshot": folder_hash(case.snapshot)}
        elif case.repo and case.revision and re.fullmatch(r"[0-9a-f]{40}", case.revision):
            checkpoint = {"hub": f"{case.repo}@{case.revision}"}
        else:
            return None  # a hub repo at a branch or tag: its files may change under the same name
        golden = case.golden_path
        return {
            "entry": entry,
            "checkpoint": checkpoint,
            "golden": sha(golden.read_bytes()) if golden is not None and golden.is_file() else None,
        }

    def fields(self, cell: str, versions: dict[str, str | None]) -> dict[str, Any] | None:
        common = {
            "settings": self.settings,
            "versions": {name: versions.get(name) for name in ("python", *LIBRARIES[:3])},
            "judge": self.judge,
            "probes": self.probes,
            **({"clients": self.clients} if self.clients else {}),
            **({"judged_under": self.judged_under} if self.judged_under else {}),
        }
        if cell != EXTRAS:
            static = self.static.get(cell)
            return None if static is None else {"cell": "case", **static, **common}
        if any(static is None for static in self.static.values()):
            return None
        return {"cell": "extras", "cases": self.static, **common}

    def key(self, cell: str, versions: dict[str, str | None]) -> str | None:
        found = self.fields(cell, versions)
        return None if found is None else sha(canonical(found).encode())


def plan_reuse(run: ReleaseRun, keys: Keys, cache: CellCache, matrix: Matrix | None) -> None:
    """Which of a built release's cells its cache holds (reused) and which it judges."""
    assert run.versions is not None
    if run.rebuilt is not None:
        run.to_judge = list(run.cells)
        run.keys = {
            cell: keys.key(cell, run.versions) if run.release.immutable else None for cell in run.cells
        }
        return
    case_ids = list(keys.static)
    alias_ids = [stub["id"] for stub in extras_stubs("", matrix)]
    for cell in run.cells:
        key = keys.key(cell, run.versions) if run.release.immutable else None
        run.keys[cell] = key
        fields = keys.fields(cell, run.versions) if key else None

        def check(records: Any, cell: str = cell) -> str | None:
            return records_problem(records, cell, case_ids, alias_ids, EXTRAS)

        records = cache.get(key, fields, check) if key and fields is not None else None
        if records is None:
            run.to_judge.append(cell)
        else:
            run.reused[cell] = records
            if cell == EXTRAS and key is not None:
                run.registry = cache.registry(key)


def store(run: ReleaseRun, keys: Keys, cache: CellCache) -> None:
    """Keep what this run judged for next time: checked cases; the extras of a run that checked all
    its cases (a not-checked case may be passing trouble, such as the hub being down)."""
    assert run.versions is not None
    clean = run.error is None and all(
        record.get("status") != NOT_CHECKED
        for cell, records in run.fresh.items()
        if cell != EXTRAS
        for record in records
    )
    for cell, records in run.fresh.items():
        key = run.keys.get(cell)
        if key is None or not records:
            continue
        if cell == EXTRAS:
            if clean:
                cache.put(key, records, keys.fields(cell, run.versions), run.registry)
        elif records[0].get("status") != NOT_CHECKED:
            cache.put(key, records, keys.fields(cell, run.versions))
