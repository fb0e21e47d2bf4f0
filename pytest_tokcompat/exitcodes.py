"""The exit statuses of every ``tokcompat`` command, in one enum, so a value means one thing everywhere.

A leaf of the bottom layer: the CI tools (which import nothing of the engine) and the command line
both use it. Several names share a value where a command words the same outcome its own way.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    """Fine: the verdict is not broken, the grid is complete and has no alarm, the command did its job."""
    BROKEN = 1
    """``check``: wrong ids for every remedy, or not what the matrix (or --expect) says."""
    ALARMS = 1
    """``report``, ``grid``: alarms or unexpected verdicts (also when the grid is incomplete)."""
    GH_FAILED = 1
    """``issues-sync``: gh failed."""
    DIFFERS = 1
    """``golden``: the golden ids differ from what the independent implementation gives now."""
    BAD_INPUT = 2
    """Bad input: an unusable argument, file, setting or report; the message says what to fix."""
    NOT_CHECKED = 3
    """``check``: could not be checked here (an uncached hub id offline, no ground truth, unreadable files)."""
    INCOMPLETE = 3
    """``report``, ``grid``, ``issue-text``: the grid is incomplete and has no alarm."""
    FINDINGS = 4
    """``check``: right ids on ordinary text, with findings that no matrix entry acknowledges."""
