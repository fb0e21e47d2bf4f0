"""Recorded expectations: --update-expectations writes the measured outcomes into the matrix.

The pytest path runs the installed transformers; the grid path (several releases) is fed
a small set of fake reports through tox's stand-in in test_gridrun.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import toys
from packaging.version import Version

from pytest_tokcompat.contract import library_versions
from pytest_tokcompat.matrix.expectations import planned, ranges_from, update_matrix
from pytest_tokcompat.matrix.loader import load_matrix

pytest_plugins = ["pytester"]

HEAD = "# the client's tokenizers\nversion: 1\ncases:\n"


def run(pytester: pytest.Pytester, matrix: Path, *extra: str) -> pytest.RunResult:
    return pytester.runpytest("--tokcompat", f"--tokcompat-matrix={matrix}", "-p", "no:randomly", *extra)


def test_a_new_entry_gets_measured_ranges_and_the_next_run_exits_0(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    matrix = pytester.path / "models.yaml"
    matrix.write_text(
        HEAD + "  # a new checkpoint: what does it need?\n"
        "  - id: mine\n    snapshot: native   # our copy\n    note: added today\n"
        "  - id: kept\n    snapshot: native\n    expect: native  # measured last week\n",
        encoding="utf-8",
    )
    before = matrix.read_text()
    assert run(pytester, matrix).ret == pytest.ExitCode.USAGE_ERROR, "the control: no expect is refused"
    result = run(pytester, matrix, "--tokcompat-update-expectations")
    assert result.ret == 0, result.stdout.str()
    after = matrix.read_text()
    assert after == before.replace("# our copy\n", "# our copy\n    expect: native\n", 1)
    result.stdout.fnmatch_lines(
        ["+    expect: native", f"tokcompat: wrote the measured expectations of mine into {matrix}"]
    )
    assert run(pytester, matrix).ret == 0
    again = run(pytester, matrix, "--tokcompat-update-expectations")
    assert again.ret == 0 and matrix.read_text() == after
    again.stdout.fnmatch_lines(["tokcompat: the expectations in * already match what was measured"])


def test_a_wrong_guess_is_corrected_for_this_release_only(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    matrix = pytester.path / "models.yaml"
    matrix.write_text(
        HEAD
        + '  - id: mine\n    snapshot: native\n    expect:\n      "<4.0": broken\n      ">=4.0": alias  # a guess\n'
    )
    assert run(pytester, matrix).ret == 1, "the control: the guess fails the run"
    assert run(pytester, matrix, "--tokcompat-update-expectations").ret == 0
    version = library_versions()["transformers"]
    written = load_matrix(matrix).by_id("mine")
    assert {e.range.text: e.outcome for e in written.expectations} == {
        "<4.0": "broken",
        f">=4.0,!={version}": "alias",
        f"=={version}": "native",
    }
    assert "# the client's tokenizers" in matrix.read_text()
    assert run(pytester, matrix).ret == 0


def test_a_clean_remedy_turning_broken_is_refused_unless_allowed(pytester: pytest.Pytester) -> None:
    toys.broken_toy(pytester.path / "broken")
    matrix = pytester.path / "models.yaml"
    matrix.write_text(HEAD + "  - id: mine\n    snapshot: broken\n    expect: native\n")
    before = matrix.read_text()
    result = run(pytester, matrix, "--tokcompat-update-expectations")
    assert result.ret == 1 and matrix.read_text() == before
    result.stdout.fnmatch_lines(
        [
            "tokcompat: refused a weaker expectation: *models.yaml:4: case 'mine' under transformers * native -> broken"
            " (accept it with --tokcompat-allow-weaker)"
        ]
    )
    result = run(pytester, matrix, "--tokcompat-update-expectations", "--tokcompat-allow-weaker")
    assert result.ret == 0 and matrix.read_text() != before
    assert run(pytester, matrix).ret == 0


def test_ranges_start_at_the_first_release_measured_with_each_outcome() -> None:
    points = {
        Version("5.2.0"): "native",
        Version("5.5.4"): "alias",
        Version("5.10.4"): "alias",
        Version("5.11.0"): "native",
    }
    assert ranges_from(points) == {"<5.5.4": "native", ">=5.5.4,<5.11": "alias", ">=5.11": "native"}
    assert ranges_from({Version("5.3.0"): "broken"}) == {"": "broken"}


def test_grid_measurements_write_ranges_a_flow_entry_stays_flow(tmp_path: Path) -> None:
    toys.native_toy(tmp_path / "native")
    matrix = tmp_path / "models.yaml"
    matrix.write_text(HEAD + "  - {id: mine, snapshot: native}  # new\n")
    update = update_matrix(matrix, {"mine": {"5.5.4": "alias", "5.10.4": "alias", "5.11.0": "native"}})
    assert update.changed == ["mine"]
    line = matrix.read_text().removeprefix(HEAD)
    assert line.startswith('  - {id: mine, snapshot: native, expect: {"<5.11": alias, ">=5.11": native}}')
    assert line.rstrip().endswith("# new"), "the comment stays on its line"
    case = load_matrix(matrix).by_id("mine")
    assert planned(case, {"5.5.4": "alias", "5.11.0": "native"}) == (None, []), "as written now"


# ---- findings to acknowledge ------------------------------------------------------------------------


def _decode_matrix(pytester: pytest.Pytester, entries: str) -> Path:
    """A matrix of ``entries`` beside a toy (``snapshot: decoding``) with right ids whose decode drifts (a
    finding) under the installed transformers."""
    from contract_toys import contract_toy
    from test_contract_dimensions import drift_shows

    folder = contract_toy(pytester.path / "decoding", "decode")
    if not drift_shows("decode", folder):
        pytest.skip("the installed transformers decodes the toy as it declares: no finding to record")
    matrix = pytester.path / "models.yaml"
    matrix.write_text(HEAD + entries, encoding="utf-8")
    return matrix


def test_a_new_entry_gets_its_findings_acknowledged_and_the_next_run_exits_0(
    pytester: pytest.Pytester,
) -> None:
    matrix = _decode_matrix(pytester, "  # new today\n  - id: mine\n    snapshot: decoding  # our copy\n")
    result = run(pytester, matrix, "--tokcompat-update-expectations")
    assert result.ret == 0, result.stdout.str()
    written = load_matrix(matrix).by_id("mine")
    assert [(e.range.text, e.outcome) for e in written.expectations] == [("", "native")]
    assert [(a.range.text, a.dimension) for a in written.acknowledge] == [("*", "decode")]
    assert "replace this with why it is accepted" in written.acknowledge[0].reason
    assert "# new today" in matrix.read_text() and "# our copy" in matrix.read_text()
    result.stdout.fnmatch_lines(["+    acknowledge:", '+      "[*]":', "+        decode: *"])
    assert run(pytester, matrix).ret == 0


def test_acknowledging_a_new_finding_of_a_written_entry_is_refused_unless_allowed(
    pytester: pytest.Pytester,
) -> None:
    matrix = _decode_matrix(
        pytester, "  - id: mine\n    snapshot: decoding\n    expect: native  # measured\n"
    )
    before = matrix.read_text()
    assert run(pytester, matrix).ret == 1, "the control: the unacknowledged finding fails the run"
    result = run(pytester, matrix, "--tokcompat-update-expectations")
    assert result.ret == 1 and matrix.read_text() == before, result.stdout.str()
    version = library_versions()["transformers"]
    result.stdout.fnmatch_lines(
        [
            f"tokcompat: refused a weaker expectation: *models.yaml:4: case 'mine' under transformers {version}: "
            "decode acknowledged (accept it with --tokcompat-allow-weaker)"
        ]
    )
    result = run(pytester, matrix, "--tokcompat-update-expectations", "--tokcompat-allow-weaker")
    assert result.ret == 0, result.stdout.str()
    written = load_matrix(matrix).by_id("mine")
    assert [(a.range.text, a.dimension) for a in written.acknowledge] == [(f"=={version}", "decode")]
    assert "expect: native  # measured" in matrix.read_text()
    assert run(pytester, matrix).ret == 0


def test_grid_findings_become_ranges_of_the_releases_that_found_them(tmp_path: Path) -> None:
    toys.native_toy(tmp_path / "native")
    matrix = tmp_path / "models.yaml"
    matrix.write_text(HEAD + "  - {id: mine, snapshot: native}  # new\n")
    measured = {"mine": {"5.5.4": "native", "5.10.4": "native", "5.11.0": "native"}}
    findings = {"mine": {"5.5.4": [], "5.10.4": ["chat_template"], "5.11.0": ["chat_template"]}}
    update = update_matrix(matrix, measured, findings=findings)
    assert update.changed == ["mine"] and not update.refused
    case = load_matrix(matrix).by_id("mine")
    assert [(a.range.text, a.dimension) for a in case.acknowledge] == [(">=5.10.4", "chat_template")]
    assert case.acknowledged_for("5.5.4") == {} and "chat_template" in case.acknowledged_for("5.11.0")
    assert matrix.read_text().rstrip().endswith("# new")
