"""transformers' "PyTorch was not found" notice is dropped for check and load_tokenizer(); nothing else is."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator

import pytest

from pytest_tokcompat import torch_notice

NOTICE = "PyTorch was not found. Models won't be available and only tokenizers, configuration and file/data utilities can be used."


class Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def transformers_logger(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[logging.Logger, Kept]]:
    """transformers' logger as before transformers is imported, with a handler that keeps what it gets."""
    monkeypatch.delitem(sys.modules, "transformers", raising=False)
    logger, kept = logging.getLogger("transformers"), Kept()
    level, disabled = logger.level, logger.disabled
    logger.setLevel(logging.WARNING)
    logger.disabled = False
    logger.addHandler(kept)
    yield logger, kept
    logger.removeHandler(kept)
    logger.setLevel(level)
    logger.disabled = disabled
    for added in [f for f in logger.filters if isinstance(f, torch_notice.DropTorchNotice)]:
        logger.removeFilter(added)


def test_only_the_notice_is_dropped_once(transformers_logger: tuple[logging.Logger, Kept]) -> None:
    logger, kept = transformers_logger
    logger.warning(NOTICE)
    assert kept.messages == [NOTICE], "the control: without the filter the notice is logged"
    torch_notice.drop_torch_notice()
    torch_notice.drop_torch_notice()  # twice: still one filter
    assert sum(isinstance(f, torch_notice.DropTorchNotice) for f in logger.filters) == 1
    logger.warning("Some other warning of transformers")
    logger.warning(NOTICE)
    logger.warning(NOTICE)
    assert kept.messages == [NOTICE, "Some other warning of transformers", NOTICE]
    assert not logger.filters, "the filter leaves once it dropped the notice"
