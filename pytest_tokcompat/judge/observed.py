"""What an attempt's child saw its tokenizer answer, and those answers replayed in the parent.

The child runs checkpoint code, so anything it computes is a claim. So it computes nothing: it
asks the loaded tokenizer the questions ``check_parity`` asks (``Questions``: the ids to decode,
the texts of the default call, the chat conversations; the parent derives them from its truth,
and the child never sees an expected answer) and sends the answers back as plain JSON. The
parent checks their shape (``read_report``: anything else is ``Malformed``) and replays them into
the same ``check_parity`` through ``Replay``, a stand-in tokenizer that answers only from the
recording: one code path for parity, run where no checkpoint code runs. A call the recording
lacks raises ``NotObserved``, and the attempt is not checked.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_tokcompat.judge.chat import CONVERSATIONS, RESOURCE_LIMITS
from pytest_tokcompat.judge.declared import SPECIAL_NAMES
from pytest_tokcompat.judge.parity import Truth
from pytest_tokcompat.model import Dimension

DECODES: dict[str, dict[str, bool]] = {
    "raw": {"skip_special_tokens": False, "clean_up_tokenization_spaces": False},
    "default": {},
    "skip": {"skip_special_tokens": True},
}
"""The decode calls check_parity makes, by the keyword arguments it passes."""
ATTRIBUTES = tuple(f"{name}_token{suffix}" for name in SPECIAL_NAMES for suffix in ("", "_id"))
_CONVERSATIONS = dict(CONVERSATIONS)
_LIMITS = {error.__name__: error for error in RESOURCE_LIMITS}


class NotObserved(BaseException):
    """check_parity asked the replay something the child did not record. A BaseException, so that no
    ``except Exception`` in the checks (a chat template's rejection) takes it for the tokenizer's answer."""


class Malformed(ValueError):
    """An attempt frame whose report is not of the shape the parent reads: the attempt is not checked."""


@dataclass
class Questions:
    """What the child asks its tokenizer beyond encoding every probe text; no expected answer in it."""

    decode: dict[str, list[int]] = field(default_factory=dict)
    """The ids to decode (the ground truth's, by text), each in the three ways of ``DECODES``."""
    default_call: list[str] = field(default_factory=list)
    chat: list[tuple[str, bool, bool]] = field(default_factory=list)
    """(conversation, add_generation_prompt, also tokenize=True)."""

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Questions:
        data = data or {}
        return cls(
            {str(t): [int(i) for i in v] for t, v in dict(data.get("decode") or {}).items()},
            [str(t) for t in data.get("default_call") or []],
            [(str(c), bool(g), bool(t)) for c, g, t in data.get("chat") or []],
        )


def questions_for(truth: Truth | None) -> Questions:
    """The questions check_parity will put to a tokenizer checked against ``truth``."""
    if truth is None:
        return Questions()
    contract = truth.contract
    if contract is None:
        return Questions(dict(truth.ids))
    default = [] if str(Dimension.DEFAULT_CALL) in contract.not_checked else list(contract.default_ids)
    chat = [] if str(Dimension.CHAT_TEMPLATE) in contract.not_checked else contract.chat
    return Questions(
        dict(truth.ids),
        default,
        [(c.conversation, c.add_generation_prompt, c.ids is not None) for c in chat],
    )


def ids_key(ids: Sequence[int]) -> str:
    return ",".join(str(int(i)) for i in ids)


# ---- in the child: ask, and record the answers ------------------------------------------------------


def _error_answer(error: BaseException) -> dict[str, Any]:
    lines = str(error).strip().splitlines()
    return {"error": lines[0][:400] if lines else "", "type": type(error).__name__[:100]}


def _ids(value: Any) -> list[int]:
    from pytest_tokcompat.judge.contract_checks import _input_ids

    return _input_ids(value)


def observe(
    tokenizer: Any,
    texts: Sequence[str],
    questions: Questions,
    caught: tuple[type[BaseException], ...],
    passthrough: tuple[type[BaseException], ...] = (),
) -> dict[str, Any]:
    """Every answer check_parity could need from ``tokenizer``, each call's failure recorded as its answer."""

    def ask(call: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            return {"value": call(*args, **kwargs)}
        except caught as error:
            if isinstance(error, passthrough):
                raise
            return _error_answer(error)

    def ids(call: Callable[..., Any], *args: Any, **kwargs: Any) -> list[int]:
        return _ids(call(*args, **kwargs))

    def text(call: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
        return str(call(*args, **kwargs))

    def attribute(name: str) -> Any:
        value = getattr(tokenizer, name, None)
        if name.endswith("_id"):
            return value if value is None or isinstance(value, int) else repr(value)[:200]
        return None if value is None else str(value)

    decode = {
        variant: {ids_key(v): ask(text, tokenizer.decode, v, **kwargs) for v in questions.decode.values()}
        for variant, kwargs in DECODES.items()
    }
    observed: dict[str, Any] = {
        "encode": {t: ask(ids, tokenizer.encode, t, add_special_tokens=False) for t in texts},
        "decode": decode,
        "call": {t: ask(ids, tokenizer, t) for t in questions.default_call},
        "encode_default": {t: ask(ids, tokenizer.encode, t) for t in questions.default_call},
        "attributes": {name: ask(attribute, name) for name in ATTRIBUTES},
        "chat": [],
    }
    for conversation, generation, tokenize in questions.chat:
        messages = [dict(m) for m in _CONVERSATIONS[conversation]]
        template = tokenizer.apply_chat_template
        entry: dict[str, Any] = {"conversation": conversation, "add_generation_prompt": generation}
        entry["rendered"] = ask(text, template, messages, tokenize=False, add_generation_prompt=generation)
        if tokenize:
            returned = ask(template, messages, tokenize=True, add_generation_prompt=generation)
            entry["returns"] = type(returned.get("value")).__name__[:100]
            entry["tokenized"] = ask(_ids, returned["value"]) if "value" in returned else returned
        observed["chat"].append(entry)
    return observed


# ---- in the parent: check the shape, then replay ----------------------------------------------------


@dataclass
class Report:
    """One attempt as its child reported it: whether it loaded, and what the tokenizer answered."""

    loaded: bool
    detail: str | None
    tokenizer_class: str | None
    warnings: list[str]
    seconds: float
    loaded_as: str | None
    undecided: bool
    observations: dict[str, Any] | None
    tampered: list[str] = field(default_factory=list)
    """The judge's names checkpoint code replaced in the child (``tamper``): then nothing is used."""


def _shown(value: Any) -> str:
    return repr(value)[:60]


def _optional_str(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise Malformed(f"whose {key!r} is {type(value).__name__}, not a string")
    return value


def read_report(data: Any) -> Report:
    """The attempt object of a child's frame, type by type; Malformed with a one-line reason otherwise."""
    if not isinstance(data, dict):
        raise Malformed("without an attempt object")
    loaded, undecided = data.get("loaded"), data.get("undecided", False)
    if not isinstance(loaded, bool) or not isinstance(undecided, bool):
        raise Malformed("whose 'loaded' or 'undecided' is not true or false")
    warnings, seconds = data.get("warnings") or [], data.get("seconds", 0.0)
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise Malformed("whose 'warnings' is not a list of strings")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        raise Malformed(f"whose 'seconds' is {_shown(seconds)}, not a number")
    tampered = data.get("tampered") or []
    if not isinstance(tampered, list) or not all(isinstance(t, str) for t in tampered):
        raise Malformed("whose 'tampered' is not a list of strings")
    observations = data.get("observations")
    if loaded:
        _check_observations(observations)
    elif observations is not None:
        raise Malformed("with observations of a tokenizer that did not load")
    return Report(
        loaded,
        _optional_str(data, "detail"),
        _optional_str(data, "tokenizer_class"),
        list(warnings),
        float(seconds),
        _optional_str(data, "loaded_as"),
        undecided,
        observations,
        [str(t)[:200] for t in tampered[:10]],
    )


def _is_ids(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_attribute(value: Any) -> bool:
    return value is None or isinstance(value, str | int)


def _check_answer(answer: Any, valid: Callable[[Any], bool], where: str) -> None:
    if isinstance(answer, dict) and set(answer) == {"value"} and valid(answer["value"]):
        return
    error = isinstance(answer, dict) and set(answer) == {"error", "type"}
    if error and _is_str(answer["error"]) and _is_str(answer["type"]):
        return
    raise Malformed(f"whose answer to {where} is {_shown(answer)}, not of its type")


def _check_answers(table: Any, valid: Callable[[Any], bool], what: str) -> None:
    if not isinstance(table, dict):
        raise Malformed(f"whose {what} answers are not an object")
    for key, answer in table.items():
        _check_answer(answer, valid, f"{what} of {_shown(key)}")


def _check_observations(observations: Any) -> None:
    if not isinstance(observations, dict):
        raise Malformed("of a loaded tokenizer without its observations")
    _check_answers(observations.get("encode"), _is_ids, "encode")
    decoded = observations.get("decode")
    if not isinstance(decoded, dict) or set(decoded) != set(DECODES):
        raise Malformed("whose decode answers are not one object per decode call")
    for variant, table in decoded.items():
        _check_answers(table, _is_str, f"decode ({variant})")
    _check_answers(observations.get("call"), _is_ids, "tokenizer(text)")
    _check_answers(observations.get("encode_default"), _is_ids, "encode(text)")
    _check_answers(observations.get("attributes"), _is_attribute, "the attribute")
    chat = observations.get("chat")
    if not isinstance(chat, list):
        raise Malformed("whose chat answers are not a list")
    for entry in chat:
        if not (
            isinstance(entry, dict)
            and entry.get("conversation") in _CONVERSATIONS
            and isinstance(entry.get("add_generation_prompt"), bool)
        ):
            raise Malformed(f"with a chat answer {_shown(entry)} for no conversation it was asked")
        _check_answer(entry.get("rendered"), _is_str, f"the chat template on {entry['conversation']!r}")
        if "tokenized" in entry:
            _check_answer(entry["tokenized"], _is_ids, f"the tokenized chat on {entry['conversation']!r}")
            if not (_is_str(entry.get("returns")) and str(entry["returns"]).isidentifier()):
                raise Malformed(f"whose chat answer names the type {_shown(entry.get('returns'))}")


def _replayed(answer: dict[str, Any]) -> Any:
    """The recorded value, or the recorded failure raised again (a resource limit as itself)."""
    if "value" in answer:
        return answer["value"]
    name = str(answer["type"])
    error_type: type[BaseException] = _LIMITS.get(name) or type(
        name if name.isidentifier() else "Error", (Exception,), {}
    )
    raise error_type(str(answer["error"]))


class Replay:
    """A tokenizer that answers check_parity's calls from a child's recording, and nothing else."""

    def __init__(self, observations: dict[str, Any]) -> None:
        self._observed = observations
        self._chat = {
            (str(entry["conversation"]), bool(entry["add_generation_prompt"])): entry
            for entry in observations["chat"]
        }

    def _answer(self, table: str, key: str, call: str) -> Any:
        answer = self._observed[table].get(key)
        if answer is None:
            raise NotObserved(f"{call} for {key[:60]!r}")
        return _replayed(answer)

    def encode(self, text: str, **kwargs: Any) -> list[int]:
        if kwargs == {"add_special_tokens": False}:
            return list(self._answer("encode", text, "encode(text, add_special_tokens=False)"))
        if not kwargs:
            return list(self._answer("encode_default", text, "encode(text)"))
        raise NotObserved(f"encode(text, {kwargs})")

    def __call__(self, text: str) -> dict[str, list[int]]:
        return {"input_ids": list(self._answer("call", text, "tokenizer(text)"))}

    def decode(self, ids: Sequence[int], **kwargs: Any) -> str:
        variant = next((name for name, known in DECODES.items() if known == kwargs), None)
        if variant is None:
            raise NotObserved(f"decode(ids, {kwargs})")
        answer = self._observed["decode"][variant].get(ids_key(ids))
        if answer is None:
            raise NotObserved(f"decode(ids, {kwargs}) of {ids_key(ids)[:60]}")
        return str(_replayed(answer))

    def apply_chat_template(
        self, messages: list[dict[str, Any]], *, tokenize: bool, add_generation_prompt: bool
    ) -> Any:
        name = next((n for n, conversation in CONVERSATIONS if list(conversation) == messages), None)
        entry = self._chat.get((str(name), add_generation_prompt))
        if entry is None or (tokenize and "tokenized" not in entry):
            raise NotObserved(f"apply_chat_template(tokenize={tokenize}) on conversation {name!r}")
        if not tokenize:
            return _replayed(entry["rendered"])
        returns = type(str(entry["returns"]), (dict,), {})  # its type's name is what a report shows
        return returns(input_ids=list(_replayed(entry["tokenized"])))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in ATTRIBUTES:
            raise NotObserved(f"the attribute {name[:60]!r}")
        return self._answer("attributes", name, "the attribute")
