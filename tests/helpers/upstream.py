"""A local git repository standing in for transformers' upstream source (for `--releases main`).

It holds the installed transformers' own source files under a new dev version and
builds with hatchling, as a checkout of the real repository would build with its own
backend: `tokcompat grid --releases main --upstream PATH` installs it with
`git+file://PATH@main`, exactly the path a real upstream URL takes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "transformers"
version = "{version}"
requires-python = ">=3.10"
dependencies = {dependencies}

[tool.hatch.build.targets.wheel]
packages = ["src/transformers"]
"""


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout.strip()


def write_pyproject(folder: Path, version: str) -> None:
    requires = metadata.distribution("transformers").requires or []
    dependencies = [r for r in requires if "extra ==" not in r]
    (folder / "pyproject.toml").write_text(
        PYPROJECT.format(version=version, dependencies=json.dumps(dependencies)), encoding="utf-8"
    )


def stand_in_upstream(folder: Path, version: str = "5.99.0.dev0") -> str:
    """Create the repository with one commit on main; returns that commit."""
    import transformers

    source = Path(transformers.__file__).parent
    shutil.copytree(
        source, folder / "src" / "transformers", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    write_pyproject(folder, version)
    git(folder, "init", "-q", "-b", "main")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", f"transformers {version}")
    return git(folder, "rev-parse", "HEAD")


def new_commit(folder: Path, version: str) -> str:
    """A later commit on main: another dev version."""
    write_pyproject(folder, version)
    git(folder, "commit", "-q", "-am", f"transformers {version}")
    return git(folder, "rev-parse", "HEAD")
