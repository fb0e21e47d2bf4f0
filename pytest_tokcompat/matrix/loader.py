"""The YAML matrix: parsing, validation with file:line errors, and expectations.

The whole file is validated before any test runs, and every problem is reported
at once, so that a user fixes a matrix in one pass rather than one error a run.
YAML is read node by node (never constructed), so tags cannot build objects and
duplicate keys, which YAML itself allows silently, are caught.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
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
from pytest_tokcompat.matrix.versions import VersionRange, matching_ranges, overlapping_pairs, parse_range
from pytest_tokcompat.model import Outcome

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
}
TOP_KEYS = {"version", "cases", "golden_dir", "aliases", "watch"}
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
MAX_NODES = 200_000
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

    def __init__(self, path: Path) -> None:
        self.path = path
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


def load_matrix(path: str | Path) -> Matrix:
    """Read and validate a matrix file; raises MatrixError listing every problem."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise MatrixError(
            [Problem(path, 1, None, f"cannot read the matrix ({error.strerror})", "check the path")]
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise MatrixError(
            [Problem(path, line, None, "the file is not UTF-8", "save the matrix as UTF-8")]
        ) from None
    return parse_matrix(text, path)


def parse_matrix(text: str, path: Path) -> Matrix:
    """Validate matrix text that came from ``path`` (used for locations and relative folders)."""
    reader = _Reader(path)
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
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
        reader.problem(too_large.node, None, f"more than {MAX_NODES} YAML nodes", "split the matrix")
        cases = []
    except RecursionError:
        reader.problem(root, None, "the YAML is nested too deeply", "flatten the matrix")
        cases = []
    if reader.problems:
        # dict.fromkeys: a node reached twice through an alias is reported once.
        raise MatrixError(sorted(dict.fromkeys(reader.problems), key=lambda p: p.line))
    return Matrix(path, cases, aliases, watch)


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
    if not isinstance(case_id, str) or not ID_PATTERN.match(case_id):
        bad(
            "id",
            f"'id' must be a name of letters, digits, '.', '_' or '-', got {case_id!r}",
            "add 'id: my-model'",
        )
    repo, snapshot_text, revision = data.get("repo"), data.get("snapshot"), data.get("revision")
    if repo is not None and (not isinstance(repo, str) or repo.count("/") != 1 or " " in repo):
        bad("repo", f"'repo' must be a hub id like 'owner/name', got {repo!r}", "write 'repo: owner/name'")
    snapshot: Path | None = None
    if snapshot_text is not None:
        if not isinstance(snapshot_text, str):
            bad("snapshot", "'snapshot' must be a folder path", "write a path relative to the matrix file")
        else:
            try:
                snapshot = (base / snapshot_text).resolve()
                is_dir = snapshot.is_dir()
                has_config = is_dir and (
                    (snapshot / "config.json").is_file() or (snapshot / "tokcompat-sources.json").is_file()
                )
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
                    f"snapshot folder {snapshot} has no config.json",
                    "copy the checkpoint's config.json and tokenizer files into it",
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
        reader.problem(node, name, "no 'expect'", f"add 'expect: <one of {', '.join(OUTCOMES)}>'")
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
