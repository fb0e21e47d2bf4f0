"""Record golden ids for the llama-3.1-8b-instruct case with tiktoken, the implementation of Meta's own format.

The snapshot's tokenizer.json is derived by this project from Meta's tiktoken ranks, so the judge's
reference (that tokenizer.json read by ``tokenizers``) must itself be checked against something else:
these ids, from tiktoken over the same pinned ranks (llama-models' ``llama3/tokenizer.model``, hash-checked)
with Meta's split pattern (``llama_models.llama3.tokenizer.Tokenizer.pat_str``) and the snapshot's 256
special tokens (Llama 3.1's names, from tokenizer_config.json). tests/project/test_bundled_checkpoints.py asserts
that the derived tokenizer.json gives exactly these ids. Re-run with
``python matrix/tools/record_llama3_golden.py`` after the probe corpus changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tiktoken
from llama_models.llama3.tokenizer import Tokenizer as MetaTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))

from golden_common import pinned_file, subject, write_golden

from pytest_tokcompat.judge.static import read_json_object
from pytest_tokcompat.sources.tiktoken_bpe import load_ranks

CASE = "llama-3.1-8b-instruct"
LLAMA3_PAT_STR = MetaTokenizer.pat_str


def encoding(ranks_file: Path, tokenizer_config: dict) -> tiktoken.Encoding:
    """tiktoken over Meta's ranks with Meta's pattern and the checkpoint's special tokens."""
    decoder = tokenizer_config["added_tokens_decoder"]
    specials = {decoder[key]["content"]: int(key) for key in sorted(decoder, key=int)}
    return tiktoken.Encoding(
        CASE, pat_str=LLAMA3_PAT_STR, mergeable_ranks=load_ranks(ranks_file), special_tokens=specials
    )


def main() -> None:
    target = subject(CASE)
    ranks_file, spec = pinned_file(target.snapshot, "original_tokenizer.model")
    truth = encoding(ranks_file, read_json_object(target.folder / "tokenizer_config.json"))
    ids = {text: truth.encode(text, allowed_special="all") for text in target.texts}
    decoded = {text: truth.decode(ids[text]) for text in target.texts}
    source = (
        f"tiktoken {tiktoken.__version__} Encoding over Meta's ranks ({spec['package']} {spec['version']}, "
        f"{spec['path']}, sha256 {spec['sha256']}) with pat_str {LLAMA3_PAT_STR} (llama_models' "
        "Tokenizer.pat_str) and the snapshot's added_tokens_decoder as special tokens; "
        "encode(text, allowed_special='all'), decode(ids)"
    )
    implementation = {
        "name": "tiktoken",
        "version": tiktoken.__version__,
        "file": "original_tokenizer.model",
        "sha256": spec["sha256"],
        "method": "this script (matrix/tools/record_llama3_golden.py)",
    }
    write_golden(target, implementation, source, ids, decoded)


if __name__ == "__main__":
    main()
