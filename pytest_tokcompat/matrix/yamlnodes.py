"""YAML read node by node, within limits: no tags that build objects, no duplicate keys, no floods.

A matrix is composed (never constructed) and then read node by node, so that tags cannot build
objects and duplicate keys, which YAML itself allows silently, are caught; the node count is
bounded while composing and again while reading, where each use of an anchor counts its whole value.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from pytest_tokcompat.matrix.cases import Problem

# YAML nodes in one matrix: counted while composing, and again while reading (where each use of an alias
# counts its whole anchored value).
MAX_NODES = 200_000
SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:float",
}
NUMBER_TAGS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}


class Reader:
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
            raise TooLarge(node)
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


def too_many_nodes() -> tuple[str, str]:
    """What a matrix over the node limit is told, and how to fix it."""
    return (
        f"more than {MAX_NODES} YAML nodes",
        "split the matrix into several files and run each with --tokcompat-matrix",
    )


class TooLarge(Exception):
    """Raised by :meth:`Reader.plain` past MAX_NODES, at the node where the count passed it."""

    def __init__(self, node: yaml.Node) -> None:
        self.node = node


def key_nodes(mapping: yaml.MappingNode) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    """Each plain key of ``mapping`` with its key and value nodes (the first of duplicates), to locate problems."""
    found: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for key_node, value_node in mapping.value:
        if isinstance(key_node, yaml.ScalarNode):
            found.setdefault(str(key_node.value), (key_node, value_node))
    return found


class NodeLimit(Exception):
    """Raised while composing past MAX_NODES, with the line it was passed at."""

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
            raise NodeLimit(self.peek_event().start_mark.line + 1)  # type: ignore[no-untyped-call]
        node: yaml.Node | None = super().compose_node(parent, index)
        return node


def count_nodes_fast(text: str) -> int | None:
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


def composed(text: str) -> list[yaml.Node]:
    """The documents of ``text``, composed once per process for a text seen before.

    Composing is the slow part of a load (~15 ms for the bundled matrix in pure Python), and one name
    resolves through the same matrix several times. Only the composition is reused: it follows from the
    text alone; what the cases say about the filesystem (their snapshot folders) is read on every load.
    The nodes are only read, never changed. Errors are raised every time, never kept."""
    if len(text) > _COMPOSED_CACHE_MAX_TEXT:
        return _compose(text)
    return list(_composed_cached(text))
