"""`tokcompat grid`: an argument that goes into the generated tox.ini is one line of plain text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.fakegrid import FakeTox, grid

INJECTED = "\n[testenv:tf-5.10.4]\ncommands = python -c \"open('/tmp/owned', 'w')\"\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["--releases", "5.10.4,main", "--upstream", "https://e.invalid/transformers.git@main" + INJECTED],
        ["--releases", "5.10.4", "--with", "mypkg==1.0" + INJECTED],
        ["--releases", "5.10.4", "--loader", "aiperf" + INJECTED],
        ["--releases", "5.10.4\x1b[2J"],
        ["--releases", "5.10.4", "--output", "out\rdir"],
    ],
    ids=["upstream", "with", "loader", "releases", "output"],
)
def test_a_control_character_in_a_configuration_argument_exits_2_with_one_line(
    argv: list[str], project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = grid(argv, capsys)
    assert code == 2, out + err
    option = next(arg for arg in argv[2:] if arg.startswith("--")) if len(argv) > 2 else "--releases"
    assert err.startswith(f"tokcompat grid: {option} '") and err.count("\n") == 1, err
    assert "control character" in err and "without control characters" in err
    assert tox.builds == [] and not (project / "tokcompat-grid").exists(), "nothing was written"


def test_the_control_the_same_arguments_on_one_line_build_and_judge(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = grid(["--releases", "5.10.4,main", "--upstream", str(tmp_path)], capsys)
    assert code == 0, out + err
    assert sorted(tox.builds) == ["tf-5.10.4", "tf-main"]
    tox_ini = (project / "tokcompat-grid" / ".work" / "tox.ini").read_text()
    assert tox_ini.count("[testenv:") == 2


def test_the_upstream_variable_is_checked_as_well(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_tokcompat.ci.releases import UPSTREAM_ENV

    monkeypatch.setenv(UPSTREAM_ENV, "https://e.invalid/t.git" + INJECTED)
    code, _, err = grid(["--releases", "5.10.4,main"], capsys)
    assert code == 2 and err.startswith(f"tokcompat grid: ${UPSTREAM_ENV} '"), err


@pytest.mark.parametrize(
    ("argv", "special"),
    [
        (["--releases", "5.10.4", "--with", "mypkg @ https://e.invalid/{env:HF_TOKEN}/p.whl"], "{"),
        (["--releases", "5.10.4", "--output", 'out" -p evil "'], '"'),
    ],
    ids=["substitution", "quote"],
)
def test_what_tox_would_read_as_its_own_syntax_exits_2(
    argv: list[str], special: str, project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = grid(argv, capsys)
    assert code == 2, out + err
    assert (
        err.startswith(f"tokcompat grid: {argv[2]} ") and f"holds {special!r}" in err and err.count("\n") == 1
    )
    assert tox.builds == []
