"""Counts tokenizer.json parses per case; a pytest plugin (``-p _parsecount``) and a library for the baseline.

Not a benchmark itself; overhead.py injects it into one extra, untimed run of each
side. It counts, per case (per test item name in pytest):

* ``from_file`` / ``from_str`` / ``from_buffer``: ``tokenizers.Tokenizer`` built from a
  serialized tokenizer (the Rust parse of tokenizer.json; transformers' from_str is
  its reduced tokenizer.json);
* ``py_open``: Python-level opens of a file named tokenizer.json (``json.load`` of the
  whole 8 MB document, seen through the ``open`` audit event);
* ``ground_truth``: calls of the ladder's ``ground_truth`` (plugin side only; the
  baseline records one per case).

Writes ``{label: {kind: count}}`` as JSON to $TOKCOMPAT_BENCH_COUNTS at exit.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from collections import Counter, defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

COUNTS: defaultdict[str, Counter[str]] = defaultdict(Counter)
_state = {"label": "<outside a case>", "installed": False}


def set_label(label: str) -> None:
    _state["label"] = label


def record(label: str, kind: str) -> None:
    COUNTS[label][kind] += 1


def _hit(kind: str) -> None:
    COUNTS[_state["label"]][kind] += 1


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        name = os.fsdecode(args[0])
        mode = args[1] if len(args) > 1 and isinstance(args[1], str) else "r"
        if name.endswith("tokenizer.json") and "w" not in mode and "a" not in mode:
            _hit("py_open")


def _proxy(real: type) -> type:
    class _Meta(type):
        def __instancecheck__(cls, obj: object) -> bool:
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, real)

        def __getattr__(cls, name: str) -> Any:
            return getattr(real, name)

    class CountingTokenizer(metaclass=_Meta):
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return real(*args, **kwargs)

        @staticmethod
        def from_file(*args: Any, **kwargs: Any) -> Any:
            _hit("from_file")
            return real.from_file(*args, **kwargs)

        @staticmethod
        def from_str(*args: Any, **kwargs: Any) -> Any:
            _hit("from_str")
            return real.from_str(*args, **kwargs)

        @staticmethod
        def from_buffer(*args: Any, **kwargs: Any) -> Any:
            _hit("from_buffer")
            return real.from_buffer(*args, **kwargs)

    CountingTokenizer.__name__ = CountingTokenizer.__qualname__ = "Tokenizer"
    return CountingTokenizer


def install() -> None:
    """Wrap ``tokenizers.Tokenizer`` everywhere it is bound, and the ladder's ground truth."""
    if _state["installed"]:
        return
    _state["installed"] = True
    import tokenizers
    import transformers.tokenization_utils_tokenizers  # noqa: F401  (binds Tokenizer at import)

    import pytest_tokcompat.judge.parity as parity
    import pytest_tokcompat.judge.reading as reading

    real = tokenizers.Tokenizer
    proxy = _proxy(real)
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            if value is real:
                namespace[name] = proxy
    original = reading.ground_truth

    def counted_ground_truth(*args: Any, **kwargs: Any) -> Any:
        _hit("ground_truth")
        return original(*args, **kwargs)

    reading.ground_truth = counted_ground_truth
    parity.ground_truth = counted_ground_truth
    sys.addaudithook(_audit)


def dump(path: str | Path) -> None:
    Path(path).write_text(json.dumps({k: dict(v) for k, v in COUNTS.items()}, indent=1), encoding="utf-8")


# -- pytest plugin side ------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    install()
    target = os.environ.get("TOKCOMPAT_BENCH_COUNTS")
    if target:
        atexit.register(dump, target)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    set_label(item.name)
    try:
        return (yield)
    finally:
        set_label("<outside a case>")
