"""The ``TOKCOMPAT_*`` variables: declared once (pytest_tokcompat/environment.py) and read only there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytest_tokcompat import environment

PACKAGE = Path(environment.__file__).parent


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.name != "environment.py")


def _tokcompat_constants(tree: ast.AST) -> dict[str, str]:
    """Module-level names bound to a ``TOKCOMPAT_*`` string: ``CACHE_ENV = "TOKCOMPAT_VERDICT_CACHE"``."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            value = node.value.value
            if isinstance(value, str) and value.startswith(environment.PREFIX):
                found.update({t.id: value for t in node.targets if isinstance(t, ast.Name)})
    return found


def _reads(path: Path) -> list[str]:
    """``x.get(NAME)``, ``x[NAME]`` and ``os.getenv(NAME)`` where NAME is a TOKCOMPAT_* string or constant."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    constants = _tokcompat_constants(tree)

    def tokcompat(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value.startswith(environment.PREFIX)
        return isinstance(node, ast.Name) and node.id in constants

    reads = []
    for node in ast.walk(tree):
        called = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "getenv", "pop", "setdefault")
            and bool(node.args)
            and tokcompat(node.args[0])
        )
        if called or (isinstance(node, ast.Subscript) and tokcompat(node.slice)):
            reads.append(f"{path.name}:{getattr(node, 'lineno', 0)}")
    return reads


def test_no_module_but_environment_reads_a_tokcompat_variable() -> None:
    reads = [read for path in _modules() for read in _reads(path)]
    assert reads == [], f"read TOKCOMPAT_* through pytest_tokcompat.environment.read(): {reads}"


def test_the_scan_sees_a_direct_read(tmp_path: Path) -> None:
    """Control: the scan above finds each way of reading a variable directly."""
    module = tmp_path / "control.py"
    module.write_text(
        'import os\nNAME = "TOKCOMPAT_CACHE"\nos.environ.get(NAME)\nos.environ["TOKCOMPAT_X"]\nos.getenv("TOKCOMPAT_Y")\n',
        encoding="utf-8",
    )
    assert len(_reads(module)) == 3


def test_every_tokcompat_name_the_package_uses_is_declared() -> None:
    used = set()
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if text.startswith(environment.PREFIX) and text[len(environment.PREFIX) :].isupper():
                    used.add(text.split("=")[0].strip())
    undeclared = sorted(used - set(environment.BY_NAME))
    assert undeclared == [], f"declare these in pytest_tokcompat/environment.py: {undeclared}"
    assert "TOKCOMPAT_GRID_CACHE" in used  # control: the scan finds the names the code uses
    from pytest_tokcompat.settings import LIMITS as SETTINGS

    assert {limit.variable for limit in SETTINGS} <= set(environment.BY_NAME)  # the limits' names too


def test_read_strips_and_treats_empty_as_unset_and_refuses_a_typo() -> None:
    assert environment.read("TOKCOMPAT_CACHE", {"TOKCOMPAT_CACHE": "  /x  "}) == "/x"
    assert environment.read("TOKCOMPAT_CACHE", {"TOKCOMPAT_CACHE": "   "}) is None
    assert environment.read("TOKCOMPAT_CACHE", {}) is None
    with pytest.raises(KeyError, match="TOKCOMPAT_CAHCE is not declared"):
        environment.read("TOKCOMPAT_CAHCE", {})


def test_the_documentation_table_lists_every_variable() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "reference", PACKAGE.parent / "docs" / "hooks" / "reference.py"
    )
    assert spec is not None and spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    table = reference.environment_reference()
    for variable in environment.VARIABLES:
        assert f"| `{variable.name}` |" in table
