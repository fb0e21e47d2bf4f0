"""pytest-tokcompat: which remedy a Hugging Face tokenizer needs, per transformers release, and whether its ids stay right.

The public API is ``__all__``; everything else is private by convention. Names are imported
lazily, so ``import pytest_tokcompat`` (and pytest start-up) does not import transformers.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_PUBLIC = {
    "load_tokenizer": "pytest_tokcompat.api",
    "LoadedTokenizer": "pytest_tokcompat.api",
    "Finding": "pytest_tokcompat.api",
    "TokenizerFindings": "pytest_tokcompat.api",
    "UnpinnedRemoteCode": "pytest_tokcompat.api",
    "Alias": "pytest_tokcompat.matrix.aliases",
    "TokcompatError": "pytest_tokcompat.errors",
    "TokenizerBroken": "pytest_tokcompat.errors",
    "NotReachable": "pytest_tokcompat.errors",
    "NotRunnable": "pytest_tokcompat.errors",
    "UnknownName": "pytest_tokcompat.errors",
    "CheckpointError": "pytest_tokcompat.errors",
    "SnapshotError": "pytest_tokcompat.errors",
    "MatrixError": "pytest_tokcompat.errors",
    "AliasError": "pytest_tokcompat.errors",
}
__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_tokcompat' has no attribute {name!r}")
    if module == "pytest_tokcompat.api":  # transformers' "PyTorch was not found" is no news to a client
        from pytest_tokcompat.torch_notice import drop_torch_notice

        drop_torch_notice()
    return getattr(import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
