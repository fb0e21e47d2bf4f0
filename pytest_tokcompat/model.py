"""The vocabulary every layer shares: outcomes, verdicts, statuses, alias states and alarm kinds.

They are ``str`` enums so that the JSON report (the contract between the grid job
and the issues job) holds plain strings, while code compares typed members and a
missed spelling is a type error instead of a silent mismatch. Imports nothing.
"""

from __future__ import annotations

from enum import Enum


class _Text(str, Enum):
    """A string enum whose str() is its value (as in the JSON report)."""

    def __str__(self) -> str:
        return str(self.value)


class Remedy(_Text):
    """A rung of the ladder, in the order they are tried (least a user must do first)."""

    NATIVE = "native"
    AUTO_MAP = "auto_map"
    ALIAS = "alias"


class Outcome(_Text):
    """What a matrix entry may expect."""

    NATIVE = "native"
    AUTO_MAP = "auto_map"
    ALIAS = "alias"
    BROKEN = "broken"


class Verdict(_Text):
    """What a judgement found: a remedy, broken, or not-checked (it could not be judged here)."""

    NATIVE = "native"
    AUTO_MAP = "auto_map"
    ALIAS = "alias"
    BROKEN = "broken"
    NOT_CHECKED = "not-checked"


class AttemptStatus(_Text):
    """How one remedy fared."""

    OK = "ok"
    DRIFT = "drift"
    """Loads, but ids (or another contract dimension) differ from the ground truth."""
    LOAD_ERROR = "load-error"
    ENCODE_ERROR = "encode-error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    """The attempt's process died (exit, signal, panic) before it reported."""
    NOT_CHECKED = "not-checked"
    """Loads, but there is no ground truth to check it against."""
    SKIPPED = "skipped"


FAILED_ATTEMPTS = frozenset(
    {
        AttemptStatus.DRIFT,
        AttemptStatus.LOAD_ERROR,
        AttemptStatus.ENCODE_ERROR,
        AttemptStatus.TIMEOUT,
        AttemptStatus.CRASHED,
    }
)
"""Attempts that ran and did not give a working tokenizer (a native registration that does this drifts)."""


class CaseStatus(_Text):
    """The test result of a case or alias item."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_CHECKED = "not-checked"


class AliasState(_Text):
    """What an alias is for under one transformers release."""

    UNUSED = "unused"
    """Plain loading keeps parity without it."""
    NEEDED = "needed"
    OBSOLETE = "obsolete"
    """transformers registers the model_type natively and plain loading keeps parity."""
    DRIFT = "drift"
    """The native registration gives wrong ids: the alias must stay."""
    BROKEN = "broken"
    """The alias is needed (plain loading fails) but, applied as declared, it does not give right ids
    either: a client's shim that loads and miscounts shows here."""
    NOT_CHECKED = "not-checked"


class AlarmKind(_Text):
    """A change upstream that a maintainer must act on."""

    UNEXPECTED_VERDICT = "unexpected-verdict"
    OBSOLETE_ALIAS = "obsolete-alias"
    NATIVE_DRIFT = "native-drift"
    REGISTRY_CHANGE = "registry-change"
    """transformers' tokenizer-relevant registries changed for an aliased or watched model_type between two
    releases (registered natively, a tokenizer mapping or an override-list entry added or dropped)."""


NOT_CHECKED = "not-checked"
"""The one spelling of 'could not be judged here', shared by verdicts, statuses and alias states."""
