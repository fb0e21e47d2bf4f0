"""Fixtures for users' own per-checkpoint tests, parametrized over the matrix.

``tokcompat_tokenizer`` is the tokenizer loaded with the case's verdict remedy,
so a project checks its chat template or its own prompts without re-implementing
the ladder.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_tokcompat.matrix.loader import Case


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


@pytest.fixture
def tokcompat_tokenizer(tokcompat_case: Case, request: pytest.FixtureRequest) -> Any:
    """The case's tokenizer, loaded with the remedy its verdict needs (under the run's alias registry:
    the built-in, the matrix's and the hooks' aliases); skips cases not checked here."""
    from pytest_tokcompat.judge.evaluate import NOT_CHECKED, run_case
    from pytest_tokcompat.pytest_plugin.registry import REGISTRY_KEY, run_registry
    from pytest_tokcompat.pytest_plugin.session import load_or_usage_error, matrix_path

    registry = request.config.stash.get(REGISTRY_KEY, None)
    if registry is None:
        registry = run_registry(request.config, load_or_usage_error(matrix_path(request.config)))
    outcome = run_case(tokcompat_case, keep_tokenizer=True, registry=registry)
    if outcome.status == NOT_CHECKED:
        pytest.skip(f"not checked: {outcome.message}")
    if outcome.judgement is None or outcome.judgement.tokenizer is None:
        pytest.fail(f"case {tokcompat_case.id!r} has no working tokenizer: {outcome.message}", pytrace=False)
    return outcome.judgement.tokenizer
