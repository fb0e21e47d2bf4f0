"""The command line is a package: one module per command, one ``ExitCode``, errors mapped in one place."""

from __future__ import annotations

import argparse
import ast
import importlib
from pathlib import Path

import pytest

from pytest_tokcompat import cli
from pytest_tokcompat.cli.errors import BadInput
from pytest_tokcompat.cli.main import COMMANDS
from pytest_tokcompat.exitcodes import ExitCode

PACKAGE = Path(cli.__file__).parent.parent
CODE_USERS = [
    *sorted((PACKAGE / "cli").glob("*.py")),
    *(PACKAGE / "ci" / name for name in ("grid.py", "gridexpect.py", "issues_sync.py")),
]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices)


def test_each_command_is_a_module_with_register_and_run() -> None:
    names = set(_subcommands(cli.build_parser()))
    assert {"check", "report", "grid", "issues-sync"} <= names  # control: the parser is read
    modules = {module.__name__.rsplit(".", 1)[-1].replace("_", "-"): module for module in COMMANDS}
    assert set(modules) == names
    for name, module in modules.items():
        handler = _subcommands(cli.build_parser())[name].get_default("handler")
        assert handler is module.run, name
        assert callable(module.register), name
        assert importlib.import_module(f"pytest_tokcompat.cli.{name.replace('-', '_')}") is module


def _exit_literals(path: Path) -> list[str]:
    """``EXIT_* = ...`` constants and ``return 2``-style bare integers (alone or first in a tuple)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign):
            targets = [
                t
                for target in node.targets
                for t in (target.elts if isinstance(target, ast.Tuple) else [target])
            ]
            found += [
                f"{path.name}:{node.lineno} {t.id}"
                for t in targets
                if isinstance(t, ast.Name) and t.id.startswith("EXIT_")
            ]
        if isinstance(node, ast.Return) and node.value is not None:
            value = (
                node.value.elts[0] if isinstance(node.value, ast.Tuple) and node.value.elts else node.value
            )
            if isinstance(value, ast.Constant) and type(value.value) is int:
                found.append(f"{path.name}:{node.lineno} return {value.value}")
    return found


def test_one_exit_code_enum_no_bare_exit_numbers(tmp_path: Path) -> None:
    assert len(CODE_USERS) > 10  # control: the command modules are found
    assert _exit_literals(Path(__file__)) == [], "control: this file has none"
    planted = "EXIT_OK, EXIT_BAD = 0, 2\n\ndef f():\n    return 2, 'x'\n"
    probe = tmp_path / "probe.py"
    probe.write_text(planted, encoding="utf-8")
    assert len(_exit_literals(probe)) == 3, "control: a bare exit number is seen"
    assert [found for path in CODE_USERS for found in _exit_literals(path)] == []


def test_exit_codes_keep_their_documented_values() -> None:
    assert [ExitCode.OK, ExitCode.BROKEN, ExitCode.BAD_INPUT, ExitCode.NOT_CHECKED, ExitCode.FINDINGS] == [
        0,
        1,
        2,
        3,
        4,
    ]
    assert ExitCode.ALARMS == ExitCode.GH_FAILED == ExitCode.BROKEN
    assert ExitCode.INCOMPLETE == ExitCode.NOT_CHECKED


def test_a_bad_input_raised_by_a_command_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_tokcompat.cli import releases

    def refuses(args: argparse.Namespace) -> ExitCode:
        raise BadInput("--since 99: no such release; name one `tokcompat releases` lists\x1b[31m")

    def fine(args: argparse.Namespace) -> ExitCode:
        print("5.0.0")
        return ExitCode.OK

    monkeypatch.setattr(releases, "run", fine)
    assert cli.main(["releases"]) == ExitCode.OK  # control: the patched command is the one run
    assert capsys.readouterr().out == "5.0.0\n"
    monkeypatch.setattr(releases, "run", refuses)
    assert cli.main(["releases", "--since", "99"]) == ExitCode.BAD_INPUT
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "tokcompat releases: --since 99: no such release; name one `tokcompat releases` lists\\x1b[31m"
    ]
