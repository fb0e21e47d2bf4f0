"""transformers' import notice "PyTorch was not found", dropped for the tokenizer-only front-ends.

A tokenizer needs no PyTorch, so every ``tokcompat check`` and ``load_tokenizer()`` in a
tokenizer-only install would print that line first. The filter goes on transformers' logger
before transformers is imported, drops that one message (which transformers logs only while
importing), then removes itself; every other message of transformers reaches its handlers.
"""

from __future__ import annotations

import logging
import sys

NOTICE = "PyTorch was not found."
LOGGER = "transformers"


class DropTorchNotice(logging.Filter):
    """Drops the first record that starts with :data:`NOTICE`, then leaves the logger."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(NOTICE):
            return True
        logging.getLogger(LOGGER).removeFilter(self)
        return False


def drop_torch_notice() -> None:
    """Before transformers is imported: its PyTorch notice is not printed (nothing else changes).
    Where transformers is already imported the notice has been printed or not; nothing is added."""
    if LOGGER in sys.modules:
        return
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(existing, DropTorchNotice) for existing in logger.filters):
        logger.addFilter(DropTorchNotice())
