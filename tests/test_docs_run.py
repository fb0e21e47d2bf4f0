"""Every ``tokcompat`` and ``pytest`` command the docs show is run, against local data, or said not to be.

A command is run verbatim in a folder laid out as the docs' own examples assume (``ci/tokenizers.yaml``
named in ``[tool.tokcompat]``, ``my-models.yaml``, ``path/to/checkpoint``, a client package ``mypkg``), all
on a toy checkpoint, offline, and must exit 0; the home page's "from any folder" commands run without the
configuration, so ``pytest --tokcompat`` judges the bundled matrix as the page says. A command that needs what a test cannot have (the hub,
GitHub, an environment per release, this very suite) carries ``<!-- not-run: REASON -->`` on the line
before its code block (README.md, kept by the lead, has its reasons here); the not-run commands are
listed in this test's output, never dropped silently.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import toys
from test_docs import COMMANDS, ROOT, Command

PROGRAMS = ("tokcompat", "pytest")
MARK = re.compile(r"<!--\s*not-run:\s*(.+?)\s*-->")
MARK_INLINE = re.compile(r"#\s*not-run:\s*(.+?)\s*$")
"""The same reason for one command of a block, as a shell comment at the end of its line."""
README_NOT_RUN = {
    "tokcompat grid": "builds an environment per release of minors,pre (tests/test_grid_e2e.py runs the grid)",
    "python -m pytest -n 2": "this test suite itself",
    "python -m pytest -n 2 -m e2e": "this test suite itself",
    "pytest --tokcompat --tokcompat-matrix ci/tokenizers.yaml --tokcompat-loader mypkg=mypkg.tokenizer:load": "",
    "tokcompat grid --matrix ci/tokenizers.yaml --releases minors,pre --with . --loader mypkg=mypkg.tokenizer:load": (
        "builds an environment per release of minors,pre (tests/test_client_grid_e2e.py runs --with . --loader)"
    ),
}
"""README.md's commands (its text is the lead's): a reason, or "" for a command this test runs."""
README_PAGES = ("README.md", "docs/index.md")
"""The home page shows README.md's Quickstart verbatim (tests/test_docs.py), so its reasons are these."""
ANY_FOLDER = ("docs/index.md",)
"""Pages whose commands are shown run "from any folder": a folder with no configuration of its own."""
BIN = Path(sys.executable).parent
CLIENT = """
from transformers import AutoTokenizer


def load(name, **kwargs):
    return AutoTokenizer.from_pretrained(name, **kwargs)


class Tokenizer:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    @classmethod
    def from_pretrained(cls, name, **kwargs):
        return cls(load(name, **kwargs))
"""


def shown() -> list[Command]:
    return [command for command in COMMANDS if command.argv[0] in PROGRAMS]


def not_run_reason(command: Command) -> str | None:
    """The reason the page gives on the line before the command's code block, or None: it is run."""
    if command.page in README_PAGES:
        return README_NOT_RUN.get(shlex.join(command.argv)) or None
    lines = (ROOT / command.page).read_text(encoding="utf-8").splitlines()
    index = command.line - 1
    inline = MARK_INLINE.search(lines[index])
    if inline:
        return inline.group(1)
    while index > 0 and not lines[index].startswith("```"):
        index -= 1
    before = next((line for line in reversed(lines[:index]) if line.strip()), "")
    found = MARK.search(before)
    return found.group(1) if found else None


RUN = [command for command in shown() if not_run_reason(command) is None]
NOT_RUN = [command for command in shown() if not_run_reason(command) is not None]


def test_every_shown_command_is_run_or_says_why_not(capsys: pytest.CaptureFixture[str]) -> None:
    assert RUN and NOT_RUN, "the control: both kinds are seen"
    readme = {shlex.join(c.argv) for c in shown() if c.page == "README.md"}
    assert readme <= set(README_NOT_RUN) | {c for c in readme if c.startswith("pip ")}, (
        f"README.md shows commands this test does not know: {sorted(readme - set(README_NOT_RUN))}"
    )
    with capsys.disabled():
        print(f"\n{len(RUN)} shown command(s) run; {len(NOT_RUN)} not run:")
        for command in NOT_RUN:
            print(f"  not run: {command}  ({not_run_reason(command)})")


def test_a_mark_before_the_block_or_on_the_line_is_read(tmp_path: Path) -> None:
    from test_docs import commands_of

    page = tmp_path / "page.md"  # an absolute page: ROOT / page is the page itself
    page.write_text(
        "<!-- not-run: needs GitHub -->\n```bash\ntokcompat issues-sync x\n```\n\n"
        "```bash\ntokcompat check y\ntokcompat grid  # not-run: builds environments\n```\n",
        encoding="utf-8",
    )
    marked, plain, inline = commands_of(page.read_text(encoding="utf-8"), str(page))
    assert not_run_reason(marked) == "needs GitHub"
    assert not_run_reason(plain) is None, "the control: a block without a mark is run"
    assert not_run_reason(inline) == "builds environments"


@pytest.fixture
def client_repo(tmp_path: Path) -> Path:
    """A client repository as the docs' examples assume it."""
    repo = tmp_path / "repo"
    (repo / "ci").mkdir(parents=True)
    toys.native_toy(repo / "path" / "to" / "checkpoint")
    toys.native_toy(repo / "toy")
    entry = "version: 1\ncases:\n  - id: toy\n    snapshot: ../toy\n    expect: native\n"
    (repo / "ci" / "tokenizers.yaml").write_text(entry, encoding="utf-8")
    (repo / "my-models.yaml").write_text(entry.replace("../toy", "toy"), encoding="utf-8")
    (repo / "pyproject.toml").write_text(
        '[tool.tokcompat]\nmatrix = "ci/tokenizers.yaml"\n', encoding="utf-8"
    )
    (repo / "mypkg").mkdir()
    (repo / "mypkg" / "__init__.py").write_text("", encoding="utf-8")
    (repo / "mypkg" / "tokenizer.py").write_text(CLIENT, encoding="utf-8")
    return repo


@pytest.mark.e2e
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
