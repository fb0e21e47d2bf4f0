"""What every golden-id recorder shares: the judge's own probe texts for a case, and the golden file layout.

Golden ids are the ground truth of a checkpoint that has no tokenizer.json the judge can trust, so they
must come from an independent implementation of the checkpoint's own format (sentencepiece, tiktoken,
mistral-common), never from transformers. The texts are exactly those the judge asks for: the built-in
corpus, the first special tokens, the entry's texts and the probes derived from the checkpoint's files
(``derive_probes``), read from the assembled snapshot as the judge reads it. For a checkpoint without
tokenizer.json the judge cannot sweep the vocabulary itself, so a recorder may add the vocabulary and
script probes its own implementation draws (``sweep_probes``); they are written under ``kinds`` and the judge
probes them on every later run (``parity.golden_probes``). When the probe corpus or its derivation
changes, re-run every recorder (``python matrix/tools/record_all_golden.py``).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pytest_tokcompat.errors import TokcompatError  # noqa: E402
from pytest_tokcompat.judge import probes as probe_module  # noqa: E402
from pytest_tokcompat.judge.parity import reference_tokenizer  # noqa: E402
from pytest_tokcompat.judge.parity import write_golden as write_golden_file  # noqa: E402
from pytest_tokcompat.judge.probes import Probe, ProbeTexts, derive_probes, probe_texts  # noqa: E402
from pytest_tokcompat.judge.static import special_tokens  # noqa: E402
from pytest_tokcompat.matrix.loader import Case, load_matrix  # noqa: E402
from pytest_tokcompat.sources.snapshots import materialize, packaged_file  # noqa: E402

MATRIX = ROOT / "matrix" / "models.yaml"
GOLDEN_DIR = ROOT / "matrix" / "golden"


@dataclass(frozen=True)
class Subject:
    """One bundled case as the judge sees it: its assembled folder and the texts it will probe."""

    case: Case
    folder: Path
    texts: ProbeTexts
    has_reference: bool
    """Whether the checkpoint has a tokenizer.json (then the judge reads it live and these ids cross-check it)."""

    @property
    def snapshot(self) -> Path:
        assert self.case.snapshot is not None
        return Path(self.case.snapshot)


def subject(case_id: str, sweep: Iterable[Probe] = ()) -> Subject:
    """The case's assembled snapshot and the judge's probe texts for it, derived probes included.

    ``sweep``: vocabulary and script probes drawn by the recorder's own implementation, for a
    checkpoint without tokenizer.json (the judge probes them from the golden file's ``kinds``).
    """
    case = load_matrix(MATRIX).by_id(case_id)
    if case.snapshot is None:
        raise SystemExit(f"case {case_id!r} has no bundled snapshot")
    try:
        folder = materialize(case.snapshot)
        reference = reference_tokenizer(folder)
    except TokcompatError as error:
        raise SystemExit(str(error)) from None
    derived = derive_probes(folder, reference) + list(sweep)
    texts = probe_texts(case.texts, special_tokens(folder, reference), derived)
    return Subject(case, folder, texts, reference is not None)


class VocabularyView:
    """An independent implementation seen through the part of ``tokenizers.Tokenizer`` the probe sweep reads.

    The judge draws its vocabulary and script probes from tokenizer.json; a checkpoint without one
    is swept the same way (the same strata, the same seed, the same budget) through the
    implementation that records its golden ids, so no text comes from transformers.
    """

    decoder = None

    def __init__(self, size: int, decode: Callable[[list[int]], str], pieces: dict[str, int]) -> None:
        self.size, self._decode, self.pieces = size, decode, pieces

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        return self.size

    def get_vocab(self, with_added_tokens: bool = True) -> dict[str, int]:
        return dict(self.pieces)

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self._decode(ids)


def sweep_probes(folder: Path, view: VocabularyView) -> list[Probe]:
    """The vocabulary and script probes of ``view``, seeded as the judge seeds its own (the files' sha256)."""
    rng = random.Random(probe_module.checkpoint_digest(folder))
    found = probe_module._script_probes(view, rng, None)
    found += probe_module._vocab_probes(view, rng)
    return found


def pinned_file(snapshot: Path, name: str) -> tuple[Path, dict[str, Any]]:
    """A file the snapshot's manifest pins, located in its installed package and hash-checked."""
    manifest = snapshot / "tokcompat-sources.json"
    spec = json.loads(manifest.read_text(encoding="utf-8"))["files"][name]
    try:
        return packaged_file(name, spec, manifest), spec
    except TokcompatError as error:
        raise SystemExit(str(error)) from None


def write_golden(
    target: Subject,
    implementation: dict[str, str],
    source: str,
    ids: dict[str, list[int]],
    decoded: dict[str, str],
) -> Path:
    """Write ``golden/<case>.json`` as the judge reads it: ids, decoded texts, the implementation and its
    version, and the kind of every derived probe (``kinds``), so that the judge probes them again."""
    missing = [text for text in target.texts if text not in ids]
    if missing:
        raise SystemExit(f"{target.case.id}: no ids for {len(missing)} probe texts (first: {missing[0]!r})")
    path = GOLDEN_DIR / f"{target.case.id}.json"
    kinds = {text: target.texts.kinds[text] for text in target.texts if text in target.texts.derived}
    write_golden_file(path, target.case.id, ids, decoded, source, implementation, {"kinds": kinds})
    counts: dict[str, int] = {}
    for text in target.texts:
        kind = target.texts.kinds[text]
        counts[kind] = counts.get(kind, 0) + 1
    print(f"wrote {len(ids)} texts to {path} ({', '.join(f'{n} {k}' for k, n in sorted(counts.items()))})")
    return path
