"""The upstream watch: what the installed transformers' tokenizer-relevant registries say.

For every model_type a run cares about (its cases', its aliases' and their bases',
the matrix's ``watch:`` list), the report records the config mapping, the
tokenizer mapping and the hard-coded lists of model types and checkpoints whose
hub tokenizer class transformers overrides. The grid compares adjacent releases,
so a change upstream is news the night it lands, with or without a checkpoint.
Everything is read defensively (getattr): each release names and shapes these
differently, and some have no override list at all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_tokcompat.contract import registry_record
from pytest_tokcompat.credentials import without_credentials
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.model import OverrideKind, TrackedAs

KNOWN_OVERRIDE_LISTS = ("MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS", "MODEL_IDS_TO_TOKENIZERS_BACKEND")
"""The lists of model types (5.x) and checkpoint patterns (5.12 and later) whose hub tokenizer class
transformers replaces; any other upper-case list of strings in tokenization_auto is read as well, so a
list that a future release adds (or renames) shows up as an event rather than going unseen."""


def _tokenizer_value(value: Any) -> Any:
    """A TOKENIZER_MAPPING_NAMES value as JSON: a class name, [slow, fast] (4.x), or [] (no class)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (tuple, list)):
        return [item if isinstance(item, str) else None for item in value]
    return []


def override_lists(module: Any) -> dict[str, dict[str, Any]]:
    """Every upper-case module-level collection of strings in ``module`` (tokenization_auto): its kind
    (``checkpoints`` when its entries are repo ids or patterns, else ``model_types``) and sorted entries."""
    found: dict[str, dict[str, Any]] = {}
    for name in sorted(set(dir(module)) | set(KNOWN_OVERRIDE_LISTS)):
        if not name.isupper() or name.startswith("_"):
            continue
        value = getattr(module, name, None)
        if not isinstance(value, (list, set, tuple, frozenset)):
            continue
        if not all(isinstance(entry, str) for entry in value) and name not in KNOWN_OVERRIDE_LISTS:
            continue  # not a list of names
        entries = sorted({entry for entry in value if isinstance(entry, str)})
        kind = (
            OverrideKind.CHECKPOINTS if any("/" in entry for entry in entries) else OverrideKind.MODEL_TYPES
        )
        found[name] = {"kind": str(kind), "entries": entries}
    return found


def tracked_model_types(
    case_model_types: Iterable[str | None], registry: Mapping[str, Alias], watch: Iterable[str]
) -> dict[str, list[str]]:
    """Each model_type the run cares about, with why: matrix, alias, alias-base, watch."""
    tracked: dict[str, list[str]] = {}

    def add(model_type: str | None, why: TrackedAs) -> None:
        if model_type and why not in tracked.setdefault(model_type, []):
            tracked[model_type].append(str(why))

    for model_type in case_model_types:
        add(model_type, TrackedAs.MATRIX)
    for alias in registry.values():
        add(alias.model_type, TrackedAs.ALIAS)
        add(alias.base_model_type, TrackedAs.ALIAS_BASE)
    for model_type in watch:
        add(model_type, TrackedAs.WATCH)
    return dict(sorted(tracked.items()))


def registry_view(
    case_model_types: Iterable[str | None],
    registry: Mapping[str, Alias],
    watch: Iterable[str] = (),
    checkpoints: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """The report's ``registry`` object under the installed transformers (see contract.registry_record)."""
    import transformers
    from transformers.models.auto import configuration_auto, tokenization_auto

    config_names: Mapping[str, Any] = getattr(configuration_auto, "CONFIG_MAPPING_NAMES", {})
    tokenizer_names: Mapping[str, Any] = getattr(tokenization_auto, "TOKENIZER_MAPPING_NAMES", {})
    lists = override_lists(tokenization_auto)
    model_types: dict[str, dict[str, Any]] = {}
    for model_type, why in tracked_model_types(case_model_types, registry, watch).items():
        config = config_names.get(model_type)
        model_types[model_type] = {
            "tracked_as": why,
            "config": config if isinstance(config, str) else None,
            "tokenizer": _tokenizer_value(tokenizer_names[model_type])
            if model_type in tokenizer_names
            else None,
            "overrides": [
                name
                for name, found in lists.items()
                if found["kind"] == OverrideKind.MODEL_TYPES and model_type in found["entries"]
            ],
        }
    return registry_record(
        str(transformers.__version__),
        model_types,
        lists,
        aliases={alias.model_type: alias.to_json() for alias in registry.values()},
        watch=list(watch),
        checkpoints=dict(checkpoints or {}),
    )


class WatchUnreadable(RuntimeError):
    """The registries could not be read under this transformers; the message is the child's error."""


# ---- read in a child forked from the judge's warm server: the caller never imports transformers ---------


@dataclass
class WatchJob:
    """Read the registries in a child (``child.run``), as every attempt is: the pytest controller stays free
    of transformers, and nothing the read does outlives it."""

    case_model_types: list[str | None]
    registry: dict[str, Alias]
    watch: list[str]
    checkpoints: dict[str, str | None]
    environ: dict[str, str] = field(default_factory=lambda: without_credentials(os.environ))
    cwd: str = field(default_factory=os.getcwd)
    sys_path: list[str] = field(default_factory=lambda: [str(p) for p in sys.path])
    max_memory_mb: float | None = None
    isolation: str = "process"
    """How the parent runs the read (the ``isolation`` setting)."""

    def execute(self, emit: Callable[[dict[str, Any]], None], *, contain: bool) -> None:
        """In the child: the registry view as one message (or the error that kept it from being read)."""
        caught: tuple[type[BaseException], ...] = (BaseException,) if contain else (Exception,)
        try:
            view = registry_view(self.case_model_types, self.registry, self.watch, self.checkpoints)
        except caught as error:
            emit({"kind": "error", "detail": f"{type(error).__name__}: {error}"[:2000]})
            return
        emit({"kind": "registry", "registry": view})


def read_upstream(
    case_model_types: Iterable[str | None],
    registry: Mapping[str, Alias],
    watch: Iterable[str] = (),
    checkpoints: Mapping[str, str | None] | None = None,
    timeout: float | None = 120.0,
    isolation: str = "process",
) -> dict[str, Any]:
    """The report's ``registry`` object, read in a child process; WatchUnreadable saying why where it could
    not be read (the caller leaves the watch out of the report rather than lose the report)."""
    from pytest_tokcompat.judge import child

    job = WatchJob(
        list(case_model_types), dict(registry), list(watch), dict(checkpoints or {}), isolation=isolation
    )
    run = child.run(job, timeout)
    for message in run.messages:
        if message.get("kind") == "registry" and isinstance(message.get("registry"), dict):
            return dict(message["registry"])
    problems = [str(m.get("detail")) for m in run.messages if m.get("kind") == "error"]
    why = problems[0] if problems else (run.ended or ("timed out" if run.timed_out else "no answer"))
    raise WatchUnreadable(why)
