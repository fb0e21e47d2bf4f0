"""A time limit on one block, inside whatever real-time timer already runs (pytest-timeout's, say).

In its own module because both sides use it: the child around its attempt, the plugin around a
fixture's load in the caller's process."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class LoadTimeout(Exception):
    """A load ran past its time limit (remote code that hangs, a pathological file)."""


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt the block after ``seconds``, inside whatever timer is already running.

    The process has one real-time timer (SIGALRM), and pytest-timeout's signal method
    uses it too. So: where an outer timer fires sooner, it is left alone to do its job;
    else ours is armed, and on exit the outer timer gets back its remaining time and
    its handler. Main thread only; elsewhere no limit is applied.
    """
    if (
        not seconds
        or threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
    ):
        yield
        return
    outer_left, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    if outer_left and outer_left <= seconds:
        yield  # the outer timer ends the block first, as its owner asked
        return
    outer_handler = signal.getsignal(signal.SIGALRM)
    armed = True

    def expire(signum: int, frame: Any) -> None:
        if armed:  # not when the alarm lands between the block's end and disarming
            raise LoadTimeout(f"the load took longer than {seconds:g} s (--tokcompat-load-timeout)")

    started = time.monotonic()
    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        # None: a handler not set from Python; the default is the closest we can restore.
        signal.signal(signal.SIGALRM, outer_handler if outer_handler is not None else signal.SIG_DFL)
        if outer_left:
            left = outer_left - (time.monotonic() - started)
            # A deadline that passed meanwhile still fires, at once (0 would disarm it instead).
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), outer_interval)
