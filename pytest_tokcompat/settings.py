"""The judge's settings, each declared once: its flag, ini key, ``[tool.tokcompat]`` key and variable.

As pytest-timeout does for ``--timeout``, and as nox passes one options object through: every
setting the judge runs under (its limits, the isolation of its attempts, its caches on disk and
their sizes) is one :class:`Setting` in :data:`SETTINGS`. The plugin adds a flag and an ini key per
entry by looping over the table, the judging commands add the same flags from it, and
``[tool.tokcompat]`` accepts its key. One rule picks a value (:func:`pick`): the flag, then the
variable, then ``[tool.tokcompat]``, then the ini key, then the default; a value that cannot be used
is refused with the name of where it came from (:class:`SettingError`), never silently replaced by
the default. The result is one frozen :class:`JudgeSettings`, built once by each front-end and
passed down; the modules below read it, never the environment. The verdict cache's two settings are
``load_tokenizer()``'s alone (``library_only``): a variable and a ``[tool.tokcompat]`` key, no flag.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_tokcompat import environment
from pytest_tokcompat.errors import ConfigError

Kind = Literal["number", "folder", "choice"]
OFF = frozenset({"0", "off", "false", "no", "none"})
"""Values of a cache's folder setting that switch the cache off."""


class SettingError(ConfigError, ValueError):
    """A setting's value, from a flag, the environment, ``[tool.tokcompat]`` or an ini file, that cannot be used."""


@dataclass(frozen=True)
class Setting:
    """One setting: its key (in :class:`JudgeSettings`, the ini file and ``[tool.tokcompat]``) and its rules."""

    key: str
    kind: Kind
    default: float | str | None
    help: str
    unit: str = ""
    zero: Literal["off", "allowed", "refused"] = "refused"
    """For a number: ``0`` switches it off (a time limit, a memory cap), is a size of its own, or is refused."""
    choices: tuple[str, ...] = ()
    library_only: bool = False
    can_be_off: bool = True
    """For a folder: whether ``off`` (and the other :data:`OFF` words) switch it off, or name a folder."""
    """Only ``load_tokenizer()`` uses it (the verdict cache): a variable and a ``[tool.tokcompat]`` key, which
    the library reads, and no flag or ini key, which nothing that runs a command or pytest would use."""

    @property
    def flag(self) -> str:
        return "--tokcompat-" + self.key.replace("_", "-")

    @property
    def dest(self) -> str:
        """The attribute of the flag's value (pytest's ``getoption``, argparse's namespace)."""
        return "tokcompat_" + self.key

    @property
    def ini(self) -> str:
        return "tokcompat_" + self.key

    @property
    def variable(self) -> str:
        return "TOKCOMPAT_" + self.key.upper()

    @property
    def metavar(self) -> str:
        if self.kind == "choice":
            return "{" + ",".join(self.choices) + "}"
        return "FOLDER" if self.kind == "folder" else self.unit.upper()

    def parse(self, text: str) -> float | str | None:
        """The value ``text`` stands for (a folder's text as given; None: a cache switched off)."""
        text = text.strip()
        if self.kind == "choice":
            if text.lower() not in self.choices:
                raise SettingError(f"{text!r} is not one of {', '.join(self.choices)}")
            return text.lower()
        if self.kind == "folder":
            return None if self.can_be_off and text.lower() in OFF else text
        try:
            value = float(text)
        except ValueError:
            raise SettingError(f"{text!r} is not a number of {self.unit}") from None
        if math.isnan(value) or math.isinf(value):
            raise SettingError(f"{text!r} is not a finite number of {self.unit}")
        if value < 0 and self.zero == "refused":
            raise SettingError(f"{text!r} is not a positive size in {self.unit}")
        if value < 0:
            hint = f"give {self.unit}, or 0 for no limit" if self.zero == "off" else f"give {self.unit}"
            raise SettingError(f"{text!r} is negative: {hint}")
        if value == 0 and self.zero == "refused":
            raise SettingError(f"{text!r} is not a positive size in {self.unit}")
        return value

    def argument(self, text: str) -> str:
        """The flag's text, checked by :meth:`parse` with argparse's error type, so a bad flag is pytest's
        (or argparse's) usage error; kept as text, so ``off`` stays a value the flag gave."""
        try:
            self.parse(text)
        except SettingError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return text.strip()

    def option(self) -> dict[str, Any]:
        """The keyword arguments of its flag, for pytest's ``addoption`` and argparse's ``add_argument``
        alike (its ``help`` is the caller's: each front-end says where else the value may come from)."""
        return {"dest": self.dest, "metavar": self.metavar, "type": self.argument, "default": None}

    def described_default(self) -> str:
        if self.kind == "number" and isinstance(self.default, float):
            return f"{self.default:g}"
        if self.kind == "folder" and not self.can_be_off:
            return f"the XDG cache's pytest-tokcompat/{self.default}"
        if self.kind == "folder":
            return (
                f"the cache setting's {self.default}/, else the XDG cache's pytest-tokcompat/{self.default}"
            )
        return str(self.default)


_LOAD_TIMEOUT, _MAX_FILE_MB, _MAX_MEMORY_MB, _CACHE_MB = 300.0, 512.0, 8192.0, 256.0
LOAD_TIMEOUT = Setting(
    "load_timeout", "number", _LOAD_TIMEOUT, "time limit of one tokenizer load, 0 for none", "seconds", "off"
)
MAX_FILE_MB = Setting(
    "max_file_mb", "number", _MAX_FILE_MB, "refuse tokenizer files larger than this", "megabytes"
)
MAX_MEMORY_MB = Setting(
    "max_memory_mb",
    "number",
    _MAX_MEMORY_MB,
    "address space one attempt's process may map (RLIMIT_AS), 0 for no cap",
    "megabytes",
    "off",
)
ISOLATION = Setting(
    "isolation",
    "choice",
    "process",
    "how attempts run: process (a child forked from a clean server per attempt; spawn where there is no "
    "fork), spawn (a fresh interpreter per attempt) or inprocess (in the calling process: for benchmarks and "
    "debuggers only, no isolation holds)",
    choices=("process", "spawn", "inprocess"),
)
VERDICT_CACHE = Setting(
    "verdict_cache",
    "folder",
    "verdicts",
    "load_tokenizer()'s verdict cache's folder, or off",
    library_only=True,
)
VERDICT_CACHE_MAX_MB = Setting(
    "verdict_cache_max_mb",
    "number",
    _CACHE_MB,
    "the verdict cache is pruned to this size after each write, least recently used first",
    "megabytes",
    "allowed",
    library_only=True,
)
CACHE = Setting(
    "cache",
    "folder",
    "snapshots",
    "the folder of assembled snapshots, shared by runs and xdist workers (the verdict and truth caches "
    "default to its verdicts/ and truth/)",
    can_be_off=False,
)
TRUTH_CACHE = Setting(
    "truth_cache",
    "folder",
    "truth",
    "the truth cache's folder (probes and ground truth by checkpoint and tokenizers version), or off",
)
TRUTH_CACHE_MAX_MB = Setting(
    "truth_cache_max_mb",
    "number",
    _CACHE_MB,
    "the truth cache is pruned to this size after each write, least recently used first",
    "megabytes",
    "allowed",
)
LIMITS: tuple[Setting, ...] = (LOAD_TIMEOUT, MAX_FILE_MB, MAX_MEMORY_MB)
SETTINGS: tuple[Setting, ...] = (
    *LIMITS,
    ISOLATION,
    CACHE,
    VERDICT_CACHE,
    VERDICT_CACHE_MAX_MB,
    TRUTH_CACHE,
    TRUTH_CACHE_MAX_MB,
)
BY_KEY: Mapping[str, Setting] = {setting.key: setting for setting in SETTINGS}
OPTIONS: tuple[Setting, ...] = tuple(setting for setting in SETTINGS if not setting.library_only)
"""The settings that are a flag and an ini key too: what the plugin and the judging commands add."""


def or_none(setting: Setting, value: float) -> float | None:
    """``None`` where ``0`` switches the setting off."""
    return None if setting.zero == "off" and value == 0 else value


@dataclass(frozen=True)
class Limits:
    """How long one load may take, how large a tokenizer file and one attempt's memory may be."""

    load_timeout: float | None = _LOAD_TIMEOUT
    max_file_mb: float = _MAX_FILE_MB
    max_memory_mb: float | None = _MAX_MEMORY_MB
    """Address space of one attempt's process; None or 0: no cap."""


def user_cache_home(environ: Mapping[str, str] | None = None) -> Path:
    """pytest-tokcompat's folder in the user's XDG cache (snapshots, caches, bisect environments)."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-tokcompat"


def _default_folder(name: str) -> Path:
    return user_cache_home() / name


@dataclass(frozen=True)
class JudgeSettings:
    """What the judge runs under, resolved once by a front-end (:func:`resolve_judge_settings`)."""

    limits: Limits = Limits()
    isolation: str = "process"
    """process, spawn or inprocess (``process`` runs as ``spawn`` where ``os.fork`` does not exist)."""
    cache: Path = field(default_factory=lambda: _default_folder("snapshots"))
    """Where assembled snapshots live (the hub layout of bundled snapshots beside it)."""
    verdict_cache: Path | None = field(default_factory=lambda: _default_folder("verdicts"))
    """None: switched off."""
    verdict_cache_max_mb: float = _CACHE_MB
    truth_cache: Path | None = field(default_factory=lambda: _default_folder("truth"))
    truth_cache_max_mb: float = _CACHE_MB
    origin: Mapping[str, str] = field(default_factory=dict, compare=False)
    """Where each value came from (a flag, ``$VARIABLE``, a file's key; absent: the default)."""

    @property
    def verdict_cache_bytes(self) -> int:
        return int(self.verdict_cache_max_mb * 1024 * 1024)

    @property
    def truth_cache_bytes(self) -> int:
        return int(self.truth_cache_max_mb * 1024 * 1024)


Source = tuple[str, object, Path]
"""Where a value may come from: its name (``--flag``, ``$VARIABLE``, a file's key), the value as given
(falsy: not given) and the folder a relative path in it is relative to."""


def pick(sources: Iterable[Source]) -> Source | None:
    """The first source that gives a value: the one precedence rule every setting follows."""
    for source in sources:
        value = source[1]
        if value is not None and (not isinstance(value, str) or value.strip()) and value != []:
            return source
    return None


def sources_of(
    setting: Setting,
    *,
    flags: Mapping[str, object],
    environ: Mapping[str, str] | None,
    table: tuple[str, Mapping[str, object], Path] | None,
    ini: tuple[str, Mapping[str, object], Path] | None,
    here: Path,
) -> list[Source]:
    """The flag, the variable, ``[tool.tokcompat]`` and the ini key of ``setting``, in that order."""
    sources: list[Source] = [
        (setting.flag, flags.get(setting.key), here),
        (f"${setting.variable}", environment.read(setting.variable, environ), here),
    ]
    if table is not None:
        sources.append((f"{table[0]} {setting.key}", table[1].get(setting.key), table[2]))
    if ini is not None:
        sources.append((f"ini {setting.ini}", ini[1].get(setting.key), ini[2]))
    return sources


def value_of(setting: Setting, sources: Iterable[Source]) -> tuple[float | str | None, Path, str | None]:
    """The setting's value, the folder it is relative to and where it came from (None: the default)."""
    found = pick(sources)
    if found is None:
        return setting.default, Path.cwd(), None
    where, given, base = found
    if isinstance(given, bool) or not isinstance(given, (str, int, float)):
        raise SettingError(f"{where}: {given!r} is not a value for {setting.key}; {setting.help}")
    if not isinstance(given, str):  # a parsed flag, or a TOML number
        given = f"{given}"
    try:
        return setting.parse(given), base, where
    except SettingError as error:
        raise SettingError(f"{where}={given.strip()}: {error}") from None


def resolve_judge_settings(
    *,
    flags: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
    table: tuple[str, Mapping[str, object], Path] | None = None,
    ini: tuple[str, Mapping[str, object], Path] | None = None,
    cwd: Path | None = None,
) -> JudgeSettings:
    """Every setting of :data:`SETTINGS`, each from the first of ``flags`` (by key, relative to ``cwd``),
    the environment, ``table`` (``[tool.tokcompat]``: its name, values and folder), ``ini`` (the same for
    pytest's ini file), the default. Raises SettingError naming the source of a value that cannot be used."""
    here = Path(os.path.abspath(Path.cwd() if cwd is None else cwd))
    flags = flags or {}
    numbers: dict[str, float] = {}
    texts: dict[str, str] = {}
    folders: dict[str, Path | None] = {}
    origin: dict[str, str] = {}
    for setting in SETTINGS:  # the cache comes before the caches that default beside it
        sources = sources_of(setting, flags=flags, environ=environ, table=table, ini=ini, here=here)
        value, base, where = value_of(setting, sources)
        if where is not None:
            origin[setting.key] = where
        if setting is CACHE:
            given = _folder(value, base, where, None) if where is not None else None
            folders[setting.key] = given or user_cache_home(environ) / str(CACHE.default)
        elif setting.kind == "folder":
            beside = folders[CACHE.key] if CACHE.key in origin else None
            folders[setting.key] = _folder(value, base, where, beside, environ)
        elif isinstance(value, float):
            numbers[setting.key] = value
        else:
            texts[setting.key] = str(value)
    limits = Limits(
        load_timeout=or_none(LOAD_TIMEOUT, numbers["load_timeout"]),
        max_file_mb=numbers["max_file_mb"],
        max_memory_mb=or_none(MAX_MEMORY_MB, numbers["max_memory_mb"]),
    )
    return JudgeSettings(
        limits=limits,
        isolation=texts["isolation"],
        cache=_given(folders["cache"]),
        verdict_cache=folders["verdict_cache"],
        verdict_cache_max_mb=numbers["verdict_cache_max_mb"],
        truth_cache=folders["truth_cache"],
        truth_cache_max_mb=numbers["truth_cache_max_mb"],
        origin=origin,
    )


def _folder(
    value: object,
    base: Path,
    where: str | None,
    beside: Path | None,
    environ: Mapping[str, str] | None = None,
) -> Path | None:
    """A cache's folder: as given (relative to its source's folder), else in ``beside`` (the snapshot
    cache, where one was given), else in the XDG cache; None where it is switched off."""
    if value is None:
        return None
    if where is not None:
        return Path(os.path.abspath(base / Path(str(value)).expanduser()))
    if beside is not None:
        return beside / str(value)
    return user_cache_home(environ) / str(value)


def _given(folder: Path | None) -> Path:
    assert folder is not None  # the snapshot cache cannot be switched off (CACHE.can_be_off)
    return folder


def judge_settings_from_environment(environ: Mapping[str, str] | None = None) -> JudgeSettings:
    """The settings of a caller below the front-ends that was given none: the variables, then the defaults."""
    return resolve_judge_settings(environ=environ)


def value_text(settings: JudgeSettings, setting: Setting) -> str:
    """The value of ``setting`` in ``settings`` as its variable would say it (``off``: a cache switched off)."""
    if setting in LIMITS:
        value = getattr(settings.limits, setting.key)
        return f"{value or 0:g}"
    value = getattr(settings, setting.key)
    if value is None:
        return "off"
    return f"{value:g}" if isinstance(value, float) else str(value)


def passed_on(settings: JudgeSettings) -> dict[str, str]:
    """The variables that give a process this one starts (bisect's ``tokcompat check``, the grid's runs)
    every setting given here by a flag, a variable or a file, so it judges under the same settings."""
    return {setting.variable: value_text(settings, setting) for setting in given(settings)}


def passed_on_flags(settings: JudgeSettings) -> list[str]:
    """:func:`passed_on` as the flags of a ``tokcompat`` command."""
    return [f"{setting.flag}={value_text(settings, setting)}" for setting in given(settings)]


def given(settings: JudgeSettings) -> list[Setting]:
    """The settings given a value (by a flag, a variable or a file), not left at their default; the
    library's own (the verdict cache) are nothing a command's runs use."""
    return [setting for setting in OPTIONS if setting.key in settings.origin]
