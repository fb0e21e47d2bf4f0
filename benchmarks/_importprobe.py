"""Records which heavy libraries are imported by the end of collection; a pytest plugin (``-p _importprobe``).

Not a benchmark itself; collection.py injects it into one extra, untimed run. It
writes the sorted top-level names among transformers, tokenizers, tiktoken,
torch and huggingface_hub found in ``sys.modules`` at ``pytest_collection_finish``
(in the controller) to the file $TOKCOMPAT_BENCH_IMPORTS, as JSON.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

HEAVY = ("transformers", "tokenizers", "tiktoken", "torch", "huggingface_hub")


def heavy_imports() -> list[str]:
    return sorted({name.split(".")[0] for name in sys.modules if name.split(".")[0] in HEAVY})


def pytest_collection_finish(session: pytest.Session) -> None:
    target = os.environ.get("TOKCOMPAT_BENCH_IMPORTS")
    if target:
        Path(target).write_text(json.dumps(heavy_imports()), encoding="utf-8")
