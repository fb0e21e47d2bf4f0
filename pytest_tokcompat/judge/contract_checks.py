"""The tokenizer contract beyond ids: the default call, special tokens, decoding and the chat template.

A benchmark client calls ``tokenizer(text)``, reads ``eos_token_id`` for its stop
condition, decodes with the defaults and renders prompts with the chat template.
Each of these is checked against ground truth that does not come from the tokenizer
being judged: the checkpoint's own tokenizer.json read by the ``tokenizers``
library, what tokenizer_config.json and special_tokens_map.json declare, and the
chat template rendered by a sandboxed jinja2 environment set up as transformers
documents it. The expectations are computed once per case (``contract_truth``); the
checks (``check_contract``) are a pure function of (tokenizer, truth, probes) that
returns plain, picklable data, so an attempt can run in a child process.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_tokcompat.judge.probes import ProbeKind, read_json_dict, token_content
from pytest_tokcompat.model import Dimension, DimensionStatus

FROZEN_NOW = datetime(2025, 6, 15, 12, 34, 56, 789012)
"""The one instant every chat template renders at, on both sides: a template that prints the clock
(``strftime_now``) compares equal, and a date-printing one does not flip at midnight."""
SPECIAL_NAMES = ("bos", "eos", "pad", "unk")
"""The named special tokens whose strings and ids are checked (eos drives stop conditions)."""
TEMPLATE_TOKEN_NAMES = ("bos", "eos", "unk", "sep", "pad", "cls", "mask")
DEFAULT_CALL_PER_KIND = 4
"""The default call is checked on the built-in and entry texts and the first this many probes of each other
kind (the post-processing it checks does not depend on the text; two calls per text are its whole cost)."""
DEFAULT_CALL_ALL_KINDS = (str(ProbeKind.BUILTIN), str(ProbeKind.ENTRY))

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
class DimensionResult:
    """One dimension of one attempt: its status, how much was checked, and the first difference."""

    status: str
    checked: int = 0
    kind: str | None = None
    text: str | None = None
    call: str | None = None
    expected: Any = None
    actual: Any = None
    reason: str | None = None
    drifts: dict[str, int] = field(default_factory=dict)
    """Differences by probe kind (ids dimension), so a report shows where a drift shows and where not."""
    source: str | None = None
    """What the probe of the first difference was drawn from (derived probes)."""

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None and v != {}}

    def summary(self) -> str:
        if self.status in (DimensionStatus.MATCH, DimensionStatus.ABSENT):
            return str(self.status)
        if self.status == DimensionStatus.NOT_CHECKED:
            return f"not checked: {self.reason}"
        where = f" on {self.text!r} ({self.kind} probe)" if self.text is not None and self.kind else ""
        if self.text is not None and not self.kind:
            where = f" on {self.text}"
        head = f"{self.call}{where}:\n    expected {self.expected!r}\n    actual   {self.actual!r}"
        if self.status == DimensionStatus.ACKNOWLEDGED:
            return f"acknowledged ({self.reason}): {head}"
        return head


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


@dataclass
class Declared:
    """What the checkpoint's files declare about the contract (README, "The contract")."""

    add_bos_token: bool | None = None
    add_eos_token: bool | None = None
    clean_up_tokenization_spaces: bool = False
    special_tokens: dict[str, str | None] = field(default_factory=dict)
    """bos/eos/pad/unk as declared (None: declared as null); names not declared are not checked."""
    special_ids: dict[str, int | None] = field(default_factory=dict)
    template_tokens: dict[str, Any] = field(default_factory=dict)
    chat_template: str | None = None
    chat_template_source: str | None = None


@dataclass
class ContractTruth:
    """Everything the contract checks compare against, computed once per case."""

    declared: Declared
    default_ids: dict[str, list[int]] = field(default_factory=dict)
    decoded_default: dict[str, str] = field(default_factory=dict)
    decoded_skip: dict[str, str] = field(default_factory=dict)
    chat: list[ChatExpectation] = field(default_factory=list)
    not_checked: dict[str, str] = field(default_factory=dict)
    """Dimensions (or parts) without ground truth, with the reason."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ContractTruth:
        """The expectations as a child sends them (``dataclasses.asdict``, through JSON)."""
        declared = data.get("declared") or {}
        return cls(
            Declared(**{k: v for k, v in declared.items() if k in Declared.__dataclass_fields__}),
            {str(t): [int(i) for i in v] for t, v in (data.get("default_ids") or {}).items()},
            {str(t): str(v) for t, v in (data.get("decoded_default") or {}).items()},
            {str(t): str(v) for t, v in (data.get("decoded_skip") or {}).items()},
            [
                ChatExpectation(**{k: v for k, v in c.items() if k in ChatExpectation.__dataclass_fields__})
                for c in data.get("chat") or []
            ],
            {str(k): str(v) for k, v in (data.get("not_checked") or {}).items()},
        )


def read_declared(folder: Path, reference: Any = None) -> Declared:
    """The contract the checkpoint declares: flags, special tokens (with ids) and its chat template."""
    config = read_json_dict(folder / "tokenizer_config.json")
    tokens_map = read_json_dict(folder / "special_tokens_map.json")
    declared = Declared()
    for flag in ("add_bos_token", "add_eos_token"):
        if isinstance(config.get(flag), bool):
            setattr(declared, flag, config[flag])
    declared.clean_up_tokenization_spaces = config.get("clean_up_tokenization_spaces") is True
    ids_by_content: dict[str, int] = {}
    decoder = config.get("added_tokens_decoder")
    for key, value in decoder.items() if isinstance(decoder, dict) else []:
        content = token_content(value)
        if content is not None and str(key).isdigit():
            ids_by_content.setdefault(content, int(key))

    def id_of(token: str | None) -> int | None:
        if token is None:
            return None
        if reference is not None:
            found = reference.token_to_id(token)
            return int(found) if found is not None else None
        return ids_by_content.get(token)

    for name in TEMPLATE_TOKEN_NAMES:
        key = f"{name}_token"
        source = config if key in config else tokens_map if key in tokens_map else None
        if source is None:
            continue
        token = token_content(source[key])
        if token is None and source[key] is not None:
            continue  # neither a token nor null: not a declaration this check can read
        if name in SPECIAL_NAMES:
            declared.special_tokens[name] = token
            declared.special_ids[name] = id_of(token)
        if token is not None:
            declared.template_tokens[key] = token
    extra = config.get("additional_special_tokens", tokens_map.get("additional_special_tokens"))
    if isinstance(extra, list):
        declared.template_tokens["additional_special_tokens"] = [
            t for t in (token_content(v) for v in extra) if t is not None
        ]
    declared.chat_template, declared.chat_template_source = _declared_template(folder, config)
    return declared


def _declared_template(folder: Path, config: dict[str, Any]) -> tuple[str | None, str | None]:
    """chat_template.jinja wins over tokenizer_config.json's chat_template, as in transformers."""
    jinja_file = folder / "chat_template.jinja"
    if jinja_file.is_file():
        try:
            return jinja_file.read_text(encoding="utf-8"), "chat_template.jinja"
        except (OSError, UnicodeDecodeError):
            return None, None
    value = config.get("chat_template")
    if isinstance(value, str):
        return value, "tokenizer_config.json"
    if isinstance(value, list):  # named templates: the one called "default"
        for entry in value:
            if (
                isinstance(entry, dict)
                and entry.get("name") == "default"
                and isinstance(entry.get("template"), str)
            ):
                return str(entry["template"]), "tokenizer_config.json (default)"
    return None, None


def clean_up_tokenization(text: str) -> str:
    """The clean-up transformers applies to decoded text when clean_up_tokenization_spaces is on."""
    for before, after in (
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ):
        text = text.replace(before, after)
    return text


def _split_around(full: list[int], plain: list[int]) -> tuple[list[int], list[int], list[int]]:
    """``full`` as prefix + ``plain`` + suffix (what the post-processor added), where plain occurs in it."""
    width = len(plain)
    for start in range(len(full) - width + 1):
        if full[start : start + width] == plain:
            return full[:start], plain, full[start + width :]
    return [], full, []


def default_call_ids(reference: Any, text: str, plain: list[int], declared: Declared) -> list[int]:
    """The ids of the default call: tokenizer.json's post-processing, with the declared BOS/EOS flags applied.

    ``add_special_tokens=True`` on tokenizer.json gives what its post-processor adds; where
    tokenizer_config.json sets ``add_bos_token``/``add_eos_token`` explicitly, BOS at the start
    (EOS at the end) is then added if the flag is true and missing, removed if it is false.
    A flag the file does not set leaves the post-processor's choice alone.
    """
    prefix, core, suffix = _split_around(list(reference.encode(text, add_special_tokens=True).ids), plain)
    bos, eos = declared.special_ids.get("bos"), declared.special_ids.get("eos")
    if declared.add_bos_token is True and bos is not None and [*prefix, *core][:1] != [bos]:
        prefix = [bos, *prefix]
    elif declared.add_bos_token is False and bos is not None:
        prefix = [i for i in prefix if i != bos]
    if declared.add_eos_token is True and eos is not None and [*core, *suffix][-1:] != [eos]:
        suffix = [*suffix, eos]
    elif declared.add_eos_token is False and eos is not None:
        suffix = [i for i in suffix if i != eos]
    return [*prefix, *core, *suffix]


def default_call_texts(texts: Sequence[str], kinds: Mapping[str, str]) -> list[str]:
    """The texts the default call is checked on: built-in, special and entry texts, a few of each derived kind."""
    chosen: list[str] = []
    taken: dict[str, int] = {}
    for text in texts:
        kind = kinds.get(text, str(ProbeKind.BUILTIN))
        if kind in DEFAULT_CALL_ALL_KINDS or taken.get(kind, 0) < DEFAULT_CALL_PER_KIND:
            chosen.append(text)
            taken[kind] = taken.get(kind, 0) + 1
    return chosen


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


def _error_text(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}"


RESOURCE_LIMITS = (MemoryError, RecursionError)
"""A limit of the process that renders, never the template's answer: rendering that hits one is not checked
(on both sides it would read as "rejected by both", a match)."""


def _limit_text(side: str, label: str, error: BaseException) -> str:
    return (
        f"{side} of {label} hit a resource limit ({_error_text(error)}), which says nothing about the template; "
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
        template, compile_error = None, _error_text(error)
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
                    return [], _limit_text("the reference rendering", label, error)
                except Exception as error:  # the template rejects this conversation
                    error_text = _error_text(error)
            ids = None
            if rendered is not None and reference is not None:
                ids = list(reference.encode(rendered, add_special_tokens=False).ids)
            expectations.append(ChatExpectation(name, add_generation_prompt, rendered, error_text, ids))
    return expectations, None


def contract_truth(
    declared: Declared,
    texts: Sequence[str],
    kinds: Mapping[str, str],
    ids: Mapping[str, list[int]],
    decoded: Mapping[str, str],
    reference: Any = None,
    special_texts: Sequence[str] = (),
) -> ContractTruth:
    """The expectations of every dimension for ``texts``; with no tokenizer.json, what golden ids allow.

    The default call is checked on ordinary text: where a text itself holds the BOS string, whether a
    second BOS comes first is the special-text finding's business, not the declared flag's."""
    truth = ContractTruth(declared)
    cleanup = clean_up_tokenization if declared.clean_up_tokenization_spaces else (lambda text: text)
    present = [text for text in texts if text in ids]
    special = set(special_texts)
    if reference is not None:
        for text in default_call_texts([t for t in present if t not in special], kinds):
            truth.default_ids[text] = default_call_ids(reference, text, ids[text], declared)
        for text in present:
            truth.decoded_default[text] = cleanup(decoded[text])
            truth.decoded_skip[text] = cleanup(str(reference.decode(ids[text], skip_special_tokens=True)))
    else:
        for text in present:
            truth.decoded_default[text] = cleanup(decoded[text])
        reason = "no tokenizer.json: its post-processing and special-token flags are not in a file here"
        truth.not_checked[str(Dimension.DEFAULT_CALL)] = reason
        truth.not_checked["decode skip_special_tokens=True"] = "no tokenizer.json to decode without specials"
    truth.chat, problem = reference_chat(declared, reference)
    if problem:
        truth.not_checked[str(Dimension.CHAT_TEMPLATE)] = problem
    return truth


def _first_difference(expected: str, actual: str) -> str:
    index = next(
        (i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b),
        min(len(expected), len(actual)),
    )
    return f"first difference at character {index}: {expected[index : index + 40]!r} vs {actual[index : index + 40]!r}"


def _input_ids(result: Any) -> list[int]:
    if isinstance(result, Mapping) or hasattr(result, "keys"):
        return [int(i) for i in result["input_ids"]]
    return [int(i) for i in result]


def check_default_call(tokenizer: Any, truth: ContractTruth, kinds: Mapping[str, str]) -> DimensionResult:
    if str(Dimension.DEFAULT_CALL) in truth.not_checked:
        return DimensionResult(str(DimensionStatus.NOT_CHECKED), reason=truth.not_checked["default_call"])
    checked = 0
    for text, expected in truth.default_ids.items():
        for call, actual in (
            ('tokenizer(text)["input_ids"]', _input_ids(tokenizer(text))),
            ("encode(text)", [int(i) for i in tokenizer.encode(text)]),
        ):
            if actual != expected:
                return DimensionResult(
                    str(DimensionStatus.DRIFT), checked, kinds.get(text), text, call, expected, actual
                )
        checked += 1
    return DimensionResult(str(DimensionStatus.MATCH), checked)


def check_special_tokens(tokenizer: Any, truth: ContractTruth) -> DimensionResult:
    declared = truth.declared
    if not declared.special_tokens:
        return DimensionResult(str(DimensionStatus.ABSENT), reason="no bos/eos/pad/unk token is declared")
    checked = 0
    for name, token in declared.special_tokens.items():
        actual_token = getattr(tokenizer, f"{name}_token", None)
        actual_token = None if actual_token is None else str(actual_token)
        if actual_token != token:
            return DimensionResult(
                str(DimensionStatus.DRIFT),
                checked,
                None,
                f"{name}_token",
                f"{name}_token",
                token,
                actual_token,
            )
        expected_id = declared.special_ids.get(name)
        if token is not None and expected_id is not None:
            actual_id = getattr(tokenizer, f"{name}_token_id", None)
            if actual_id != expected_id:
                return DimensionResult(
                    str(DimensionStatus.DRIFT),
                    checked,
                    None,
                    f"{name}_token_id",
                    f"{name}_token_id",
                    expected_id,
                    actual_id,
                )
        checked += 1
    return DimensionResult(str(DimensionStatus.MATCH), checked)


def check_decode(
    tokenizer: Any, truth: ContractTruth, ids: Mapping[str, list[int]], kinds: Mapping[str, str]
) -> DimensionResult:
    """decode(ids) as a client calls it (the declared defaults), and with skip_special_tokens=True."""
    checked = 0
    for text, expected in truth.decoded_default.items():
        actual = tokenizer.decode(ids[text])
        if actual != expected:
            return DimensionResult(
                str(DimensionStatus.DRIFT), checked, kinds.get(text), text, "decode(ids)", expected, actual
            )
        skip = truth.decoded_skip.get(text)
        if skip is not None:
            actual = tokenizer.decode(ids[text], skip_special_tokens=True)
            if actual != skip:
                return DimensionResult(
                    str(DimensionStatus.DRIFT),
                    checked,
                    kinds.get(text),
                    text,
                    "decode(ids, skip_special_tokens=True)",
                    skip,
                    actual,
                )
        checked += 1
    if not truth.decoded_default:
        return DimensionResult(str(DimensionStatus.NOT_CHECKED), reason="no ground-truth ids to decode")
    return DimensionResult(str(DimensionStatus.MATCH), checked)


def check_chat_template(tokenizer: Any, truth: ContractTruth, info: dict[str, Any]) -> DimensionResult:
    if str(Dimension.CHAT_TEMPLATE) in truth.not_checked:
        return DimensionResult(str(DimensionStatus.NOT_CHECKED), reason=truth.not_checked["chat_template"])
    if not truth.chat:
        return DimensionResult(str(DimensionStatus.ABSENT), reason="the checkpoint has no chat template")
    info["chat_template_source"] = truth.declared.chat_template_source
    checked = 0
    for expectation in truth.chat:
        messages = copy.deepcopy([dict(m) for m in dict(CONVERSATIONS)[expectation.conversation]])
        call = f"apply_chat_template(tokenize=False) on {expectation.label}"
        try:
            actual = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=expectation.add_generation_prompt
            )
            actual_error = None
        except RESOURCE_LIMITS as error:
            reason = _limit_text("rendering", expectation.label, error)
            return DimensionResult(str(DimensionStatus.NOT_CHECKED), checked, reason=reason)
        except Exception as error:  # the judged tokenizer rejects the conversation
            actual, actual_error = None, _error_text(error)
        if (expectation.error is None) != (actual_error is None):
            expected_side = f"rejected ({expectation.error})" if expectation.error else "rendered"
            actual_side = f"rejected ({actual_error})" if actual_error else "rendered"
            return DimensionResult(
                str(DimensionStatus.DRIFT), checked, None, expectation.label, call, expected_side, actual_side
            )
        if expectation.rendered is not None and actual != expectation.rendered:
            return DimensionResult(
                str(DimensionStatus.DRIFT),
                checked,
                None,
                expectation.label,
                call,
                expectation.rendered,
                actual,
                reason=_first_difference(expectation.rendered, str(actual)),
            )
        if expectation.ids is not None:
            tokenized = tokenizer.apply_chat_template(
                messages, tokenize=True, add_generation_prompt=expectation.add_generation_prompt
            )
            info.setdefault("apply_chat_template_tokenize_returns", type(tokenized).__name__)
            actual_ids = _input_ids(tokenized)
            if actual_ids != expectation.ids:
                return DimensionResult(
                    str(DimensionStatus.DRIFT),
                    checked,
                    None,
                    expectation.label,
                    "apply_chat_template(tokenize=True) ids",
                    expectation.ids,
                    actual_ids,
                )
        checked += 1
    return DimensionResult(str(DimensionStatus.MATCH), checked)


def check_contract(
    tokenizer: Any,
    truth: ContractTruth,
    ids: Mapping[str, list[int]],
    kinds: Mapping[str, str],
    info: dict[str, Any],
) -> dict[str, DimensionResult]:
    """The default call, special tokens, decode and chat template dimensions of one loaded tokenizer."""
    return {
        str(Dimension.DEFAULT_CALL): check_default_call(tokenizer, truth, kinds),
        str(Dimension.SPECIAL_TOKENS): check_special_tokens(tokenizer, truth),
        str(Dimension.DECODE): check_decode(tokenizer, truth, ids, kinds),
        str(Dimension.CHAT_TEMPLATE): check_chat_template(tokenizer, truth, info),
    }
