# ruff: noqa: F811 (the fixture tests/plugin/test_plugin.py defines, imported by name)
"""End to end: Self-tests of ``pytest --tokcompat`` through pytester, with and without xdist.

The rest of this subject's tests, and the helpers these use, are in tests/plugin/test_plugin.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import toys
from tests.helpers.matrices import write_matrix
from tests.plugin.test_plugin import ladder_matrix, report_is_written_once_and_complete  # noqa: F401 (a fixture)


def test_without_the_flag_nothing_is_added_and_transformers_is_not_imported(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_plain="""
        import sys

        def test_light():
            assert "transformers" not in sys.modules
            assert "tokenizers" not in sys.modules
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist")
    result.assert_outcomes(passed=1)
    assert "tokcompat: matrix" not in result.stdout.str()


def test_collect_only_imports_neither_transformers_nor_tokenizers(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    matrix = write_matrix(pytester.path, "  - {id: native, snapshot: native, expect: native}\n")
    pytester.makeconftest(
        "import sys\n"
        "def pytest_collection_finish(session):\n"
        "    print('HEAVY', sorted(m for m in ('transformers', 'tokenizers') if m in sys.modules))\n"
    )
    result = pytester.runpytest_subprocess(
        "--tokcompat", f"--tokcompat-matrix={matrix}", "--collect-only", "-s", "-p", "no:randomly"
    )
    result.stdout.fnmatch_lines(["*<CaseItem native>*", "HEAVY []"])


def test_tokcompat_tokenizer_judges_each_case_once_per_run(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    matrix = write_matrix(pytester.path, "  - {id: native, snapshot: native, expect: native}\n")
    pytester.makepyfile(
        test_own="""
        def test_first(tokcompat_tokenizer):
            assert tokcompat_tokenizer.encode("hello world", add_special_tokens=False)

        def test_second(tokcompat_tokenizer):
            assert tokcompat_tokenizer.decode([1]) is not None

        def test_third(tokcompat_case, tokcompat_tokenizer):
            assert tokcompat_case.id == "native"
        """
    )
    # Judgements and this process's loads are counted inside the run, in a process of its own (the
    # attempts themselves load in child processes).
    pytester.makeconftest(
        """
        from pathlib import Path

        from transformers import AutoTokenizer

        from pytest_tokcompat.judge import evaluate


        def pytest_configure(config):
            def counted(name, original):
                def call(*args, **kwargs):
                    with Path(config.rootpath, name).open("a") as out:
                        out.write(f"{args[0]}\\n")
                    return original(*args, **kwargs)

                return call

            evaluate.judge = counted("judged.txt", evaluate.judge)
            AutoTokenizer.from_pretrained = counted("loaded.txt", AutoTokenizer.from_pretrained)
        """
    )
    result = pytester.runpytest_subprocess(
        "--tokcompat", f"--tokcompat-matrix={matrix}", "-p", "no:randomly", "-p", "no:xdist"
    )
    result.assert_outcomes(passed=4, skipped=1)
    judged = (pytester.path / "judged.txt").read_text().splitlines()
    loaded = (pytester.path / "loaded.txt").read_text().splitlines()
    # One judgement for the case item and all three tests, then one load in this process, of the
    # verdict's remedy, that the three tests share.
    assert len(judged) == 1, judged
    assert len(loaded) == 1, loaded


@pytest.mark.parametrize("xdist", [pytest.param(["-n", "2"], id="n2")])
def test_report_is_written_once_and_complete(
    pytester: pytest.Pytester, ladder_matrix: Path, xdist: list[str]
) -> None:
    report_is_written_once_and_complete(pytester, ladder_matrix, xdist)
