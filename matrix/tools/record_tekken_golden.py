"""Record golden ids for the bundled tekken checkpoints with mistral-common, Mistral's own implementation.

The checkpoint has only ``tekken.json`` (no tokenizer.json), so its ground truth comes from mistral-common's
``Tekkenizer`` over the pinned file, never from transformers: ``encode(text, bos=False, eos=False)`` (special
tokens written in the text are plain text to tekken, as to Mistral's servers) and ``decode(ids)``. Re-run with
``python matrix/tools/record_tekken_golden.py`` after the probe corpus changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import mistral_common
from mistral_common.tokens.tokenizers.tekken import Tekkenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golden_common import MATRIX, VocabularyView, pinned_file, subject, sweep_probes, write_golden

from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.sources.snapshots import materialize

CASES = ("mistral-nemo-instruct-2407",)


def record(case_id: str) -> None:
    snapshot = load_matrix(MATRIX).by_id(case_id).snapshot
    assert snapshot is not None
    folder = materialize(snapshot)
    tekken_file, spec = pinned_file(Path(snapshot), "tekken.json")
    tekkenizer = Tekkenizer.from_file(str(tekken_file))
    size = tekkenizer.n_words
    pieces = {tekkenizer.id_to_piece(i): i for i in range(tekkenizer.num_special_tokens, size)}
    view = VocabularyView(size, tekkenizer.decode, pieces)
    target = subject(case_id, sweep_probes(folder, view))
    ids = {text: tekkenizer.encode(text, bos=False, eos=False) for text in target.texts}
    decoded = {text: tekkenizer.decode(ids[text]) for text in target.texts}
    version = mistral_common.__version__
    source = (
        f"mistral-common {version} Tekkenizer over tekken.json ({spec['package']} {spec['version']}, "
        f"{spec['path']}, sha256 {spec['sha256']}; {tekkenizer.num_special_tokens} special ids first, "
        f"{tekkenizer.n_words} ids); encode(text, bos=False, eos=False), decode(ids)"
    )
    implementation = {
        "name": "mistral-common",
        "version": version,
        "file": "tekken.json",
        "sha256": spec["sha256"],
        "method": "this script (matrix/tools/record_tekken_golden.py): Tekkenizer.encode(bos=False, eos=False)",
    }
    write_golden(target, implementation, source, ids, decoded)


def main() -> None:
    for case_id in CASES:
        record(case_id)


if __name__ == "__main__":
    main()
