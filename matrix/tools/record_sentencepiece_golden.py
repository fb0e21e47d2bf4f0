"""Record golden ids for the bundled sentencepiece checkpoints with the sentencepiece library itself.

The checkpoint has a ``tokenizer.model`` and no tokenizer.json, so its ground truth comes from sentencepiece,
the implementation of its own format, never from transformers. sentencepiece knows nothing of the added
tokens that tokenizer_config.json declares, so the rule is written out here and in each golden file:

- ids: the text is split on the added tokens of ``added_tokens_decoder`` (longest first); each added token
  is its id, each other segment is ``encode()``d by sentencepiece on its own. That is the ``legacy: true``
  rule the checkpoint declares (each segment gets the dummy-prefix space), and it is refused for a
  checkpoint that declares ``legacy: false`` or added tokens with lstrip/rstrip/single_word/normalized.
- decoded: sentencepiece's detokenization of the pieces (``▁`` to a space, byte pieces to bytes, the
  dummy-prefix space removed at the start of the text only), with each added token rendered as its text.
  For every text without added tokens it is asserted equal to sentencepiece's own ``decode()``.

Besides the judge's own probes, the vocabulary is swept through sentencepiece (the judge's strata and seed,
``golden_common.sweep_probes``): those texts are written with their kinds and probed on every run.

Re-run with ``python matrix/tools/record_sentencepiece_golden.py`` after the probe corpus changes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import sentencepiece
from sentencepiece import SentencePieceProcessor

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golden_common import MATRIX, VocabularyView, pinned_file, subject, sweep_probes, write_golden

from pytest_tokcompat.judge.static import read_json_object
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.sources.snapshots import materialize

CASES = ("mistral-7b-v0.1",)
SPACE = "\u2581"
_BYTE_PIECE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


class SentencePieceTruth:
    """sentencepiece over one tokenizer.model, with the checkpoint's declared added tokens split out."""

    def __init__(self, model: Path, tokenizer_config: dict) -> None:
        self.processor = SentencePieceProcessor(model_file=str(model))
        if tokenizer_config.get("legacy") is False:
            raise SystemExit(f"{model}: the checkpoint declares legacy: false; this rule is the legacy one")
        self.added: dict[str, int] = {}
        for key, token in tokenizer_config.get("added_tokens_decoder", {}).items():
            flags = [flag for flag in ("lstrip", "rstrip", "single_word", "normalized") if token.get(flag)]
            if flags:
                raise SystemExit(
                    f"{model}: added token {token['content']!r} sets {flags}; extend the rule first"
                )
            self.added[token["content"]] = int(key)
        self.by_id = {token_id: content for content, token_id in self.added.items()}
        longest_first = sorted(self.added, key=len, reverse=True)
        self.splitter = (
            re.compile("(" + "|".join(map(re.escape, longest_first)) + ")") if longest_first else None
        )

    def encode(self, text: str) -> list[int]:
        segments = self.splitter.split(text) if self.splitter else [text]
        ids: list[int] = []
        for index, segment in enumerate(segments):
            if index % 2 == 1:
                ids.append(self.added[segment])
            elif segment:
                ids.extend(self.processor.encode(segment))
        return ids

    def decode(self, ids: list[int]) -> str:
        buffer = bytearray()
        for token_id in ids:
            if token_id in self.by_id:
                buffer += self.by_id[token_id].encode("utf-8")
                continue
            piece = self.processor.id_to_piece(token_id)
            byte = _BYTE_PIECE.match(piece) if self.processor.is_byte(token_id) else None
            buffer += bytes([int(byte.group(1), 16)]) if byte else piece.replace(SPACE, " ").encode("utf-8")
        text = buffer.decode("utf-8", errors="replace")
        return text[1:] if text.startswith(" ") else text


def record(case_id: str) -> None:
    snapshot = load_matrix(MATRIX).by_id(case_id).snapshot
    assert snapshot is not None
    folder = materialize(snapshot)
    model, spec = pinned_file(Path(snapshot), "tokenizer.model")
    truth = SentencePieceTruth(model, read_json_object(folder / "tokenizer_config.json"))
    processor = truth.processor
    pieces = {processor.id_to_piece(i): i for i in range(processor.get_piece_size())}
    view = VocabularyView(processor.get_piece_size(), processor.decode, pieces)
    target = subject(case_id, sweep_probes(folder, view))
    ids = {text: truth.encode(text) for text in target.texts}
    decoded = {text: truth.decode(ids[text]) for text in target.texts}
    for text in target.texts:
        if not any(token in text for token in truth.added):
            own = truth.processor.decode(ids[text])
            assert decoded[text] == own, (
                f"{text!r}: the rule decodes {decoded[text]!r}, sentencepiece {own!r}"
            )
    version = sentencepiece.__version__
    source = (
        f"sentencepiece {version} over tokenizer.model ({spec['package']} {spec['version']}, {spec['path']}, "
        f"sha256 {spec['sha256']}). ids: the text split on the added tokens of tokenizer_config.json's "
        "added_tokens_decoder, each added token its id, each other segment encode()d on its own (the legacy rule "
        "the checkpoint declares). decoded: the pieces detokenized as sentencepiece does (U+2581 to space, byte "
        "pieces to bytes, the dummy-prefix space removed at the start of the text only) with added tokens as "
        "their text; equal to sentencepiece's own decode() on every text without added tokens"
    )
    implementation = {
        "name": "sentencepiece",
        "version": version,
        "file": "tokenizer.model",
        "sha256": spec["sha256"],
        "method": "this script (matrix/tools/record_sentencepiece_golden.py): the legacy rule above",
    }
    write_golden(target, implementation, source, ids, decoded)


def main() -> None:
    for case_id in CASES:
        record(case_id)


if __name__ == "__main__":
    main()
