"""The judge's limits, each declared once with its flag, ini key and environment variable.

As pytest-timeout does for ``--timeout``: the flag wins, then the variable, then the ini key,
then the default, and a value that is not a number (or NaN, infinite, out of range) is refused
with the name of where it came from, never silently replaced by the default.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass

from pytest_tokcompat import environment


@dataclass(frozen=True)
class LimitSetting:
    """One limit: its key in :class:`~pytest_tokcompat.judge.judgement.Limits` and where a user sets it."""

    key: str
    unit: str
    default: float
    help: str
    zero_means_none: bool
    """``0`` switches the limit off (a time limit, a memory cap); else the value must be positive."""

    @property
    def flag(self) -> str:
        return "--tokcompat-" + self.key.replace("_", "-")

    @property
    def ini(self) -> str:
        return "tokcompat_" + self.key

    @property
    def variable(self) -> str:
        return "TOKCOMPAT_" + self.key.upper()

    def parse(self, text: str) -> float:
        """The value of ``text``; argparse's error type, so a bad flag is pytest's usage error."""
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of {self.unit}") from None
        if math.isnan(value) or math.isinf(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of {self.unit}")
        if self.zero_means_none and value < 0:
            raise argparse.ArgumentTypeError(f"{text!r} is negative: give {self.unit}, or 0 for no limit")
        if not self.zero_means_none and value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} is not a positive size in {self.unit}")
        return value


LOAD_TIMEOUT = LimitSetting(
    "load_timeout", "seconds", 300.0, "time limit of one tokenizer load, 0 for none", True
)
MAX_FILE_MB = LimitSetting(
    "max_file_mb", "megabytes", 512.0, "refuse tokenizer files larger than this", False
)
MAX_MEMORY_MB = LimitSetting(
    "max_memory_mb", "megabytes", 8192.0, "address space one attempt's process may map, 0 for no cap", True
)
SETTINGS: tuple[LimitSetting, ...] = (LOAD_TIMEOUT, MAX_FILE_MB, MAX_MEMORY_MB)


class LimitError(ValueError):
    """A limit's value, from the environment or an ini file, that cannot be used."""


def resolve(
    setting: LimitSetting,
    flag: float | None = None,
    ini: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> float:
    """The limit's value: ``flag`` (already parsed), then ``$TOKCOMPAT_<KEY>``, then ``ini``, then the default."""
    if flag is not None:
        return flag
    for where, text in (
        (f"${setting.variable}", environment.read(setting.variable, environ)),
        (f"ini {setting.ini}", ini),
    ):
        if text is not None and text.strip():
            try:
                return setting.parse(text.strip())
            except argparse.ArgumentTypeError as error:
                raise LimitError(f"{where}={text.strip()}: {error}") from None
    return setting.default


def or_none(setting: LimitSetting, value: float) -> float | None:
    """``None`` where ``0`` switches the limit off."""
    return None if setting.zero_means_none and value == 0 else value
