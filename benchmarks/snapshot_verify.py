"""The cost of verifying an assembled snapshot on every use, against the judgement it protects.

Per bundled snapshot, in one process with a warm cache: the median time of
``snapshots.assemble()`` on an entry that verifies (sha256 of every file, the
packaged ones against their pins), of the old check it replaces (the completion
mark exists), and of ``judge()`` on the same folder (the ladder's loads and parity
encodes). Prints the verification cost as a share of the judgement.

Run:  python benchmarks/snapshot_verify.py [--reps 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import BUNDLED_MATRIX


def median_seconds(action: Callable[[], object], reps: int) -> float:
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", default=None, help="write the figures to this file")
    args = parser.parse_args()
    os.environ.setdefault("TOKCOMPAT_CACHE", tempfile.mkdtemp(prefix="tokcompat-bench-snapshots-"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    import transformers

    from pytest_tokcompat.judge.ladder import judge
    from pytest_tokcompat.judge.subject import Subject
    from pytest_tokcompat.matrix.loader import load_matrix
    from pytest_tokcompat.request import Request
    from pytest_tokcompat.sources.resolve import resolve
    from pytest_tokcompat.sources.snapshots import assemble

    transformers.logging.set_verbosity_error()
    figures = {}
    print(
        f"{'case':<20} {'MB':>5} {'verify ms':>10} {'mark-only ms':>13} {'judge ms':>9} {'verify/judge':>13}"
    )
    for case in load_matrix(BUNDLED_MATRIX).cases:
        assert case.snapshot is not None
        checkpoint = resolve(case)  # assembles once (untimed)
        entry = checkpoint.folder
        size = sum(p.stat().st_size for p in entry.iterdir()) / 1e6
        verify = median_seconds(lambda s=case.snapshot: assemble(s), args.reps)
        mark = median_seconds(lambda e=entry: (e / ".tokcompat-complete").is_file(), args.reps)
        subject = Subject.of(checkpoint, Request(case))
        judged = median_seconds(
            lambda s=subject: judge(s),
            max(1, args.reps // 2),
        )
        figures[case.id] = {"mb": size, "verify_s": verify, "mark_s": mark, "judge_s": judged}
        print(
            f"{case.id:<20} {size:>5.1f} {verify * 1e3:>10.1f} {mark * 1e3:>13.3f} {judged * 1e3:>9.0f} "
            f"{verify / judged:>12.1%}"
        )
    total_verify = sum(f["verify_s"] for f in figures.values())
    total_judge = sum(f["judge_s"] for f in figures.values())
    print(
        f"all cases: verify {total_verify * 1e3:.0f} ms, judge {total_judge * 1e3:.0f} ms: {total_verify / total_judge:.1%}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
