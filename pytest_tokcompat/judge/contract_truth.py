"""The contract's ground truth: what the default call, decoding and the chat template must give, per case.

Computed once per case (``contract_truth``) from the declared tokens and the reference tokenizer;
the checks (``contract_checks``) compare a tokenizer with it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_tokcompat.judge.chat import ChatExpectation, reference_chat
from pytest_tokcompat.judge.declared import Declared
from pytest_tokcompat.judge.probes import ProbeKind
from pytest_tokcompat.model import Dimension

DEFAULT_CALL_PER_KIND = 4
"""The default call is checked on the built-in and entry texts and the first this many probes of each other
kind (the post-processing it checks does not depend on the text; two calls per text are its whole cost)."""


DEFAULT_CALL_ALL_KINDS = (str(ProbeKind.BUILTIN), str(ProbeKind.ENTRY))


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
