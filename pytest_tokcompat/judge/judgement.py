"""The judge's data: the limits it runs under, one attempt, a client loader's result and the judgement.

A leaf of the judge: every other module of it (the child's job, the ladder, the caches, the alarms)
reads these, and they import none of them back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat.judge.contract_truth import ContractTruth
from pytest_tokcompat.judge.observed import Replay
from pytest_tokcompat.judge.parity import Parity, Truth
from pytest_tokcompat.judge.static import StaticView
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.model import AttemptStatus, Remedy, Verdict
from pytest_tokcompat.settings import Limits as Limits
from pytest_tokcompat.sources.names import LoadTarget

REMEDIES = tuple(Remedy)


BROKEN, UNCHECKED = Verdict.BROKEN, Verdict.NOT_CHECKED


OK, SKIPPED, TIMEOUT, CRASHED = (
    AttemptStatus.OK,
    AttemptStatus.SKIPPED,
    AttemptStatus.TIMEOUT,
    AttemptStatus.CRASHED,
)


LOAD_ERROR, ENCODE_ERROR, DRIFT = AttemptStatus.LOAD_ERROR, AttemptStatus.ENCODE_ERROR, AttemptStatus.DRIFT


DEFAULT_LIMITS = Limits()
"""The declared defaults (``pytest_tokcompat.settings``); a front-end's come with its settings."""


@dataclass
class Attempt:
    remedy: str
    status: AttemptStatus
    """ok, drift (loads, wrong ids), load-error, encode-error, timeout, crashed (its process died
    before it reported), not-checked (loads, no ground truth) or skipped."""
    detail: str | None = None
    tokenizer_class: str | None = None
    parity: Parity | None = None
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    remote_files: list[str] = field(default_factory=list)
    stdout: str | None = None
    """The last 4 KB the attempt's process wrote to stdout (None: nothing)."""
    stderr: str | None = None
    undecided: bool = False
    """The judge's own limit (time, memory) or failure stopped it: says nothing about the remedy."""
    loaded_as: str | None = None
    """The name ``from_pretrained`` was given (a repo id, or a folder's path as given)."""
    replay: Replay | None = field(default=None, repr=False, compare=False)
    """What its child observed of the tokenizer, answering as it did (in this process only, never stored)."""

    def __post_init__(self) -> None:
        self.status = AttemptStatus(self.status)

    @property
    def findings(self) -> list[str]:
        """The unacknowledged findings of an attempt with right ids."""
        return self.parity.findings() if self.parity is not None and self.status == OK else []

    @property
    def drifting(self) -> list[str]:
        """Every finding of an attempt with right ids, acknowledged or not (what its tokenizer does)."""
        return (
            self.parity.findings(acknowledged=True) if self.parity is not None and self.status == OK else []
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "remedy": self.remedy,
            "status": self.status,
            "detail": self.detail,
            "tokenizer_class": self.tokenizer_class,
            "parity": self.parity.to_json() if self.parity else None,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "remote_files": self.remote_files,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "dimensions": self.parity.dimensions if self.parity else {},
            "probe_counts": self.parity.probe_counts if self.parity else {},
            "findings": self.findings,
            "loaded_as": self.loaded_as,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Attempt:
        parity = data.get("parity")
        return cls(
            remedy=str(data["remedy"]),
            status=AttemptStatus(data["status"]),
            detail=data.get("detail"),
            tokenizer_class=data.get("tokenizer_class"),
            parity=Parity(**parity) if isinstance(parity, dict) else None,
            warnings=[str(w) for w in data.get("warnings") or []],
            seconds=float(data.get("seconds") or 0.0),
            remote_files=[str(name) for name in data.get("remote_files") or []],
            stdout=data.get("stdout"),
            stderr=data.get("stderr"),
            undecided=bool(data.get("undecided")),
            loaded_as=data.get("loaded_as"),
        )


@dataclass
class Judgement:
    transformers_version: str
    static: StaticView
    verdict: str
    parity: Parity
    attempts: list[Attempt]
    texts: int
    truth_source: str | None
    recorded: Path | None = None
    tokenizer: Any = field(default=None, repr=False)
    loaders: list[LoaderResult] = field(default_factory=list)
    """Each declared client loader, judged beside the verdict (never a rung)."""
    truth: Truth | None = field(default=None, repr=False, compare=False)
    """The ground truth the attempts were checked against (kept for the caller's own load and the
    verdict cache; a run's JudgeCache drops it)."""
    probe_texts: list[str] | None = field(default=None, repr=False, compare=False)
    verdict_cache: dict[str, Any] | None = field(default=None, compare=False)
    """Where the verdict cache on disk was involved: {state: hit | stored | not-stored, path}."""
    repairs: list[str] = field(default_factory=list)
    """The repairs applied on top of the verdict's remedy (each cleared a finding, ids still right)."""
    repair_attempts: list[Attempt] = field(default_factory=list)
    local: list[Attempt] = field(default_factory=list)
    """Where the client's name is a repo id that transformers' name-keyed rules match: the same files
    loaded by their folder path (what a user of a local copy gets), judged beside the verdict."""
    target: LoadTarget | None = field(default=None, compare=False)

    @property
    def model_type(self) -> str | None:
        return self.static.model_type

    @property
    def chosen(self) -> Attempt | None:
        """The verdict's attempt."""
        return next((a for a in self.attempts if a.remedy == self.verdict), None)

    @property
    def findings(self) -> list[str]:
        """What drifts on the verdict's remedy as the client loads it (a matrix entry acknowledges these)."""
        chosen = self.chosen
        return chosen.findings if chosen is not None else []

    @property
    def delivered(self) -> Attempt | None:
        """The attempt of the tokenizer a client is handed: the verdict's, with its repairs where kept."""
        repaired = next((a for a in reversed(self.repair_attempts) if a.status == OK), None)
        return repaired if self.repairs and repaired is not None else self.chosen

    @property
    def remaining_findings(self) -> list[str]:
        """What still drifts once the repairs are applied, acknowledged or not (what ``load_tokenizer()``
        hands back: an acknowledgement accepts a finding, it does not fix the tokenizer)."""
        delivered = self.delivered
        return delivered.drifting if delivered is not None else []

    @property
    def local_verdict(self) -> str | None:
        """The least remedy with right ids for the local copy, where it was judged (else None)."""
        if not self.local:
            return None
        ok = next((a for a in self.local if a.status == OK), None)
        return ok.remedy if ok is not None else BROKEN

    def attempt(self, remedy: str) -> Attempt | None:
        return next((a for a in self.attempts if a.remedy == remedy), None)

    @property
    def remote_files_ran(self) -> list[str]:
        return [name for a in self.attempts for name in a.remote_files]

    def to_json(self) -> dict[str, Any]:
        return {
            "transformers_version": self.transformers_version,
            "model_type": self.model_type,
            "static": self.static.to_json(),
            "verdict": self.verdict,
            "parity": self.parity.to_json(),
            "attempts": [a.to_json() for a in self.attempts],
            "probe_texts": self.texts,
            "ground_truth": self.truth_source,
            "remote_files_ran": self.remote_files_ran,
            "findings": self.findings,
            "repairs": list(self.repairs),
            "remaining_findings": self.remaining_findings,
            **(
                {"repair_attempts": [a.to_json() for a in self.repair_attempts]}
                if self.repair_attempts
                else {}
            ),
            **(
                {"local": {"verdict": self.local_verdict, "attempts": [a.to_json() for a in self.local]}}
                if self.local
                else {}
            ),
            **({"loaders": [result.to_json() for result in self.loaders]} if self.loaders else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Judgement:
        """A judgement as :meth:`to_json` wrote it (client loaders aside: they are never stored)."""
        return cls(
            transformers_version=str(data["transformers_version"]),
            static=view_from(dict(data["static"])),
            verdict=str(data["verdict"]),
            parity=Parity(**data["parity"]),
            attempts=[Attempt.from_json(attempt) for attempt in data["attempts"]],
            texts=int(data["probe_texts"]),
            truth_source=data.get("ground_truth"),
            repairs=[str(r) for r in data.get("repairs") or []],
            repair_attempts=[Attempt.from_json(a) for a in data.get("repair_attempts") or []],
            local=[Attempt.from_json(a) for a in (data.get("local") or {}).get("attempts") or []],
        )


@dataclass
class LoaderResult:
    """A client loader's attempt on one checkpoint: information beside the verdict, not a remedy."""

    loader: ClientLoader
    attempt: Attempt
    differing: int | None = None
    """How many probe texts it encodes differently from the ground truth (drift only)."""
    compared: int | None = None
    replaces_native: list[str] = field(default_factory=list)
    """What the loader's call registered over transformers' own registration of a natively registered
    model_type (AutoConfig / AutoTokenizer ``register(..., exist_ok=True)``): a finding even where ids match."""
    environment: dict[str, str] = field(default_factory=dict)
    """The hub-offline variables the loader was called with (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE)."""
    registers: list[str] = field(default_factory=list)
    """The model_types the loader's call registered a config class or tokenizer mapping for: what its
    shim acts on (a shim that registers the checkpoint's type where plain loading is right is obsolete)."""
    set_by_tool: dict[str, str] = field(default_factory=dict)
    """What the tool set for the call beyond the client's environment: the hub cache holding the repo it
    was called with by id, offline (``LoadTarget.client_environment``)."""

    def to_json(self) -> dict[str, Any]:
        record = self.attempt.to_json()
        del record["remedy"], record["remote_files"]
        return {
            **self.loader.to_json(),
            **record,
            "differing": self.differing,
            "compared": self.compared,
            "replaces_native": list(self.replaces_native),
            "environment": dict(self.environment),
            "registers": list(self.registers),
            "set_by_tool": dict(self.set_by_tool),
        }


def view_from(data: dict[str, Any]) -> StaticView:
    return StaticView(**{k: v for k, v in data.items() if k in StaticView.__dataclass_fields__})


def truth_from(data: dict[str, Any] | None) -> Truth | None:
    """The Truth a child sent as JSON (its contract expectations included)."""
    if data is None:
        return None
    truth = Truth(**{k: v for k, v in data.items() if k in Truth.__dataclass_fields__})
    if isinstance(truth.contract, dict):
        truth.contract = ContractTruth.from_json(truth.contract)
    return truth


def unread_view() -> StaticView:
    return StaticView(None, False, False, None, None, None)
