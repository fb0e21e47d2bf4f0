"""Every error pytest-tokcompat raises on purpose, under one base class.

A caller (a benchmark client around ``load_tokenizer()``, a CI script around the
CLI) catches ``TokcompatError`` and gets a message that names the input, what is
wrong with it and what to do; anything else escaping is a bug of ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class TokcompatError(Exception):
    """Base of every deliberate pytest-tokcompat error; the message says what to do."""


class MatrixError(TokcompatError):
    """Every problem found in one matrix file (``problems``: located, each with its fix)."""

    def __init__(self, problems: Sequence[Any]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


class SnapshotError(TokcompatError):
    """A snapshot cannot be assembled; the message says which file and how to fix it."""


class CheckpointError(TokcompatError):
    """The checkpoint's own files are unreadable; the message names the file and the fix."""


class NotReachable(TokcompatError):
    """The checkpoint's files cannot be had here (hub offline, not cached): not checked, never passed."""


class RepoNotFound(NotReachable):
    """The hub answered that the repo does not exist (or is private and the token has no access)."""


class NotRunnable(TokcompatError, ValueError):
    """The target cannot run as given (remote code at a movable revision, a bad name); says the fix."""


class UnknownName(NotRunnable):
    """A name that is neither a folder, a hub repo id, nor a served name or case id of the matrix."""


class TokenizerBroken(TokcompatError, RuntimeError):
    """No remedy gives right ids on ordinary text, or a clean contract was required (``strict``/``require``)
    and a finding stands in the way; the message lists every attempt."""

    def __init__(self, message: str, judgement: Any) -> None:
        super().__init__(message)
        self.judgement = judgement


class AliasError(TokcompatError, ValueError):
    """A declared alias (matrix, hook or ``load_tokenizer(aliases=...)``) that cannot be used as given;
    the message names where it is declared, what is wrong and the fix."""


class ConfigError(TokcompatError):
    """``[tool.tokcompat]`` (or ``TOKCOMPAT_CONFIG``) cannot be used: the message names the file and the fix."""


class ReportError(TokcompatError):
    """A report that cannot be read, validated or merged: the message names the file and what is wrong."""


class ReleaseError(TokcompatError):
    """The transformers releases could not be found: the message says where and why."""


class BisectError(TokcompatError):
    """A refusal of bisect: the range has nothing to find, or an environment cannot be built."""


class BuildError(BisectError):
    """An environment for one release could not be built or could not judge."""
