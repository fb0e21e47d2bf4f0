"""The cost of derived probes and the contract dimensions, against today's judge, on the bundled matrix.

Both sides are the same ``judge()`` in the same process, case by case, interleaved A-B-B-A:

* today's judge: the fixed corpus (built-in texts, the first four special tokens, the entry's
  texts) and the ids dimension only (``encode(add_special_tokens=False)`` plus the raw decode
  round-trip) - derived probes switched off, no contract ground truth;
* the judge of issue 11: derived probes (specials, vocabulary sweep, scripts, digits,
  whitespace) and every contract dimension (default call, special tokens, decode, chat template).

Both sides run in this process (``TOKCOMPAT_ISOLATION=inprocess``): the patch that switches
the new probes off must reach the judge, and the CPU time must be this process's; the cost of
judging each attempt in a child process is measured apart (``benchmarks/isolation.py``).

Times are CPU seconds of this process (``time.process_time``, every thread included): on a
machine shared with other work they measure the judge's own cost where wall time would
measure the neighbours; wall-clock medians are printed alongside. Two figures: the bundled
matrix as one pytest run judges it (caches as in a run: a tokenizer
shared by two cases is parsed per case but its probes are derived once), and every case cold
(all caches cleared before each judgement: the worst case, a matrix of unrelated checkpoints).
Target: <= 1.3x for the matrix run. Also prints, per case, how many probes of each kind ran.

Run:  python benchmarks/probes.py [--reps 3] [--json OUT] [--no-wait]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from _common import median, verdict, wait_until_quiet, warm_snapshot_cache, write_json

TARGET = 1.3


@contextmanager
def todays_judge() -> Iterator[None]:
    """The ladder as it was: no derived probes, no contract ground truth (ids and raw decode only)."""
    from pytest_tokcompat.judge import parity, reading

    saved = (reading.derive_probes, reading.ground_truth, reading.golden_probes)
    reading.derive_probes = lambda folder, reference=None: []  # type: ignore[assignment]
    reading.ground_truth = partial(parity.ground_truth, contract=False)  # type: ignore[assignment]
    reading.golden_probes = lambda path: []  # type: ignore[assignment]
    try:
        yield
    finally:
        reading.derive_probes, reading.ground_truth, reading.golden_probes = saved


def clear_caches() -> None:
    from pytest_tokcompat.judge import parity, probes

    probes._DERIVED.clear()
    parity._REFERENCES.clear()


def cases() -> list[tuple[Any, Any]]:
    from pytest_tokcompat.matrix.discovery import bundled_matrix
    from pytest_tokcompat.matrix.loader import load_matrix
    from pytest_tokcompat.sources.resolve import resolve

    return [(case, resolve(case)) for case in load_matrix(bundled_matrix()).cases]


def judge_once(case: Any, checkpoint: Any, today: bool) -> tuple[float, float, Any]:
    from pytest_tokcompat.judge.ladder import judge
    from pytest_tokcompat.judge.loading import transformers_version
    from pytest_tokcompat.judge.subject import Subject
    from pytest_tokcompat.request import Request

    subject = Subject.of(checkpoint, Request(case), case.acknowledged_for(transformers_version()))

    def run() -> Any:
        return judge(subject)

    started, cpu = time.perf_counter(), time.process_time()
    if today:
        with todays_judge():
            judgement = run()
    else:
        judgement = run()
    return time.process_time() - cpu, time.perf_counter() - started, judgement


def measure(reps: int, cold: bool) -> dict[str, dict[str, list[float]]]:
    """CPU (and wall) seconds per case and side; ``cold`` clears every cache before each judgement."""
    matrix = cases()
    times: dict[str, dict[str, list[float]]] = {
        case.id: {"today": [], "issue11": [], "today_wall": [], "issue11_wall": []} for case, _ in matrix
    }
    for rep in range(reps):
        for today in (True, False) if rep % 2 == 0 else (False, True):
            side = "today" if today else "issue11"
            clear_caches()
            for case, checkpoint in matrix:
                if cold:
                    clear_caches()
                seconds, wall, _ = judge_once(case, checkpoint, today)
                times[case.id][side].append(seconds)
                times[case.id][f"{side}_wall"].append(wall)
        print(f"  rep {rep + 1} ({'cold' if cold else 'matrix run'}) done", flush=True)
    return times


def summarize(label: str, times: dict[str, dict[str, list[float]]]) -> float:
    print(f"\n{label}: median CPU seconds per case (wall-clock medians in brackets)")
    print(f"  {'case':<22} {'today':>8} {'issue 11':>9} {'ratio':>7}   {'wall today':>10} {'wall 11':>8}")
    total_today = total_new = wall_today = wall_new = 0.0
    for case_id, sides in times.items():
        today, new = median(sides["today"]), median(sides["issue11"])
        walls = median(sides["today_wall"]), median(sides["issue11_wall"])
        total_today, total_new = total_today + today, total_new + new
        wall_today, wall_new = wall_today + walls[0], wall_new + walls[1]
        print(
            f"  {case_id:<22} {today:8.3f} {new:9.3f} {new / today:6.2f}x   [{walls[0]:8.3f} {walls[1]:8.3f}]"
        )
    ratio = total_new / total_today
    print(
        f"  {'bundled matrix':<22} {total_today:8.3f} {total_new:9.3f} {ratio:6.2f}x   "
        f"[{wall_today:8.3f} {wall_new:8.3f}] wall ratio {wall_new / wall_today:.2f}x"
    )
    return ratio


def probe_counts() -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    clear_caches()
    for case, checkpoint in cases():
        _, _, judgement = judge_once(case, checkpoint, today=False)
        found[case.id] = dict(judgement.parity.probe_counts) | {
            f"unchecked {k}": v for k, v in judgement.parity.unchecked.items()
        }
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", default=None, help="write the figures to this JSON file")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for a quiet machine")
    args = parser.parse_args(argv)
    os.environ["TOKCOMPAT_ISOLATION"] = "inprocess"  # see the module docstring
    print("== derived probes and contract dimensions vs today's judge (bundled matrix) ==")
    warm_snapshot_cache()
    import transformers

    transformers.logging.set_verbosity_error()
    load = 0.0 if args.no_wait else wait_until_quiet()
    run: Callable[[bool], dict[str, dict[str, list[float]]]] = partial(measure, args.reps)
    judge_once(*cases()[0], today=False)  # imports and first-use costs, unmeasured
    matrix_times = run(False)
    cold_times = run(True)
    ratio = summarize("matrix run (as pytest --tokcompat judges it)", matrix_times)
    cold_ratio = summarize("every case cold (caches cleared before each judgement)", cold_times)
    counts = probe_counts()
    print("\nprobes checked per case, by kind:")
    for case_id, by_kind in counts.items():
        print(f"  {case_id:<22} " + ", ".join(f"{kind} {n}" for kind, n in by_kind.items()))
    print(
        f"\nratio issue 11 / today, matrix run: {ratio:.3f}x  target <= {TARGET}x: {verdict(ratio <= TARGET)}"
    )
    print(f"ratio issue 11 / today, every case cold: {cold_ratio:.3f}x")
    write_json(
        args.json,
        {
            "name": "probes",
            "load_before": load,
            "matrix_run_s": matrix_times,
            "cold_s": cold_times,
            "ratio": ratio,
            "ratio_cold": cold_ratio,
            "target": TARGET,
            "met": ratio <= TARGET,
            "probe_counts": counts,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
