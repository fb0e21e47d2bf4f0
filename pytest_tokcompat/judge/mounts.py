"""An attempt's own view of the file system: a ``/proc`` of its PID namespace, its checkpoint read-only.

A PID namespace hides no file: through the host's ``/proc`` remote code (same user) still reads the
run's ``/proc/<pid>/environ`` (its credentials), ``fd`` and ``mem``. So where the kernel allows it
(``CAP_SYS_ADMIN``), each attempt's child, already PID 1 of a namespace of its own, also gets a mount
namespace of its own: every mount made private (nothing propagates back), a fresh ``proc`` on
``/proc`` (only the namespace's own processes), and the checkpoint's folder, the hub cache it is read
from and the blobs behind its links bound read-only over themselves, so no attempt edits what a later
attempt, the truth or another run reads. Last, the child gives up the capabilities that would undo
this (``CAP_SYS_ADMIN``: unmount, remount, setns; ``CAP_DAC_READ_SEARCH``: ``open_by_handle_at``
through a writable mount of the same file system), for itself and anything it executes.
"""

from __future__ import annotations

import ctypes
import functools
import os
import site
import sys
import sysconfig
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_tokcompat.credentials import hf_home

CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
_KEPT_FLAGS = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC | 0x400 | 0x800  # and noatime, nodiratime (statvfs bits)
_PR_CAPBSET_DROP = 24
_CAP_DAC_READ_SEARCH, _CAP_SYS_ADMIN = 2, 21
DROPPED_CAPABILITIES = (_CAP_DAC_READ_SEARCH, _CAP_SYS_ADMIN)
_CAPABILITY_VERSION_3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


class MountError(OSError):
    """The attempt's mount namespace could not be set up as promised: the attempt must not run."""


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise MountError(errno, f"{what}: {os.strerror(errno)}")


def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int) -> int:
    encode = os.fsencode
    return int(
        libc.mount(
            encode(source) if source is not None else None,
            encode(target),
            encode(fstype) if fstype is not None else None,
            ctypes.c_ulong(flags),
            None,
        )
    )


def readonly_paths(job: Any) -> list[str]:
    """What the job's attempt reads and must not change: its folder (a hub snapshot's whole repo
    storage), the hub cache it loads from by repo id, and what its links point at (a snapshot's
    blobs); outermost first, none inside another, never ``/``."""
    found: list[str] = []
    folder = getattr(job, "folder", None)
    if folder:
        here = Path(os.path.realpath(folder))
        found.append(str(here.parent.parent if _in_hub_storage(here) else here))
        found += _link_targets(Path(folder))
    target = getattr(job, "target", None)
    cache_dir = getattr(target, "cache_dir", None)
    if cache_dir:
        found.append(os.path.realpath(cache_dir))
    wide = _wide_places(os.getcwd())
    for guarded in getattr(job, "guarded", None) or ():  # never so wide it holds the temp, home or work dir
        real = os.path.realpath(guarded)
        if not any(_within(place, real) for place in wide):
            found.append(real)
    found += site_paths()  # the interpreter's: the same for every attempt, found once
    return outermost(p for p in found if os.path.exists(p))


@functools.cache
def site_paths() -> tuple[str, ...]:
    """Where Python finds the code every later process of this interpreter runs at start: its
    site-packages (a ``.pth`` or ``sitecustomize`` dropped there runs in every later run), its standard
    library, its scripts (``bin/``) and ``pyvenv.cfg``, this package's own code (an editable install's
    source tree), and the user's site folder, or its nearest existing parent below the home folder (it
    is made on demand)."""
    keys = ("purelib", "platlib", "stdlib", "platstdlib", "scripts")
    found = {os.path.realpath(sysconfig.get_path(key)) for key in keys}
    found.add(os.path.realpath(os.path.join(sys.prefix, "pyvenv.cfg")))
    found.add(str(Path(__file__).resolve().parents[1]))  # pytest_tokcompat/, the judge's own code
    user = Path(site.getusersitepackages())
    home = Path.home().resolve()
    while not user.exists() and user.parent != user:
        user = user.parent
    if user.exists() and user.resolve() != home and home in user.resolve().parents:
        found.add(str(user.resolve()))
    return tuple(sorted(found))


def modules_cache() -> str:
    """Where transformers copies remote code before importing it (``HF_MODULES_CACHE``), as the fork
    server's environment, which transformers read at import, has it."""
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return os.path.realpath(os.environ.get("HF_MODULES_CACHE") or os.path.join(home, "modules"))


def writable_paths(readonly: Iterable[str]) -> list[str]:
    """What must stay writable inside the read-only paths: the modules cache, where a hub cache holds it
    (remote code is copied there to run; read-only, every opted-in load would fail as if broken)."""
    modules = modules_cache()
    return [modules] if any(_within(modules, path) for path in readonly) and os.path.isdir(modules) else []


def _in_hub_storage(folder: Path) -> bool:
    """Whether ``folder`` is ``models--owner--name/snapshots/<commit>`` of a hub cache."""
    storage = folder.parent.parent.name
    return folder.parent.name == "snapshots" and storage.startswith(("models--", "datasets--", "spaces--"))


def _link_targets(folder: Path) -> list[str]:
    """What the links under ``folder`` point at: the folder holding each target (a snapshot's blobs), or
    the target file alone where that folder would be too wide (it holds ``folder``, the temp or home dir)."""
    wide = _wide_places(str(folder))
    targets: list[str] = []
    for root, directories, files in os.walk(folder):
        for name in [*directories, *files]:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                continue
            real = os.path.realpath(path)
            holder = real if os.path.isdir(real) else os.path.dirname(real)
            if not any(_within(place, holder) for place in wide):
                targets.append(holder)
            elif os.path.isfile(real):
                targets.append(real)
    return targets


def _wide_places(also: str) -> list[str]:
    """Folders a read-only bind must never hold (the attempt writes there): the temp and home folders
    and ``also``."""
    return [os.path.realpath(p) for p in (also, tempfile.gettempdir(), os.path.expanduser("~"))]


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def outermost(paths: Iterable[str]) -> list[str]:
    """The paths without those inside another (and without ``/``: the attempt needs somewhere to write)."""
    kept: list[str] = []
    for path in sorted({os.path.normpath(p) for p in paths}, key=len):
        if path != os.sep and not any(_within(path, k) for k in kept):
            kept.append(path)
    return kept


def hub_caches(environ: Mapping[str, str]) -> list[str]:
    """The user's Hugging Face hub cache (``HF_HUB_CACHE``, else ``HF_HOME/hub``), where it exists: an
    attempt of any checkpoint may read there but never change another repo's files."""
    explicit = environ.get("HF_HUB_CACHE")
    hub = Path(os.path.expanduser(explicit)) if explicit else hf_home(environ) / "hub"
    return [str(hub)] if hub.is_dir() else []


def hidden_files(job: Any) -> list[str]:
    """The job's files to show empty (the stored hub tokens): those that are regular files now."""
    return [path for path in getattr(job, "hidden", None) or () if os.path.isfile(path)]


def enter(
    libc: ctypes.CDLL, readonly: list[str], writable: Iterable[str] = (), hidden: Iterable[str] = ()
) -> None:
    """In the attempt's child (PID 1 of its namespace, one thread): its own mounts, a fresh ``/proc``,
    ``readonly`` bound read-only (``writable`` inside them bound writable again), ``os.devnull`` bound
    over each ``hidden`` file, then the capabilities that could undo it dropped. MountError: any step
    failed (the caller does not run the attempt then)."""
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(_mount(libc, None, "/", None, _MS_REC | _MS_PRIVATE), "making every mount private")
    _check(_mount(libc, "proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC), "mounting /proc")
    for path, mode in [*((p, _MS_RDONLY) for p in readonly), *((p, 0) for p in writable)]:
        kept = os.statvfs(path).f_flag & _KEPT_FLAGS  # a bind is remounted with exactly the flags given
        _check(_mount(libc, path, path, None, _MS_BIND | _MS_REC), f"binding {path}")
        _check(_mount(libc, None, path, None, _MS_REMOUNT | _MS_BIND | mode | kept), f"remounting {path}")
    for path in hidden:
        _check(_mount(libc, os.devnull, path, None, _MS_BIND), f"hiding {path}")
    drop_capabilities(libc, DROPPED_CAPABILITIES)


def drop_capabilities(libc: ctypes.CDLL, capabilities: Iterable[int]) -> None:
    """Drop ``capabilities`` from this process's bounding, effective, permitted and inheritable sets."""
    header, data = _Header(_CAPABILITY_VERSION_3, 0), (_Data * 2)()
    _check(libc.capget(ctypes.byref(header), data), "capget")
    for capability in capabilities:
        _check(libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0), f"dropping capability {capability}")
        word, bit = divmod(capability, 32)
        mask = ~(1 << bit) & 0xFFFFFFFF
        data[word].effective &= mask
        data[word].permitted &= mask
        data[word].inheritable &= mask
    _check(libc.capset(ctypes.byref(header), data), "capset")


def trial(libc: ctypes.CDLL) -> int:
    """In a throwaway child made like an attempt's: 0 where :func:`enter` works and the fresh ``/proc``
    shows this process alone (PID 1 of its namespace), else 1. For the fork server's one check at start."""
    try:
        enter(libc, [])
        return 0 if [entry for entry in os.listdir("/proc") if entry.isdigit()] == ["1"] else 1
    except BaseException:
        return 1
