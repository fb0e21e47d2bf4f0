"""The one exception a command raises for bad input, so ``main`` alone decides exit codes and wording."""

from __future__ import annotations


class BadInput(Exception):
    """Bad input for a command (exit 2): the message is one line saying what is wrong and how to fix it."""
