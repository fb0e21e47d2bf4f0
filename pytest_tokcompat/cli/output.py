"""What the commands print: credentials masked and control characters shown escaped, on every line."""

from __future__ import annotations

import sys
from typing import Any


def say(text: str, file: Any = None) -> None:
    """One line (or several) of output: a checkpoint's special tokens, model_type or messages may hold
    ANSI escapes or a token, and reports repeat them."""
    from pytest_tokcompat.credentials import scrub
    from pytest_tokcompat.inert import terminal

    print(terminal(scrub(text), newlines=True), file=file or sys.stdout)


def progress(line: str) -> None:
    """A line of a long command's progress, flushed at once (a CI log shows it as it happens); escaped
    and masked as ``say`` does (it names cases and quotes messages)."""
    from pytest_tokcompat.credentials import scrub
    from pytest_tokcompat.inert import terminal

    print(terminal(scrub(line), newlines=True), flush=True)
