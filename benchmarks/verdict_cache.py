"""What a client's second process pays for ``load_tokenizer()``: the verdict cache on disk.

For one bundled checkpoint (DeepSeek-V3.2-Exp by default), each in a FRESH subprocess:

* baseline: ``AutoTokenizer.from_pretrained`` on the assembled snapshot folder (what a client
  without the tool does; the import of transformers included, as every worker pays it);
* cold: ``load_tokenizer(case)`` with an empty verdict cache (judges in child processes, stores);
* warm: ``load_tokenizer(case)`` with the verdict the cold run stored (a second worker).

Interleaved per rep (the baseline's place rotates; warm always after cold), medians; prints warm/baseline (target <= 1.1x) and
cold/baseline. Every run checks that the tokenizer loaded (and warm that the verdict came from
the cache), so a broken side cannot look fast.

Run:  python benchmarks/verdict_cache.py [--case deepseek-v3.2-exp] [--reps 5] [--json OUT] [--no-wait]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
from pathlib import Path

from _common import PYTHON, Timed, bench_env, median, run_timed, tail, verdict, wait_until_quiet, write_json

TARGET = 1.1


def run_measured(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[Timed, float]:
    """Wall seconds and CPU seconds (user + system, the process and every child it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    timed = run_timed(command, cwd, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return timed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


BASELINE = """
import sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
assert tok.encode("Hello world", add_special_tokens=False)
print("ok")
"""

CLIENT = """
import sys
from pytest_tokcompat import load_tokenizer
result = load_tokenizer(sys.argv[1])
assert result.tokenizer.encode("Hello world", add_special_tokens=False)
print("hit" if result.from_cache else "judged", result.verdict)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="deepseek-v3.2-exp")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json")
    parser.add_argument("--no-wait", action="store_true")
    options = parser.parse_args()

    from pytest_tokcompat.sources.resolve import resolve

    folder = resolve(options.case).folder  # assembled now, so no measured run pays for it
    work = Path(tempfile.mkdtemp(prefix="tokcompat-bench-verdicts-"))
    verdicts = work / "verdicts"
    env = bench_env(TOKCOMPAT_VERDICT_CACHE=str(verdicts), PYTHONPYCACHEPREFIX=str(work / "pycache"))
    # As an installed package runs: from compiled bytecode (written under the work folder, never into the
    # checkout or site-packages), for both sides alike; one untimed run of each fills it.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for command in ([PYTHON, "-c", BASELINE, str(folder)], [PYTHON, "-c", CLIENT, options.case]):
        run_timed(command, work, env)
    if not options.no_wait:
        wait_until_quiet()
    times: dict[str, list[float]] = {"baseline": [], "cold": [], "warm": []}
    cpu: dict[str, list[float]] = {"baseline": [], "cold": [], "warm": []}
    try:
        for rep in range(options.reps):
            commands = {
                "baseline": [PYTHON, "-c", BASELINE, str(folder)],
                "cold": [PYTHON, "-c", CLIENT, options.case],
                "warm": [PYTHON, "-c", CLIENT, options.case],
            }
            # The baseline's place rotates (warm always after cold): no side gains from running first or last.
            order = [("baseline", "cold", "warm"), ("cold", "baseline", "warm"), ("cold", "warm", "baseline")]
            runs = {side: commands[side] for side in order[rep % len(order)]}
            shutil.rmtree(verdicts, ignore_errors=True)  # cold: nothing kept; warm then reuses what it stored
            for side, command in runs.items():
                timed, cpu_seconds = run_measured(command, work, env)
                expected = {"baseline": "ok", "cold": "judged", "warm": "hit"}[side]
                if timed.returncode != 0 or not timed.stdout.startswith(expected):
                    print(
                        f"{side} failed (exit {timed.returncode}):\n{tail(timed.stdout)}\n{tail(timed.stderr)}"
                    )
                    return 1
                times[side].append(timed.seconds)
                cpu[side].append(cpu_seconds)
            print(
                f"  rep {rep + 1}: baseline {times['baseline'][-1]:.2f} s, cold {times['cold'][-1]:.2f} s, "
                f"warm {times['warm'][-1]:.2f} s (CPU {cpu['baseline'][-1]:.2f} / {cpu['cold'][-1]:.2f} / "
                f"{cpu['warm'][-1]:.2f} s)",
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base, cold, warm = (median(times[side]) for side in ("baseline", "cold", "warm"))
    cpu_base, cpu_cold, cpu_warm = (median(cpu[side]) for side in ("baseline", "cold", "warm"))
    print(f"checkpoint: {options.case} ({folder})")
    print(f"baseline  AutoTokenizer.from_pretrained, fresh process: {base:.2f} s (median of {options.reps})")
    print(f"cold      load_tokenizer, empty verdict cache:          {cold:.2f} s = {cold / base:.2f}x")
    print(
        f"warm      load_tokenizer, verdict cached:               {warm:.2f} s = {warm / base:.2f}x "
        f"(target <= {TARGET}x: {verdict(warm / base <= TARGET)})"
    )
    print(
        f"CPU time (user + system, every process): baseline {cpu_base:.2f} s, cold {cpu_cold:.2f} s = "
        f"{cpu_cold / cpu_base:.2f}x, warm {cpu_warm:.2f} s = {cpu_warm / cpu_base:.2f}x "
        "(steadier than wall time on a shared machine)"
    )
    write_json(
        options.json,
        {
            "case": options.case,
            "seconds": times,
            "cpu_seconds": cpu,
            "cpu_warm_ratio": cpu_warm / cpu_base,
            "cpu_cold_ratio": cpu_cold / cpu_base,
            "baseline": base,
            "cold": cold,
            "warm": warm,
            "warm_ratio": warm / base,
            "cold_ratio": cold / base,
            "target": TARGET,
        },
    )
    return 0 if warm / base <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
