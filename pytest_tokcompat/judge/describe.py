"""A judgement's attempts as a user reads them: one line per attempt, and what each attempt printed."""

from __future__ import annotations

from pytest_tokcompat.judge.judgement import Judgement
from pytest_tokcompat.model import AttemptStatus


def describe_attempts(judgement: Judgement) -> str:
    target = judgement.target
    by = f", loaded by {target.describe()}" if target is not None else ""
    lines = [f"  attempts under transformers {judgement.transformers_version}{by}:"]
    local = [(f"{a.remedy} (local folder)", a) for a in judgement.local]
    for name, attempt in [(a.remedy, a) for a in (*judgement.attempts, *judgement.repair_attempts)] + local:
        detail = f": {attempt.detail}" if attempt.detail else ""
        loaded = f" ({attempt.tokenizer_class})" if attempt.tokenizer_class else ""
        found = f" findings: {', '.join(attempt.findings)}" if attempt.findings else ""
        lines.append(f"    {name:<9} {attempt.status}{loaded}{detail}{found}")
    if judgement.repairs:
        lines.append(
            f"  repairs that clear a finding: {', '.join(judgement.repairs)} (load_tokenizer() applies them)"
        )
    if judgement.local:
        lines.append(
            f"  the same files by their folder path (a local copy) give {judgement.local_verdict}: transformers "
            f"chooses its class by the name ({', '.join(judgement.static.name_keyed)})"
        )
    return "\n".join(lines)


def describe_attempt_output(judgement: Judgement, lines_per_stream: int = 5) -> str:
    """What each attempt that did not succeed warned, logged and printed: kept in its record, never on
    the caller's streams, and shown here where no remedy succeeded (it often names the cause)."""
    lines: list[str] = []
    for attempt in judgement.attempts:
        if attempt.status in (AttemptStatus.OK, AttemptStatus.SKIPPED):
            continue
        said = [f"warned: {text}" for text in attempt.warnings]
        for name, text in (("stderr", attempt.stderr), ("stdout", attempt.stdout)):
            tail = [line.rstrip() for line in (text or "").splitlines() if line.strip()][-lines_per_stream:]
            said += [f"{name}: {line[:300]}" for line in tail]
        if said:
            lines.append(f"  what the {attempt.remedy} attempt said:")
            lines += [f"    {line}" for line in said]
    return "\n".join(lines)
