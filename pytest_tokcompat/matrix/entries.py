"""One ``cases:`` entry read into a :class:`Case`: its keys, folder, expectations and acknowledgements.

Every problem of an entry is collected with its line and the entry's id, so that a user fixes a
matrix in one pass.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from pytest_tokcompat.matrix.cases import (
    MEASURED_ONLY,
    OUTCOMES,
    Acknowledgement,
    Case,
    Expectation,
    Problem,
)
from pytest_tokcompat.matrix.versions import overlapping_pairs, parse_range
from pytest_tokcompat.matrix.yamlnodes import NUMBER_TAGS, Reader, key_nodes
from pytest_tokcompat.model import ACKNOWLEDGEABLE, Dimension

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
SNAPSHOT_MARKERS = ("config.json", "tokcompat-sources.json", "tokenizer.json", "tokenizer_config.json")
"""A snapshot folder holds at least one of these: a config, a manifest, or a tokenizer-only checkpoint's files."""
# A case id, matched whole. Python's `$` also matches before a trailing newline, so "qwen\n" would pass
# without the lookahead; the same text is the JSON Schema's pattern, which must also mean this in ECMA-262
# (where `\Z` does not exist).
HUB_ID = re.compile(r"^(?:[\w.-]+/)?[\w.-]+$(?!\n)", re.ASCII)
"""A hub repo id: ``owner/name`` or a bare ``name`` (``gpt2``), as huggingface_hub accepts them."""
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$(?!\n)")


def read_case(reader: Reader, node: yaml.Node, base: Path, golden_dir: Path) -> Case | None:
    if not isinstance(node, yaml.MappingNode):
        reader.problem(
            node, None, "a case must be a mapping", "write 'id:', 'repo:' or 'snapshot:', 'expect:'"
        )
        return None
    line = node.start_mark.line + 1
    keys = key_nodes(node)
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
    reader: Reader,
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
    reader: Reader,
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
