"""One configuration for every front-end: ``[tool.tokcompat]`` in the project's ``pyproject.toml``.

A client's repository names its matrix, report folder, loaders and release spec
once, and ``pytest --tokcompat`` and every ``tokcompat`` command read the same
values, so no command silently falls back to the bundled matrix. Each key is
taken from the first of: the command's flag, its environment variable,
``[tool.tokcompat]``, pytest's ini option (the plugin only), the default. The
``pyproject.toml`` is the nearest one with a ``[tool.tokcompat]`` table, from
the current folder upwards (as pytest finds its rootdir); ``TOKCOMPAT_CONFIG``
names one instead, or ``none`` for none (the grid's own runs).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat import environment
from pytest_tokcompat.errors import ConfigError
from pytest_tokcompat.matrix.discovery import bundled_matrix, default_matrix, find_rootdir
from pytest_tokcompat.settings import BY_KEY as JUDGE_KEYS
from pytest_tokcompat.settings import JudgeSettings, resolve_judge_settings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 install gets tomli (pyproject's dependencies)
    import tomli as tomllib

TABLE = "tool.tokcompat"
CONFIG_VAR = "TOKCOMPAT_CONFIG"
"""A ``pyproject.toml`` to read instead of searching, or ``none`` to read none."""
NO_CONFIG = "none"
PATH_KEYS = {
    "matrix": "the matrix YAML",
    "report": "the folder (or .json file) of pytest --tokcompat's reports, which tokcompat report reads",
    "output": "tokcompat grid's folder of reports, grid and work files",
}
TEXT_KEYS = {"releases": "tokcompat grid's release spec (e.g. 'minors,pre')"}
LIST_KEYS = {"loaders": "client loaders judged beside the verdict, [NAME=]MODULE:CALLABLE[:ATTR] each"}
KEYS = {**PATH_KEYS, **TEXT_KEYS, **LIST_KEYS, **{key: s.help for key, s in JUDGE_KEYS.items()}}
"""Every key ``[tool.tokcompat]`` accepts: the front-ends' own, and each judge setting's
(``pytest_tokcompat.settings``: ``load_timeout = 60``, ``truth_cache = "off"``)."""
ENV_VARS = {
    "matrix": "TOKCOMPAT_MATRIX",
    "report": "TOKCOMPAT_REPORT",
    "output": "TOKCOMPAT_OUTPUT",
    "releases": "TOKCOMPAT_RELEASES",
}
DEFAULT_OUTPUT = "tokcompat-grid"


@dataclass(frozen=True)
class ProjectConfig:
    """The ``[tool.tokcompat]`` table read, and the file it came from (None: no such table)."""

    path: Path | None = None
    values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> Path | None:
        return self.path.parent if self.path is not None else None


@dataclass(frozen=True)
class Settings:
    """The values a front-end runs with, each resolved once; ``origin`` says where each came from."""

    rootdir: Path
    config: Path | None
    matrix: Path
    report: Path | None
    output: Path
    releases: str | None
    loaders: tuple[str, ...]
    origin: Mapping[str, str]
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    """The judge's limits, isolation and caches (``pytest_tokcompat.settings``), resolved by the same rule."""


def _table(path: Path) -> dict[str, Any] | None:
    """The ``[tool.tokcompat]`` table of one pyproject.toml; None where it has none."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read it ({error.strerror or error})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid TOML ({error}); fix the file or remove it") from None
    tool = document.get("tool")
    table = tool.get("tokcompat") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{TABLE}] must be a table; write '[{TABLE}]' and keys under it")
    return table


def _checked(path: Path, table: dict[str, Any]) -> dict[str, Any]:
    for key, value in table.items():
        if key not in KEYS:
            raise ConfigError(
                f"{path}: [{TABLE}] has an unknown key {key!r}; use one of {', '.join(sorted(KEYS))}"
            )
        if key in JUDGE_KEYS and JUDGE_KEYS[key].kind == "number":
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                raise ConfigError(f"{path}: [{TABLE}] {key} must be a number, e.g. {key} = 60")
        elif key in LIST_KEYS:
            if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
                raise ConfigError(
                    f'{path}: [{TABLE}] {key} must be a list of strings, e.g. {key} = ["mypkg.tok:load"]'
                )
        elif not isinstance(value, str) or not value.strip():
            raise ConfigError(f'{path}: [{TABLE}] {key} must be a non-empty string, e.g. {key} = "..."')
    return table


def find_project_config(start: Path, environ: Mapping[str, str] | None = None) -> ProjectConfig:
    """The nearest ``pyproject.toml`` with ``[tool.tokcompat]`` from ``start`` upwards, validated."""
    environ = os.environ if environ is None else environ
    named = environment.read(CONFIG_VAR, environ) or ""
    if named.lower() == NO_CONFIG:
        return ProjectConfig()
    if named:
        path = Path(os.path.abspath(Path(start) / named))
        if not path.is_file():
            raise ConfigError(f"{CONFIG_VAR}={named}: no such file; name a pyproject.toml, or 'none'")
        table = _table(path)
        return ProjectConfig(path, _checked(path, table or {}))
    start = Path(os.path.abspath(start))
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            table = _table(candidate)
            if table is not None:
                return ProjectConfig(candidate, _checked(candidate, table))
    return ProjectConfig()


def library_settings(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> JudgeSettings:
    """The judge's settings of a library call (``load_tokenizer()``), which has no flags and no ini file:
    the variables, then ``[tool.tokcompat]`` of the nearest ``pyproject.toml`` with one, then the defaults."""
    here = Path(os.path.abspath(Path.cwd() if cwd is None else cwd))
    project = find_project_config(here, environ)
    table = (f"{project.path} [{TABLE}]", project.values, project.folder) if project.folder else None
    return resolve_judge_settings(environ=environ, table=table, cwd=here)


def resolve_settings(
    *,
    cwd: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    ini: Mapping[str, Any] | None = None,
    ini_root: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """The settings of one front-end: ``flags`` (the command line, relative to ``cwd``), the environment,
    ``[tool.tokcompat]`` (relative to its pyproject.toml), ``ini`` (pytest's, relative to ``ini_root``),
    then the defaults. A falsy value counts as not given. The judge's settings (``JUDGE_KEYS``) follow the
    same order; a value of theirs that cannot be used is a SettingError (a ConfigError) naming its source."""
    here = Path(os.path.abspath(Path.cwd() if cwd is None else cwd))
    environ = os.environ if environ is None else environ
    flags, ini = flags or {}, ini or {}
    project = find_project_config(here, environ)
    rootdir = project.folder or (Path(ini_root) if ini_root is not None else find_rootdir(here))
    origin: dict[str, str] = {}

    def pick(key: str) -> tuple[Any, Path] | None:
        variable = ENV_VARS.get(key)
        sources: list[tuple[str, Any, Path]] = [
            (f"--{key}", flags.get(key), here),
            (f"${variable}", environment.read(variable, environ) if variable else None, here),
            (f"{project.path} [{TABLE}]", project.values.get(key), project.folder or here),
            (f"ini tokcompat_{key}", ini.get(key), Path(ini_root) if ini_root is not None else rootdir),
        ]
        for name, value, base in sources:
            if value:
                origin[key] = name
                return value, base
        return None

    def path_of(key: str) -> Path | None:
        found = pick(key)
        return Path(os.path.abspath(found[1] / Path(str(found[0])).expanduser())) if found else None

    matrix = path_of("matrix")
    if matrix is None:
        matrix = default_matrix(None, None, rootdir, cwd=here)
        bundled = matrix == Path(os.path.abspath(bundled_matrix()))
        origin["matrix"] = "the bundled matrix" if bundled else f"the project's {matrix.relative_to(rootdir)}"
    output = path_of("output") or Path(os.path.abspath(here / DEFAULT_OUTPUT))
    releases = pick("releases")
    loaders = pick("loaders")
    judge = resolve_judge_settings(
        flags=flags,
        environ=environ,
        table=(f"{project.path} [{TABLE}]", project.values, project.folder or here),
        ini=("ini", ini, Path(ini_root) if ini_root is not None else rootdir),
        cwd=here,
    )
    return Settings(
        rootdir=rootdir,
        config=project.path,
        matrix=matrix,
        report=path_of("report"),
        output=output,
        releases=str(releases[0]) if releases else None,
        loaders=tuple(loaders[0]) if loaders else (),
        origin={**origin, **judge.origin},
        judge=judge,
    )
