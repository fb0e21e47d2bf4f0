"""The client's pytest plugin: declares its loaders to pytest-tokcompat wherever the package is installed.

Off unless TOKCOMPAT_SELFTEST_CLIENT is set, so a self-test that installs this package somewhere
decides whether its loaders are judged there.
"""

from __future__ import annotations

import os
from typing import Any


def pytest_tokcompat_loaders(config: Any) -> list[Any] | None:
    if not os.environ.get("TOKCOMPAT_SELFTEST_CLIENT"):
        return None
    return [
        "cfg=tokcompat_selftest_client.loaders:config_only_alias",
        {
            "name": "repair",
            "call": "tokcompat_selftest_client.loaders:RepairedTokenizer.from_pretrained",
            "attr": "tokenizer",
        },
    ]
