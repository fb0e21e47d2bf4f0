"""The chat template's reference side: fixed conversations rendered by a sandbox set up as transformers
documents it, at one frozen instant (``frozen_clock`` holds transformers' own rendering to it too)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pytest_tokcompat.judge.declared import Declared

FROZEN_NOW = datetime(2025, 6, 15, 12, 34, 56, 789012)
"""The one instant every chat template renders at, on both sides: a template that prints the clock
(``strftime_now``) compares equal, and a date-printing one does not flip at midnight."""


CONVERSATIONS: tuple[tuple[str, tuple[dict[str, Any], ...]], ...] = (
    (
        "system+user",
        (
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Hello! Who are you? Café ☕, 中文."},
        ),
    ),
    (
        "multi-turn",
        (
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "2+2 is 4."},
            {"role": "user", "content": "And 3+3?"},
        ),
    ),
    (
        "reasoning",
        (
            {"role": "user", "content": "What is 7*6? Think first."},
            {"role": "assistant", "content": "It is 42.", "reasoning_content": "7*6 = 42, no carry."},
            {"role": "user", "content": "Thanks!"},
        ),
    ),
    (
        "content-null",
        (
            {"role": "user", "content": "Call the tool, say nothing."},
            {"role": "assistant", "content": None},
        ),
    ),
)
"""The fixed conversations each chat template is rendered with, with and without add_generation_prompt."""


@dataclass
class ChatExpectation:
    """The reference rendering of one fixed conversation, or the reason the template rejects it."""

    conversation: str
    add_generation_prompt: bool
    rendered: str | None
    error: str | None
    ids: list[int] | None = None

    @property
    def label(self) -> str:
        return f"conversation {self.conversation!r}, add_generation_prompt={self.add_generation_prompt}"


def reference_environment() -> Any:
    """A jinja2 sandbox set up as transformers documents it for chat templates."""
    import jinja2
    import jinja2.ext
    import jinja2.nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class GenerationTag(jinja2.ext.Extension):
        """``{% generation %}...{% endgeneration %}`` (transformers' assistant-mask tag) renders its body."""

        tags = {"generation"}  # noqa: RUF012 - jinja2's own class attribute

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

        def _render(self, caller: Any) -> str:
            return str(caller())

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(
        value: Any,
        ensure_ascii: bool = False,
        indent: Any = None,
        separators: Any = None,
        sort_keys: bool = False,
    ) -> str:
        return json.dumps(
            value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
        )

    def strftime_now(format: str) -> str:
        return FROZEN_NOW.strftime(format)

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols]
    )
    environment.filters["tojson"] = tojson
    environment.globals["raise_exception"] = raise_exception
    environment.globals["strftime_now"] = strftime_now
    return environment


class _FrozenDatetime(datetime):
    """``datetime`` whose ``now()`` is FROZEN_NOW: what transformers' ``strftime_now`` calls."""

    @classmethod
    def now(cls, tz: Any = None) -> _FrozenDatetime:
        frozen = cls.combine(FROZEN_NOW.date(), FROZEN_NOW.time())
        return frozen if tz is None else frozen.replace(tzinfo=tz)


@contextmanager
def frozen_clock() -> Iterator[None]:
    """transformers' chat templates render at FROZEN_NOW for the block (its ``strftime_now`` reads the
    module's ``datetime``), as the reference does; restored afterwards."""
    import importlib

    patched: list[tuple[Any, Any]] = []
    for name in ("transformers.utils.chat_template_utils", "transformers.tokenization_utils_base"):
        try:
            module = importlib.import_module(name)
        except Exception:  # not in this release
            continue
        if getattr(module, "datetime", None) is datetime:
            patched.append((module, datetime))
            setattr(module, "datetime", _FrozenDatetime)  # noqa: B010 - a module attribute mypy cannot see
    try:
        yield
    finally:
        for module, original in patched:
            setattr(module, "datetime", original)  # noqa: B010


def error_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}"


RESOURCE_LIMITS = (MemoryError, RecursionError)
"""A limit of the process that renders, never the template's answer: rendering that hits one is not checked
(on both sides it would read as "rejected by both", a match)."""


def limit_text(side: str, label: str, error: BaseException) -> str:
    return (
        f"{side} of {label} hit a resource limit ({error_line(error)}), which says nothing about the template; "
        "raise TOKCOMPAT_MAX_MEMORY_MB if the template is genuine"
    )


def reference_chat(declared: Declared, reference: Any) -> tuple[list[ChatExpectation], str | None]:
    """Each fixed conversation rendered by the reference sandbox (or its rejection), with the ids of the text."""
    if declared.chat_template is None:
        return [], None
    try:
        environment = reference_environment()
    except ImportError:
        return [], "jinja2 is not installed (pip install jinja2)"
    try:
        template = environment.from_string(declared.chat_template)
    except Exception as error:  # a template that does not compile rejects every conversation
        template, compile_error = None, error_line(error)
    expectations: list[ChatExpectation] = []
    for name, messages in CONVERSATIONS:
        for add_generation_prompt in (False, True):
            rendered, error_text = None, None
            if template is None:
                error_text = compile_error
            else:
                try:
                    rendered = template.render(
                        messages=copy.deepcopy(list(messages)),
                        tools=None,
                        documents=None,
                        add_generation_prompt=add_generation_prompt,
                        **copy.deepcopy(declared.template_tokens),
                    )
                except RESOURCE_LIMITS as error:
                    label = f"conversation {name!r}, add_generation_prompt={add_generation_prompt}"
                    return [], limit_text("the reference rendering", label, error)
                except Exception as error:  # the template rejects this conversation
                    error_text = error_line(error)
            ids = None
            if rendered is not None and reference is not None:
                ids = list(reference.encode(rendered, add_special_tokens=False).ids)
            expectations.append(ChatExpectation(name, add_generation_prompt, rendered, error_text, ids))
    return expectations, None
