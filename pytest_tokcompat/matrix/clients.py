"""A client's own tokenizer loader, declared for judging beside the verdict.

Benchmark clients and serving stacks wrap ``AutoTokenizer`` in shims of their own
(a config-only alias, a post-load repair, a wrapper class); the tool's verdict says
which remedy works, not whether the client's shim does. A ``ClientLoader`` names the
client's callable so that the judge can call it exactly as the client does and
check what it returns against the same ground truth.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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

    @property
    def call(self) -> str:
        return f"{self.module}:{self.callable}"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "call": self.call, "attr": self.attr or None, "kwargs": dict(self.kwargs)}

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
