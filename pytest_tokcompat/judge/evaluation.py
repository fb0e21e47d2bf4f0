"""What one evaluation of a checkpoint says: its outcome, the failure kind, the judgement and the record.

A leaf of the judge's front door (``evaluate``): the client library and the command line read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from pytest_tokcompat.contract import case_record
from pytest_tokcompat.errors import TokcompatError
from pytest_tokcompat.judge.alarms import Alarm
from pytest_tokcompat.judge.judgement import Judgement
from pytest_tokcompat.matrix.cases import Case
from pytest_tokcompat.model import CaseStatus, Verdict
from pytest_tokcompat.sources.checkpoint import Checkpoint, Source


class Failure(str, Enum):
    """Why an evaluation ended without a judgement of the tokenizer."""

    BAD_INPUT = "bad-input"
    """A name, folder, matrix or opt-in that cannot be used as given; the message says the fix."""
    UNREADABLE = "unreadable"
    """The judge could not read the checkpoint's own files (size cap, corrupt, unreadable): verdict
    not-checked, never broken and never passed; the message names the file."""

    def __str__(self) -> str:
        return str(self.value)


@dataclass
class Evaluation:
    """One target, evaluated: the outcome every front-end reports, and the record it writes."""

    case_id: str
    status: CaseStatus
    message: str
    expected: str | None = None
    judgement: Judgement | None = None
    alarms: list[Alarm] = field(default_factory=list)
    checkpoint: Checkpoint | None = None
    failure: Failure | None = None
    error: TokcompatError | None = field(default=None, repr=False)
    """The error that ended it before a judgement (raised again by load_tokenizer)."""
    notes: list[str] = field(default_factory=list)
    case: Case | None = None

    @property
    def verdict(self) -> str | None:
        if self.judgement is not None:
            return self.judgement.verdict
        return Verdict.NOT_CHECKED if self.failure is Failure.UNREADABLE else None

    @property
    def folder(self) -> Path | None:
        return self.checkpoint.folder if self.checkpoint is not None else None

    def remote_files_ran(self) -> list[dict[str, Any]]:
        """Every remote-code file that ran, with the repo and revision it came from (None: a local folder)."""
        if self.judgement is None or self.checkpoint is None:
            return []
        checkpoint = self.checkpoint
        from_hub = checkpoint.source is Source.HUB
        return [
            {
                "repo": checkpoint.repo if from_hub else None,
                "revision": checkpoint.revision if from_hub else None,
                "file": name,
                "folder": str(checkpoint.origin or checkpoint.folder),
            }
            for name in self.judgement.remote_files_ran
        ]

    def to_json(self) -> dict[str, Any]:
        """The record: the same for the same checkpoint in the pytest report, ``check --json`` and
        ``load_tokenizer().record``; built by the report contract's ``case_record``."""
        case = self.case or (self.checkpoint.case if self.checkpoint is not None else None)
        details: dict[str, Any] = {
            "failure": str(self.failure) if self.failure is not None else None,
            "repo": case.repo if case is not None else None,
            "location": case.location if case is not None else None,
            "note": case.note if case is not None else None,
        }
        if self.checkpoint is not None:
            details.update(self.checkpoint.to_json())
        details["notes"] = [*details.get("notes", []), *self.notes]
        judgement: dict[str, Any] | None = None
        if self.judgement is not None:
            judgement = {**self.judgement.to_json(), "remote_files_ran": self.remote_files_ran()}
            if self.judgement.verdict_cache is not None:
                details["verdict_cache"] = dict(self.judgement.verdict_cache)
        return case_record(
            self.case_id,
            self.status,
            self.message,
            expected=self.expected,
            verdict=self.verdict,
            alarms=[a.to_json() for a in self.alarms],
            judgement=judgement,
            details=details,
        )
