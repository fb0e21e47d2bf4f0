"""The tokcompat_tokenizer fixture: the one evaluator, with the run's limits, once per case; a copy per test."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.helpers import toys

pytest_plugins = ["pytester"]


def project(pytester: pytest.Pytester) -> Path:
    toys.native_toy(pytester.path / "native")
    matrix = pytester.path / "models.yaml"
    matrix.write_text("version: 1\ncases:\n  - {id: toy, snapshot: native, expect: native}\n")
    pytester.makepyfile(
        test_own=textwrap.dedent(
            """
            def test_first(tokcompat_case, tokcompat_tokenizer):
                tokcompat_tokenizer.add_tokens(["<only-in-the-first-test>"])
                assert "<only-in-the-first-test>" in tokcompat_tokenizer.get_vocab()

            def test_second(tokcompat_case, tokcompat_tokenizer):
                assert "<only-in-the-first-test>" not in tokcompat_tokenizer.get_vocab()
            """
        )
    )
    return matrix


def test_each_test_gets_its_own_copy_of_the_cases_tokenizer(pytester: pytest.Pytester) -> None:
    matrix = project(pytester)
    result = pytester.runpytest(f"--tokcompat-matrix={matrix}", "-p", "no:randomly", "test_own.py")
    result.assert_outcomes(passed=2)


def test_the_fixture_honours_the_limit_options(pytester: pytest.Pytester) -> None:
    matrix = project(pytester)
    result = pytester.runpytest(
        f"--tokcompat-matrix={matrix}", "--tokcompat-max-file-mb=0.001", "-p", "no:randomly", "test_own.py"
    )
    result.assert_outcomes(errors=2)  # a fixture that cannot provide its value errors the test
    result.stdout.fnmatch_lines(["*case 'toy' has no working tokenizer*over the 0.001 MB cap*"])
