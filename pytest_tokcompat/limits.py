"""The judge's three limits, by the names callers have long imported; declared in ``settings.py``.

Each is a :class:`~pytest_tokcompat.settings.Setting` of :data:`pytest_tokcompat.settings.SETTINGS`
(flag, ini key, ``[tool.tokcompat]`` key and variable), resolved with every other setting by the one
rule there.
"""

from __future__ import annotations

from pytest_tokcompat.settings import LIMITS as SETTINGS
from pytest_tokcompat.settings import LOAD_TIMEOUT, MAX_FILE_MB, MAX_MEMORY_MB, Limits, or_none
from pytest_tokcompat.settings import Setting as LimitSetting
from pytest_tokcompat.settings import SettingError as LimitError

__all__ = [
    "LOAD_TIMEOUT",
    "MAX_FILE_MB",
    "MAX_MEMORY_MB",
    "SETTINGS",
    "LimitError",
    "LimitSetting",
    "Limits",
    "or_none",
]
