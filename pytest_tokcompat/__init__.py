"""pytest-tokcompat: which remedy a Hugging Face tokenizer needs, per transformers release, and whether its ids stay right."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "load_tokenizer"]


def __getattr__(name: str) -> Any:
    # load_tokenizer pulls in transformers; keep `import pytest_tokcompat` (and pytest start-up) light.
    if name == "load_tokenizer":
        from pytest_tokcompat.torch_notice import drop_torch_notice

        drop_torch_notice()
        from pytest_tokcompat.api import load_tokenizer

        return load_tokenizer
    raise AttributeError(name)
