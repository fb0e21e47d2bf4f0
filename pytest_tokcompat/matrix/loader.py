"""The YAML matrix: parsing, validation with file:line errors, and expectations.

The whole file is validated before any test runs, and every problem is reported
at once, so that a user fixes a matrix in one pass rather than one error a run.
YAML is read node by node (never constructed), so tags cannot build objects and
duplicate keys, which YAML itself allows silently, are caught.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
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
from pytest_tokcompat.matrix.clients import ClientLoader, native_since_problem, split_call
from pytest_tokcompat.matrix.versions import VersionRange, matching_ranges, overlapping_pairs, parse_range
from pytest_tokcompat.model import ACKNOWLEDGEABLE, Dimension, Outcome

OUTCOMES = tuple(str(outcome) for outcome in Outcome)
CASE_KEYS = {
    "id": "a unique name, used in test ids",
    "repo": "the hub repo id, owner/name",
    "snapshot": "a local folder with the checkpoint's config and tokenizer files",
    "revision": "a commit sha (or branch/tag) of the hub repo",
    "expect": "an outcome, or a map from transformers version ranges to outcomes",
    "trust_remote_code": "true to allow the checkpoint's own code to run",
    "texts": "extra probe texts for this checkpoint",
    "served_names": "names the model is served under (--served-model-name)",
    "note": "free text shown in the report",
    "acknowledge": "version ranges -> {dimension: reason}: contract drifts accepted for those releases",
}
TOP_KEYS = {"version", "cases", "golden_dir", "floor", "loaders", "aliases", "watch"}
LOADER_KEYS = {"name", "call", "attr", "kwargs", "native_since"}
SNAPSHOT_MARKERS = ("config.json", "tokcompat-sources.json", "tokenizer.json", "tokenizer_config.json")
"""A snapshot folder holds at least one of these: a config, a manifest, or a tokenizer-only checkpoint's files."""
# A case id, matched whole. Python's `$` also matches before a trailing newline, so "qwen\n" would pass
# without the lookahead; the same text is the JSON Schema's pattern, which must also mean this in ECMA-262
# (where `\Z` does not exist).
HUB_ID = re.compile(r"^(?:[\w.-]+/)?[\w.-]+$(?!\n)", re.ASCII)
"""A hub repo id: ``owner/name`` or a bare ``name`` (``gpt2``), as huggingface_hub accepts them."""
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$(?!\n)")
# YAML nodes in one matrix: counted while composing, and again while reading (where each use of an alias
# counts its whole anchored value).
MAX_NODES = 200_000
# A matrix file larger than this is refused before it is parsed (a matrix of 500 checkpoints is ~75 kB).
MAX_MATRIX_BYTES = 1024 * 1024
# Problems listed at once; past that, one line says how many more (a generated matrix can have thousands).
MAX_PROBLEMS = 100
SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:float",
}
NUMBER_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a matrix, located and with its fix."""

    path: Path
    line: int
    case: str | None
    what: str
    fix: str

    def __str__(self) -> str:
        where = f"case {self.case!r}: " if self.case else ""
        return f"{self.path}:{self.line}: {where}{self.what}; {self.fix}"


@dataclass(frozen=True)
class Expectation:
    range: VersionRange
    outcome: str


MEASURED_ONLY = "native"
"""What an entry without ``expect`` is run as while its outcomes are measured (``missing_expect``)."""


@dataclass(frozen=True)
class Acknowledgement:
    """A contract dimension whose drift the entry accepts under a version range, and why."""

    range: VersionRange
    dimension: str
    reason: str


@dataclass(frozen=True)
class Case:
    """One matrix entry, validated."""

    id: str
    source: Path
    line: int
    expectations: tuple[Expectation, ...]
    repo: str | None = None
    snapshot: Path | None = None
    revision: str | None = None
    trust_remote_code: bool = False
    texts: tuple[str, ...] = ()
    served_names: tuple[str, ...] = ()
    note: str | None = None
    golden_path: Path | None = None
    acknowledge: tuple[Acknowledgement, ...] = ()
    expect_written: bool = True
    """False for an entry read without ``expect`` (``missing_expect``): its expectation is a stand-in."""

    def acknowledged_for(self, transformers_version: str) -> dict[str, str]:
        """The dimensions acknowledged under ``transformers_version``, with their reasons."""
        found: dict[str, str] = {}
        for entry in self.acknowledge:
            if matching_ranges([entry.range], transformers_version):
                found.setdefault(
                    entry.dimension, f"{entry.reason} (acknowledged for {entry.range.text or '*'})"
                )
        return found

    @property
    def location(self) -> str:
        return f"{self.source}:{self.line}"

    def expected_for(self, transformers_version: str) -> str:
        """The expected outcome under ``transformers_version``; ValueError when none or several apply."""
        ranges = [e.range for e in self.expectations]
        found = matching_ranges(ranges, transformers_version)
        if not found:
            listed = ", ".join(repr(r.text) for r in ranges)
            raise ValueError(
                f"no expectation for transformers {transformers_version} (ranges: {listed}); "
                f"add a range that covers it to case {self.id!r} at {self.location}"
            )
        outcomes = {e.outcome for e in self.expectations if e.range in found}
        if len(outcomes) > 1:
            raise ValueError(f"ranges {[r.text for r in found]} overlap at {transformers_version}")
        return outcomes.pop()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "repo": self.repo,
            "snapshot": str(self.snapshot) if self.snapshot else None,
            "revision": self.revision,
            "expect": {e.range.text or "*": e.outcome for e in self.expectations},
            "trust_remote_code": self.trust_remote_code,
            "location": self.location,
        }


@dataclass
class Matrix:
    path: Path
    cases: list[Case] = field(default_factory=list)
    loaders: list[ClientLoader] = field(default_factory=list)
    """The clients' own loaders (``loaders:``), judged on every case beside the verdict."""
    aliases: tuple[Alias, ...] = ()
    """The matrix's own aliases (``aliases:``), applied exactly as declared; they replace built-in ones."""
    watch: tuple[str, ...] = ()
    """model_types whose registration upstream every report records (``watch:``), to raise an alarm when
    a release changes it, before any checkpoint of them is at hand."""

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    def by_id(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)


class _Reader:
    """Turns YAML nodes into plain values while collecting located problems."""

    def __init__(self, path: Path, missing_expect: bool = False) -> None:
        self.path = path
        self.missing_expect = missing_expect
        """An entry without ``expect`` is read as measured-only (see :attr:`Case.expect_written`)."""
        self.problems: list[Problem] = []
        self.visited = 0
        self.constructor = yaml.SafeLoader("")

    def problem(self, node: yaml.Node | None, case: str | None, what: str, fix: str) -> None:
        line = node.start_mark.line + 1 if node is not None else 1
        self.problems.append(Problem(self.path, line, case, what, fix))

    def plain(self, node: yaml.Node, case: str | None, skip: yaml.Node | None = None) -> Any:
        """The value of ``node``; a mapping value that is ``skip`` is left as None (read later)."""
        self.visited += 1
        if self.visited > MAX_NODES:
            raise _TooLarge(node)
        if isinstance(node, yaml.ScalarNode):
            if node.tag == "tag:yaml.org,2002:timestamp":
                return str(node.value)
            if node.tag not in SCALAR_TAGS:
                self.problem(node, case, f"YAML tag {node.tag!r} is not allowed", "remove the tag")
                return None
            try:
                return self.constructor.construct_object(node, deep=True)
            except (
                ValueError,
                KeyError,
                IndexError,
                TypeError,
                yaml.YAMLError,
            ):  # PyYAML raises these for bad tagged scalars
                self.constructor.recursive_objects.clear()
                kind = node.tag.rsplit(":", 1)[-1]
                self.problem(node, case, f"{node.value[:40]!r} is not a valid {kind}", "quote it or fix it")
                return None
        if isinstance(node, yaml.SequenceNode):
            if node.tag != "tag:yaml.org,2002:seq":
                self.problem(node, case, f"YAML tag {node.tag!r} is not allowed", "remove the tag")
                return None
            return [self.plain(item, case) for item in node.value]
        if isinstance(node, yaml.MappingNode):
            if node.tag != "tag:yaml.org,2002:map":
                self.problem(node, case, f"YAML tag {node.tag!r} is not allowed", "remove the tag")
                return None
            result: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.plain(key_node, case)
                if not isinstance(key, (str, int, float)) or isinstance(key, bool):
                    self.problem(key_node, case, "a mapping key must be a plain string", "quote the key")
                    continue
                if key in result:
                    self.problem(key_node, case, f"duplicate key {key!r}", "keep only one of them")
                    continue
                result[key] = None if value_node is skip else self.plain(value_node, case)
            return result
        raise TypeError(node)  # pragma: no cover - yaml has no other node kinds


class _TooLarge(Exception):
    def __init__(self, node: yaml.Node) -> None:
        self.node = node


def _key_nodes(mapping: yaml.MappingNode) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    found: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for key_node, value_node in mapping.value:
        if isinstance(key_node, yaml.ScalarNode):
            found.setdefault(str(key_node.value), (key_node, value_node))
    return found


def bundled_dir() -> Path:
    """The bundled matrix folder: ``pytest_tokcompat/bundled`` when installed, ``matrix/`` of a checkout."""
    package = Path(__file__).resolve().parent.parent
    installed = package / "bundled"
    if (installed / "models.yaml").is_file():
        return installed
    return package.parent / "matrix"


def bundled_matrix() -> Path:
    """The matrix shipped with the package."""
    return bundled_dir() / "models.yaml"


PROJECT_MATRIX = Path("matrix") / "models.yaml"
PROJECT_MATRICES = (PROJECT_MATRIX, Path("ci") / "tokenizers.yaml")
"""A project's own matrix where nothing names one: the first of these under its folder that exists."""
_PROJECT_MARKERS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", ".git")


def find_rootdir(start: Path) -> Path:
    """The project folder a command runs in: the nearest ancestor of ``start`` with a project file.

    pytest has its own rootdir; the CLI uses this one, so ``tokcompat`` run from a
    subfolder finds the same ``matrix/models.yaml`` as ``pytest`` run from there.
    """
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in _PROJECT_MARKERS):
            return folder
    return start


def default_matrix(
    given: str | Path | None, ini: str | Path | None, rootdir: Path | None, *, cwd: Path | None = None
) -> Path:
    """The one rule for which matrix a run uses; an absolute path.

    The option (relative to ``cwd``, the invocation folder), then the ini value
    (relative to ``rootdir``), then the project's ``matrix/models.yaml`` (else its
    ``ci/tokenizers.yaml``) under ``rootdir``, then the bundled matrix. Every front-end
    reaches it through :func:`pytest_tokcompat.matrix.settings.resolve_settings`.
    """
    here = Path.cwd() if cwd is None else Path(cwd)
    if given:
        return Path(os.path.abspath(here / Path(given)))
    if ini:
        return Path(os.path.abspath((rootdir if rootdir is not None else here) / Path(ini)))
    if rootdir is not None:
        for candidate in PROJECT_MATRICES:
            own = Path(os.path.abspath(Path(rootdir) / candidate))
            if own.is_file():
                return own
    return Path(os.path.abspath(bundled_matrix()))


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


class _NodeLimit(Exception):
    def __init__(self, line: int) -> None:
        self.line = line


class _CountingLoader(yaml.SafeLoader):  # type: ignore[misc,unused-ignore]  # untyped without types-PyYAML
    """Composes as SafeLoader does, but stops at MAX_NODES, before a flood of tiny nodes fills memory."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.composed = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self.composed += 1
        if self.composed > MAX_NODES:
            raise _NodeLimit(self.peek_event().start_mark.line + 1)  # type: ignore[no-untyped-call]
        node: yaml.Node | None = super().compose_node(parent, index)
        return node


def _count_nodes_fast(text: str) -> int | None:
    """The line where the node count passes MAX_NODES, by libyaml's parser (~1 µs a node), or None.

    The pure-Python composer needs ~50 µs a node; where libyaml is installed this finds an
    oversized matrix in a fraction of a second. Syntax errors are left to the composer to report.
    """
    if not getattr(yaml, "__with_libyaml__", False):
        return None
    counted = 0
    node_events = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.AliasEvent)
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            if isinstance(event, node_events):
                counted += 1
                if counted > MAX_NODES:
                    mark = event.start_mark
                    return int(mark.line) + 1 if mark is not None else 1
    except Exception:  # only a shortcut: whatever libyaml objects to, the composer reports properly
        return None
    return None


def _compose(text: str) -> list[yaml.Node]:
    loader = _CountingLoader(text)
    try:
        documents: list[yaml.Node] = []
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                documents.append(node)
        return documents
    finally:
        loader.dispose()


_COMPOSED_CACHE_MAX_TEXT = 256 * 1024


@lru_cache(maxsize=8)
def _composed_cached(text: str) -> tuple[yaml.Node, ...]:
    return tuple(_compose(text))


def _composed(text: str) -> list[yaml.Node]:
    """The documents of ``text``, composed once per process for a text seen before.

    Composing is the slow part of a load (~15 ms for the bundled matrix in pure Python), and one name
    resolves through the same matrix several times. Only the composition is reused: it follows from the
    text alone; what the cases say about the filesystem (their snapshot folders) is read on every load.
    The nodes are only read, never changed. Errors are raised every time, never kept."""
    if len(text) > _COMPOSED_CACHE_MAX_TEXT:
        return _compose(text)
    return list(_composed_cached(text))


def parse_matrix(text: str, path: Path, *, missing_expect: bool = False) -> Matrix:
    """Validate matrix text that came from ``path`` (used for locations and relative folders)."""
    if len(text) > MAX_MATRIX_BYTES:
        raise _too_large(path, len(text.encode("utf-8", "surrogatepass")))
    reader = _Reader(path, missing_expect)
    too_many = (
        f"more than {MAX_NODES} YAML nodes",
        "split the matrix into several files and run each with --tokcompat-matrix",
    )
    over_at = _count_nodes_fast(text)
    if over_at is not None:
        raise MatrixError([Problem(path, over_at, None, *too_many)])
    try:
        documents = _composed(text)
    except _NodeLimit as limit:
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
    except _TooLarge as too_large:
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


def read_loaders(reader: _Reader, root: yaml.MappingNode) -> list[ClientLoader]:
    """The matrix's ``loaders:`` list: ``{name, call: "module:callable", attr, kwargs}`` each."""
    keys = _key_nodes(root)
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


def _read_root(reader: _Reader, root: yaml.Node) -> list[Case]:
    if not isinstance(root, yaml.MappingNode):
        reader.problem(root, None, "the matrix must be a mapping with a 'cases' list", "start with 'cases:'")
        return []
    keys = _key_nodes(root)
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
        case = _read_case(reader, entry, base, base / golden_dir)
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


def _read_aliases(reader: _Reader, root: yaml.Node) -> tuple[Alias, ...]:
    """The matrix's ``aliases:`` list, each entry checked as the registry's Alias fields are."""
    keys = _key_nodes(root) if isinstance(root, yaml.MappingNode) else {}
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
        entry_keys = _key_nodes(entry)
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


def _read_watch(reader: _Reader, root: yaml.Node) -> tuple[str, ...]:
    """The matrix's ``watch:`` list of model_types."""
    keys = _key_nodes(root) if isinstance(root, yaml.MappingNode) else {}
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


def _read_case(reader: _Reader, node: yaml.Node, base: Path, golden_dir: Path) -> Case | None:
    if not isinstance(node, yaml.MappingNode):
        reader.problem(
            node, None, "a case must be a mapping", "write 'id:', 'repo:' or 'snapshot:', 'expect:'"
        )
        return None
    line = node.start_mark.line + 1
    keys = _key_nodes(node)
    before = len(reader.problems)
    data = reader.plain(node, None)
    case_id = data.get("id") if isinstance(data, dict) else None
    name = case_id if isinstance(case_id, str) else None
    for problem_index in range(before, len(reader.problems)):
        old = reader.problems[problem_index]
        reader.problems[problem_index] = Problem(old.path, old.line, name, old.what, old.fix)
    if not isinstance(data, dict):
        return None
    ok = len(reader.problems) == before

    def bad(key: str, what: str, fix: str) -> None:
        nonlocal ok
        ok = False
        reader.problem(keys[key][1] if key in keys else node, name, what, fix)

    for key in data:
        if key not in CASE_KEYS:
            ok = False
            reader.problem(
                keys.get(str(key), (node,))[0],
                name,
                f"unknown key {key!r}",
                f"use one of {', '.join(sorted(CASE_KEYS))}",
            )
    if not isinstance(case_id, str) or not ID_PATTERN.fullmatch(case_id):
        bad(
            "id",
            f"'id' must be a name of letters, digits, '.', '_' or '-', got {case_id!r}",
            "add 'id: my-model'",
        )
    repo, snapshot_text, revision = data.get("repo"), data.get("snapshot"), data.get("revision")
    if repo is not None and (not isinstance(repo, str) or not HUB_ID.match(repo)):
        bad(
            "repo",
            f"'repo' must be a hub id like 'owner/name' (or a bare 'name', as 'gpt2'), got {repo!r}",
            "write 'repo: owner/name'",
        )
    snapshot: Path | None = None
    if snapshot_text is not None:
        if not isinstance(snapshot_text, str):
            bad("snapshot", "'snapshot' must be a folder path", "write a path relative to the matrix file")
        else:
            try:
                snapshot = (base / snapshot_text).resolve()
                is_dir = snapshot.is_dir()
                # config.json, or tokenizer files alone: a tokenizer-only checkpoint is judged too.
                has_config = is_dir and any((snapshot / name).is_file() for name in SNAPSHOT_MARKERS)
            except (OSError, ValueError):  # a NUL byte, a name too long, no permission
                snapshot, is_dir, has_config = None, False, False
                bad(
                    "snapshot",
                    f"'snapshot' {snapshot_text[:80]!r} is not a usable folder path",
                    "fix the path",
                )
            if snapshot is None:
                pass
            elif not is_dir:
                bad(
                    "snapshot",
                    f"snapshot folder {snapshot} does not exist",
                    "create it or fix the path (relative to the matrix file)",
                )
            elif not has_config:
                bad(
                    "snapshot",
                    f"snapshot folder {snapshot} has no config.json and no tokenizer files",
                    "copy the checkpoint's config.json (if it has one) and tokenizer files into it",
                )
    if repo is None and snapshot_text is None:
        bad("id", "neither 'repo' nor 'snapshot' is given", "add 'repo: owner/name' or 'snapshot: folder'")
    if revision is not None and not isinstance(revision, str):
        bad("revision", f"'revision' must be a string, got {revision!r}", "quote the commit sha")
    trust = data.get("trust_remote_code", False)
    if not isinstance(trust, bool):
        bad(
            "trust_remote_code",
            f"'trust_remote_code' must be true or false, got {trust!r}",
            "write 'trust_remote_code: true' only for checkpoints whose code you trust",
        )
        trust = False
    texts = _string_list(data, "texts", bad)
    served = _string_list(data, "served_names", bad)
    note = data.get("note")
    if note is not None and not isinstance(note, str):
        bad("note", "'note' must be text", "quote it")
        note = None
    expectations = _read_expect(data, keys, node, name, reader, trust)
    if expectations is None:
        ok = False
    acknowledge = _read_acknowledge(data, keys, name, reader)
    if acknowledge is None:
        ok = False
    if not ok or not isinstance(case_id, str) or expectations is None:
        return None
    return Case(
        id=case_id,
        source=reader.path,
        line=line,
        expectations=tuple(expectations),
        repo=repo,
        snapshot=snapshot,
        revision=revision,
        trust_remote_code=trust,
        texts=tuple(texts),
        served_names=tuple(served),
        note=note,
        golden_path=golden_dir / f"{case_id}.json",
        acknowledge=tuple(acknowledge or ()),
        expect_written="expect" in data,
    )


def _string_list(data: dict[str, Any], key: str, bad: Any) -> list[str]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        bad(key, f"'{key}' must be a list of strings", f"write '{key}: [\"...\"]'")
        return []
    return value


def _read_expect(
    data: dict[str, Any],
    keys: dict[str, tuple[yaml.Node, yaml.Node]],
    node: yaml.Node,
    name: str | None,
    reader: _Reader,
    trust: bool,
) -> list[Expectation] | None:
    if "expect" not in data:
        if reader.missing_expect:
            return [Expectation(parse_range(""), MEASURED_ONLY)]
        reader.problem(
            node,
            name,
            "no 'expect'",
            f"add 'expect: <one of {', '.join(OUTCOMES)}>', or let --update-expectations write it",
        )
        return None
    value, value_node = data["expect"], keys["expect"][1]
    pairs: list[tuple[str, Any, yaml.Node]]
    if isinstance(value, str):
        pairs = [("", value, value_node)]
    elif isinstance(value, dict) and value and isinstance(value_node, yaml.MappingNode):
        # Number keys (``5.0: native``) are kept so that they are reported as bad ranges, not dropped;
        # a repeated key is already reported as a duplicate and only its first value counts.
        pairs = []
        seen: set[str] = set()
        for k, v in value_node.value:
            if (
                isinstance(k, yaml.ScalarNode)
                and k.value not in seen
                and (k.value in value or k.tag in NUMBER_TAGS)
            ):
                seen.add(k.value)
                pairs.append((str(k.value), value.get(k.value), v))
    else:
        reader.problem(
            value_node,
            name,
            f"'expect' must be an outcome or a map of ranges, got {value!r}",
            "write 'expect: native' or 'expect: {\"<5.0\": native, \">=5.0\": alias}'",
        )
        return None
    expectations: list[Expectation] = []
    ok = True
    for range_text, outcome, at in pairs:
        try:
            version_range = parse_range(range_text)
        except ValueError as error:
            reader.problem(at, name, f"bad version range: {error}", "write a range such as '>=5.0,<5.11'")
            ok = False
            continue
        if outcome not in OUTCOMES:
            reader.problem(at, name, f"unknown outcome {outcome!r}", f"use one of {', '.join(OUTCOMES)}")
            ok = False
            continue
        if outcome == "auto_map" and not trust:
            reader.problem(
                at,
                name,
                "expects auto_map but 'trust_remote_code' is not true",
                "add 'trust_remote_code: true' if you trust the checkpoint's code, or expect another outcome",
            )
            ok = False
            continue
        expectations.append(Expectation(version_range, outcome))
    for first, second, witness in overlapping_pairs([e.range for e in expectations]):
        reader.problem(
            value_node,
            name,
            f"ranges {first.text!r} and {second.text!r} overlap (both admit {witness})",
            "make the ranges disjoint",
        )
        ok = False
    return expectations if ok else None


def _read_acknowledge(
    data: dict[str, Any],
    keys: dict[str, tuple[yaml.Node, yaml.Node]],
    name: str | None,
    reader: _Reader,
) -> list[Acknowledgement] | None:
    """``acknowledge: {RANGE: {DIMENSION: REASON}}``; None (after reporting) when any part is wrong."""
    if "acknowledge" not in data:
        return []
    value, value_node = data["acknowledge"], keys["acknowledge"][1]
    dimensions = ", ".join(str(d) for d in ACKNOWLEDGEABLE)
    example = 'write \'acknowledge: {">=5.0": {default_call: "why this drift is accepted"}}\''
    if not isinstance(value, dict) or not value or not isinstance(value_node, yaml.MappingNode):
        reader.problem(
            value_node, name, f"'acknowledge' must be a map of version ranges, got {value!r}", example
        )
        return None
    found: list[Acknowledgement] = []
    ok = True
    for key_node, entry_node in value_node.value:
        range_text = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else ""
        if range_text not in value and key_node.tag not in NUMBER_TAGS:
            continue  # a key the reader already reported (a duplicate or a bad key)
        try:
            version_range = parse_range(range_text)
        except ValueError as error:
            reader.problem(
                key_node,
                name,
                f"bad version range in 'acknowledge': {error}",
                "write a range such as '>=5.0'",
            )
            ok = False
            continue
        entry = value.get(range_text)
        if not isinstance(entry, dict) or not entry:
            reader.problem(
                entry_node, name, f"'acknowledge' {range_text!r} must map dimensions to reasons", example
            )
            ok = False
            continue
        for dimension, reason in entry.items():
            if dimension == Dimension.IDS:
                reader.problem(
                    entry_node,
                    name,
                    "wrong ids cannot be acknowledged: a tokenizer with other ids is no remedy",
                    "expect broken for that range instead",
                )
                ok = False
            elif dimension not in ACKNOWLEDGEABLE:
                reader.problem(
                    entry_node, name, f"unknown contract dimension {dimension!r}", f"use one of {dimensions}"
                )
                ok = False
            elif not isinstance(reason, str) or not reason.strip():
                reader.problem(
                    entry_node,
                    name,
                    f"the acknowledgement of {dimension!r} for {range_text!r} has no reason",
                    "write why the drift is accepted, e.g. 'upstream issue #123, fixed in 5.6'",
                )
                ok = False
            else:
                found.append(Acknowledgement(version_range, str(dimension), reason.strip()))
    return found if ok else None
