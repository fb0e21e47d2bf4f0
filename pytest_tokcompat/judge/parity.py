"""Parity: are the ids right, and which parts of the rest of the contract a client relies on drift?

The verdict's dimension is ids on ordinary text: the ids equal the ground truth on every probe
without special or added token strings in it. The ground truth is what the checkpoint
declares: its tokenizer.json read by the ``tokenizers`` library (what serving stacks use) with
the added tokens of tokenizer_config.json's ``added_tokens_decoder`` applied, as transformers
has always applied them; where a checkpoint has no tokenizer.json (tiktoken, sentencepiece) it
is golden ids recorded beside the matrix. Texts without a ground truth are reported as not
checked, never as matching. Everything else is a finding, graded by its consequence
(``model.CONSEQUENCES``): ids of text with special-token strings, the raw decode round-trip,
and the dimensions ``contract_checks`` compares with what the checkpoint's files declare (the
default call, special tokens, decode, chat template). A finding never makes a tokenizer with
right ids "broken"; a matrix entry that does not acknowledge it still fails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat.judge.contract_checks import DimensionResult, check_contract
from pytest_tokcompat.judge.contract_truth import ContractTruth, contract_truth
from pytest_tokcompat.judge.declared import read_declared
from pytest_tokcompat.judge.probes import Probe, ProbeKind
from pytest_tokcompat.model import CONSEQUENCES, Dimension, DimensionStatus

MATCH, MISMATCH, NOT_CHECKED = "match", "mismatch", "not-checked"
FINDING_ORDER = (
    Dimension.SPECIAL_TEXT,
    Dimension.DEFAULT_CALL,
    Dimension.SPECIAL_TOKENS,
    Dimension.CHAT_TEMPLATE,
    Dimension.DECODE,
)
"""Findings by the weight of their consequence: token counts and model input first, displayed text last."""


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
    special_texts: list[str] = field(default_factory=list)
    """Probe texts that contain a special or added token's string: their ids are a finding, not the verdict."""

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
    """The dimension of the first difference (ids on ordinary text; for a match, the weightiest finding)."""
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

    def findings(self, *, acknowledged: bool = False) -> list[str]:
        """The dimensions that drift and are not acknowledged (with ``acknowledged``, those too: what a
        client gets either way), weightiest consequence first."""
        counted = {"drift", "acknowledged"} if acknowledged else {"drift"}
        drifting = {name for name, result in self.dimensions.items() if result.get("status") in counted}
        drifting.discard(str(Dimension.IDS))
        ordered = [str(name) for name in FINDING_ORDER if str(name) in drifting]
        return ordered + sorted(drifting - set(ordered))

    def not_checked(self) -> list[str]:
        """The contract dimensions the judge could not check (a resource limit, a file the checkpoint lacks):
        said beside a match, never counted as matching."""
        return [name for name, result in self.dimensions.items() if result.get("status") == NOT_CHECKED]

    def describe(self) -> str:
        kind = (
            f" ({self.kind} probe{', ' + self.probe_source if self.probe_source else ''})"
            if self.kind
            else ""
        )
        if self.status == MATCH:
            text = f"ids match the {self.source} on {self.checked} ordinary texts"
            if self.probe_counts:
                text += " (" + ", ".join(f"{n} {k}" for k, n in self.probe_counts.items()) + ")"
            acknowledged = self.acknowledged()
            if acknowledged:
                text += f"; acknowledged drift: {', '.join(acknowledged)}"
            for name in self.findings():
                text += "\n    " + describe_finding(name, self.dimensions.get(name, {}))
            for name in self.not_checked():
                reason = self.dimensions[name].get("reason") or "no reason recorded"
                text += f"\n    not checked: {name}: {reason}"
            return text
        if self.status == MISMATCH:
            return (
                f"ids differ from the {self.source} on {self.text!r}{kind}:\n"
                f"    expected {self.expected}\n    actual   {self.actual}"
            )
        return f"not checked: {self.reason}"


def finding_difference(name: str, result: dict[str, Any]) -> str:
    """A finding's first difference: the call, the text, what was expected and what came."""
    where = f" on {result['text']!r}" if isinstance(result.get("text"), str) else ""
    reason = f"; {result['reason']}" if result.get("reason") else ""
    return (
        f"{result.get('call') or name}{where}: expected {result.get('expected')!r}, "
        f"actual {result.get('actual')!r}{reason}"
    )


def describe_finding(name: str, result: dict[str, Any]) -> str:
    """One finding as a client maintainer reads it: what it affects, then the first difference."""
    consequence = CONSEQUENCES.get(name, "a part of the contract drifts")
    return f"finding {name}: {consequence}. {finding_difference(name, result)}"


def reference_tokenizer(folder: Path) -> Any | None:
    """What the checkpoint declares, read by ``tokenizers``: its tokenizer.json with the added tokens of
    tokenizer_config.json applied; once per run where the run keeps a cache."""
    path = folder / "tokenizer.json"
    if not path.is_file():
        return None
    from pytest_tokcompat.judge.active import active_cache

    cache = active_cache()
    if cache is None:
        return _parse_reference(folder)
    key: tuple[Any, ...] = ()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        try:
            stat = (folder / name).stat()
        except OSError:
            key += (name, None)
            continue
        key += (str((folder / name).resolve()), stat.st_size, stat.st_mtime_ns)
    return cache.reference(key, lambda: _parse_reference(folder))


def _parse_reference(folder: Path) -> Any:
    from tokenizers import Tokenizer

    from pytest_tokcompat.errors import CheckpointError

    path = folder / "tokenizer.json"
    try:
        reference = Tokenizer.from_file(str(path))
    except Exception as error:  # the tokenizers library raises a bare Exception for bad files
        raise CheckpointError(
            f"{path} is not a valid tokenizer.json ({str(error)[:200]}); re-download it"
        ) from None
    add_declared_tokens(reference, folder)
    return reference


def declared_added_tokens(folder: Path) -> list[tuple[int, dict[str, Any]]]:
    """tokenizer_config.json's ``added_tokens_decoder``, by id: (id, its entry), entries with a content only."""
    from pytest_tokcompat.judge.probes import read_json_dict

    decoder = read_json_dict(folder / "tokenizer_config.json").get("added_tokens_decoder")
    found: list[tuple[int, dict[str, Any]]] = []
    for key, value in decoder.items() if isinstance(decoder, dict) else []:
        if str(key).isdigit() and isinstance(value, dict) and isinstance(value.get("content"), str):
            found.append((int(key), value))
    return sorted(found, key=lambda item: item[0])


def add_declared_tokens(reference: Any, folder: Path) -> list[str]:
    """Add the declared added tokens tokenizer.json lacks, with their flags, in id order; the contents added.

    transformers applies ``added_tokens_decoder`` on every release (Qwen3.5 declares seven audio tokens,
    248070-248076, that its tokenizer.json does not list); the reference must, or right ids look wrong.
    """
    from tokenizers import AddedToken

    known = {int(i): str(t.content) for i, t in reference.get_added_tokens_decoder().items()}
    added: list[str] = []
    for token_id, entry in declared_added_tokens(folder):
        content = str(entry["content"])
        if known.get(token_id) == content or reference.token_to_id(content) is not None:
            continue
        token = AddedToken(
            content,
            single_word=bool(entry.get("single_word", False)),
            lstrip=bool(entry.get("lstrip", False)),
            rstrip=bool(entry.get("rstrip", False)),
            normalized=bool(entry.get("normalized", not entry.get("special", False))),
            special=bool(entry.get("special", False)),
        )
        if token.special:
            reference.add_special_tokens([token])
        else:
            reference.add_tokens([token])
        added.append(content)
    return added


def special_strings(reference: Any, folder: Path) -> list[str]:
    """The strings whose presence makes a text special: special tokens, and added tokens that are markup
    (not plain words or whitespace), from the reference and tokenizer_config.json, longest first."""
    found: set[str] = set()
    entries: list[tuple[str, bool]] = [
        (str(entry["content"]), bool(entry.get("special"))) for _, entry in declared_added_tokens(folder)
    ]
    if reference is not None:
        entries += [(str(t.content), bool(t.special)) for t in reference.get_added_tokens_decoder().values()]
    for content, special in entries:
        markup = any(not (ch.isalnum() or ch.isspace()) for ch in content)
        if content.strip() and (special or markup) and len(content) > 1:
            found.add(content)
    return sorted(found, key=len, reverse=True)


def _special_texts(texts: list[str], kinds: dict[str, str], strings: list[str]) -> list[str]:
    return [
        text
        for text in texts
        if kinds.get(text) == str(ProbeKind.SPECIAL) or any(string in text for string in strings)
    ]


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
    truth.special_texts = _special_texts(list(texts), kinds, special_strings(reference, folder))
    if contract:
        truth.contract = contract_truth(
            read_declared(folder, reference),
            list(texts),
            kinds,
            truth.ids,
            truth.decoded,
            reference,
            special_texts=truth.special_texts,
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
        special_texts=_special_texts(list(texts), kinds, special_strings(None, folder)),
    )
    if contract:
        truth.contract = contract_truth(read_declared(folder), list(texts), kinds, truth.ids, truth.decoded)
    return truth


def _ids_dimension(
    tokenizer: Any, truth: Truth, texts: list[str]
) -> tuple[DimensionResult, DimensionResult, DimensionResult, Parity | None, dict[str, int]]:
    """ids over every probe: ordinary text (the verdict's dimension), text with special-token strings
    (a finding), and the raw decode round-trip (a finding); the first ordinary difference as the Parity."""
    counts: dict[str, int] = {}
    special = set(truth.special_texts)
    results = {
        "ids": DimensionResult(str(DimensionStatus.MATCH)),
        "special_text": DimensionResult(str(DimensionStatus.MATCH)),
        "decode": DimensionResult(str(DimensionStatus.MATCH)),
    }
    first: Parity | None = None
    for text in texts:
        if text not in truth.ids:
            continue
        kind = truth.kinds.get(text, str(ProbeKind.BUILTIN))
        expected = truth.ids[text]
        actual = list(tokenizer.encode(text, add_special_tokens=False))
        name = "special_text" if text in special else "ids"
        result = results[name]
        if actual != expected:
            result.drifts[kind] = result.drifts.get(kind, 0) + 1
            if result.status == DimensionStatus.MATCH:
                result.status, result.kind, result.text = str(DimensionStatus.DRIFT), kind, text
                result.call, result.expected, result.actual = (
                    "encode(text, add_special_tokens=False)",
                    expected,
                    actual,
                )
            if name == "ids" and first is None:
                first = Parity(MISMATCH, result.checked, truth.source, text, expected, actual, kind=kind)
        elif result.status == DimensionStatus.MATCH:
            result.checked += 1
        decoded = tokenizer.decode(expected, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        raw = results["decode"]
        if decoded != truth.decoded[text] and raw.status == DimensionStatus.MATCH:
            raw.status, raw.kind, raw.text = str(DimensionStatus.DRIFT), kind, text
            raw.call = "decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)"
            raw.expected, raw.actual = truth.decoded[text], decoded
        elif raw.status == DimensionStatus.MATCH:
            raw.checked += 1
        counts[kind] = counts.get(kind, 0) + 1
    if not any(text in truth.ids for text in truth.special_texts):
        results["special_text"] = DimensionResult(
            str(DimensionStatus.ABSENT), reason="no probe text holds a special or added token's string"
        )
    return results["ids"], results["special_text"], results["decode"], first, counts


def check_parity(tokenizer: Any, truth: Truth | None, texts: list[str]) -> Parity:
    """Every dimension of the contract of one loaded tokenizer: a pure function returning plain data."""
    if truth is None:
        return Parity(NOT_CHECKED, reason="no tokenizer.json and no golden ids: run with --tokcompat-record")
    ids_result, special_result, raw_decode, first, counts = _ids_dimension(tokenizer, truth, texts)
    dimensions: dict[str, DimensionResult] = {
        str(Dimension.IDS): ids_result,
        str(Dimension.SPECIAL_TEXT): special_result,
    }
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
    parity = _verdict(truth, ids_result, first)
    parity.probe_source = truth.sources.get(parity.text) if parity.text is not None else None
    parity.dimensions = {name: result.to_json() for name, result in dimensions.items()}
    parity.probe_counts = counts
    parity.unchecked = dict(truth.unchecked)
    parity.info = info
    if parity.status == MATCH:
        findings = parity.findings()
        parity.dimension = findings[0] if findings else None
    return parity


def _verdict(truth: Truth, ids_result: DimensionResult, first: Parity | None) -> Parity:
    """Ids on ordinary text decide; every other dimension is a finding beside the verdict."""
    checked = ids_result.checked
    if first is not None:
        first.dimension = str(Dimension.IDS)
        return first
    if truth.missing:
        return Parity(
            NOT_CHECKED,
            checked,
            truth.source,
            reason=f"{len(truth.missing)} probe texts have no golden ids (first: {truth.missing[0]!r}); "
            + (truth.missing_reason or "run with --tokcompat-record"),
        )
    return Parity(MATCH, checked, truth.source)
