"""The baseline of the plugin-overhead target: a plain Python loop doing the ladder's loads and encodes.

For every case of a matrix (default: the bundled one) it does what
``pytest_tokcompat.judge.ladder.judge`` does for the case's verdict remedy, and nothing
else: materialize the snapshot, parse tokenizer.json once with
``tokenizers.Tokenizer.from_file`` for the ground truth (golden ids where there is
none), build the probe texts with the checkpoint's special tokens and the probes
derived from its files (``probes.derive_probes``), compute the ground truth of every
contract dimension once (``parity.ground_truth``), load with
``AutoTokenizer.from_pretrained`` under the remedy (``trust_remote_code`` for
auto_map; the registry alias and its tokenizer class for alias), then check every
dimension with ``parity.check_parity``, as the ladder does.
The verdict remedy is the case's expected outcome under the installed
transformers (for ``broken``: every remedy the ladder would try). No pytest, no
isolation, no static view, no reports.

Run:  python benchmarks/baseline_loop.py [--matrix PATH] [--quiet]
Exit status 0 when every case's ids match, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REMEDIES = ("native", "auto_map", "alias")


@dataclass
class LoopResult:
    case_id: str
    remedies: list[str]
    expected: str
    match: bool
    texts: int
    seconds: float


def _remedies_for(expected: str, trust_remote_code: bool, has_alias: bool) -> list[str]:
    if expected in REMEDIES:
        return [expected]
    # broken: the ladder tries every remedy that applies and none works
    tried = ["native"]
    if trust_remote_code:
        tried.append("auto_map")
    if has_alias:
        tried.append("alias")
    return tried


def _load(folder: Path, remedy: str, model_type: str | None) -> Any:
    from transformers import AutoTokenizer

    if remedy == "alias":
        import transformers

        from pytest_tokcompat.judge.remedies import applied_alias
        from pytest_tokcompat.matrix.aliases import REGISTRY

        alias = REGISTRY[model_type or ""]
        with applied_alias(alias):
            if alias.tokenizer_class:
                return getattr(transformers, alias.tokenizer_class).from_pretrained(str(folder))
            return AutoTokenizer.from_pretrained(str(folder))
    return AutoTokenizer.from_pretrained(str(folder), trust_remote_code=remedy == "auto_map")


def run_baseline(
    matrix: Path | None = None, on_case: Callable[[str], None] | None = None
) -> list[LoopResult]:
    """Judge every case of ``matrix`` the plain way; ``on_case(id)`` is called before each case."""
    import transformers
    from tokenizers import Tokenizer

    from pytest_tokcompat.judge import parity
    from pytest_tokcompat.judge.probes import derive_probes, probe_texts
    from pytest_tokcompat.judge.static import special_tokens
    from pytest_tokcompat.matrix.loader import load_matrix
    from pytest_tokcompat.sources.snapshots import materialize

    if matrix is None:
        matrix = Path(__file__).resolve().parent.parent / "matrix" / "models.yaml"
    version = str(transformers.__version__)
    results: list[LoopResult] = []
    for case in load_matrix(matrix).cases:
        if on_case is not None:
            on_case(case.id)
        started = time.perf_counter()
        assert case.snapshot is not None, "the baseline covers snapshot cases only"
        folder = materialize(case.snapshot)
        # ground truth, once per case
        reference = (
            Tokenizer.from_file(str(folder / "tokenizer.json"))
            if (folder / "tokenizer.json").is_file()
            else None
        )
        texts = probe_texts(case.texts, special_tokens(folder, reference), derive_probes(folder, reference))
        truth = parity.ground_truth(folder, texts, case.golden_path, reference)
        assert truth is not None, f"{case.id}: no ground truth"
        truth.acknowledged = case.acknowledged_for(version)
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        model_type = config.get("model_type")
        from pytest_tokcompat.matrix.aliases import REGISTRY

        expected_outcome = case.expected_for(version)
        remedies = _remedies_for(expected_outcome, case.trust_remote_code, model_type in REGISTRY)
        match = False
        for remedy in remedies:
            try:
                tokenizer = _load(folder, remedy, model_type)
            except Exception:  # a broken case: its load failing is its result
                continue
            match = bool(truth.ids) and parity.check_parity(tokenizer, truth, texts).ok
            if match:
                break
        results.append(
            LoopResult(case.id, remedies, expected_outcome, match, len(texts), time.perf_counter() - started)
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", type=Path, default=None)
    parser.add_argument("--quiet", action="store_true", help="print only the total")
    parser.add_argument(
        "--count-parses", metavar="FILE", default=None, help="count tokenizer.json parses per case to FILE"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    on_case: Callable[[str], None] | None = None
    if args.count_parses:
        import _parsecount

        _parsecount.install()
        on_case = _parsecount.set_label
    results = run_baseline(args.matrix, on_case)
    if args.count_parses:  # parity.ground_truth, called once per case, counts itself
        _parsecount.dump(args.count_parses)
    total = time.perf_counter() - started
    if not args.quiet:
        for r in results:
            print(f"{r.case_id:<22} {'+'.join(r.remedies):<10} {'match' if r.match else 'MISMATCH':<9} "
                  f"{r.texts:>3} texts {r.seconds:6.2f}s")  # fmt: skip
    print(f"baseline loop: {len(results)} cases in {total:.2f}s (in process, imports included)")
    # a broken case is right when no remedy matches
    return 0 if all(r.match == (r.expected != "broken") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
