"""``tokcompat``, the command line: one module per command (``register`` and ``run``), the options they
share in :mod:`~pytest_tokcompat.cli.options`, and :func:`~pytest_tokcompat.cli.main.main`, the one place
an error becomes an exit code (:class:`pytest_tokcompat.exitcodes.ExitCode`)."""

from __future__ import annotations

from pytest_tokcompat.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
