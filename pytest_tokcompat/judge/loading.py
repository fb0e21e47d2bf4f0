"""Loading a tokenizer as a remedy prescribes or a client's loader does, and what the load leaves behind.

What an attempt's child calls (``job.run_job``) and what the caller's own load calls (``inprocess``):
transformers' warnings, its version, the registrations a client's shim made."""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_tokcompat.judge.remedies import register_alias
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.sources.names import LoadTarget, served_offline


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.messages) < 5:
            self.messages.append(record.getMessage()[:300])


@contextmanager
def transformers_warnings() -> Iterator[list[str]]:
    """Collect what transformers warns during a load: it often names the very cause of a drift."""
    logger = logging.getLogger("transformers")
    handler = _Collect()
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield handler.messages
    finally:
        logger.removeHandler(handler)
        for warning in caught[: max(0, 5 - len(handler.messages))]:
            handler.messages.append(f"{warning.category.__name__}: {str(warning.message)[:300]}")


def transformers_version() -> str:
    """The transformers of this process: the imported module's own version where it is imported (free, and
    what runs), else the installed one's metadata (a scan of every distribution on sys.path): the caller's
    process need not import it."""
    imported = getattr(sys.modules.get("transformers"), "__version__", None)
    if isinstance(imported, str):
        return imported
    from importlib import metadata

    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        import transformers

        return str(transformers.__version__)


def load_with(
    folder: Path,
    remedy: str,
    alias: Alias | None = None,
    target: LoadTarget | None = None,
    repairs: Sequence[str] = (),
) -> Any:
    """Load the tokenizer as one remedy prescribes, by the client's name, with ``repairs`` applied on top;
    call inside ``isolated_transformers()``."""
    import transformers
    from transformers import AutoTokenizer

    from pytest_tokcompat.judge.repairs import apply_repair

    target = target or LoadTarget(str(folder))
    name, kwargs = target.name, target.kwargs()
    if remedy == "alias":
        if alias is None:
            raise ValueError("the alias remedy needs an alias")
        register_alias(alias)
        if alias.tokenizer_class:
            tokenizer = getattr(transformers, alias.tokenizer_class).from_pretrained(name, **kwargs)
        else:
            tokenizer = AutoTokenizer.from_pretrained(name, **kwargs)
    elif remedy == "backend":
        backend = getattr(transformers, "TokenizersBackend", None) or transformers.PreTrainedTokenizerFast
        tokenizer = backend.from_pretrained(name, **kwargs)
    else:
        tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=remedy == "auto_map", **kwargs)
    for repair in repairs:
        apply_repair(tokenizer, repair, folder)
    return tokenizer


def error_text(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:400] if text else ''}"


def call_client_loader(folder: Path, loader: ClientLoader, name: LoadTarget | None = None) -> Any:
    """Call the client's loader as the client does, and reach the tokenizer inside what it returns.

    By the name the client gives it (``name``): a hub repo id, with only what finding it offline in the
    tool's hub layout needs (``LoadTarget.client_environment``), so code that branches on HF_HUB_OFFLINE or
    on "is this a local path" takes the client's branch; else the folder's path."""
    import importlib

    target: Any = importlib.import_module(loader.module)
    for part in loader.callable.split("."):
        target = getattr(target, part)
    given = name or LoadTarget(str(folder))
    with served_offline(given):
        loaded = target(given.name, **loader.kwargs)
    for part in loader.attr.split(".") if loader.attr else ():
        loaded = getattr(loaded, part)
    if not callable(getattr(loaded, "encode", None)):
        raise TypeError(
            f"{loader.call}{':' + loader.attr if loader.attr else ''} returned a {type(loaded).__name__}, "
            "which has no encode(); give the attribute path to the tokenizer (MODULE:CALLABLE:ATTR)"
        )
    return loaded


def memory_hint(error: BaseException, max_memory_mb: float | None) -> str:
    text = error_text(error)
    if isinstance(error, MemoryError) and max_memory_mb:
        text += (
            f" (the attempt ran out of its {max_memory_mb:g} MB memory cap: raise TOKCOMPAT_MAX_MEMORY_MB "
            "if the tokenizer is genuine)"
        )
    return text


def native_replacements(model_type: str | None) -> list[str]:
    """What this process registered over transformers' own registration of ``model_type``: a config
    class or a tokenizer mapping given with ``exist_ok=True`` for a natively registered type."""
    try:
        from transformers.models.auto.configuration_auto import (  # type: ignore[attr-defined]
            CONFIG_MAPPING,
            CONFIG_MAPPING_NAMES,
        )
        from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING
    except ImportError:
        return []
    if model_type is None or model_type not in CONFIG_MAPPING_NAMES:
        return []
    found: list[str] = []
    config = getattr(CONFIG_MAPPING, "_extra_content", {}).get(model_type)
    if config is not None:
        found.append(
            f"AutoConfig's {model_type!r} is {_qualified(config)}, not transformers' own "
            f"{CONFIG_MAPPING_NAMES[model_type]}"
        )
    for key, value in getattr(TOKENIZER_MAPPING, "_extra_content", {}).items():
        if getattr(key, "model_type", None) == model_type:
            found.append(
                f"AutoTokenizer's mapping for {model_type!r} is {_qualified(value)}, registered over transformers' own"
            )
    return found


def registered_types() -> list[str]:
    """The model_types registered in this process beyond transformers' own (a client's shim, in the
    loader's child): AutoConfig's and AutoTokenizer's added entries."""
    try:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING
        from transformers.models.auto.tokenization_auto import TOKENIZER_MAPPING
    except ImportError:
        return []
    found = {str(name) for name in getattr(CONFIG_MAPPING, "_extra_content", {})}
    found |= {
        str(key.model_type)
        for key in getattr(TOKENIZER_MAPPING, "_extra_content", {})
        if isinstance(getattr(key, "model_type", None), str)
    }
    return sorted(found)


def _qualified(value: Any) -> str:
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_qualified(v) for v in value) + ")"
    if value is None:
        return "None"
    return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', type(value).__name__)}"
