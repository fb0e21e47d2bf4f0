"""End to end: Never a false pass: broken checkpoints, hanging remote code, oversized files, dying workers.

The rest of this subject's tests, and the helpers these use, are in tests/unit/judge/test_faults.py.
"""

from __future__ import annotations

import pytest

from tests.helpers import toys
from tests.helpers.reportdata import read_valid_report


def test_a_dying_worker_leaves_the_other_records_and_its_case_not_checked(pytester: pytest.Pytester) -> None:
    for name in ("first", "victim", "third"):
        toys.native_toy(pytester.path / name)
    matrix = pytester.path / "models.yaml"
    matrix.write_text(
        "cases:\n"
        + "".join(
            f"  - {{id: {name}, snapshot: {name}, expect: native}}\n" for name in ("first", "victim", "third")
        )
    )
    pytester.makeconftest(
        "import os\n"
        "def pytest_runtest_call(item):\n"
        "    if item.name == 'victim' and os.environ.get('PYTEST_XDIST_WORKER'):\n"
        "        os._exit(3)\n"
    )
    result = pytester.runpytest(
        "--tokcompat",
        f"--tokcompat-matrix={matrix}",
        "--tokcompat-report=report.json",
        "-n",
        "2",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=2, failed=1, skipped=1)  # first, third; victim; the deepseek_v32 alias
    report = read_valid_report(pytester.path / "report.json")
    records = {record["id"]: record for record in report["cases"]}
    assert report["complete"] is False
    assert records["first"]["verdict"] == records["third"]["verdict"] == "native"
    assert records["victim"]["status"] == "not-checked"
    assert records["victim"]["verdict"] is None, "a case that never ran has no verdict"
