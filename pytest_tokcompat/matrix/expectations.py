"""Recorded expectations: the measured outcomes written into the matrix, as snapshot tools write snapshots.

A new entry's ``expect:`` would otherwise be guessed before the first run. The file is
edited round-trip (ruamel.yaml): comments, key order and quoting stay, and only the
``expect`` of the entries whose measurement differs is rewritten. An entry without
``expect`` gets ranges from the measured releases (a range starts at the first release
measured with its outcome); where a written range disagrees at a measured release, that
release gets an ``==V`` key of its own and leaves the range (``,!=V``), so what was
written for unmeasured releases stays. A clean remedy turning ``broken`` is a weaker
expectation: it is shown and refused unless ``allow_weaker``.

Findings (right ids, a contract dimension that differs) go into ``acknowledge`` the same way: a new
entry gets ranges of the findings measured, an entry that already says what it accepts gets an
``==V`` key per release with a finding it does not acknowledge, which is weaker, so refused unless
``allow_weaker``. Repairs need no key of their own: the backend override is an outcome (``backend``)
and the declared BOS/EOS repair is applied by ``load_tokenizer()`` wherever it clears a finding.
"""

from __future__ import annotations

import difflib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from pytest_tokcompat.errors import MatrixError, TokcompatError
from pytest_tokcompat.matrix.cases import OUTCOMES, Case, Expectation
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.model import CONSEQUENCES, Outcome

CLEAN = {str(Outcome.NATIVE), str(Outcome.AUTO_MAP), str(Outcome.ALIAS)}
KEYS_BEFORE_EXPECT = ("id", "repo", "snapshot", "revision", "trust_remote_code")
"""Where a new ``expect`` goes: after the last of these the entry has (a new ``acknowledge`` follows it)."""
RIGHT_IDS = CLEAN | {str(Outcome.BACKEND)}


class ExpectationsError(TokcompatError):
    """The matrix cannot be updated as measured: the message names the file and why."""


@dataclass
class Update:
    """What one update did: the diff written, the entries changed, the weakenings refused."""

    path: Path
    diff: str = ""
    changed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """One line per refused weakening: the entry, its line, the release, written -> measured."""

    @property
    def written(self) -> bool:
        return bool(self.diff)


def measured_outcomes(records: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, dict[str, str]]:
    """``{case id: {transformers version: verdict}}`` from (version, case record) pairs; records without
    a decisive verdict (not checked, failed to run) measure nothing."""
    found: dict[str, dict[str, str]] = {}
    for version, record in records:
        verdict = record.get("verdict")
        if record.get("kind", "case") == "case" and verdict in OUTCOMES and "id" in record:
            found.setdefault(str(record["id"]), {})[version] = str(verdict)
    return found


def measured_findings(records: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, dict[str, list[str]]]:
    """``{case id: {transformers version: [finding]}}``: what each record with right ids found that its
    entry does not acknowledge (an empty list where it found nothing: a measured point all the same)."""
    found: dict[str, dict[str, list[str]]] = {}
    for version, record in records:
        if record.get("kind", "case") == "case" and record.get("verdict") in RIGHT_IDS and "id" in record:
            findings = sorted({str(name) for name in record.get("findings") or []})
            found.setdefault(str(record["id"]), {})[version] = findings
    return found


def _short(version: Version) -> str:
    """``5.3.0`` -> ``5.3`` (the same PEP 440 bound), ``5.6.2`` as it is."""
    release = list(version.release)
    while len(release) > 2 and release[-1] == 0:
        release.pop()
    return ".".join(map(str, release)) if not (version.pre or version.dev or version.post) else str(version)


def ranges_from(points: Mapping[Version, str]) -> dict[str, str]:
    """Ranges covering every release from measured points: one per run of equal outcomes, each starting
    at the first release measured with it; one outcome everywhere is one key-less value (``{"": o}``)."""
    ordered = sorted(points)
    runs: list[tuple[Version, str]] = []
    for version in ordered:
        if not runs or runs[-1][1] != points[version]:
            runs.append((version, points[version]))
    if len(runs) == 1:
        return {"": runs[0][1]}
    found: dict[str, str] = {}
    for index, (start, outcome) in enumerate(runs):
        lower = f">={_short(start)}" if index else ""
        upper = f"<{_short(runs[index + 1][0])}" if index + 1 < len(runs) else ""
        found[",".join(part for part in (lower, upper) if part)] = outcome
    return found


def _carved(expectations: tuple[Expectation, ...], disagreeing: Mapping[Version, str]) -> dict[str, str]:
    """The written ranges with each disagreeing release taken out of its range and given its own key."""
    found: dict[str, str] = {}
    for expectation in expectations:
        inside = [v for v in sorted(disagreeing) if expectation.range.contains(v)]
        text = expectation.range.text.strip()
        parts = [text] if text not in ("", "*") else []
        found[",".join(parts + [f"!={v}" for v in inside])] = expectation.outcome
    for version in sorted(disagreeing):
        found[f"=={version}"] = disagreeing[version]
    return found


def planned(case: Case, measured: Mapping[str, str]) -> tuple[dict[str, str] | None, list[str]]:
    """The entry's new ``expect`` (None: unchanged) and the weakenings it holds (``V: written -> measured``)."""
    points = {Version(version): outcome for version, outcome in measured.items()}
    if not points:
        return None, []
    if not case.expect_written:
        return ranges_from(points), []
    disagreeing: dict[Version, str] = {}
    weaker: list[str] = []
    for version, outcome in points.items():
        try:
            written = case.expected_for(str(version))
        except ValueError:
            written = None
        if written != outcome:
            disagreeing[version] = outcome
            if written in CLEAN and outcome == str(Outcome.BROKEN):
                weaker.append(f"{version}: {written} -> {outcome}")
    if not disagreeing:
        return None, []
    return _carved(case.expectations, disagreeing), weaker


def _reason(dimension: str) -> str:
    return (
        f"recorded by --update-expectations as measured: {CONSEQUENCES.get(dimension, dimension)}; "
        "replace this with why it is accepted"
    )


def planned_acknowledgements(
    case: Case, measured: Mapping[str, list[str]]
) -> tuple[dict[str, dict[str, str]] | None, list[str]]:
    """The ``acknowledge`` keys to add to the entry (None: none) and the weakenings they are
    (``V: finding D acknowledged``): none for a new entry, which had nothing to weaken."""
    points = {Version(version): findings for version, findings in measured.items()}
    if not any(points.values()):
        return None, []
    if not case.expect_written and not case.acknowledge:
        runs = ranges_from({version: ",".join(findings) for version, findings in points.items()})
        return {
            key or "*": {dimension: _reason(dimension) for dimension in value.split(",")}
            for key, value in runs.items()
            if value
        }, []
    added = {f"=={v}": {d: _reason(d) for d in points[v]} for v in sorted(points) if points[v]}
    weaker = [f"{key[2:]}: {dimension} acknowledged" for key, found in added.items() for dimension in found]
    return added, weaker


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def _expect_node(new: dict[str, str], flow: bool) -> Any:
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if list(new) == [""]:
        return new[""]
    node = CommentedMap((DoubleQuotedScalarString(k), v) for k, v in new.items())
    if flow:
        node.fa.set_flow_style()
    return node


def _acknowledge_node(added: dict[str, dict[str, str]], flow: bool) -> Any:
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    node = CommentedMap()
    for key, reasons in added.items():
        node[DoubleQuotedScalarString(key)] = CommentedMap(
            (dimension, DoubleQuotedScalarString(reason)) for dimension, reason in reasons.items()
        )
    if flow:
        node.fa.set_flow_style()
    return node


def _write_acknowledgements(entry: Any, added: dict[str, dict[str, str]]) -> None:
    """``added`` into the entry's ``acknowledge`` (made after ``expect`` where it has none)."""
    if "acknowledge" not in entry:
        after = max((list(entry).index(k) for k in (*KEYS_BEFORE_EXPECT, "expect") if k in entry), default=-1)
        entry.insert(after + 1, "acknowledge", _acknowledge_node(added, flow=entry.fa.flow_style()))
        return
    existing = entry["acknowledge"]
    for key, reasons in _acknowledge_node(added, flow=existing.fa.flow_style()).items():
        if key in existing:
            existing[key].update(reasons)
        else:
            existing[key] = reasons


def update_matrix(
    path: Path,
    measured: Mapping[str, Mapping[str, str]],
    *,
    findings: Mapping[str, Mapping[str, list[str]]] | None = None,
    allow_weaker: bool = False,
) -> Update:
    """Write the measured outcomes (and ``findings`` to acknowledge) into the matrix at ``path``; a refused
    weakening leaves its entry as it was (the others are written). The result holds the unified diff of
    what was written."""
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.util import load_yaml_guess_indent

    update = Update(path)
    try:
        matrix = load_matrix(path, missing_expect=True)
    except MatrixError as error:
        raise ExpectationsError(f"{path}: fix the matrix first:\n{error}") from None
    plans: dict[str, tuple[dict[str, str] | None, dict[str, dict[str, str]] | None]] = {}
    for case in matrix.cases:
        new, weaker = planned(case, measured.get(case.id, {}))
        added, acknowledging = planned_acknowledgements(case, (findings or {}).get(case.id, {}))
        weaker += acknowledging
        if new is None and added is None:
            continue
        if weaker and not allow_weaker:
            update.refused += [f"{case.location}: case {case.id!r} under transformers {w}" for w in weaker]
            continue
        plans[case.id] = (new, added)
    if not plans:
        return update
    text = path.read_text(encoding="utf-8")
    _, indent, offset = load_yaml_guess_indent(text)  # the file's own indentation is kept
    indent, offset = indent or 2, offset or 0
    yaml = _yaml()
    yaml.indent(mapping=indent - offset if offset < indent else indent, sequence=indent, offset=offset)
    document = yaml.load(text)
    for entry in document.get("cases", []):
        if not isinstance(entry, CommentedMap) or entry.get("id") not in plans:
            continue
        new, added = plans[entry["id"]]
        if new is not None:
            node = _expect_node(new, flow=entry.fa.flow_style())
            if "expect" in entry:
                entry["expect"] = node
            else:
                after = max((list(entry).index(k) for k in KEYS_BEFORE_EXPECT if k in entry), default=-1)
                entry.insert(after + 1, "expect", node)
        if added is not None:
            _write_acknowledgements(entry, added)
        update.changed.append(str(entry["id"]))
    stream = io.StringIO()
    yaml.dump(document, stream)
    new_text = stream.getvalue()
    try:
        from pytest_tokcompat.matrix.loader import parse_matrix

        parse_matrix(new_text, path)
    except MatrixError as error:  # never write a matrix the next run cannot read
        raise ExpectationsError(
            f"{path}: the updated matrix would not be valid, left as it was:\n{error}"
        ) from None
    update.diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True), new_text.splitlines(keepends=True), str(path), str(path)
        )
    )
    if update.diff:
        path.write_text(new_text, encoding="utf-8")
    return update


def describe(update: Update, flag: str = "--allow-weaker") -> list[str]:
    """The lines a front-end prints: the diff, what was written, what was refused and how to accept it."""
    lines = update.diff.splitlines()
    if update.written:
        lines.append(
            f"tokcompat: wrote the measured expectations of {', '.join(update.changed)} into {update.path}"
        )
    elif not update.refused:
        lines.append(f"tokcompat: the expectations in {update.path} already match what was measured")
    for refusal in update.refused:
        lines.append(f"tokcompat: refused a weaker expectation: {refusal} (accept it with {flag})")
    return lines
