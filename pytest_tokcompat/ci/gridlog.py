"""The grid's logs (``build.log``, ``judge.log``) stay bounded: every run appends, so past a size they roll over.

The environments' runs write into the log through a file descriptor (tox's output), so a
logging handler cannot cap a run while it writes; the log is rolled over, as
:class:`logging.handlers.RotatingFileHandler` does (``judge.log.1`` ... ``.N``), before each
run appends to it. One run's output is kept whole; the logs of old runs are dropped.
"""

from __future__ import annotations

import logging.handlers
from pathlib import Path

LOG_MAX_BYTES = 8 * 1024 * 1024
LOG_BACKUPS = 3


def rotate_log(log: Path, max_bytes: int | None = None, backups: int = LOG_BACKUPS) -> None:
    """Roll ``log`` over to ``log.1`` (``log.1`` to ``log.2``, ... up to ``backups``) once it holds
    ``max_bytes`` (default :data:`LOG_MAX_BYTES`) or more; a smaller or missing log is left alone."""
    max_bytes = LOG_MAX_BYTES if max_bytes is None else max_bytes
    try:
        size = log.stat().st_size
    except OSError:
        return
    if size < max_bytes:
        return
    handler = logging.handlers.RotatingFileHandler(log, maxBytes=max_bytes, backupCount=backups, delay=True)
    try:
        handler.doRollover()
    finally:
        handler.close()
