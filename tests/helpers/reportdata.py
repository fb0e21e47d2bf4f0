"""Real-shaped tokcompat reports, built through the contract's builders, validated by jsonschema.

Every report a test writes or reads goes through ``assert_valid_report`` (the real
jsonschema validator, independent of the contract's own reader), so the tests and
the schema cannot drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from pytest_tokcompat import contract

REMEDIES = ("native", "auto_map", "alias")
FINISHED = "2026-11-29T03:00:00.000000+00:00"


@lru_cache(maxsize=1)
def report_validator() -> jsonschema.Draft202012Validator:
    schema = contract.load_report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def report_schema_errors(document: Any) -> list[str]:
    """Every way ``document`` breaks report.schema.json, by jsonschema itself."""
    return [f"{error.json_path}: {error.message}" for error in report_validator().iter_errors(document)]


def assert_valid_report(document: Any) -> dict[str, Any]:
    errors = report_schema_errors(document)
    assert errors == [], "the report breaks report.schema.json:\n" + "\n".join(errors)
    assert isinstance(document, dict)
    return document


def read_valid_report(path: Path) -> dict[str, Any]:
    return assert_valid_report(json.loads(path.read_text(encoding="utf-8")))


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
    judgement = {
        "transformers_version": version,
        "model_type": model_type,
        "static": {
            "model_type": model_type,
            "registered_natively": verdict == "native",
            "predicted": verdict if verdict in REMEDIES else "native",
        },
        "verdict": verdict,
        "parity": {"status": "match", "checked": 23, "source": "tokenizer.json (tokenizers library)"},
        "attempts": attempts(verdict, drift),
        "probe_texts": 23,
        "ground_truth": "tokenizer.json (tokenizers library)",
        "remote_files_ran": [],
    }
    return contract.case_record(
        case_id,
        "failed" if failed else "passed",
        f"case {case_id!r}: expected {expected}, got {verdict} under transformers {version}",
        expected=expected,
        alarms=alarms,
        judgement=judgement,
        details={"repo": f"owner/{case_id}", "location": "matrix/models.yaml:7", "note": None},
    )


def not_checked(
    case_id: str, reason: str = "did not run in this session (pytest exit status 2)"
) -> dict[str, Any]:
    return contract.not_checked_record(case_id, reason)


def alias_record(
    model_type: str, version: str, status: str = "passed", state: str = "needed"
) -> dict[str, Any]:
    return contract.alias_record(
        model_type,
        status,
        state,
        f"alias {model_type} under transformers {version}: {state}",
        alias={"model_type": model_type, "native_since": None, "native_drift": None},
        cases=["deepseek-v3.2-exp"],
    )


def report(
    version: str,
    records: list[dict[str, Any]],
    extra_alarms: Sequence[dict[str, Any]] = (),
    *,
    complete: bool = True,
    exit_status: int | None = None,
    selection: dict[str, Any] | None = None,
    finished_at: str = FINISHED,
    started_at: str | None = None,
    matrix: str = "matrix/models.yaml",
) -> dict[str, Any]:
    failed = any(record["status"] == "failed" for record in records)
    document = contract.report_document(
        records,
        matrix,
        exit_status=(1 if failed else 0) if exit_status is None else exit_status,
        complete=complete,
        selection=selection,
        versions={
            "python": "3.11.7",
            "transformers": version,
            "tokenizers": "0.22.2",
            "huggingface_hub": "0.36.0",
            "pytest-tokcompat": "0.1.0",
        },
        started_at=started_at,
        finished_at=finished_at,
    )
    document["alarms"] += list(extra_alarms)
    return document


def write(folder: Path, name: str, document: Any, *, valid: bool = True) -> Path:
    """Write a report; ``valid`` (the default) first proves it is one, by jsonschema."""
    if valid:
        assert_valid_report(document)
    path = folder / name
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    return path
