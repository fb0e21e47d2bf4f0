"""Fixtures for users' own per-checkpoint tests, parametrized over the matrix.

``tokcompat_tokenizer`` is the tokenizer loaded with the case's verdict remedy,
so a project checks its chat template or its own prompts without re-implementing
the ladder. It evaluates through the one evaluator, with the run's limit options,
once per case and run; each test gets its own copy of the tokenizer.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import pytest

from pytest_tokcompat.matrix.loader import Case

if TYPE_CHECKING:
    from pytest_tokcompat.judge.evaluate import Evaluation

_EVALUATIONS = pytest.StashKey["OrderedDict[str, Evaluation]"]()
KEPT_TOKENIZERS = 8
"""Evaluations (each holding its tokenizer) kept per run: a large matrix must not hold every tokenizer alive."""


def parametrize_cases(metafunc: pytest.Metafunc) -> None:
    from pytest_tokcompat.pytest_plugin.session import load_or_usage_error, matrix_path

    matrix = load_or_usage_error(matrix_path(metafunc.config))
    metafunc.parametrize(
        "tokcompat_case", matrix.cases, ids=[case.id for case in matrix.cases], indirect=True
    )


@pytest.fixture
def tokcompat_case(request: pytest.FixtureRequest) -> Case:
    """One matrix entry (parametrized over the whole matrix)."""
    return request.param  # type: ignore[no-any-return]


def case_evaluation(config: pytest.Config, case: Case) -> Evaluation:
    """The case evaluated once per run (with the run's limits), as its matrix item evaluates it."""
    from pytest_tokcompat.judge.evaluate import run_case
    from pytest_tokcompat.pytest_plugin.items import limits_from

    cache = config.stash.setdefault(_EVALUATIONS, OrderedDict())
    key = f"{case.source}::{case.id}"
    if key in cache:
        cache.move_to_end(key)
    else:
        cache[key] = run_case(case, keep_tokenizer=True, limits=limits_from(config))
        while len(cache) > KEPT_TOKENIZERS:
            cache.popitem(last=False)
    return cache[key]


@pytest.fixture
def tokcompat_tokenizer(request: pytest.FixtureRequest, tokcompat_case: Case) -> Any:
    """The case's tokenizer, loaded with the remedy its verdict needs; skips cases not checked here."""
    from pytest_tokcompat.judge.evaluate import NOT_CHECKED

    outcome = case_evaluation(request.config, tokcompat_case)
    if outcome.status == NOT_CHECKED:
        pytest.skip(f"not checked: {outcome.message}")
    if outcome.judgement is None or outcome.judgement.tokenizer is None:
        pytest.fail(f"case {tokcompat_case.id!r} has no working tokenizer: {outcome.message}", pytrace=False)
    try:  # a test that adds tokens or changes settings must not change the next test's tokenizer
        return copy.deepcopy(outcome.judgement.tokenizer)
    except Exception:
        return outcome.judgement.tokenizer
