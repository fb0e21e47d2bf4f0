"""Hook specifications of pytest-tokcompat, for conftest files and plugins.

Registered through ``pytest_addhooks``, so a conftest can implement them whether
or not ``--tokcompat`` is given; they are called only when the plugin needs them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_tokcompat.matrix.aliases import Alias


@pytest.hookspec
def pytest_tokcompat_aliases(config: pytest.Config) -> Iterable[Alias | Mapping[str, Any]] | None:
    """Aliases this project applies when it loads tokenizers (its own shims), for the run to judge.

    Return ``pytest_tokcompat.matrix.aliases.Alias`` objects or mappings with the same fields
    (model_type, base_config, upstream_issue; optional base_model_type, tokenizer_class,
    native_since, native_drift, reason), or None. Each is applied exactly as declared (omit
    base_model_type for a config-only alias), replaces a built-in or matrix alias of its
    model_type, and gets its own ``alias:<model_type>`` lifecycle test and alarms. Called once
    per run; the registry it builds is the run's, never the module-level REGISTRY.
    """
