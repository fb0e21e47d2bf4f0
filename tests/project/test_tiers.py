"""The tiers are set by folder: tests/e2e/conftest.py marks what is under it `e2e`, and no test marks itself."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.helpers.paths import TESTS

SELF_MARK = re.compile(r"\bpytest\.mark\.e2e\b")


def self_marks(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if SELF_MARK.search(line)]


def test_no_test_file_marks_itself_e2e() -> None:
    files = [p for p in TESTS.rglob("*.py") if p.name != "conftest.py" and p.parent.name != "data"]
    assert len(files) > 50, "the scan sees the suite's files"
    assert self_marks("@pytest.mark.e2e\ndef test_x(): ...") == ["@pytest.mark.e2e"]  # the check can see one
    found = {
        str(path.relative_to(TESTS)): marks
        for path in files
        if path != TESTS / "project" / "test_tiers.py"
        and (marks := self_marks(path.read_text(encoding="utf-8")))
    }
    assert found == {}, "a test's tier is its folder (tests/e2e/ or not), not a mark it sets itself"


def test_the_e2e_folder_marks_every_test_in_it_and_only_those(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nmarkers =\n    e2e: end to end\naddopts = --strict-markers -p no:randomly\n")
    (pytester.path / "e2e").mkdir()
    shutil.copy(TESTS / "e2e" / "conftest.py", pytester.path / "e2e" / "conftest.py")
    (pytester.path / "e2e" / "test_slow.py").write_text("def test_slow():\n    pass\n", encoding="utf-8")
    (pytester.path / "unit").mkdir()
    (pytester.path / "unit" / "test_fast.py").write_text("def test_fast():\n    pass\n", encoding="utf-8")

    def collected(*args: str) -> list[str]:
        result = pytester.runpytest("--collect-only", "-q", *args)
        return sorted(line for line in result.outlines if "::" in line)

    assert collected() == ["e2e/test_slow.py::test_slow", "unit/test_fast.py::test_fast"]  # both are seen
    assert collected("-m", "e2e") == ["e2e/test_slow.py::test_slow"]
    assert collected("-m", "not e2e") == ["unit/test_fast.py::test_fast"]
