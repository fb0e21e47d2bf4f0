"""End to end: the bundled checkpoints judge the same with the truth cache cold, warm and off.

The rest of this subject's tests are in tests/unit/judge/test_truth_cache.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tokcompat.judge import truthcache
from tests.unit.judge.test_truth_cache import entries, stable, truths

__all__ = ["truths"]


BUNDLED = ("qwen3-0.6b", "mistral-7b-v0.1", "kimi-k2-instruct")
"""A tokenizer.json with a chat template, a tokenizer.model with golden ids, tiktoken ranks with remote code."""


@pytest.mark.parametrize("case_id", BUNDLED)
def test_bundled_verdicts_are_the_same_cold_warm_and_off(
    case_id: str, truths: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_tokcompat.judge.evaluate import evaluate
    from pytest_tokcompat.matrix.discovery import bundled_matrix
    from pytest_tokcompat.matrix.loader import load_matrix
    from pytest_tokcompat.request import Request

    case = next(c for c in load_matrix(bundled_matrix()).cases if c.id == case_id)
    cold = stable(evaluate(Request(case)).to_json())
    assert len(entries(truths)) == 1
    warm = stable(evaluate(Request(case)).to_json())
    monkeypatch.setenv(truthcache.CACHE_ENV, "off")
    off = stable(evaluate(Request(case)).to_json())
    assert cold == warm == off
    assert cold["status"] == "passed", cold
