"""What every golden-id recorder shares: the judge's own probe texts for a case, and the golden file layout.

Golden ids are the ground truth of a checkpoint that has no tokenizer.json the judge can trust, so they
must come from an independent implementation of the checkpoint's own format (sentencepiece, tiktoken,
mistral-common), never from transformers. The texts are exactly those the judge will ask for: the same
``probe_texts()`` over the same special tokens, read from the assembled snapshot. When the probe corpus
changes, re-run every ``record_*_golden.py`` script (``python matrix/tools/record_all_golden.py``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pytest_tokcompat.judge.parity import reference_tokenizer  # noqa: E402
from pytest_tokcompat.judge.probes import probe_texts  # noqa: E402
from pytest_tokcompat.judge.static import special_tokens  # noqa: E402
from pytest_tokcompat.matrix.loader import Case, load_matrix  # noqa: E402
from pytest_tokcompat.sources.snapshots import SnapshotError, materialize, packaged_file  # noqa: E402

MATRIX = ROOT / "matrix" / "models.yaml"
GOLDEN_DIR = ROOT / "matrix" / "golden"


@dataclass(frozen=True)
class Subject:
    """One bundled case as the judge sees it: its assembled folder and the texts it will probe."""

    case: Case
    folder: Path
    texts: list[str]

    @property
    def snapshot(self) -> Path:
        assert self.case.snapshot is not None
        return Path(self.case.snapshot)


def subject(case_id: str) -> Subject:
    """The case's assembled snapshot and the judge's probe texts for it (built-ins, its specials, its texts)."""
    case = load_matrix(MATRIX).by_id(case_id)
    if case.snapshot is None:
        raise SystemExit(f"case {case_id!r} has no bundled snapshot")
    try:
        folder = materialize(case.snapshot)
    except SnapshotError as error:
        raise SystemExit(str(error)) from None
    texts = probe_texts(case.texts, special_tokens(folder, reference_tokenizer(folder)))
    return Subject(case, folder, texts)


def pinned_file(snapshot: Path, name: str) -> tuple[Path, dict[str, Any]]:
    """A file the snapshot's manifest pins, located in its installed package and hash-checked."""
    manifest = snapshot / "tokcompat-sources.json"
    spec = json.loads(manifest.read_text(encoding="utf-8"))["files"][name]
    try:
        return packaged_file(name, spec, manifest), spec
    except SnapshotError as error:
        raise SystemExit(str(error)) from None


def write_golden(
    case_id: str,
    implementation: str,
    version: str,
    source: str,
    ids: dict[str, list[int]],
    decoded: dict[str, str],
) -> Path:
    """Write ``golden/<case>.json``: the ids and decoded texts, naming the implementation and its version."""
    path = GOLDEN_DIR / f"{case_id}.json"
    document = {
        "case": case_id,
        "implementation": {"name": implementation, "version": version},
        "source": source,
        "ids": ids,
        "decoded": decoded,
    }
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    temporary.replace(path)
    print(f"wrote {len(ids)} texts to {path}")
    return path
