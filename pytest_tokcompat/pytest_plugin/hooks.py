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
    from pytest_tokcompat.matrix.clients import ClientLoader


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


@pytest.hookspec
def pytest_tokcompat_loaders(
    config: pytest.Config,
) -> Iterable[str | ClientLoader | Mapping[str, Any]] | None:
    """The client loaders this project (or an installed client package's plugin) wants judged.

    Return a list of loader specs: ``"[NAME=]MODULE:CALLABLE[:ATTR.PATH]"`` strings (as
    ``--tokcompat-loader`` takes), ``pytest_tokcompat.matrix.clients.ClientLoader`` objects,
    or mappings as the matrix's ``loaders:`` entries (``name``, ``call``, optional ``attr``,
    ``kwargs`` and ``native_since``); or None. Every implementation is called (not first-result) and
    the lists are concatenated after the matrix's loaders, before the ini option's and the command
    line's. A client package that ships a pytest plugin (a ``pytest11`` entry point) implementing
    this hook gets its loader judged wherever it is installed, e.g. in each release of
    ``tokcompat grid --with PACKAGE``. A loader that gives wrong ids or cannot be called fails the
    case's item (a ``loader-drift`` or ``loader-error`` alarm); one plain AutoTokenizer made
    unnecessary raises ``loader-obsolete`` until ``native_since`` records the release. Called once
    per run, only under ``--tokcompat``.
    """
