"""The report contract: one builder per record type, the schema, validation, and collision-free writing.

The JSON report is what the grid job hands to the issues job (which runs a wheel
built separately), so its shape has one owner: the builders here produce every
record, ``report.schema.json`` (beside this module) describes them, and every
reader validates against it. Imports nothing of the engine: the CI layer reads
reports through this module alone.
"""

from __future__ import annotations

import copy
import json
import os
import platform
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_tokcompat.credentials import scrub_data
from pytest_tokcompat.errors import ReportError
from pytest_tokcompat.model import AliasState, CaseStatus, Outcome, OverrideKind, TrackedAs, Verdict

SCHEMA_VERSION = 2
"""2: alias lifecycles under ``state`` (not ``verdict``); ``exit_status``, ``complete`` required."""
REPORT_SCHEMA_NAME = "report.schema.json"
LOCK_NAME = ".tokcompat-report.lock"
"""The lock file a reports folder gets, so that two runs writing it at once decide one after the other."""
REGENERATE = "regenerate it with `pytest --tokcompat --tokcompat-report` of this tokcompat version"
CASE, ALIAS = "case", "alias"


# --- the schema ------------------------------------------------------------------------------


def report_schema_path() -> Path:
    """The path of the bundled report.schema.json (package data, beside matrix.schema.json)."""
    return Path(__file__).resolve().with_name(REPORT_SCHEMA_NAME)


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(report_schema_path().read_text(encoding="utf-8"))
    return loaded


def load_report_schema() -> dict[str, Any]:
    """The report schema (JSON Schema draft 2020-12), a fresh copy the caller may change."""
    return copy.deepcopy(_schema())


# --- the builders ------------------------------------------------------------------------------


def library_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("transformers", "tokenizers", "huggingface_hub", "pytest-tokcompat"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def utc_timestamp() -> str:
    """Now, as the report's ISO 8601 UTC timestamps spell it."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _optional(kind: type[Any], value: str | None) -> str | None:
    return None if value is None else str(kind(value).value)


def case_record(
    case_id: str,
    status: CaseStatus | str,
    message: str,
    *,
    expected: Outcome | str | None = None,
    verdict: Verdict | str | None = None,
    alarms: Sequence[Mapping[str, Any]] = (),
    judgement: Mapping[str, Any] | None = None,
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The record of one matrix case: its result, and the judgement's record (``Judgement.to_json()``).

    ``details`` (repo, location, note …) are added as they are; the judgement's verdict
    wins over ``verdict``. Unknown statuses, outcomes or verdicts raise ValueError here,
    not in the reader a night later.
    """
    record: dict[str, Any] = {
        "kind": CASE,
        "id": case_id,
        "status": CaseStatus(status).value,
        "message": message,
        "expected": _optional(Outcome, expected),
        "verdict": _optional(Verdict, verdict),
        "alarms": [dict(alarm) for alarm in alarms],
        **(details or {}),
    }
    if judgement is not None:
        record.update(judgement)
        record["verdict"] = _optional(Verdict, judgement.get("verdict"))
        predicted = (judgement.get("static") or {}).get("predicted")
        record["verdict_matches_static"] = predicted == record["verdict"]
    return record


def alias_record(
    model_type: str,
    status: CaseStatus | str,
    state: AliasState | str | None,
    message: str,
    *,
    alias: Mapping[str, Any] | None = None,
    cases: Sequence[str] = (),
    alarms: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The record of one registry alias's lifecycle; its state lives under ``state``, never ``verdict``."""
    return {
        "kind": ALIAS,
        "id": f"alias:{model_type}",
        "status": CaseStatus(status).value,
        "state": _optional(AliasState, state),
        "message": message,
        "alias": None if alias is None else dict(alias),
        "cases": list(cases),
        "alarms": [dict(alarm) for alarm in alarms],
    }


def not_checked_record(record_id: str, reason: str) -> dict[str, Any]:
    """A case or alias (``alias:<model_type>``) that never reported: not checked, never passed."""
    if record_id.startswith("alias:"):
        return alias_record(record_id.removeprefix("alias:"), CaseStatus.NOT_CHECKED, None, reason)
    return case_record(record_id, CaseStatus.NOT_CHECKED, reason)


TRACKED_AS = tuple(str(why) for why in TrackedAs)
"""Why the upstream watch records a model_type: a case has it, an alias declares it or borrows its
tokenizer mapping, or the matrix's ``watch:`` list names it."""
OVERRIDE_KINDS = tuple(str(kind) for kind in OverrideKind)


def registry_record(
    transformers_version: str,
    model_types: Mapping[str, Mapping[str, Any]],
    override_lists: Mapping[str, Mapping[str, Any]],
    *,
    aliases: Mapping[str, Mapping[str, Any]] | None = None,
    watch: Sequence[str] = (),
    checkpoints: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """The report's ``registry`` object: the upstream watch under one release.

    ``model_types`` maps each tracked model_type to ``tracked_as`` (why: matrix, alias,
    alias-base, watch), ``config`` (its CONFIG_MAPPING_NAMES class name, null when not
    registered), ``tokenizer`` (its TOKENIZER_MAPPING_NAMES entry: a class name, [slow, fast]
    in 4.x, [] for an entry naming no class; null when it has none) and ``overrides`` (the
    override lists of model types that name it). ``override_lists`` maps each hard-coded list
    whose hub tokenizer class transformers overrides to its kind (model_types or checkpoints)
    and sorted entries. ``aliases`` are the run's alias registry entries (so the grid knows
    what is acknowledged), ``watch`` the matrix's list, ``checkpoints`` each hub repo of the
    matrix with its model_type (to match the checkpoint lists against). Unknown reasons or
    kinds raise ValueError here, not in the reader a night later.
    """
    entries: dict[str, dict[str, Any]] = {}
    for model_type, entry in sorted(model_types.items()):
        tracked = [str(why) for why in entry.get("tracked_as", [])]
        unknown = [why for why in tracked if why not in TRACKED_AS]
        if unknown:
            raise ValueError(f"tracked_as {unknown} is not one of {TRACKED_AS}")
        entries[model_type] = {
            "tracked_as": tracked,
            "config": entry.get("config"),
            "tokenizer": entry.get("tokenizer"),
            "overrides": sorted(entry.get("overrides", [])),
        }
    lists: dict[str, dict[str, Any]] = {}
    for name, found in sorted(override_lists.items()):
        if found.get("kind") not in OVERRIDE_KINDS:
            raise ValueError(
                f"override list {name}: kind {found.get('kind')!r} is not one of {OVERRIDE_KINDS}"
            )
        lists[name] = {"kind": found["kind"], "entries": sorted(found.get("entries", []))}
    return {
        "transformers_version": transformers_version,
        "model_types": entries,
        "override_lists": lists,
        "aliases": {name: dict(alias) for name, alias in sorted((aliases or {}).items())},
        "watch": list(watch),
        "checkpoints": dict(sorted((checkpoints or {}).items())),
    }


def report_document(
    records: Sequence[Mapping[str, Any]],
    matrix: str | None,
    *,
    exit_status: int,
    complete: bool,
    selection: Mapping[str, Any] | None = None,
    versions: Mapping[str, str | None] | None = None,
    started_at: str | None = None,
    finished_at: str | None = None,
    registry: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole report of one run: versions, records sorted by kind and id, every alarm in one list.

    ``complete`` is false when a case never reported; ``selection`` ({"partial": true,
    "reason": "-k qwen"}) marks a run that selected part of the matrix. ``started_at``
    lets ``write_report`` tell a run that overlapped this one from an earlier one. ``registry``
    is the upstream watch (``registry_record``), where the run read it.
    """
    found = dict(versions) if versions is not None else library_versions()
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "versions": found,
        "transformers_version": found.get("transformers"),
        "matrix": matrix,
        "exit_status": int(exit_status),
        "complete": bool(complete),
        "cases": sorted((dict(r) for r in records), key=lambda r: (r.get("kind", CASE), r.get("id", ""))),
        "alarms": [dict(alarm) for record in records for alarm in record.get("alarms", [])],
        "finished_at": finished_at or utc_timestamp(),
    }
    if started_at is not None:
        document["started_at"] = started_at
    if selection is not None:
        document["selection"] = dict(selection)
    if registry is not None:
        document["registry"] = dict(registry)
    return document


def is_full_run(document: Mapping[str, Any]) -> bool:
    """A report of a run that finished and selected the whole matrix (not interrupted, not partial)."""
    selection = document.get("selection")
    partial = isinstance(selection, Mapping) and selection.get("partial") is True
    return document.get("complete") is True and not partial


# --- validation ------------------------------------------------------------------------------

_JSON_TYPES = {
    "null": "null",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "array": "an array",
    "object": "an object",
}


_TYPE_NAMES: dict[type, str] = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
}


def _json_type(value: Any) -> str:
    found = _TYPE_NAMES.get(type(value))
    if found is not None:
        return found
    for kind, name in reversed(_TYPE_NAMES.items()):  # subclasses (a str enum): bool before int
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _has_type(value: Any, name: str) -> bool:
    found = _json_type(value)
    if name == "integer" and found == "number":
        return bool(value.is_integer())  # JSON Schema: 1.0 is an integer
    return found == name or (name == "number" and found == "integer")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


Where = tuple[str | int, ...]
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _where(path: Where) -> str:
    """``$.cases[3].attempts``: built only for a message, so that valid reports are read fast."""
    text = "$"
    for key in path:
        if isinstance(key, int):
            text += f"[{key}]"
        else:
            text += f".{key}" if _NAME.fullmatch(key) else f"[{json.dumps(key)}]"
    return text


class _SchemaSubset:
    """The part of JSON Schema 2020-12 that report.schema.json uses, so reading a report needs no
    jsonschema at run time (the issues job installs the wheel without dependencies). The tests
    check that it agrees with jsonschema and that the schema uses nothing else."""

    KEYWORDS = frozenset(
        {
            "$schema", "$id", "$defs", "$ref", "title", "description", "default",
            "type", "enum", "const", "properties", "required", "additionalProperties", "items",
            "minLength", "minimum", "pattern", "anyOf", "not", "if", "then", "else",
        }
    )  # fmt: skip

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self._compiled: dict[int, tuple[Mapping[str, Any], Callable[[Any], bool]]] = {}

    def valid(self, value: Any, schema: Mapping[str, Any]) -> bool:
        """Whether ``value`` fits ``schema``: the fast path (compiled once), messages only on failure."""
        return self.compile(schema)(value)

    def compile(self, schema: Mapping[str, Any]) -> Callable[[Any], bool]:
        entry = self._compiled.get(id(schema))
        if entry is None or entry[0] is not schema:  # the node is kept alive, so its id is never reused
            entry = self._compiled[id(schema)] = (schema, self._build(schema))
        return entry[1]

    def _build(self, schema: Mapping[str, Any]) -> Callable[[Any], bool]:
        tests: list[Callable[[Any], bool]] = []
        if "type" in schema:
            kinds = [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
            tests.append(lambda v: any(_has_type(v, kind) for kind in kinds))
        if "$ref" in schema:
            target = self._target(schema["$ref"])
            tests.append(lambda v: self.compile(target)(v))
        if "const" in schema:
            const = schema["const"]
            tests.append(lambda v: v == const and type(v) is type(const))
        if "enum" in schema:
            allowed = [(type(v), v) for v in schema["enum"]]
            tests.append(lambda v: (type(v), v) in allowed)
        if "not" in schema:
            negated = schema["not"]
            tests.append(lambda v: not self.compile(negated)(v))
        if "anyOf" in schema:
            branches = schema["anyOf"]
            tests.append(lambda v: any(self.compile(branch)(v) for branch in branches))
        if "minLength" in schema or "pattern" in schema:
            least = schema.get("minLength", 0)
            pattern = re.compile(schema["pattern"]) if "pattern" in schema else None
            tests.append(
                lambda v: (
                    not isinstance(v, str)
                    or (len(v) >= least and (pattern is None or pattern.search(v) is not None))
                )
            )
        if "minimum" in schema:
            low = schema["minimum"]
            tests.append(lambda v: _json_type(v) not in ("integer", "number") or v >= low)
        if {"required", "properties", "additionalProperties"} & set(schema):
            tests.append(self._build_object(schema))
        if "items" in schema:
            item = schema["items"]
            tests.append(lambda v: not isinstance(v, list) or all(self.compile(item)(x) for x in v))
        if "if" in schema:
            condition, then, otherwise = schema["if"], schema.get("then", {}), schema.get("else", {})
            tests.append(lambda v: self.compile(then if self.compile(condition)(v) else otherwise)(v))
        return lambda v: all(test(v) for test in tests)

    def _build_object(self, schema: Mapping[str, Any]) -> Callable[[Any], bool]:
        required = list(schema.get("required", []))
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)

        def test(value: Any) -> bool:
            if not isinstance(value, dict):
                return True
            if any(key not in value for key in required):
                return False
            for key, item in value.items():
                if key in properties:
                    if not self.compile(properties[key])(item):
                        return False
                elif extra is False or (isinstance(extra, Mapping) and not self.compile(extra)(item)):
                    return False
            return True

        return test

    def resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        while "$ref" in schema and set(schema) <= {"$ref", "description"}:
            schema = self._target(schema["$ref"])
        return schema

    def _target(self, ref: str) -> Mapping[str, Any]:
        node: Any = self.root
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        return node  # type: ignore[no-any-return]

    def describe(self, schema: Mapping[str, Any]) -> str:
        schema = self.resolve(schema)
        if "anyOf" in schema:
            return " or ".join(self.describe(branch) for branch in schema["anyOf"])
        if "const" in schema:
            return json.dumps(schema["const"])
        if "enum" in schema:
            return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
        kinds = schema.get("type", [])
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if "$ref" in schema:
            return self.describe(self._target(schema["$ref"]))
        return " or ".join(_JSON_TYPES[k] for k in kinds) or "a value"

    def _admits_type(self, schema: Mapping[str, Any], value: Any) -> bool:
        schema = self.resolve(schema)
        if "$ref" in schema and "type" not in schema:
            return self._admits_type(self._target(schema["$ref"]), value)
        if "anyOf" in schema:
            return any(self._admits_type(branch, value) for branch in schema["anyOf"])
        kinds = schema.get("type")
        if kinds is None:
            return True
        return any(_has_type(value, k) for k in ([kinds] if isinstance(kinds, str) else kinds))

    def errors(self, value: Any, schema: Mapping[str, Any], path: Where) -> Iterator[str]:
        if "$ref" in schema:
            yield from self.errors(value, self._target(schema["$ref"]), path)
        if "type" in schema:
            kinds = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
            if not any(_has_type(value, kind) for kind in kinds):
                yield f"{_where(path)}: expected {self.describe({'type': kinds})}, got {_short(value)}"
                return
        if "const" in schema and value != schema["const"]:
            yield f"{_where(path)}: expected {json.dumps(schema['const'])}, got {_short(value)}"
        if "enum" in schema and not any(value == v and type(value) is type(v) for v in schema["enum"]):
            yield f"{_where(path)}: {_short(value)} is not {self.describe({'enum': schema['enum']})}"
        if "not" in schema and not any(self.errors(value, schema["not"], path)):
            yield f"{_where(path)}: {_short(value)} is not allowed ({schema.get('description', 'see the schema')})"
        if "anyOf" in schema:
            yield from self._any_of(value, schema, path)
        if isinstance(value, str):
            if len(value) < schema.get("minLength", 0):
                yield f"{_where(path)}: {_short(value)} is shorter than {schema['minLength']} character(s)"
            if "pattern" in schema and not re.search(schema["pattern"], value):
                yield f"{_where(path)}: {_short(value)} does not match {schema['pattern']}"
        if _json_type(value) in ("integer", "number") and value < schema.get("minimum", value):
            yield f"{_where(path)}: {_short(value)} is less than {schema['minimum']}"
        if isinstance(value, dict):
            yield from self._object(value, schema, path)
        if isinstance(value, list) and "items" in schema:
            for index, item in enumerate(value):
                yield from self.errors(item, schema["items"], (*path, index))
        if "if" in schema:
            branch = "then" if not any(self.errors(value, schema["if"], path)) else "else"
            if branch in schema:
                yield from self.errors(value, schema[branch], path)

    def _any_of(self, value: Any, schema: Mapping[str, Any], path: Where) -> Iterator[str]:
        branches = schema["anyOf"]
        if any(not any(self.errors(value, branch, path)) for branch in branches):
            return
        fitting = [branch for branch in branches if self._admits_type(branch, value)]
        if len(fitting) == 1:  # the one branch of the value's type says best what is wrong
            yield from self.errors(value, fitting[0], path)
        else:
            yield f"{_where(path)}: expected {self.describe(schema)}, got {_short(value)}"

    def _object(self, value: dict[str, Any], schema: Mapping[str, Any], path: Where) -> Iterator[str]:
        for key in schema.get("required", []):
            if key not in value:
                yield f"{_where(path)}: {json.dumps(key)} is missing"
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                yield from self.errors(item, properties[key], (*path, key))
            elif extra is False:
                yield f"{_where(path)}: unknown key {json.dumps(key)}"
            elif isinstance(extra, Mapping):
                yield from self.errors(item, extra, (*path, key))


def schema_problems(document: Any) -> list[str]:
    """Every way ``document`` breaks report.schema.json, each as ``$.json.path: what``."""
    schema = _schema()
    reader = _reader()
    try:
        if reader.valid(document, schema):
            return []
        return list(reader.errors(document, schema, ())) or ["$: does not fit report.schema.json"]
    except RecursionError:
        return ["$: nested too deeply to be a report"]


@lru_cache(maxsize=1)
def _reader() -> _SchemaSubset:
    return _SchemaSubset(_schema())


def validate_report(document: Any, source: str | os.PathLike[str] = "report") -> dict[str, Any]:
    """``document`` as a report, or ReportError: one line naming ``source``, the JSON path and the fix."""
    if not isinstance(document, dict):
        raise ReportError(
            f"{source}: not a tokcompat report (a JSON {_json_type(document)}, not an object); {REGENERATE}"
        )
    if "schema_version" not in document:
        raise ReportError(f"{source}: not a tokcompat report (no schema_version); {REGENERATE}")
    if document["schema_version"] != SCHEMA_VERSION:
        raise ReportError(
            f"{source}: report schema version {_short(document['schema_version'])}, this tokcompat reads "
            f"{SCHEMA_VERSION}; {REGENERATE}"
        )
    problems = schema_problems(document)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ReportError(f"{source}: {problems[0]}{more}; {REGENERATE}")
    return document


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_report(path: Path) -> dict[str, Any]:
    """Read and validate one report file; any problem is a one-line ReportError naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise ReportError(f"{path}: is a folder; pass the JSON files in it (reports/*.json)") from None
    except OSError as error:
        raise ReportError(f"{path}: cannot read it ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not UTF-8 text, so not a report; {REGENERATE}") from None
    try:
        document = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ReportError(f"{path}: JSON nested too deeply to be a report; {REGENERATE}") from None
    except ValueError as error:
        raise ReportError(f"{path}: not JSON ({error}); was the run interrupted? run its env again") from None
    return validate_report(document, source=path)


# --- writing ---------------------------------------------------------------------------------


def _atomic_write(path: Path, document: Mapping[str, Any]) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(scrub_data(document), stream, indent=2, ensure_ascii=False)
            stream.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """Hold the folder's report lock (fcntl; where there is none, writes still never replace a
    kept report, but two deciding at once are not ordered)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on the platforms CI runs
        yield
        return
    with open(folder / LOCK_NAME, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def parse_timestamp(value: Any) -> datetime | None:
    """A report's ``started_at``/``finished_at`` as an aware datetime, or None when absent or unreadable."""
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return moment if moment is None or moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def _read_existing(path: Path) -> dict[str, Any] | None:
    """The report at ``path``, or None when it is no report (such a file is never replaced)."""
    try:
        existing = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None
    return existing if isinstance(existing, dict) and "schema_version" in existing else None


def superseded(existing: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether ``new`` may replace ``existing``: a report in an older format, or an earlier run of the
    same matrix (it finished before ``new``'s run started) that is not complete where ``new`` is.

    A run that finished while ``new``'s ran (two runs at once), another matrix's run, a report
    without timestamps, and a complete run that ``new`` (incomplete or partial) would replace are
    never superseded.
    """
    version = existing.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version < SCHEMA_VERSION:
        return True
    if existing.get("matrix") != new.get("matrix"):
        return False
    finished, started = parse_timestamp(existing.get("finished_at")), parse_timestamp(new.get("started_at"))
    if finished is None or started is None or finished >= started:
        return False
    return is_full_run(new) or not is_full_run(existing)


def _siblings(target: Path) -> list[Path]:
    """The reports written beside ``target`` by ``write_report`` (``<name>.run-N.json``)."""
    pattern = re.compile(re.escape(target.stem) + r"\.run-\d+" + re.escape(target.suffix))
    return sorted(path for path in target.parent.iterdir() if pattern.fullmatch(path.name))


def _unique_sibling(target: Path) -> Path:
    for number in range(2, 10_000):
        candidate = target.with_name(f"{target.stem}.run-{number}{target.suffix}")
        try:
            os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            continue
        return candidate
    raise ReportError(f"{target.parent}: 10000 reports named {target.stem}.run-N; clear the folder")


def write_report(target: Path, document: Mapping[str, Any]) -> Path:
    """Write a run's report to ``target`` without ever losing a finished run; returns the path written.

    Under an exclusive lock on the folder's ``.tokcompat-report.lock``, so that two runs decide
    one after the other: a report at ``target`` is replaced only when ``superseded`` by this one;
    otherwise it stays and this one is written beside it as ``<name>.run-N.json`` (two runs at
    once, e.g. tflatest and tfpre on one release; a partial run after a complete one; another
    matrix; a file that is no report). A complete report also removes the ``.run-N`` reports it
    supersedes, so reruns do not pile up. The merge reads them all: the newest complete report
    per cell, and any incomplete or partial one marks the grid incomplete.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with _folder_lock(target.parent):
        destination = target
        if target.exists() or target.is_symlink():
            existing = _read_existing(target)
            if existing is None or not superseded(existing, document):
                destination = _unique_sibling(target)
        try:
            _atomic_write(destination, document)
        except BaseException:
            if destination != target:  # the empty placeholder _unique_sibling reserved
                destination.unlink(missing_ok=True)
            raise
        if is_full_run(document):
            for sibling in _siblings(target):
                old = _read_existing(sibling) if sibling != destination else None
                if old is not None and superseded(old, document):
                    sibling.unlink(missing_ok=True)
    return destination


OUTPUT_GITIGNORE = "# Written by pytest-tokcompat: its output stays out of your repository.\n*\n"


def make_output_folder(folder: Path) -> Path:
    """Create an output folder (the grid's, the reports') with a ``.gitignore`` of ``*`` when this creates
    it, so the tool's output never lands untracked in the user's repository; a folder that already exists
    is the user's and is left as it is."""
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)  # a file in its place raises, as before
    if created:
        (folder / ".gitignore").write_text(OUTPUT_GITIGNORE, encoding="utf-8")
    return folder


def write_json_atomic(path: Path, document: Mapping[str, Any]) -> Path:
    """Write JSON atomically (never half a file); a report (``schema_version`` and ``cases``) goes
    through ``write_report``'s rule, so no caller can replace a finished run. Returns the path written."""
    if "schema_version" in document and "cases" in document:
        return write_report(path, document)
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, document)
    return path


# ---- the judge's identity, for every cache of its results -----------------------------------------

PACKAGE_DIR = Path(__file__).resolve().parent


def _file_sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def judge_identity(package_dir: Path = PACKAGE_DIR) -> str:
    """This package's version and a hash of every source that judges (all but the CI tools).

    A cached result (a grid cell, a verdict on disk) is only as good as the code that produced
    it: any change to the judge, the probes or the resolver gives another identity.
    """
    import hashlib

    try:
        version = metadata.version("pytest-tokcompat")
    except metadata.PackageNotFoundError:
        version = "unknown"
    digest = hashlib.sha256()
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir)
        if relative.parts[0] in ("ci", "bundled") or "__pycache__" in relative.parts:
            continue
        digest.update(relative.as_posix().encode() + b"\0" + _file_sha(path).encode())
    return f"{version}+{digest.hexdigest()[:16]}"


def probe_set_identity(package_dir: Path = PACKAGE_DIR) -> str:
    """The probe corpus and its derivation, by the hash of the module that holds them."""
    probes = package_dir / "judge" / "probes.py"
    return _file_sha(probes)[:16] if probes.is_file() else "none"
