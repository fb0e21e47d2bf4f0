"""MkDocs hook: the reference pages are generated from the code at every build, never copied.

A page holds a marker line ``<!-- tokcompat-reference: KIND -->``; the build replaces it with
Markdown made from the CLI's own parser (``cli.build_parser()``), the plugin's ``pytest_addoption``
calls, the hook specifications' docstrings, the two JSON schemas, the CI pieces' inputs and the public API's docstrings. A marker of an unknown kind
fails the build, so a misspelt marker never leaves a page silently empty.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

MARKER = re.compile(r"^<!-- tokcompat-reference: ([a-z-]+) -->$", re.MULTILINE)
HELP_WIDTH = 100
ROOT = Path(__file__).resolve().parents[2]


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _help(parser: argparse.ArgumentParser) -> str:
    """``--help`` at a fixed width, so the page does not depend on the terminal that built it."""
    formatter = parser.formatter_class
    parser.formatter_class = lambda prog: formatter(prog, width=HELP_WIDTH)  # type: ignore[call-arg]
    try:
        return parser.format_help().rstrip()
    finally:
        parser.formatter_class = formatter


def cli_reference() -> str:
    """Every command of ``tokcompat``, each with its ``--help``."""
    from pytest_tokcompat.cli import build_parser

    parser = build_parser()
    summaries = {
        choice.dest: choice.help or ""
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action._choices_actions
    }
    parts = ["```text", "$ tokcompat --help", _help(parser), "```", ""]
    parts += ["| command | does |", "|---|---|"]
    parts += [
        f"| [`{name}`](#tokcompat-{name}) | {summaries.get(name, '')} |" for name in _subcommands(parser)
    ]
    for name, sub in _subcommands(parser).items():
        parts += ["", f"## `tokcompat {name}` {{#tokcompat-{name}}}", "", "```text"]
        parts += [f"$ tokcompat {name} --help", _help(sub), "```"]
    return "\n".join(parts)


class _OptionRecorder:
    """Stands in for pytest's parser and records what the plugin's ``pytest_addoption`` declares."""

    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []
        self.inis: list[tuple[str, str, dict[str, Any]]] = []

    def getgroup(self, name: str, description: str = "", after: str | None = None) -> _OptionRecorder:
        return self

    def addoption(self, *names: str, **attrs: Any) -> None:
        self.options.append((names, attrs))

    def addini(self, name: str, help: str, **attrs: Any) -> None:
        self.inis.append((name, help, attrs))


def _cell(text: object) -> str:
    """Text for a Markdown table cell: one line, no column breaks, no angle brackets read as HTML."""
    pieces = str(text).replace("|", "\\|").replace("\n", " ").split("`")
    return "`".join(
        piece if inside % 2 else piece.replace("<", "&lt;") for inside, piece in enumerate(pieces)
    )


def _option_help(attrs: Mapping[str, Any]) -> str:
    text = str(attrs.get("help", ""))
    try:
        return text % {**attrs, "default": attrs.get("default")}
    except (KeyError, TypeError, ValueError):
        return text


def recorded_options() -> _OptionRecorder:
    from pytest_tokcompat.pytest_plugin import plugin

    recorder = _OptionRecorder()
    wants_manager = "pluginmanager" in inspect.signature(plugin.pytest_addoption).parameters
    extra: dict[str, Any] = {"pluginmanager": None} if wants_manager else {}
    plugin.pytest_addoption(recorder, **extra)  # type: ignore[arg-type]
    return recorder


def pytest_reference() -> str:
    """The command-line options and ini keys, as the plugin's ``pytest_addoption`` declares them."""
    recorder = recorded_options()
    parts = ["### Command-line options", "", "| option | value | default | meaning |", "|---|---|---|---|"]
    for names, attrs in recorder.options:
        flag = attrs.get("action") in {"store_true", "store_false"}
        value = "" if flag else f"`{attrs.get('metavar') or names[0].lstrip('-').upper()}`"
        default = attrs.get("default")
        shown = "" if flag or default in (None, [], "") else f"`{default}`"
        if attrs.get("action") == "append":
            value += " (repeatable)"
        label = ", ".join(f"`{name}`" for name in names)
        parts.append(f"| {label} | {value} | {shown} | {_cell(_option_help(attrs))} |")
    parts += ["", "### ini keys", "", "| key | type | default | meaning |", "|---|---|---|---|"]
    for name, text, attrs in recorder.inis:
        default = attrs.get("default")
        shown = "" if default in (None, [], "") else f"`{default}`"
        parts.append(f"| `{name}` | {attrs.get('type') or 'string'} | {shown} | {_cell(text)} |")
    return "\n".join(parts)


def _annotation(annotation: object) -> str:
    """An annotation as written (the hooks module postpones them, so most are strings already)."""
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _parameters(function: Callable[..., object]) -> str:
    return ", ".join(
        f"{parameter.name}: {_annotation(parameter.annotation)}"
        for parameter in inspect.signature(function).parameters.values()
    )


def hooks_reference() -> str:
    """Each hook specification with its signature and docstring."""
    from pytest_tokcompat.pytest_plugin import hooks

    parts: list[str] = []
    for name, function in inspect.getmembers(hooks, inspect.isfunction):
        if not name.startswith("pytest_") or function.__module__ != hooks.__name__:
            continue
        parts += [f"### `{name}`", "", "```python", f"def {name}({_parameters(function)}) -> "]
        parts[-1] += f"{_annotation(inspect.signature(function).return_annotation)}: ..."
        parts += ["```", ""]
        parts += [inspect.getdoc(function) or "", ""]
    return "\n".join(parts).rstrip()


def _type(node: Mapping[str, Any], prefix: str) -> str:
    if "$ref" in node:
        target = str(node["$ref"]).rsplit("/", 1)[-1]
        return f"[`{target}`](#{prefix}-{target.replace('_', '-')})"
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " \\| ".join(f"`{json.dumps(value)}`" for value in node["enum"])
    for combinator in ("oneOf", "anyOf"):
        if combinator in node:
            return " or ".join(_type(option, prefix) for option in node[combinator])
    kind = node.get("type")
    kinds = [kind] if isinstance(kind, str) else list(kind or [])
    if "array" in kinds and isinstance(node.get("items"), Mapping):
        kinds = [f"array of {_type(node['items'], prefix)}" if k == "array" else k for k in kinds]
    if (
        "object" in kinds
        and isinstance(node.get("additionalProperties"), Mapping)
        and not node.get("properties")
    ):
        kinds = [
            f"map to {_type(node['additionalProperties'], prefix)}" if k == "object" else k for k in kinds
        ]
    return " or ".join(kinds) or "any"


def _schema_object(title: str, anchor: str, node: Mapping[str, Any], prefix: str) -> list[str]:
    parts = [f"### `{title}` {{#{anchor}}}", ""]
    if node.get("description"):
        parts += [str(node["description"]), ""]
    properties = node.get("properties")
    if isinstance(properties, Mapping) and properties:
        required = set(node.get("required", ()))
        parts += ["| field | type | required | meaning |", "|---|---|---|---|"]
        for field, sub in properties.items():
            parts.append(
                f"| `{field}` | {_type(sub, prefix)} | {'yes' if field in required else ''} "
                f"| {_cell(sub.get('description', ''))} |"
            )
    else:
        parts.append(f"Type: {_type(node, prefix)}.")
    parts.append("")
    return parts


def schema_reference(schema: Mapping[str, Any], prefix: str) -> str:
    """The schema's top level and each ``$defs`` entry as a table, then the whole schema."""
    parts = _schema_object(str(schema.get("title", "top level")), prefix, schema, prefix)
    for name, node in schema.get("$defs", {}).items():
        parts += _schema_object(name, f"{prefix}-{name.replace('_', '-')}", node, prefix)
    parts += ["### The whole schema", "", "```json", json.dumps(schema, indent=2, ensure_ascii=False), "```"]
    return "\n".join(parts)


def _matrix_schema() -> str:
    from pytest_tokcompat.matrix.schema import load_schema

    return schema_reference(load_schema(), "matrix")


def _report_schema() -> str:
    from pytest_tokcompat.contract import load_report_schema

    return schema_reference(load_report_schema(), "report")


def _inputs_table(inputs: Mapping[str, Any]) -> str:
    parts = ["| input | type | default | meaning |", "|---|---|---|---|"]
    for name, spec in inputs.items():
        default = spec.get("default", "")
        shown = "" if default in ("", None) else f"`{json.dumps(default)}`"
        kind = spec.get("type", "string")
        parts.append(f"| `{name}` | {kind} | {shown} | {_cell(spec.get('description', ''))} |")
    return "\n".join(parts)


def environment_reference() -> str:
    """Every ``TOKCOMPAT_*`` variable, from its one declaration (``pytest_tokcompat/environment.py``)."""
    from pytest_tokcompat.environment import VARIABLES

    rows = ["| variable | meaning | default |", "|---|---|---|"]
    for variable in VARIABLES:
        meaning = f"{variable.meaning}; not for users" if variable.internal else variable.meaning
        rows.append(f"| `{variable.name}` | {meaning} | {variable.default} |")
    return "\n".join(rows)


def settings_reference() -> str:
    """Every judge setting with its flag, ini key, ``[tool.tokcompat]`` key and variable, from its one
    declaration (``pytest_tokcompat/settings.py``)."""
    from pytest_tokcompat.settings import SETTINGS

    rows = [
        "| setting | flag | ini key | `[tool.tokcompat]` | variable | default | meaning |",
        "|---|---|---|---|---|---|---|",
    ]
    for setting in SETTINGS:
        flag = "-" if setting.library_only else f"`{setting.flag} {setting.metavar}`"
        ini = "-" if setting.library_only else f"`{setting.ini}`"
        rows.append(
            f"| {setting.key} | {flag} | {ini} | `{setting.key}` | "
            f"`{setting.variable}` | {_cell(setting.described_default())} | {_cell(setting.help)} |"
        )
    return "\n".join(rows)


def workflow_inputs() -> str:
    """The reusable workflow's ``workflow_call`` inputs."""
    workflow = yaml.safe_load((ROOT / ".github/workflows/tokcompat-grid.yml").read_text(encoding="utf-8"))
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as true
    return _inputs_table(triggers["workflow_call"]["inputs"])


def action_inputs() -> str:
    """The composite action's inputs."""
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    return _inputs_table(action["inputs"])


def _own_doc(value: object) -> str | None:
    """The docstring ``value`` has itself: a class's own, never one inherited or a dataclass's signature."""
    if isinstance(value, type):
        doc = value.__dict__.get("__doc__")
        generated = value.__name__ + "(" if dataclasses.is_dataclass(value) else None
        return None if not doc or (generated and doc.startswith(generated)) else inspect.cleandoc(doc)
    if callable(value):
        return inspect.getdoc(value)
    return None


class _Written:
    """An annotation shown as written: the package postpones annotations, so they are strings."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _signature(name: str, value: Callable[..., object]) -> str:
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return name

    def written(annotation: object) -> object:
        return _Written(annotation) if isinstance(annotation, str) else annotation

    parameters = [p.replace(annotation=written(p.annotation)) for p in signature.parameters.values()]
    shown = signature.replace(parameters=parameters, return_annotation=written(signature.return_annotation))
    return f"{name}{shown}"


def api_reference(package: ModuleType | None = None) -> str:
    """Each name of the package's ``__all__``: where it lives, its signature and its docstring.

    A public name without a docstring of its own fails the build, naming it.
    """
    if package is None:
        import pytest_tokcompat as package
    parts: list[str] = []
    for name in package.__all__:
        value = getattr(package, name)
        if name == "__version__":
            parts += [f"### `{name}`", "", f"The installed package's version, `{value}`.", ""]
            continue
        doc = _own_doc(value)
        if doc is None:
            raise ValueError(f"{package.__name__}.{name} is in __all__ but has no docstring; write one")
        kind = (
            "exception"
            if isinstance(value, type) and issubclass(value, BaseException)
            else ("class" if isinstance(value, type) else "function")
        )
        signature = _signature(name, value)
        parts += [f"### `{name}`", "", f"*{kind}, from `{value.__module__}`*", ""]
        if kind != "exception":
            parts += ["```python", signature, "```", ""]
        parts += [doc, ""]
    return "\n".join(parts).rstrip()


GENERATORS: dict[str, Callable[[], str]] = {
    "environment": environment_reference,
    "settings": settings_reference,
    "cli": cli_reference,
    "pytest-options": pytest_reference,
    "hooks": hooks_reference,
    "matrix-schema": _matrix_schema,
    "report-schema": _report_schema,
    "workflow-inputs": workflow_inputs,
    "action-inputs": action_inputs,
    "public-api": api_reference,
}


def expand(markdown: str, page: str = "<page>") -> str:
    """The page with every reference marker replaced by its generated Markdown."""

    def generated(match: re.Match[str]) -> str:
        kind = match.group(1)
        if kind not in GENERATORS:
            raise ValueError(
                f"{page}: unknown reference marker {kind!r}; use one of {', '.join(sorted(GENERATORS))}"
            )
        return GENERATORS[kind]()

    return MARKER.sub(generated, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs' page event: expand the markers of each page (a bad marker is one line, no traceback)."""
    from mkdocs.exceptions import PluginError

    try:
        return expand(markdown, str(page.file.src_path))
    except ValueError as error:
        raise PluginError(str(error)) from None
