"""Everything an attempt starts ends with the attempt, whatever it does to its session or process group.

A process group is not enough: a grandchild that calls ``setsid()`` after a double fork leaves it and
outlives the run (it could rewrite the report after pytest exits). So, on Linux, the fork server makes
each attempt's child the first process (PID 1) of a PID namespace of its own where the kernel allows
one (``CAP_SYS_ADMIN``): when that process ends, however it ends, the kernel kills every process in
the namespace, and nothing inside can signal a process outside it (the fork server, the run). Where
the kernel also allows a mount namespace, the child gets one with a ``/proc`` of its own and its
checkpoint read-only (``mounts``): then it cannot read the run's ``/proc/<pid>/environ`` either. Where
it does not, the fork server is a child subreaper (``PR_SET_CHILD_SUBREAPER``): every orphan the
attempt leaves is re-parented to the server, which kills and reaps all of them before it reports the
attempt's end. Elsewhere (no prctl) only the process group is killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from pathlib import Path

from pytest_tokcompat.judge import mounts, userns

USER_NAMESPACE = "user+pid+mount-namespace"
MOUNT_NAMESPACE, NAMESPACE = "pid+mount-namespace", "pid-namespace"
SUBREAPER, GROUP = "subreaper", "process-group"
"""How the fork server contains its attempts, strongest first (``user+``: a normal user's, in a user
namespace of the fork server's own; as strong as root's)."""
PROC_HIDDEN = {USER_NAMESPACE: True, MOUNT_NAMESPACE: True, NAMESPACE: False, SUBREAPER: False, GROUP: False}
"""Whether an attempt in each mode is kept from the host's ``/proc`` (other processes' environ, fd, mem)."""
_PR_SET_CHILD_SUBREAPER = 36
_CLONE_NEWPID = 0x20000000
_PROC = Path("/proc")


def describe(mode: str) -> str:
    """The mode as a run reports it: ``pid+mount-namespace (proc hidden: yes)``."""
    return f"{mode} (proc hidden: {'yes' if PROC_HIDDEN.get(mode) else 'no'})"


def libc() -> ctypes.CDLL | None:
    """The C library, on Linux only (None elsewhere: nothing here applies)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


class Containment:
    """The fork server's side: set up once, then :meth:`before_fork`/:meth:`after_fork` around each
    attempt's fork and :meth:`reap` after it ends."""

    def __init__(self, wanted: str = MOUNT_NAMESPACE) -> None:
        self._libc = libc()
        self._own_namespace: int | None = None
        self.mode = GROUP
        if self._libc is None:
            return
        if become_subreaper(self._libc):
            self.mode = SUBREAPER
        in_user_namespace = (
            wanted == MOUNT_NAMESPACE
            and self.mode == SUBREAPER
            and userns.enter(self._libc)
            and userns.become_init(self._libc)
            and become_subreaper(self._libc)
        )
        if wanted in (NAMESPACE, MOUNT_NAMESPACE) and self.mode == SUBREAPER:
            with contextlib.suppress(OSError):
                handle = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
                if self._libc.unshare(_CLONE_NEWPID) == 0 and self._libc.setns(handle, _CLONE_NEWPID) == 0:
                    self._own_namespace, self.mode = handle, NAMESPACE
                else:
                    os.close(handle)
        if wanted == MOUNT_NAMESPACE and self.mode == NAMESPACE and self._mounts_work():
            self.mode = USER_NAMESPACE if in_user_namespace else MOUNT_NAMESPACE
        if not PROC_HIDDEN[self.mode]:  # its attempts run as the same user and see its /proc entries
            userns.undumpable(self._libc)

    def _mounts_work(self) -> bool:
        """Try the attempt's mount namespace once, in a throwaway child made like an attempt's."""
        contained = self.before_fork()
        pid = os.fork()
        if pid == 0:
            self.after_fork(in_child=True)
            os._exit(mounts.trial(self._libc) if contained and self._libc is not None else 1)
        if contained:
            self.after_fork(in_child=False)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0

    def enter_mounts(self, job: object) -> None:
        """In an attempt's child: its own mounts where this server's mode has them (MountError: failed)."""
        if not PROC_HIDDEN[self.mode] or self._libc is None:
            return
        if not in_namespace_init():  # a fresh /proc would show the host's processes
            raise mounts.MountError(0, "the attempt is not PID 1 of its own PID namespace")
        readonly = mounts.readonly_paths(job)
        mounts.enter(self._libc, readonly, mounts.writable_paths(readonly), mounts.hidden_files(job))

    def before_fork(self) -> bool:
        """Make the next child PID 1 of a new PID namespace; False where that failed (then subreaper only)."""
        return (
            self._libc is not None
            and self._own_namespace is not None
            and self._libc.unshare(_CLONE_NEWPID) == 0
        )

    def after_fork(self, in_child: bool) -> None:
        """In the server, later children start in its own namespace again; in the child, the handle goes."""
        if self._own_namespace is None or self._libc is None:
            return
        if in_child:
            os.close(self._own_namespace)
            self._own_namespace = None
        elif self._libc.setns(self._own_namespace, _CLONE_NEWPID) != 0:
            raise OSError(ctypes.get_errno(), "setns back to the fork server's PID namespace failed")

    def reap(self) -> None:
        """Kill and reap every child left (orphans of the attempt re-parented to this subreaper)."""
        if self.mode != GROUP:
            reap_children()


def become_subreaper(c_library: ctypes.CDLL | None = None) -> bool:
    """Make this process the one its descendants' orphans are re-parented to (False: not on this system)."""
    c_library = c_library if c_library is not None else libc()
    return c_library is not None and c_library.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def reap_children() -> None:
    """Kill and reap every child of this process, and the children each leaves to it, until none is left."""
    for _ in range(10_000):
        left = children("self")  # never by pid: in a PID namespace getpid() is not what /proc calls it
        if not left:
            return
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in left:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, 0)  # its own children are ours from the moment it is gone


def in_namespace_init() -> bool:
    """True in an attempt's child that is PID 1 of its own namespace."""
    return os.getpid() == 1


def _stat(pid: int | str) -> tuple[str, int] | None:
    """The state letter and parent pid of a process (None: gone, or no /proc)."""
    try:
        text = (_PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    try:
        return fields[0], int(fields[1])
    except (IndexError, ValueError):
        return None


def children(pid: int | str) -> list[int]:
    """The direct children of ``pid`` (or ``"self"``), zombies included."""
    found: list[int] = []
    tasks = _PROC / str(pid) / "task"
    try:
        for task in tasks.iterdir():
            found += [int(p) for p in (task / "children").read_text(encoding="ascii").split()]
        return found
    except OSError:  # no CONFIG_PROC_CHILDREN: scan every process
        own = int(os.readlink(_PROC / "self")) if pid == "self" else pid
        return [child for child, parent in _parents().items() if parent == own]


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for entry in _PROC.iterdir():
            if entry.name.isdigit():
                stat = _stat(entry.name)
                if stat is not None:
                    parents[int(entry.name)] = stat[1]
    return parents


def host_pid(server: int, reported: int) -> int | None:
    """The pid, as this process sees it, of the fork server's child that the server calls ``reported``,
    where the server runs as PID 1 of a PID namespace below its own process ``server`` (a normal user's
    user namespace): the ``NSpid`` of its children, one level down. None: that child is gone already."""
    level = len(_nspids("self"))
    for inner in children(server):
        for pid in children(inner):
            ids = _nspids(pid)
            if len(ids) > level and ids[level] == reported:
                return pid
    return None


def _nspids(pid: int | str) -> list[int]:
    """A process's pid in its own PID namespace and each one above it, outermost first (``NSpid``)."""
    try:
        for line in (_PROC / str(pid) / "status").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("NSpid:"):
                return [int(number) for number in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (zombies left out: they hold nothing and run nothing)."""
    parents = _parents()
    below: dict[int, list[int]] = {}
    for child, parent in parents.items():
        below.setdefault(parent, []).append(child)
    found, queue = [], list(below.get(pid, []))
    while queue:
        current = queue.pop()
        state = _stat(current)
        if state is not None and state[0] not in "ZX":
            found.append(current)
        queue += below.get(current, [])
    return found


def stopped(pid: int) -> bool:
    """True where ``pid`` is stopped (SIGSTOP, SIGTSTP) or stopped by a tracer."""
    state = _stat(pid)
    return state is not None and state[0] in "Tt"


def kill_tree(pid: int) -> None:
    """Kill ``pid`` and everything below it: the root is frozen first (it cannot start or reap anything
    meanwhile, and as a subreaper it keeps every orphan in the tree), then the tree, then the root."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGSTOP)
    for _ in range(100):
        below = descendants(pid)
        if not below:
            break
        for child in below:
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
        time.sleep(0.01)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
