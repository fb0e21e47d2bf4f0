"""Fixtures for users' own per-checkpoint tests, parametrized over the matrix.

``tokcompat_tokenizer`` is the tokenizer loaded with the case's verdict remedy,
so a project checks its chat template or its own prompts without re-implementing
the ladder. The case is judged once per run (shared with its case item), under the
run's --tokcompat-load-timeout and --tokcompat-max-file-mb.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pytest_tokcompat.matrix.cases import Case


def parametrize_cases(metafunc: pytest.Metafunc) -> None:
    from pytest_tokcompat.pytest_plugin.session import run_of

    cases = run_of(metafunc.config).matrix.cases
    metafunc.parametrize("tokcompat_case", cases, ids=[case.id for case in cases], indirect=True)


@pytest.fixture
def tokcompat_case(request: pytest.FixtureRequest) -> Case:
    """One matrix entry (parametrized over the whole matrix)."""
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def tokcompat_tokenizer(request: pytest.FixtureRequest, tokcompat_case: Case) -> Any:
    """The case's tokenizer, loaded with the remedy its verdict needs; skips cases not checked here."""
    from pytest_tokcompat.pytest_plugin.session import run_of

    tokenizer = run_of(request.config).tokenizer_for(tokcompat_case)
    try:  # a test that adds tokens or changes settings must not change the next test's tokenizer
        return copy.deepcopy(tokenizer)
    except Exception:
        return tokenizer
