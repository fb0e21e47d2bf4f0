"""``tokcompat``, the command line."""

from __future__ import annotations

from pytest_tokcompat.cli.main import (
    EXIT_BROKEN,
    EXIT_FINDINGS,
    EXIT_NOT_CHECKED,
    EXIT_OK,
    build_parser,
    main,
)

__all__ = ["EXIT_BROKEN", "EXIT_FINDINGS", "EXIT_NOT_CHECKED", "EXIT_OK", "build_parser", "main"]
