"""The layers are enforced: the CI tools read the report contract and import nothing of the engine.

lint-imports (pyproject.toml, [tool.importlinter]) checks the import graph in CI; this test checks
what really happens at run time, in a fresh interpreter: the issues job runs the CI tools from a
wheel without transformers, so importing them must not pull in the engine or transformers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest_tokcompat.ci

ENGINE = (
    "pytest_tokcompat.judge",
    "pytest_tokcompat.sources",
    "pytest_tokcompat.api",
    "pytest_tokcompat.pytest_plugin",
    "pytest_tokcompat.cli",
    "transformers",
    "tokenizers",
    "huggingface_hub",
    "tiktoken",
)

IMPORT_EVERY_CI_MODULE = """
import importlib, json, pkgutil, sys
import pytest_tokcompat.ci as ci
names = [f"pytest_tokcompat.ci.{m.name}" for m in pkgutil.iter_modules(ci.__path__)]
for name in names:
    importlib.import_module(name)
print(json.dumps({"imported": names, "modules": sorted(sys.modules)}))
"""


def test_importing_the_ci_tools_imports_no_module_of_the_engine() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_CI_MODULE],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found = json.loads(done.stdout)
    on_disk = {
        f"pytest_tokcompat.ci.{path.stem}"
        for path in Path(pytest_tokcompat.ci.__file__).parent.glob("*.py")
        if path.stem != "__init__"
    }
    assert set(found["imported"]) == on_disk, "every module of the CI layer was imported"
    engine = [m for m in found["modules"] if m in ENGINE or m.startswith(tuple(f"{e}." for e in ENGINE))]
    assert engine == []
