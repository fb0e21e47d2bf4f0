"""What ``tokcompat grid`` was asked for, checked before anything is built.

Bad input stops the run at once with one line saying what to fix (exit 2), never after minutes of
building environments.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from pytest_tokcompat import environment
from pytest_tokcompat.ci.fingerprint import DEFAULT_OUTPUT, package_hash, sha
from pytest_tokcompat.ci.releases import UPSTREAM_ENV
from pytest_tokcompat.errors import TokcompatError
from pytest_tokcompat.inert import config_problem
from pytest_tokcompat.matrix.cases import Matrix
from pytest_tokcompat.settings import JudgeSettings

DEFAULT_SPEC = "minors,pre"
MIN_FLOOR = Version("4.45")


class BadInput(TokcompatError):
    """Input ``tokcompat grid`` cannot run with: exit 2, the message says what to fix."""


# Planning: the matrix's floor, the cells, the shards.


def matrix_floor(matrix: Matrix, raw: dict[str, Any]) -> Version:
    """The matrix's ``floor:``; else the oldest release its expectations cover: the lowest lower bound of
    its ranges, or 4.45 (the oldest transformers tokcompat supports) where a range has none (``<5.3``, or one
    outcome for every release)."""
    if isinstance(raw.get("floor"), str):
        return Version(raw["floor"])
    bounds: list[Version] = []
    for case in matrix.cases:
        for expectation in case.expectations:
            lower = _lower_bound(expectation.range.text)
            if lower is None:
                return MIN_FLOOR
            bounds.append(lower)
    return max(MIN_FLOOR, min(bounds)) if bounds else MIN_FLOOR


def _lower_bound(text: str) -> Version | None:
    try:
        specifiers = SpecifierSet("" if text.strip() in ("", "*") else text)
    except InvalidSpecifier:
        return None
    found: list[Version] = []
    for spec in specifiers:
        if spec.operator in (">=", ">", "==", "~=", "==="):
            try:
                found.append(Version(spec.version.removesuffix(".*")))
            except InvalidVersion:
                continue
    return max(found) if found else None


def check_with(requirements: tuple[str, ...]) -> None:
    """``--with REQ``: a requirement (``pkg``, ``pkg==1.2``, ``pkg @ URL``) or an existing local path."""
    from packaging.requirements import InvalidRequirement, Requirement

    for text in requirements:
        if not text.strip() or "\n" in text:
            raise BadInput(
                f"--with {text!r}: give one requirement, e.g. --with 'mypkg==1.2' or --with ./mypkg"
            )
        if local_path(text) is not None:
            continue
        try:
            Requirement(text)
        except InvalidRequirement as error:
            why = str(error).strip().splitlines()[0] if str(error).strip() else "invalid"
            raise BadInput(
                f"--with {text!r} is neither a requirement nor an existing path ({why}); "
                "e.g. --with 'mypkg==1.2', --with 'mypkg @ git+https://…', --with ./path/to/mypkg"
            ) from None


TOX_SPECIAL = {
    "{": "tox reads as a substitution ({env:NAME} would put a variable, a token, into an install URL)",
    "}": "tox reads as the end of a substitution",
    '"': "would end the quoted argument of the run's command",
}
"""Characters tox gives a meaning to in the lines the grid writes (deps and the quoted command)."""


def check_configuration_text(options: GridOptions, output: Path) -> None:
    """Every argument written into the generated tox.ini or pytest.ini is one line of plain text: a line
    break in ``--upstream`` would otherwise start a section of its own there."""
    given = [
        ("--upstream", options.upstream),
        (f"${UPSTREAM_ENV}", None if options.upstream else environment.read(UPSTREAM_ENV)),
        ("--releases", options.releases),
        *(("--with", text) for text in options.with_requirements),
        *(("--loader", text) for text in options.loaders),
        ("--matrix", str(options.matrix.resolve()) if options.matrix else None),
        ("--output", str(output)),
        ("the Python running tokcompat", sys.executable),
    ]
    for option, value in given:
        if value is None:
            continue
        problem = config_problem(option, value)
        special = next((char for char in TOX_SPECIAL if char in value), None)
        if problem is None and special is not None:
            problem = (
                f"{option} {value!r}: holds {special!r}, which {TOX_SPECIAL[special]} in the generated tox.ini; "
                "give the value without it"
            )
        if problem:
            raise BadInput(problem)


def check_loaders(specs: tuple[str, ...], kwargs: tuple[str, ...] = ()) -> list[str]:
    """``--loader SPEC`` (the form --tokcompat-loader takes, one name each) and ``--loader-kwargs
    [NAME=]JSON``: the kwargs as each run gets them, ``NAME={...}`` on one line each."""
    from pytest_tokcompat.matrix.clients import check_unique, parse_kwargs_option, parse_loader_option

    try:
        loaders = [parse_loader_option(spec) for spec in specs]
    except ValueError as error:
        raise BadInput(str(error).replace("--tokcompat-loader", "--loader")) from None
    problem = check_unique(loaders)
    if problem:
        raise BadInput(problem.replace("on the command line", "in --loader"))
    lines: list[str] = []
    for text in kwargs:
        try:
            name, given = parse_kwargs_option(text, [loader.name for loader in loaders], "--loader-kwargs")
        except ValueError as error:
            raise BadInput(str(error)) from None
        lines.append(f"{name}={json.dumps(given, sort_keys=True, ensure_ascii=True)}")
    return lines


def local_path(text: str) -> Path | None:
    """The local file or folder a ``--with`` value names, written as a path (``.``, ``./pkg``, ``a/b``,
    ``~/x``, ``/abs``, ``x.whl``); None for a requirement (``pkg`` stays a name even where a folder of that
    name exists, as for pip and uv)."""
    looks_like_path = text.startswith((".", "~")) or os.sep in text or "/" in text or text.endswith(".whl")
    path = Path(text).expanduser()
    return path if looks_like_path and path.exists() else None


def install_line(text: str) -> str:
    """The deps line of a ``--with`` requirement: a local path made absolute (tox runs elsewhere)."""
    path = local_path(text)
    return str(path.resolve()) if path is not None else text


def requirement_identity(text: str, outputs: tuple[Path, ...] = ()) -> str:
    """What a ``--with`` requirement installs, as a string: a local path with a hash of the sources it is
    built from (so an edit rebuilds the environments and re-judges their cells; ``outputs``, the grid's own
    folders, never count), anything else as written."""
    path = local_path(text)
    if path is not None and path.is_dir():
        return f"{path.resolve()}#{package_hash(path, outputs)[:16]}"
    if path is not None and path.is_file():
        return f"{path.resolve()}#{sha(path.read_bytes())[:16]}"
    return text


# The run.


@dataclass
class GridOptions:
    matrix: Path | None = None
    releases: str | None = None
    output: Path = Path(DEFAULT_OUTPUT)
    jobs: int | None = None
    shard: str | None = None
    upstream: str | None = None
    with_requirements: tuple[str, ...] = ()
    """``--with REQ``: installed into every release's environment beside transformers (a client package)."""
    loaders: tuple[str, ...] = ()
    """``--loader SPEC``: each release's run judges it (its pytest.ini's ``tokcompat_loaders``)."""
    loader_kwargs: tuple[str, ...] = ()
    """``--loader-kwargs [NAME=]JSON``: the keyword arguments a loader is called with."""
    update_expectations: bool = False
    """``--update-expectations``: the runs measure (``--tokcompat-measure``), the end writes the matrix."""
    allow_weaker: bool = False
    settings: JudgeSettings = field(default_factory=JudgeSettings)
    """The judge's settings the grid was given (flags, variables, ``[tool.tokcompat]``): each run gets them."""
