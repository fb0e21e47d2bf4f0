"""Real-shaped tokcompat reports (as written by --tokcompat-report), built in the tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_tokcompat.contract import SCHEMA_VERSION

REMEDIES = ("native", "auto_map", "alias")


def attempts(verdict: str, drift: bool = False) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for remedy in REMEDIES:
        if remedy == verdict:
            status, detail = "ok", None
        elif drift and remedy == "native":
            status, detail = "drift", "ids differ on 3 of 23 probe texts"
        else:
            status, detail = "skipped", "not needed"
        found.append(
            {
                "remedy": remedy,
                "status": status,
                "detail": detail,
                "tokenizer_class": "TokenizersBackend" if status == "ok" else None,
                "parity": None,
                "warnings": [],
                "seconds": 0.01,
                "remote_files": [],
            }
        )
    return found


def alarm(kind: str, subject: str, version: str, message: str = "", action: str = "") -> dict[str, Any]:
    return {
        "kind": kind,
        "subject": subject,
        "transformers_version": version,
        "message": message or f"{kind} for {subject} under transformers {version}",
        "action": action or f"record it for {subject}",
    }


def case(
    case_id: str,
    version: str,
    verdict: str,
    expected: str | None = None,
    *,
    drift: bool = False,
    model_type: str = "deepseek_v32",
) -> dict[str, Any]:
    expected = expected or verdict
    failed = verdict != expected
    alarms = (
        [alarm("unexpected-verdict", case_id, version, f"expected {expected}, got {verdict}")]
        if failed
        else []
    )
    return {
        "kind": "case",
        "id": case_id,
        "status": "failed" if failed else "passed",
        "message": f"case {case_id!r}: expected {expected}, got {verdict} under transformers {version}",
        "expected": expected,
        "verdict": verdict,
        "alarms": alarms,
        "repo": f"owner/{case_id}",
        "location": "matrix/models.yaml:7",
        "note": None,
        "transformers_version": version,
        "model_type": model_type,
        "static": {
            "model_type": model_type,
            "registered_natively": verdict == "native",
            "predicted": verdict,
        },
        "parity": {"status": "match", "checked": 23, "source": "tokenizer.json (tokenizers library)"},
        "attempts": attempts(verdict, drift),
        "probe_texts": 23,
    }


def alias_record(
    model_type: str, version: str, status: str = "passed", state: str = "needed"
) -> dict[str, Any]:
    return {
        "kind": "alias",
        "id": f"alias:{model_type}",
        "status": status,
        "verdict": state,
        "message": f"alias {model_type} under transformers {version}: needed",
        "alias": {"model_type": model_type, "native_since": None, "native_drift": None},
        "cases": ["deepseek-v3.2-exp"],
        "alarms": [],
    }


def report(
    version: str, records: list[dict[str, Any]], extra_alarms: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    alarms = [a for record in records for a in record.get("alarms", [])] + list(extra_alarms)
    return {
        "schema_version": SCHEMA_VERSION,
        "versions": {
            "python": "3.11.7",
            "transformers": version,
            "tokenizers": "0.22.2",
            "pytest-tokcompat": "0.1.0",
        },
        "transformers_version": version,
        "matrix": "matrix/models.yaml",
        "cases": sorted(records, key=lambda r: (r.get("kind", "case"), r.get("id", ""))),
        "alarms": alarms,
    }


def write(folder: Path, name: str, document: dict[str, Any]) -> Path:
    path = folder / name
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path
