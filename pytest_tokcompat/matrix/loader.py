"""Reading a matrix file: its size, its one document and its top-level keys; entries in ``entries``.

The whole file is validated before any test runs, and every problem is reported
at once, so that a user fixes a matrix in one pass rather than one error a run.
YAML is read node by node (never constructed), so tags cannot build objects and
duplicate keys, which YAML itself allows silently, are caught.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from pytest_tokcompat.errors import MatrixError
from pytest_tokcompat.matrix.aliases import (
    ALIAS_KEYS,
    MODEL_TYPE_PATTERN,
    Alias,
    alias_from_mapping,
    alias_problems,
)
from pytest_tokcompat.matrix.cases import Case, Matrix, Problem
from pytest_tokcompat.matrix.clients import ClientLoader, native_since_problem, split_call
from pytest_tokcompat.matrix.entries import ID_PATTERN, read_case
from pytest_tokcompat.matrix.yamlnodes import (
    NodeLimit,
    Reader,
    TooLarge,
    composed,
    count_nodes_fast,
    key_nodes,
    too_many_nodes,
)

__all__ = [
    "LOADER_KEYS",
    "MAX_MATRIX_BYTES",
    "MAX_PROBLEMS",
    "TOP_KEYS",
    "load_matrix",
    "parse_matrix",
    "read_loaders",
]

TOP_KEYS = {"version", "cases", "golden_dir", "floor", "loaders", "aliases", "watch"}
LOADER_KEYS = {"name", "call", "attr", "kwargs", "native_since"}
# A matrix file larger than this is refused before it is parsed (a matrix of 500 checkpoints is ~75 kB).
MAX_MATRIX_BYTES = 1024 * 1024
# Problems listed at once; past that, one line says how many more (a generated matrix can have thousands).
MAX_PROBLEMS = 100


def _too_large(path: Path, size: int | None) -> MatrixError:
    what = f"{size / 1024 / 1024:.1f} MB" if size is not None else "larger than that"
    return MatrixError(
        [
            Problem(
                path,
                1,
                None,
                f"the matrix file is {what}, over the {MAX_MATRIX_BYTES // 1024 // 1024} MB limit",
                "split it into several matrix files and run each with --tokcompat-matrix",
            )
        ]
    )


def load_matrix(path: str | Path, *, missing_expect: bool = False) -> Matrix:
    """Read and validate a matrix file; raises MatrixError listing every problem. ``missing_expect``:
    an entry without ``expect`` is no problem, to be measured (``--update-expectations``)."""
    path = Path(path)
    try:
        with path.open("rb") as stream:
            # Bounded: a huge file (or a device that never ends) is refused without being read whole.
            raw = stream.read(MAX_MATRIX_BYTES + 1)
            size = os.fstat(stream.fileno()).st_size or None
    except OSError as error:
        raise MatrixError(
            [Problem(path, 1, None, f"cannot read the matrix ({error.strerror})", "check the path")]
        ) from None
    if len(raw) > MAX_MATRIX_BYTES:
        raise _too_large(path, size)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise MatrixError(
            [Problem(path, line, None, "the file is not UTF-8", "save the matrix as UTF-8")]
        ) from None
    return parse_matrix(text, path, missing_expect=missing_expect)


def parse_matrix(text: str, path: Path, *, missing_expect: bool = False) -> Matrix:
    """Validate matrix text that came from ``path`` (used for locations and relative folders)."""
    if len(text) > MAX_MATRIX_BYTES:
        raise _too_large(path, len(text.encode("utf-8", "surrogatepass")))
    reader = Reader(path, missing_expect)
    too_many = too_many_nodes()
    over_at = count_nodes_fast(text)
    if over_at is not None:
        raise MatrixError([Problem(path, over_at, None, *too_many)])
    try:
        documents = composed(text)
    except NodeLimit as limit:
        raise MatrixError([Problem(path, limit.line, None, *too_many)]) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else 1
        raise MatrixError(
            [Problem(path, line, None, f"not valid YAML: {error.problem}", "fix the YAML syntax")]
        ) from None
    except yaml.YAMLError as error:
        raise MatrixError(
            [Problem(path, 1, None, f"not valid YAML: {error}", "fix the YAML syntax")]
        ) from None
    except RecursionError:
        raise MatrixError(
            [Problem(path, 1, None, "the YAML is nested too deeply", "flatten the matrix")]
        ) from None
    if len(documents) != 1 or documents[0] is None:
        count = len([d for d in documents if d is not None])
        raise MatrixError(
            [
                Problem(
                    path,
                    1,
                    None,
                    f"expected one YAML document, found {count}",
                    "put all cases in one document",
                )
            ]
        )
    root = documents[0]
    aliases: tuple[Alias, ...] = ()
    watch: tuple[str, ...] = ()
    try:
        cases = _read_root(reader, root)
        aliases = _read_aliases(reader, root)
        watch = _read_watch(reader, root)
    except TooLarge as too_large:
        reader.problem(too_large.node, None, *too_many)
        cases = []
    except RecursionError:
        reader.problem(root, None, "the YAML is nested too deeply", "flatten the matrix")
        cases = []
    loaders = read_loaders(reader, root) if isinstance(root, yaml.MappingNode) else []
    if reader.problems:
        # dict.fromkeys: a node reached twice through an alias is reported once.
        problems = sorted(dict.fromkeys(reader.problems), key=lambda p: p.line)
        if len(problems) > MAX_PROBLEMS:
            more = len(problems) - MAX_PROBLEMS
            last = Problem(
                path, problems[MAX_PROBLEMS].line, None, f"and {more} more problems", "fix these first"
            )
            problems = [*problems[:MAX_PROBLEMS], last]
        raise MatrixError(problems)
    return Matrix(path, cases, loaders, aliases, watch)


def read_loaders(reader: Reader, root: yaml.MappingNode) -> list[ClientLoader]:
    """The matrix's ``loaders:`` list: ``{name, call: "module:callable", attr, kwargs}`` each."""
    keys = key_nodes(root)
    if "loaders" not in keys:
        return []
    node = keys["loaders"][1]
    if not isinstance(node, yaml.SequenceNode):
        reader.problem(
            node, None, "'loaders' must be a list", "write each as '- {name: x, call: \"mod:fn\"}'"
        )
        return []
    loaders: list[ClientLoader] = []
    for entry in node.value:
        data = reader.plain(entry, None)
        if not isinstance(data, dict):
            reader.problem(entry, None, "a loader must be a mapping", "write '- {name: x, call: \"mod:fn\"}'")
            continue
        name = data.get("name")
        where = f"loader {name!r}" if isinstance(name, str) else "a loader"
        unknown = sorted(str(k) for k in data if k not in LOADER_KEYS)
        if unknown:
            reader.problem(entry, None, f"{where}: unknown key(s) {unknown}", f"use {sorted(LOADER_KEYS)}")
        if not isinstance(name, str) or not ID_PATTERN.match(name):
            reader.problem(entry, None, f"{where}: 'name' must be a plain name", "write e.g. 'name: aiperf'")
            continue
        call, attr, kwargs = data.get("call"), data.get("attr") or "", data.get("kwargs") or {}
        parts = split_call(call) if isinstance(call, str) else None
        if parts is None or parts[2]:
            reader.problem(
                entry,
                None,
                f"{where}: 'call' must be \"module:callable\", not {call!r}",
                "quote it as module:callable",
            )
            continue
        if not isinstance(attr, str) or (attr and split_call(f"m:f:{attr}") is None):
            reader.problem(
                entry, None, f"{where}: 'attr' must be a dotted attribute path", "e.g. 'attr: tokenizer'"
            )
            continue
        if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
            reader.problem(
                entry,
                None,
                f"{where}: 'kwargs' must be a mapping of names",
                "e.g. 'kwargs: {use_fast: true}'",
            )
            continue
        problem = native_since_problem(data.get("native_since"))
        if problem:
            reader.problem(entry, None, f"{where}: {problem}", "the first release that needs no shim")
            continue
        if any(loader.name == name for loader in loaders):
            reader.problem(
                entry, None, f"{where}: a second loader of that name", "give each loader its own name"
            )
            continue
        loaders.append(ClientLoader(name, parts[0], parts[1], attr, dict(kwargs), data.get("native_since")))
    return loaders


def _read_root(reader: Reader, root: yaml.Node) -> list[Case]:
    if not isinstance(root, yaml.MappingNode):
        reader.problem(root, None, "the matrix must be a mapping with a 'cases' list", "start with 'cases:'")
        return []
    keys = key_nodes(root)
    # The cases are read one by one below; reading them here too would report their problems twice.
    top = reader.plain(root, None, skip=keys["cases"][1] if "cases" in keys else None)
    if not isinstance(top, dict):
        return []
    for key in top:
        if key not in TOP_KEYS:
            reader.problem(
                keys.get(str(key), (root,))[0],
                None,
                f"unknown top-level key {key!r}",
                f"use one of {sorted(TOP_KEYS)}",
            )
    if top.get("version", 1) != 1:
        reader.problem(
            keys["version"][1],
            None,
            f"matrix version {top['version']!r} is not supported",
            "set 'version: 1'",
        )
    if "floor" in top and not _is_version(top["floor"]):
        reader.problem(
            keys["floor"][1],
            None,
            f"'floor' must be a transformers version such as \"4.57\", not {top['floor']!r}",
            "quote the oldest release the grid should cover",
        )
    golden_dir = top.get("golden_dir", "golden")
    if not isinstance(golden_dir, str):
        reader.problem(keys["golden_dir"][1], None, "'golden_dir' must be a folder name", "write a path")
        golden_dir = "golden"
    if "cases" not in keys:
        reader.problem(root, None, "no 'cases' list", "add 'cases:' with one entry per checkpoint")
        return []
    cases_node = keys["cases"][1]
    if not isinstance(cases_node, yaml.SequenceNode):
        reader.problem(cases_node, None, "'cases' must be a list", "write each case as '- id: ...'")
        return []
    if not cases_node.value:
        reader.problem(
            cases_node,
            None,
            "'cases' is empty: a run of this matrix would check nothing",
            "add at least one case ('- id: ...', 'repo:' or 'snapshot:', 'expect:')",
        )
        return []
    base = reader.path.parent
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for entry in cases_node.value:
        case = read_case(reader, entry, base, base / golden_dir)
        if case is None:
            continue
        if case.id in seen:
            reader.problem(
                entry, case.id, f"duplicate id (first at line {seen[case.id]})", "give each case a unique id"
            )
            continue
        seen[case.id] = case.line
        cases.append(case)
    return cases


def _read_aliases(reader: Reader, root: yaml.Node) -> tuple[Alias, ...]:
    """The matrix's ``aliases:`` list, each entry checked as the registry's Alias fields are."""
    keys = key_nodes(root) if isinstance(root, yaml.MappingNode) else {}
    if "aliases" not in keys:
        return ()
    node = keys["aliases"][1]
    if not isinstance(node, yaml.SequenceNode):
        reader.problem(node, None, "'aliases' must be a list", "write each alias as '- model_type: ...'")
        return ()
    found: list[Alias] = []
    seen: dict[str, int] = {}
    for entry in node.value:
        if not isinstance(entry, yaml.MappingNode):
            reader.problem(
                entry,
                None,
                "an alias must be a mapping",
                "write 'model_type:', 'base_config:', 'upstream_issue:'",
            )
            continue
        data = reader.plain(entry, None)
        if not isinstance(data, dict):
            continue
        entry_keys = key_nodes(entry)
        name = data.get("model_type")
        label = f"alias {name!r}: " if isinstance(name, str) else "alias: "
        problems = alias_problems(data)
        for key, what, fix in problems:
            at = entry_keys.get(str(key), (entry, entry))[0 if key not in ALIAS_KEYS else 1]
            reader.problem(at, None, label + what, fix)
        line = entry.start_mark.line + 1
        if problems:
            continue
        assert isinstance(name, str)  # alias_problems refuses an entry whose model_type is not a string
        if name in seen:
            reader.problem(
                entry, None, f"{label}declared twice (first at line {seen[name]})", "keep one declaration"
            )
            continue
        seen[name] = line
        found.append(alias_from_mapping(data, f"{reader.path}:{line}"))
    return tuple(found)


def _read_watch(reader: Reader, root: yaml.Node) -> tuple[str, ...]:
    """The matrix's ``watch:`` list of model_types."""
    keys = key_nodes(root) if isinstance(root, yaml.MappingNode) else {}
    if "watch" not in keys:
        return ()
    node = keys["watch"][1]
    value = reader.plain(node, None)
    if not isinstance(value, list) or not all(
        isinstance(v, str) and MODEL_TYPE_PATTERN.match(v) for v in value
    ):
        reader.problem(
            node, None, f"'watch' must be a list of model_types, got {value!r}", "write 'watch: [kimi_k2]'"
        )
        return ()
    twice = sorted({v for v in value if value.count(v) > 1})
    if twice:
        reader.problem(node, None, f"'watch' names {', '.join(map(repr, twice))} more than once", "keep one")
    return tuple(dict.fromkeys(value))


def _is_version(value: Any) -> bool:
    from packaging.version import InvalidVersion, Version

    if not isinstance(value, str):
        return False
    try:
        Version(value)
    except InvalidVersion:
        return False
    return True
