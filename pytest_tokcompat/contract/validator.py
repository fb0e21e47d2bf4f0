"""The part of JSON Schema that report.schema.json uses, checked without jsonschema at run time.

The issues job installs the wheel without dependencies, so reading a report cannot need
jsonschema; the tests check that this subset agrees with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

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


def json_type(value: Any) -> str:
    found = _TYPE_NAMES.get(type(value))
    if found is not None:
        return found
    for kind, name in reversed(_TYPE_NAMES.items()):  # subclasses (a str enum): bool before int
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _has_type(value: Any, name: str) -> bool:
    found = json_type(value)
    if name == "integer" and found == "number":
        return bool(value.is_integer())  # JSON Schema: 1.0 is an integer
    return found == name or (name == "number" and found == "integer")


def short(value: Any) -> str:
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


class SchemaSubset:
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
            tests.append(lambda v: json_type(v) not in ("integer", "number") or v >= low)
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
                yield f"{_where(path)}: expected {self.describe({'type': kinds})}, got {short(value)}"
                return
        if "const" in schema and value != schema["const"]:
            yield f"{_where(path)}: expected {json.dumps(schema['const'])}, got {short(value)}"
        if "enum" in schema and not any(value == v and type(value) is type(v) for v in schema["enum"]):
            yield f"{_where(path)}: {short(value)} is not {self.describe({'enum': schema['enum']})}"
        if "not" in schema and not any(self.errors(value, schema["not"], path)):
            yield f"{_where(path)}: {short(value)} is not allowed ({schema.get('description', 'see the schema')})"
        if "anyOf" in schema:
            yield from self._any_of(value, schema, path)
        if isinstance(value, str):
            if len(value) < schema.get("minLength", 0):
                yield f"{_where(path)}: {short(value)} is shorter than {schema['minLength']} character(s)"
            if "pattern" in schema and not re.search(schema["pattern"], value):
                yield f"{_where(path)}: {short(value)} does not match {schema['pattern']}"
        if json_type(value) in ("integer", "number") and value < schema.get("minimum", value):
            yield f"{_where(path)}: {short(value)} is less than {schema['minimum']}"
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
            yield f"{_where(path)}: expected {self.describe(schema)}, got {short(value)}"

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
