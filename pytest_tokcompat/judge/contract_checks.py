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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_tokcompat.judge.chat import CONVERSATIONS, RESOURCE_LIMITS, error_line, limit_text
from pytest_tokcompat.judge.contract_truth import ContractTruth
from pytest_tokcompat.model import Dimension, DimensionStatus


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
            reason = limit_text("rendering", expectation.label, error)
            return DimensionResult(str(DimensionStatus.NOT_CHECKED), checked, reason=reason)
        except Exception as error:  # the judged tokenizer rejects the conversation
            actual, actual_error = None, error_line(error)
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
