"""Every ``TOKCOMPAT_*`` variable, declared once, and the only module that reads them.

pytest-timeout gives each of its settings a flag, an ini key and an environment
variable, and says so in one table; here too. A reader finds in :data:`VARIABLES`
what the environment can change, the documentation's table is generated from it,
and the self-tests clear every ``TOKCOMPAT_*`` name, so a caller's environment
never changes a test's result. The modules that need a value ask :func:`read`; none
calls ``os.environ`` for a ``TOKCOMPAT_*`` name itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

PREFIX = "TOKCOMPAT_"


@dataclass(frozen=True)
class Variable:
    """One ``TOKCOMPAT_*`` variable: what it changes, its default, and whether users set it."""

    name: str
    meaning: str
    default: str = ""
    internal: bool = False
    """Set by the tool for its own runs (the grid's protocol with them, the self-tests); not for users."""


VARIABLES: tuple[Variable, ...] = (
    Variable(
        "TOKCOMPAT_MATRIX",
        "the matrix every command and the plugin use (a flag wins; it wins over `[tool.tokcompat]` and the "
        "ini option)",
        "`[tool.tokcompat] matrix`, else the project's `matrix/models.yaml` or `ci/tokenizers.yaml`, else the "
        "bundled one",
    ),
    Variable("TOKCOMPAT_REPORT", "the report folder of `pytest --tokcompat`", "`[tool.tokcompat] report`"),
    Variable(
        "TOKCOMPAT_OUTPUT",
        "`tokcompat grid`'s output folder",
        "`[tool.tokcompat] output`, else `tokcompat-grid`",
    ),
    Variable(
        "TOKCOMPAT_RELEASES",
        "`tokcompat grid`'s release spec",
        "`[tool.tokcompat] releases`, else `minors,pre`",
    ),
    Variable(
        "TOKCOMPAT_CONFIG",
        "the `pyproject.toml` whose `[tool.tokcompat]` table is read instead of searching from the current "
        "folder upwards; `none` reads none (the grid's own runs)",
        "the nearest `pyproject.toml` with the table",
    ),
    Variable(
        "TOKCOMPAT_LOAD_TIMEOUT",
        "time limit of one tokenizer load in seconds, `0` for none (`--tokcompat-load-timeout` and the ini "
        "key `tokcompat_load_timeout` say the same; the flag wins, then this variable, then `[tool.tokcompat] load_timeout`, then the ini key)",
        "300",
    ),
    Variable(
        "TOKCOMPAT_MAX_FILE_MB",
        "refuse tokenizer files larger than this (`--tokcompat-max-file-mb`, ini `tokcompat_max_file_mb`)",
        "512",
    ),
    Variable(
        "TOKCOMPAT_MAX_MEMORY_MB",
        "address space one attempt's process may map (`RLIMIT_AS`); `0` for no cap "
        "(`--tokcompat-max-memory-mb`, `[tool.tokcompat] max_memory_mb`, ini `tokcompat_max_memory_mb`)",
        "8192",
    ),
    Variable(
        "TOKCOMPAT_ISOLATION",
        "`inprocess` judges in the calling process, for benchmarks and debuggers only: no isolation holds then "
        "([isolation](../explanation/isolation.md)); `spawn` starts a fresh interpreter per attempt "
        "(a [setting](settings.md): `--tokcompat-isolation`, `[tool.tokcompat] isolation`, ini `tokcompat_isolation`)",
        "a child process per attempt, forked from a clean server",
    ),
    Variable(
        "TOKCOMPAT_CACHE",
        "the folder of assembled snapshots, shared by runs and xdist workers (its `verdicts/` and `truth/` hold "
        "the verdict and truth caches where their own settings are not given; a [setting](settings.md): "
        "`--tokcompat-cache`, `[tool.tokcompat] cache`, ini `tokcompat_cache`)",
        "`$XDG_CACHE_HOME/pytest-tokcompat/snapshots` (`~/.cache/…`)",
    ),
    Variable(
        "TOKCOMPAT_VERDICT_CACHE",
        "the verdict cache's folder; `off` or `0` switches it off (a [setting](settings.md): `--tokcompat-verdict-cache`, "
        "`[tool.tokcompat] verdict_cache`, ini `tokcompat_verdict_cache`)",
        "`$TOKCOMPAT_CACHE/verdicts`, else `$XDG_CACHE_HOME/pytest-tokcompat/verdicts`",
    ),
    Variable(
        "TOKCOMPAT_VERDICT_CACHE_MAX_MB",
        "the verdict cache is pruned to this size after each write, least recently used first (a "
        "[setting](settings.md))",
        "256",
    ),
    Variable(
        "TOKCOMPAT_TRUTH_CACHE",
        "the truth cache's folder (each checkpoint's probes and ground truth, by its files' content, the "
        "`tokenizers` version and the judge's; shared by every grid environment, rerun and run on the machine); "
        "`off` or `0` switches it off (a [setting](settings.md): `--tokcompat-truth-cache`, `[tool.tokcompat] "
        "truth_cache`, ini `tokcompat_truth_cache`)",
        "`$TOKCOMPAT_CACHE/truth`, else `$XDG_CACHE_HOME/pytest-tokcompat/truth`",
    ),
    Variable(
        "TOKCOMPAT_TRUTH_CACHE_MAX_MB",
        "the truth cache is pruned to this size after each write, least recently used first (a "
        "[setting](settings.md))",
        "256",
    ),
    Variable(
        "TOKCOMPAT_GRID_CACHE",
        "where `tokcompat grid` keeps its reused cells, keyed by content",
        "`~/.cache/pytest-tokcompat/grid/cells`",
    ),
    Variable(
        "TOKCOMPAT_UPSTREAM",
        "the transformers source `main` builds from (`--upstream` wins)",
        "the upstream repository",
    ),
    Variable(
        "TOKCOMPAT_CREDENTIAL_VARS",
        "further variable names to treat as credentials, comma-separated (`DEPLOY_SEED,ROBOT_CODE`)",
    ),
    Variable(
        "TOKCOMPAT_GRID_PROGRESS",
        "set by `tokcompat grid` for the runs it starts: where each run appends its progress",
        internal=True,
    ),
    Variable(
        "TOKCOMPAT_GRID_SELECT",
        "set by `tokcompat grid` for the runs it starts: which cells each run judges",
        internal=True,
    ),
    Variable(
        "TOKCOMPAT_GRID_WORKERS",
        "set by `tokcompat grid` for the tox runs it starts: the pytest-xdist workers each run gets where fewer "
        "environments than cores run (`0`: one process)",
        internal=True,
    ),
    Variable(
        "TOKCOMPAT_SET_BY_TOOL",
        "set by `tokcompat grid` for the runs it starts: the variables it set for its own runs (`HF_HUB_OFFLINE`), which a client's loader is called "
        "without",
        internal=True,
    ),
    Variable(
        "TOKCOMPAT_SELFTEST_CLIENT",
        "switches on the plugin of the self-tests' client package (`tests/data/client_pkg`); for the "
        "self-tests only",
        internal=True,
    ),
)
BY_NAME: Mapping[str, Variable] = {variable.name: variable for variable in VARIABLES}


def read(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of a declared variable, stripped; None where it is unset or empty.

    An undeclared name is a programming error (a typo would otherwise read nothing, silently).
    """
    if name not in BY_NAME:
        raise KeyError(f"{name} is not declared in pytest_tokcompat.environment.VARIABLES")
    value = (os.environ if environ is None else environ).get(name, "").strip()
    return value or None
