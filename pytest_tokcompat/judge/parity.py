"""Parity: do the loaded tokenizer's ids equal the ground truth, and does decoding round-trip?

The ground truth is the checkpoint's own tokenizer.json read by the ``tokenizers``
library, which is what serving stacks use; where a checkpoint has none (tiktoken,
sentencepiece) it is golden ids recorded beside the matrix. Texts without a
ground truth are reported as not checked, never as matching.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MATCH, MISMATCH, DECODE_MISMATCH, NOT_CHECKED = "match", "mismatch", "decode-mismatch", "not-checked"


@dataclass
class Truth:
    source: str
    ids: dict[str, list[int]]
    decoded: dict[str, str]
    missing: list[str] = field(default_factory=list)
    missing_reason: str | None = None
    """Why the missing texts have no golden ids (default: they were never recorded)."""


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

    @property
    def ok(self) -> bool:
        return self.status == MATCH

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    def describe(self) -> str:
        if self.status == MATCH:
            return f"ids match the {self.source} on {self.checked} texts"
        if self.status == MISMATCH:
            return (
                f"ids differ from the {self.source} on {self.text!r}:\n"
                f"    expected {self.expected}\n    actual   {self.actual}"
            )
        if self.status == DECODE_MISMATCH:
            return (
                f"decoding {self.expected} does not round-trip for {self.text!r}:\n"
                f"    expected {self.expected_text!r}\n    actual   {self.actual_text!r}"
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

    from pytest_tokcompat.judge.static import CheckpointError

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
    folder: Path, texts: list[str], golden_path: Path | None, reference: Any = None
) -> Truth | None:
    """The expected ids for ``texts``, or None where the checkpoint has no ground truth at all."""
    if reference is None:
        reference = reference_tokenizer(folder)
    if reference is not None:
        ids = {text: reference.encode(text, add_special_tokens=False).ids for text in texts}
        decoded = {text: reference.decode(ids[text], skip_special_tokens=False) for text in texts}
        return Truth("tokenizer.json (tokenizers library)", ids, decoded)
    if golden_path is not None and golden_path.is_file():
        golden, decoded = read_golden(golden_path)
        present = {text: golden[text] for text in texts if text in golden}
        missing = [text for text in texts if text not in golden]
        return Truth(f"golden ids in {golden_path.name}", present, {t: decoded[t] for t in present}, missing)
    return None


def check_parity(tokenizer: Any, truth: Truth | None, texts: list[str]) -> Parity:
    if truth is None:
        return Parity(NOT_CHECKED, reason="no tokenizer.json and no golden ids: run with --tokcompat-record")
    checked = 0
    for text in texts:
        if text not in truth.ids:
            continue
        expected = truth.ids[text]
        actual = list(tokenizer.encode(text, add_special_tokens=False))
        if actual != expected:
            return Parity(MISMATCH, checked, truth.source, text, expected, actual)
        decoded = tokenizer.decode(expected, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        if decoded != truth.decoded[text]:
            return Parity(
                DECODE_MISMATCH, checked, truth.source, text, expected, None, truth.decoded[text], decoded
            )
        checked += 1
    if truth.missing:
        return Parity(
            NOT_CHECKED,
            checked,
            truth.source,
            reason=f"{len(truth.missing)} probe texts have no golden ids (first: {truth.missing[0]!r}); "
            + (truth.missing_reason or "run with --tokcompat-record"),
        )
    return Parity(MATCH, checked, truth.source)
