"""End to end: every command the docs show runs on local data (the listing is tests/project/test_docs_run.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.project.test_docs import Command
from tests.project.test_docs_run import ANY_FOLDER, BIN, RUN, client_repo

__all__ = ["client_repo"]


@pytest.mark.parametrize("command", RUN, ids=str)
def test_a_shown_command_runs_on_local_data(command: Command, client_repo: Path) -> None:
    if command.page in ANY_FOLDER:  # "from any folder": no [tool.tokcompat], no ci/tokenizers.yaml
        (client_repo / "pyproject.toml").unlink()
        (client_repo / "ci" / "tokenizers.yaml").unlink()
    program, *args = command.argv
    argv = (
        [str(BIN / "tokcompat"), *args] if program == "tokcompat" else [sys.executable, "-m", program, *args]
    )
    if program == "pytest":
        argv += ["-p", "no:randomly", "-p", "no:cacheprovider"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKCOMPAT_") or k.endswith("CACHE")}
    env["PYTHONPATH"] = str(client_repo)
    done = subprocess.run(
        argv, cwd=client_repo, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
