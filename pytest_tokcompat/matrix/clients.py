"""A client's own tokenizer loader, declared for judging beside the verdict.

Benchmark clients and serving stacks wrap ``AutoTokenizer`` in shims of their own
(a config-only alias, a post-load repair, a wrapper class); the tool's verdict says
which remedy works, not whether the client's shim does. A ``ClientLoader`` names the
client's callable so that the judge can call it exactly as the client does and
check what it returns against the same ground truth.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SPEC_FORM = "[NAME=]MODULE:CALLABLE[:ATTR.PATH], e.g. mypkg.tokenizer:load or aiperf=mypkg.tok:Tokenizer.load:tokenizer"


@dataclass(frozen=True)
class ClientLoader:
    """``module:callable`` called as ``callable(path_or_repo, **kwargs)``; ``attr`` reaches the tokenizer
    inside what it returns (a wrapper's ``tokenizer``), empty when it returns the tokenizer itself."""

    name: str
    module: str
    callable: str
    attr: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)
    native_since: str | None = None
    """The release from which the client knows its shim is unnecessary (plain AutoTokenizer suffices): the
    loader-obsolete alarm is acknowledged from there, as an alias's ``native_since``."""

    @property
    def call(self) -> str:
        return f"{self.module}:{self.callable}"

    def to_json(self) -> dict[str, Any]:
        found = {"name": self.name, "call": self.call, "attr": self.attr or None, "kwargs": dict(self.kwargs)}
        return found | ({"native_since": self.native_since} if self.native_since else {})

    def __hash__(self) -> int:
        return hash((self.name, self.module, self.callable, self.attr))


def split_call(call: str) -> tuple[str, str, str] | None:
    """``module:callable[:attr.path]`` into its parts; None when it is not of that form."""
    parts = call.split(":")
    if len(parts) not in (2, 3) or not all(_DOTTED.match(part) for part in parts[:2]):
        return None
    if len(parts) == 3 and parts[2] and not _DOTTED.match(parts[2]):
        return None
    return parts[0], parts[1], parts[2] if len(parts) == 3 else ""


def parse_loader_option(text: str) -> ClientLoader:
    """One ``--tokcompat-loader`` value; ValueError with the expected form where it is not one."""
    spec = text.strip()
    name, _, rest = spec.partition("=") if "=" in spec else ("", "", spec)
    parts = split_call(rest)
    if parts is None or (name and not _NAME.match(name)):
        raise ValueError(f"--tokcompat-loader {text!r} is not of the form {SPEC_FORM}")
    module, function, attr = parts
    return ClientLoader(name or module.split(".")[0], module, function, attr)


def check_unique(loaders: list[ClientLoader]) -> str | None:
    """Why the loaders cannot stand together (two share a name), or None."""
    seen: set[str] = set()
    for loader in loaders:
        if loader.name in seen:
            return (
                f"two loaders are named {loader.name!r}; name them apart "
                f"(NAME=MODULE:CALLABLE on the command line, name: in the matrix)"
            )
        seen.add(loader.name)
    return None


LOADER_FIELDS = ("name", "call", "attr", "kwargs", "native_since")
KWARGS_FORM = (
    '[NAME=]JSON-OBJECT, e.g. \'{"tokenizer_mode": "deepseek_v32"}\' or \'vllm={"revision": "main"}\''
)


def parse_kwargs_option(text: str, names: Sequence[str], option: str) -> tuple[str, dict[str, Any]]:
    """One ``--loader-kwargs [NAME=]JSON`` value: the loader it is for and its keyword arguments; without a
    NAME it is for the only loader. ValueError naming ``option``, the value and the fix otherwise."""
    spec = text.strip()
    name, _, rest = spec.partition("=") if not spec.startswith("{") and "=" in spec else ("", "", spec)
    name = name.strip()
    if not name:
        if len(names) != 1:
            given = f"{len(names)} loaders are given" if names else "no loader is given"
            raise ValueError(f"{option} {text!r}: {given}; name the loader, {option} 'NAME={{...}}'")
        name = names[0]
    elif name not in names:
        raise ValueError(
            f"{option} {text!r}: no loader is named {name!r} (loaders: {', '.join(names) or 'none'})"
        )
    try:
        kwargs = json.loads(rest)
    except ValueError as error:
        raise ValueError(f"{option} {text!r} is not JSON ({error}); write {KWARGS_FORM}") from None
    if not isinstance(kwargs, dict):
        raise ValueError(
            f"{option} {text!r} is a JSON {type(kwargs).__name__}, not an object; write {KWARGS_FORM}"
        )
    return name, kwargs


def with_kwargs(loaders: Sequence[ClientLoader], texts: Sequence[str], option: str) -> list[ClientLoader]:
    """``loaders`` with the keyword arguments of each ``[NAME=]JSON`` text merged into theirs (later keys
    win); ValueError as :func:`parse_kwargs_option`."""
    names = [loader.name for loader in loaders]
    extra: dict[str, dict[str, Any]] = {}
    for text in texts:
        if text.strip():
            name, kwargs = parse_kwargs_option(text, names, option)
            extra.setdefault(name, {}).update(kwargs)
    return [
        replace(loader, kwargs={**loader.kwargs, **extra[loader.name]}) if loader.name in extra else loader
        for loader in loaders
    ]


def loader_from_mapping(data: Mapping[str, Any], where: str) -> ClientLoader:
    """A loader declared as a mapping (``{name, call, attr, kwargs}``, as the matrix's ``loaders:``);
    ValueError naming ``where`` and what to fix."""
    unknown = sorted(str(key) for key in data if key not in LOADER_FIELDS)
    if unknown:
        raise ValueError(f"{where}: a loader has unknown key(s) {unknown}; use {', '.join(LOADER_FIELDS)}")
    call = data.get("call")
    parts = split_call(call) if isinstance(call, str) else None
    if parts is None:
        raise ValueError(f"{where}: a loader's 'call' must be MODULE:CALLABLE[:ATTR.PATH], got {call!r}")
    module, function, attr_in_call = parts
    name = data.get("name", module.split(".")[0])
    attr = data.get("attr", attr_in_call) or ""
    kwargs = data.get("kwargs", {}) or {}
    native_since = data.get("native_since")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{where}: a loader's 'name' must be a plain name, got {name!r}")
    if not isinstance(attr, str) or (attr and not _DOTTED.match(attr)):
        raise ValueError(f"{where}: loader {name!r}: 'attr' must be a dotted attribute path, got {attr!r}")
    if not isinstance(kwargs, Mapping) or not all(isinstance(key, str) for key in kwargs):
        raise ValueError(f"{where}: loader {name!r}: 'kwargs' must map argument names to values")
    problem = native_since_problem(native_since)
    if problem:
        raise ValueError(f"{where}: loader {name!r}: {problem}")
    return ClientLoader(name, module, function, attr, dict(kwargs), native_since)


def native_since_problem(value: object) -> str | None:
    """Why ``native_since`` is not a release (``'5.11'``), or None (a release, or not given)."""
    from packaging.version import InvalidVersion, Version

    if value is None:
        return None
    try:
        Version(str(value))
    except InvalidVersion:
        return f"'native_since' must be a release, e.g. native_since: '5.11', got {value!r}"
    return None if isinstance(value, str) else f"'native_since' must be quoted, e.g. '{value}'"


def loader_from_declaration(item: object, where: str) -> ClientLoader:
    """One loader as a hook declares it: a spec string, a ClientLoader or a mapping; ValueError otherwise."""
    if isinstance(item, ClientLoader):
        return item
    if isinstance(item, str):
        try:
            return parse_loader_option(item)
        except ValueError as error:
            raise ValueError(f"{where}: {str(error).replace('--tokcompat-loader ', 'loader ')}") from None
    if isinstance(item, Mapping):
        return loader_from_mapping(item, where)
    raise ValueError(
        f"{where}: returned {item!r} in its list; return loader specs ({SPEC_FORM}), ClientLoader objects "
        "or mappings with name and call"
    )


def obsolete_action(name: str, version: str) -> str:
    """What to do about a client's shim made obsolete from ``version`` (the loader-obsolete alarm)."""
    from packaging.version import Version

    release = Version(version).base_version
    return (
        f"drop the shim where you require transformers>={release}, or record native_since: '{release}' (or "
        f"the first such release, see 'tokcompat bisect') for loader {name} in the matrix's loaders:"
    )
