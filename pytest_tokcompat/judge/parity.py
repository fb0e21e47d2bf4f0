"""Parity: does the loaded tokenizer keep the whole contract a client relies on?

The ids dimension: the ids equal the ground truth and decoding them round-trips.
The ground truth is the checkpoint's own tokenizer.json read by the ``tokenizers``
library, which is what serving stacks use; where a checkpoint has none (tiktoken,
sentencepiece) it is golden ids recorded beside the matrix. Texts without a
ground truth are reported as not checked, never as matching. The other dimensions
(the default call, special tokens, decode, chat template) are checked by
``contract_checks`` against what the checkpoint's files declare; a drift in any of
them that the matrix does not acknowledge makes the tokenizer no remedy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat.judge.contract_checks import (
    ContractTruth,
    DimensionResult,
    check_contract,
    contract_truth,
    read_declared,
)
from pytest_tokcompat.judge.probes import Probe, ProbeKind
from pytest_tokcompat.model import Dimension, DimensionStatus

MATCH, MISMATCH, DECODE_MISMATCH, NOT_CHECKED = "match", "mismatch", "decode-mismatch", "not-checked"
CONTRACT_MISMATCH = "contract-mismatch"
"""The ids match, but another dimension of the contract (default call, special tokens, decode, chat template)
drifts and the matrix does not acknowledge it."""
CONTRACT_ORDER = (Dimension.DECODE, Dimension.DEFAULT_CALL, Dimension.SPECIAL_TOKENS, Dimension.CHAT_TEMPLATE)


@dataclass
class Truth:
    source: str
    ids: dict[str, list[int]]
    decoded: dict[str, str]
    missing: list[str] = field(default_factory=list)
    missing_reason: str | None = None
    """Why the missing texts have no golden ids (default: they were never recorded)."""
    kinds: dict[str, str] = field(default_factory=dict)
    """The probe kind of each text (builtin, special, entry, digits, whitespace, script, vocab)."""
    contract: ContractTruth | None = None
    """The expectations of the other dimensions; None where they were not computed."""
    acknowledged: dict[str, str] = field(default_factory=dict)
    """Dimensions the matrix entry acknowledges for this release, with the reason: reported, not failed."""
    unchecked: dict[str, int] = field(default_factory=dict)
    """Derived probes without golden ids, by kind: reported as not checked (the golden file predates them)."""
    sources: dict[str, str] = field(default_factory=dict)
    """What a derived probe was drawn from (``ids 700-702 of 707``, ``special token '<|im_end|>' (id 2)``)."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Truth:
        """Rebuilt from ``dataclasses.asdict`` after a trip through JSON: plain data in, the nested contract too."""
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        if isinstance(fields.get("contract"), dict):
            fields["contract"] = ContractTruth.from_json(fields["contract"])
        return cls(**fields)


@dataclass
class Parity:
    status: str
    checked: int = 0
    source: str | None = None
    text: str | None = None
    expected: list[int] | None = None
    actual: list[int] | None = None
    expected_text: str | None = None
    actual_text: str | None = None
    reason: str | None = None
    dimension: str | None = None
    """The dimension of the first difference (ids, default_call, special_tokens, decode, chat_template)."""
    kind: str | None = None
    """The probe kind of the first difference."""
    probe_source: str | None = None
    """What that probe was drawn from, for derived probes (an id range, a token, a script class)."""
    dimensions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Every dimension's result: status, how much was checked, the first difference."""
    probe_counts: dict[str, int] = field(default_factory=dict)
    """How many probes of each kind were checked for ids."""
    unchecked: dict[str, int] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    """What was seen but is no verdict: the type apply_chat_template(tokenize=True) returns, and so on."""

    @property
    def ok(self) -> bool:
        return self.status == MATCH

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None and v != {}}

    def acknowledged(self) -> list[str]:
        return [name for name, result in self.dimensions.items() if result.get("status") == "acknowledged"]

    def describe(self) -> str:
        kind = (
            f" ({self.kind} probe{', ' + self.probe_source if self.probe_source else ''})"
            if self.kind
            else ""
        )
        if self.status == MATCH:
            text = f"ids match the {self.source} on {self.checked} texts"
            if self.probe_counts:
                text += " (" + ", ".join(f"{n} {k}" for k, n in self.probe_counts.items()) + ")"
            acknowledged = self.acknowledged()
            if acknowledged:
                text += f"; acknowledged drift: {', '.join(acknowledged)}"
            return text
        if self.status == MISMATCH:
            return (
                f"ids differ from the {self.source} on {self.text!r}{kind}:\n"
                f"    expected {self.expected}\n    actual   {self.actual}"
            )
        if self.status == DECODE_MISMATCH:
            return (
                f"decoding {self.expected} does not round-trip for {self.text!r}{kind}:\n"
                f"    expected {self.expected_text!r}\n    actual   {self.actual_text!r}"
            )
        if self.status == CONTRACT_MISMATCH and self.dimension:
            result = self.dimensions.get(self.dimension, {})
            where = f" on {self.text!r}{kind}" if self.text is not None else ""
            detail = f"\n    {result['reason']}" if result.get("reason") else ""
            return (
                f"ids match, but the {self.dimension} dimension drifts{where}: {result.get('call')}:\n"
                f"    expected {result.get('expected')!r}\n    actual   {result.get('actual')!r}{detail}\n"
                f"    (a remedy must keep the whole contract; if this drift is known and accepted, acknowledge "
                f"'{self.dimension}' for this release in the matrix entry)"
            )
        return f"not checked: {self.reason}"


def reference_tokenizer(folder: Path) -> Any | None:
    """The checkpoint's tokenizer.json parsed by ``tokenizers``; once per run where the run keeps a cache."""
    path = folder / "tokenizer.json"
    if not path.is_file():
        return None
    from pytest_tokcompat.judge.cache import active_cache

    cache = active_cache()
    if cache is None:
        return _parse_reference(path)
    stat = path.stat()
    return cache.reference(
        (str(path.resolve()), stat.st_size, stat.st_mtime_ns), lambda: _parse_reference(path)
    )


def _parse_reference(path: Path) -> Any:
    from tokenizers import Tokenizer

    from pytest_tokcompat.errors import CheckpointError

    try:
        return Tokenizer.from_file(str(path))
    except Exception as error:  # the tokenizers library raises a bare Exception for bad files
        raise CheckpointError(
            f"{path} is not a valid tokenizer.json ({str(error)[:200]}); re-download it"
        ) from None


def read_golden(path: Path) -> tuple[dict[str, list[int]], dict[str, str]]:
    """Golden ids by text, and the text each decodes back to (the text itself unless recorded)."""
    from pytest_tokcompat.errors import CheckpointError

    fix = "fix the file or delete it and record it again (tokcompat golden --replace CASE)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CheckpointError(f"{path}: golden ids that cannot be read ({str(error)[:200]}); {fix}") from None
    ids = data.get("ids") if isinstance(data, dict) else None
    if not isinstance(ids, dict) or not all(
        isinstance(v, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in v)
        for v in ids.values()
    ):
        raise CheckpointError(f"{path}: expected an object with an 'ids' map of text to a list of ids; {fix}")
    decoded = data.get("decoded") if isinstance(data.get("decoded"), dict) else {}
    return {str(t): list(v) for t, v in ids.items()}, {str(t): str(decoded.get(t, t)) for t in ids}


def golden_probes(path: Path | None) -> list[Probe]:
    """Derived probes a golden file recorded with their kinds (``kinds``: text to kind), for checkpoints
    without tokenizer.json, whose vocabulary only the independent implementation that wrote them can sweep."""
    if path is None or not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    kinds = data.get("kinds") if isinstance(data, dict) else None
    if not isinstance(kinds, dict):
        return []
    return [Probe(str(kind), str(text), "golden file") for text, kind in kinds.items()]


def write_golden(
    path: Path,
    case_id: str,
    ids: dict[str, list[int]],
    decoded: dict[str, str],
    source: str,
    implementation: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write a whole golden file atomically; ``implementation`` names what computed the ids, and its version."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document: dict[str, Any] = {"case": case_id, "source": source}
    if implementation is not None:
        document["implementation"] = implementation
    document.update(extra or {})
    document.update({"ids": ids, "decoded": decoded})
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    temporary.replace(path)


def ground_truth(
    folder: Path,
    texts: list[str],
    golden_path: Path | None,
    reference: Any = None,
    *,
    contract: bool = True,
) -> Truth | None:
    """The expected ids for ``texts``, or None where the checkpoint has no ground truth at all.

    With ``contract`` (the default) also the expectations of the other dimensions, from the
    checkpoint's files. Probe kinds come from ``texts`` when it is a ``ProbeTexts``.
    """
    if reference is None:
        reference = reference_tokenizer(folder)
    if reference is None:
        if golden_path is None or not golden_path.is_file():
            return None
        golden, decoded = read_golden(golden_path)
        return golden_truth(
            folder, texts, f"golden ids in {golden_path.name}", golden, decoded, contract=contract
        )
    kinds = dict(getattr(texts, "kinds", {}))
    sources = dict(getattr(texts, "sources", {}))
    ids = {text: reference.encode(text, add_special_tokens=False).ids for text in texts}
    decoded = {text: reference.decode(ids[text], skip_special_tokens=False) for text in texts}
    truth = Truth("tokenizer.json (tokenizers library)", ids, decoded, kinds=kinds, sources=sources)
    if contract:
        truth.contract = contract_truth(
            read_declared(folder, reference), list(texts), kinds, truth.ids, truth.decoded, reference
        )
    return truth


def golden_truth(
    folder: Path,
    texts: list[str],
    source: str,
    golden: dict[str, list[int]],
    decoded: dict[str, str],
    *,
    contract: bool = True,
) -> Truth:
    """The truth of a checkpoint without tokenizer.json, from golden ids (read, or just recorded).

    Derived probes the ids do not cover are counted as not checked by kind; other texts
    without ids are missing (the case is not checked until they are recorded).
    """
    kinds = dict(getattr(texts, "kinds", {}))
    derived_texts = set(getattr(texts, "derived", ()))
    present = {text: golden[text] for text in texts if text in golden}
    absent = [text for text in texts if text not in golden]
    unchecked: dict[str, int] = {}
    for text in absent:
        if text in derived_texts:
            unchecked[kinds[text]] = unchecked.get(kinds[text], 0) + 1
    truth = Truth(
        source,
        present,
        {t: decoded.get(t, t) for t in present},
        [text for text in absent if text not in derived_texts],
        kinds=kinds,
        unchecked=unchecked,
        sources=dict(getattr(texts, "sources", {})),
    )
    if contract:
        truth.contract = contract_truth(read_declared(folder), list(texts), kinds, truth.ids, truth.decoded)
    return truth


def _ids_dimension(
    tokenizer: Any, truth: Truth, texts: list[str]
) -> tuple[DimensionResult, DimensionResult, Parity | None, dict[str, int]]:
    """ids (and the raw decode round-trip) over every probe; the first difference as the legacy Parity."""
    counts: dict[str, int] = {}
    ids_result = DimensionResult(str(DimensionStatus.MATCH))
    raw_result = DimensionResult(str(DimensionStatus.MATCH))
    first: Parity | None = None
    for text in texts:
        if text not in truth.ids:
            continue
        kind = truth.kinds.get(text, str(ProbeKind.BUILTIN))
        expected = truth.ids[text]
        actual = list(tokenizer.encode(text, add_special_tokens=False))
        if actual != expected:
            ids_result.drifts[kind] = ids_result.drifts.get(kind, 0) + 1
            if ids_result.status == DimensionStatus.MATCH:
                ids_result = DimensionResult(
                    str(DimensionStatus.DRIFT),
                    ids_result.checked,
                    kind,
                    text,
                    "encode(text, add_special_tokens=False)",
                    expected,
                    actual,
                    drifts=ids_result.drifts,
                )
                first = first or Parity(
                    MISMATCH, ids_result.checked, truth.source, text, expected, actual, kind=kind
                )
        decoded = tokenizer.decode(expected, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if decoded != truth.decoded[text] and raw_result.status == DimensionStatus.MATCH:
            raw_result = DimensionResult(
                str(DimensionStatus.DRIFT),
                raw_result.checked,
                kind,
                text,
                "decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)",
                truth.decoded[text],
                decoded,
            )
            first = first or Parity(
                DECODE_MISMATCH,
                ids_result.checked,
                truth.source,
                text,
                expected,
                None,
                truth.decoded[text],
                decoded,
            )
        counts[kind] = counts.get(kind, 0) + 1
        if ids_result.status == DimensionStatus.MATCH:
            ids_result.checked += 1
        if raw_result.status == DimensionStatus.MATCH:
            raw_result.checked += 1
    return ids_result, raw_result, first, counts


def check_parity(tokenizer: Any, truth: Truth | None, texts: list[str]) -> Parity:
    """Every dimension of the contract of one loaded tokenizer: a pure function returning plain data."""
    if truth is None:
        return Parity(NOT_CHECKED, reason="no tokenizer.json and no golden ids: run with --tokcompat-record")
    ids_result, raw_decode, first, counts = _ids_dimension(tokenizer, truth, texts)
    dimensions: dict[str, DimensionResult] = {str(Dimension.IDS): ids_result}
    info: dict[str, Any] = {}
    if truth.contract is not None:
        dimensions.update(check_contract(tokenizer, truth.contract, truth.ids, truth.kinds, info))
    if raw_decode.status == DimensionStatus.DRIFT or str(Dimension.DECODE) not in dimensions:
        dimensions[str(Dimension.DECODE)] = raw_decode  # the round-trip without clean-up comes first
    for name, reason in truth.acknowledged.items():
        result = dimensions.get(name)
        if result is not None and result.status == DimensionStatus.DRIFT and name != Dimension.IDS:
            result.status, result.reason = str(DimensionStatus.ACKNOWLEDGED), reason
    for result in dimensions.values():
        if result.text is not None and result.text in truth.sources:
            result.source = truth.sources[result.text]
    parity = _verdict(truth, ids_result, first, dimensions)
    parity.probe_source = truth.sources.get(parity.text) if parity.text is not None else None
    parity.dimensions = {name: result.to_json() for name, result in dimensions.items()}
    parity.probe_counts = counts
    parity.unchecked = dict(truth.unchecked)
    parity.info = info
    return parity


def _verdict(
    truth: Truth, ids_result: DimensionResult, first: Parity | None, dimensions: dict[str, DimensionResult]
) -> Parity:
    checked = ids_result.checked
    if first is not None and first.status == MISMATCH:
        first.dimension = str(Dimension.IDS)
        return first
    for name in CONTRACT_ORDER:
        result = dimensions.get(str(name))
        if result is None or result.status != DimensionStatus.DRIFT:
            continue
        if name == Dimension.DECODE and first is not None and first.status == DECODE_MISMATCH:
            first.dimension, first.checked = str(name), checked
            return first
        return Parity(
            CONTRACT_MISMATCH,
            checked,
            truth.source,
            result.text,
            reason=result.summary(),
            dimension=str(name),
            kind=result.kind,
        )
    if truth.missing:
        return Parity(
            NOT_CHECKED,
            checked,
            truth.source,
            reason=f"{len(truth.missing)} probe texts have no golden ids (first: {truth.missing[0]!r}); "
            + (truth.missing_reason or "run with --tokcompat-record"),
        )
    return Parity(MATCH, checked, truth.source)
