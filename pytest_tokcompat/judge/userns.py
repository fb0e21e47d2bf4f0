"""A normal user's way to the same namespaces as root's, and what guards the run where the kernel refuses it.

Creating PID and mount namespaces needs ``CAP_SYS_ADMIN``. A normal user gets it, inside a user namespace
of its own (``CLONE_NEWUSER``, where the kernel allows unprivileged ones): the fork server enters one at
start, mapping its own uid and gid to root there, and every attempt's namespaces are then made exactly as
for root. Its files stay the user's outside. Where that is refused (Ubuntu 24.04's AppArmor restriction,
containers without it), an attempt runs as the same user as the run: then the run's processes are made
non-dumpable (``PR_SET_DUMPABLE`` 0) while attempts can run, so a same-uid process can neither read their
``/proc/<pid>/environ`` or ``mem`` nor ``ptrace`` them.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Iterator

CLONE_NEWUSER, _CLONE_NEWPID = 0x10000000, 0x20000000
_PR_SET_DUMPABLE, _PR_GET_DUMPABLE, _PR_SET_PDEATHSIG = 4, 3, 1


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as stream:
        stream.write(text)


def _map_self(uid: int, gid: int) -> None:
    """This process's uid and gid are root's in its new user namespace (``setgroups`` denied first:
    the kernel's rule for an unprivileged ``gid_map``)."""
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"0 {uid} 1\n")
    _write("/proc/self/gid_map", f"0 {gid} 1\n")


def _allowed(libc: ctypes.CDLL, uid: int, gid: int) -> bool:
    """Whether a user namespace with our ids mapped can be made, tried in a throwaway child (a failed
    map would leave this process in a namespace where it owns nothing)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if libc.unshare(CLONE_NEWUSER) == 0:
                _map_self(uid, gid)
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def enter(libc: ctypes.CDLL) -> bool:
    """Make this (single-threaded) process root of a user namespace of its own; False where the kernel
    refuses, and then nothing changed. Never tried as root, which needs none."""
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0 or not _allowed(libc, uid, gid):
        return False
    if libc.unshare(CLONE_NEWUSER) != 0:
        return False
    _map_self(uid, gid)
    return True


def become_init(libc: ctypes.CDLL) -> bool:
    """Go on as PID 1 of a new PID namespace owned by this process's user namespace (False: refused).

    A process in a user namespace of its own may make new PID namespaces, but not go back into the one
    it came from (that needs ``CAP_SYS_ADMIN`` over the host's), which a fork server does after each
    attempt's fork. So it goes on in a child that is PID 1 of a PID namespace of its own user namespace,
    where it may; the process started as the server only waits for that child and ends as it ends (and
    the child dies with it)."""
    if libc.unshare(_CLONE_NEWPID) != 0:
        return False
    pid = os.fork()
    if pid == 0:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        return True
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: os.kill(pid, signal.SIGKILL))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def undumpable(libc: ctypes.CDLL) -> bool:
    """This process non-dumpable from now on (no same-uid reader of its environ or mem, no ptrace)."""
    return int(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0


@contextlib.contextmanager
def undumpable_while(libc: ctypes.CDLL | None, needed: bool) -> Iterator[None]:
    """This process non-dumpable for the duration where ``needed``; dumpable again after if it was."""
    if libc is None or not needed:
        yield
        return
    was = int(libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0))
    undumpable(libc)
    try:
        yield
    finally:
        if was > 0:
            libc.prctl(_PR_SET_DUMPABLE, was, 0, 0, 0)
