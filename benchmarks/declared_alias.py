"""What a client's own deepseek_v32 shim gives on the bundled DeepSeek-V3.2-Exp snapshot, under the installed
transformers: the config-only alias (as aiperf 0.13.0 and vLLM ship it: DeepseekV3Config under the new
model_type, nothing else) against the built-in alias (which also borrows DeepSeek-V3's tokenizer mapping and
loads tokenizer.json as it is). Ids against tokenizer.json read by the tokenizers library, over the probe
corpus, and token counts of three prompts against the true counts.

Not a speed benchmark: a measurement, run once per release in a throwaway environment, e.g.

    uv venv /tmp/tf554 && uv pip install --python /tmp/tf554/bin/python transformers==5.5.4 -e .
    /tmp/tf554/bin/python benchmarks/declared_alias.py

The figures are in README.md, "Your own aliases, and a watch on upstream".
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def prompts() -> dict[str, str]:
    """Benchmark-like prompts: English prose with Markdown, Python code, and the multilingual probe corpus."""
    from pytest_tokcompat.judge.probes import probe_texts

    return {
        "README.md (English, Markdown)": (ROOT / "README.md").read_text(encoding="utf-8"),
        "ladder.py (Python code)": (ROOT / "pytest_tokcompat" / "judge" / "ladder.py").read_text(
            encoding="utf-8"
        ),
        "probe corpus x20 (multilingual)": "\n".join(probe_texts() * 20),
    }


def measure(name: str, folder: Path, texts: list[str], reference: Any, alias: Any) -> str:
    from transformers import AutoTokenizer

    from pytest_tokcompat.judge.isolation import isolated_transformers
    from pytest_tokcompat.judge.loading import load_with

    with isolated_transformers():
        try:
            tokenizer = (
                load_with(folder, "alias", alias) if alias else AutoTokenizer.from_pretrained(str(folder))
            )
        except Exception as error:  # the measurement reports any failure to load
            return (
                f"{name}: does not apply or load: {type(error).__name__}: {str(error).splitlines()[0][:160]}"
            )
        wrong = sum(
            tokenizer.encode(t, add_special_tokens=False) != reference.encode(t, add_special_tokens=False).ids
            for t in texts
        )
        counts = []
        for label, prompt in prompts().items():
            got, truth = (
                len(tokenizer.encode(prompt, add_special_tokens=False)),
                len(reference.encode(prompt, add_special_tokens=False).ids),
            )
            counts.append(f"{label}: {got} vs {truth} ({(got - truth) / truth * 100:+.1f}%)")
    return f"{name}: {type(tokenizer).__name__}, {wrong} of {len(texts)} probe texts wrong; " + "; ".join(
        counts
    )


def main() -> int:
    import transformers
    from tokenizers import Tokenizer

    from pytest_tokcompat.judge.probes import probe_texts
    from pytest_tokcompat.judge.static import special_tokens
    from pytest_tokcompat.matrix.aliases import REGISTRY
    from pytest_tokcompat.matrix.discovery import bundled_matrix
    from pytest_tokcompat.matrix.loader import load_matrix
    from pytest_tokcompat.sources.snapshots import materialize

    transformers.logging.set_verbosity_error()
    case = load_matrix(bundled_matrix()).by_id("deepseek-v3.2-exp")
    assert case.snapshot is not None
    folder = materialize(case.snapshot)
    reference = Tokenizer.from_file(str(folder / "tokenizer.json"))
    texts = probe_texts((), special_tokens(folder, reference))
    built_in = REGISTRY["deepseek_v32"]
    config_only = replace(built_in, base_model_type=None, tokenizer_class=None, declared_in="a client's shim")
    print(f"transformers {transformers.__version__}")
    for name, alias in (
        ("plain AutoTokenizer", None),
        ("config-only shim", config_only),
        ("built-in alias", built_in),
    ):
        print("  " + measure(name, folder, texts, reference, alias))
    return 0


if __name__ == "__main__":
    sys.exit(main())
