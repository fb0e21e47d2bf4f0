"""A checkpoint's files are looked at before anything opens them: special files and dangling links are
not-checked, never read.

A ``tokenizer.json`` that is a dangling symlink (a hub cache whose blob was deleted) is invisible to
``is_file()``: the folder then looks like a checkpoint without one, every remedy fails, and an entry
that expects ``broken`` passes with nothing checked. A FIFO blocks whoever opens it for reading (the
judge, transformers) until the time limit. So each file is ``lstat``-ed, its target ``stat``-ed, and
it is opened only with ``O_NONBLOCK`` to prove it readable; anything else stops the judgement with a
one-line error naming the file (the case is not-checked, and an ``expect: broken`` entry fails).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from pytest_tokcompat.errors import CheckpointError
from pytest_tokcompat.judge.static import TOKENIZER_FILES

CHECKED_FILES = ("config.json", *TOKENIZER_FILES)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_checkpoint_files(folder: Path, max_file_mb: float) -> None:
    """Refuse, before anything parses them, checkpoint files that are special files, dangling links,
    unreadable or over the size cap; files that are absent are left to the judgement."""
    _check_named_files(folder, max_file_mb)
    _check_every_entry(folder)


def _check_every_entry(folder: Path) -> None:
    """A special file or dangling link anywhere in the folder is refused too: a loader reads files by
    names the checkpoint chooses (``vocab_file``, ``auto_map`` modules, chat templates), and opening a
    FIFO blocks. Links to regular files elsewhere stay allowed: a hub cache snapshot is made of them."""
    for here, dirs, files in os.walk(folder, onerror=None, followlinks=False):
        for name in (*dirs, *files):
            path = Path(here) / name
            try:
                mode = path.stat().st_mode
            except FileNotFoundError:
                raise CheckpointError(
                    f"{path} is a symlink to something that does not exist (a deleted hub cache blob?); "
                    "re-download the checkpoint or delete the link"
                ) from None
            except OSError as error:
                raise CheckpointError(f"{path} cannot be read ({error.strerror}); re-download it") from None
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise CheckpointError(
                    f"{path} is {_kind(mode)}, not a regular file: opening it could block the judge; "
                    "remove it from the checkpoint folder"
                )


def _check_named_files(folder: Path, max_file_mb: float) -> None:
    for name in CHECKED_FILES:
        path = folder / name
        try:
            link = path.lstat()
        except FileNotFoundError:
            continue
        except OSError as error:
            raise CheckpointError(f"{path} cannot be read ({error.strerror}); re-download it") from None
        try:
            target = path.stat()
        except FileNotFoundError:
            pointed = "?"
            with contextlib.suppress(OSError):
                pointed = os.readlink(path)
            raise CheckpointError(
                f"{path} is a symlink to {pointed}, which does not exist (a deleted hub cache blob?); "
                "re-download the checkpoint"
            ) from None
        except OSError as error:
            raise CheckpointError(f"{path} cannot be read ({error.strerror}); re-download it") from None
        if not stat.S_ISREG(target.st_mode):
            via = " (through a symlink)" if stat.S_ISLNK(link.st_mode) else ""
            raise CheckpointError(
                f"{path} is {_kind(target.st_mode)}{via}, not a regular file; "
                "replace it with the checkpoint's file"
            )
        try:  # regular by now; O_NONBLOCK all the same, should it be swapped for a FIFO meanwhile
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)))
        except OSError as error:
            raise CheckpointError(
                f"{path} cannot be read ({error.strerror}); fix its permissions or re-download it"
            ) from None
        if target.st_size > max_file_mb * 1024 * 1024:
            raise CheckpointError(
                f"{path} is {target.st_size / 1024 / 1024:.0f} MB, over the {max_file_mb:g} MB cap; "
                "if the file is genuine, raise --tokcompat-max-file-mb"
            )
