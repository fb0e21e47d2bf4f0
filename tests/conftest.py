"""Self-test settings: never reach the hub, keep remote-code copies out of the user's cache,
and prove that no test leaves transformers' registries changed."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("HF_MODULES_CACHE", tempfile.mkdtemp(prefix="tokcompat-hf-modules-"))

# pytester's in-process runs drop the modules a run imported; Rust extension modules
# (tokenizers, tiktoken) cannot be imported twice in one process, so import them once here.
import tiktoken  # noqa: F401
import tokenizers  # noqa: F401
import transformers
from transformers import AutoTokenizer  # noqa: F401
from transformers.models.auto import tokenization_auto  # noqa: F401

# The judge's fork server belongs to the module that started it; imported here, pytester's in-process
# runs share one server instead of each starting (and importing transformers in) another.
import pytest_tokcompat.judge.child  # noqa: F401

transformers.logging.set_verbosity_error()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache of this test's own, offline."""
    root = tmp_path / "hf-cache"
    root.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


@pytest.fixture(autouse=True)
def _transformers_registries_unchanged() -> Iterator[None]:
    if "transformers" not in sys.modules:
        yield
        return
    from pytest_tokcompat.judge.isolation import registry_fingerprint

    before = registry_fingerprint()
    yield
    assert registry_fingerprint() == before, "the test left transformers' registries changed"
