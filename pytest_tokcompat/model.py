"""The vocabulary every layer shares: outcomes, verdicts, statuses, alias states and alarm kinds.

They are ``str`` enums so that the JSON report (the contract between the grid job
and the issues job) holds plain strings, while code compares typed members and a
missed spelling is a type error instead of a silent mismatch. Imports nothing.
"""

from __future__ import annotations

from enum import Enum


class _Text(str, Enum):
    """A string enum whose str() is its value (as in the JSON report)."""

    def __str__(self) -> str:
        return str(self.value)


class Remedy(_Text):
    """A rung of the ladder, in the order they are tried (least a user must do first)."""

    NATIVE = "native"
    AUTO_MAP = "auto_map"
    ALIAS = "alias"
    BACKEND = "backend"
    """A repair: the checkpoint's tokenizer.json loaded with the fast backend as it is (transformers'
    ``TokenizersBackend``, ``PreTrainedTokenizerFast`` on 4.x), where its class choice rebuilds it wrongly;
    what ``MODEL_IDS_TO_TOKENIZERS_BACKEND`` does for the checkpoints it names, and clients' class overrides."""


class Outcome(_Text):
    """What a matrix entry may expect."""

    NATIVE = "native"
    AUTO_MAP = "auto_map"
    ALIAS = "alias"
    BACKEND = "backend"
    BROKEN = "broken"


class Verdict(_Text):
    """What a judgement found: a remedy, broken, or not-checked (it could not be judged here)."""

    NATIVE = "native"
    AUTO_MAP = "auto_map"
    ALIAS = "alias"
    BACKEND = "backend"
    BROKEN = "broken"
    """Wrong ids on ordinary text for every remedy (never 'ids right, but a finding')."""
    NOT_CHECKED = "not-checked"


class AttemptStatus(_Text):
    """How one remedy fared."""

    OK = "ok"
    DRIFT = "drift"
    """Loads, but ids (or another contract dimension) differ from the ground truth."""
    LOAD_ERROR = "load-error"
    ENCODE_ERROR = "encode-error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    """The attempt's process died (exit, signal, panic) before it reported."""
    NOT_CHECKED = "not-checked"
    """Loads, but there is no ground truth to check it against."""
    SKIPPED = "skipped"


FAILED_ATTEMPTS = frozenset(
    {
        AttemptStatus.DRIFT,
        AttemptStatus.LOAD_ERROR,
        AttemptStatus.ENCODE_ERROR,
        AttemptStatus.TIMEOUT,
        AttemptStatus.CRASHED,
    }
)
"""Attempts that ran and did not give a working tokenizer (a native registration that does this drifts)."""


class CaseStatus(_Text):
    """The test result of a case or alias item."""

    PASSED = "passed"
    FAILED = "failed"
    NOT_CHECKED = "not-checked"


class AliasState(_Text):
    """What an alias is for under one transformers release."""

    UNUSED = "unused"
    """Plain loading keeps parity without it."""
    NEEDED = "needed"
    OBSOLETE = "obsolete"
    """transformers registers the model_type natively and plain loading keeps parity."""
    DRIFT = "drift"
    """The native registration gives wrong ids: the alias must stay."""
    BROKEN = "broken"
    """The alias is needed (plain loading fails) but, applied as declared, it does not give right ids
    either: a client's shim that loads and miscounts shows here."""
    NOT_CHECKED = "not-checked"


class AlarmKind(_Text):
    """A change upstream that a maintainer must act on."""

    UNEXPECTED_VERDICT = "unexpected-verdict"
    UNACKNOWLEDGED_FINDING = "unacknowledged-finding"
    """Right ids on ordinary text, but a contract finding the matrix entry does not acknowledge."""
    OBSOLETE_ALIAS = "obsolete-alias"
    OBSOLETE_REPAIR = "obsolete-repair"
    """A repair the matrix expects (the backend override) is no longer needed: plain loading keeps parity."""
    NATIVE_DRIFT = "native-drift"
    REGISTRY_CHANGE = "registry-change"
    """transformers' tokenizer-relevant registries changed for an aliased or watched model_type between two
    releases (registered natively, a tokenizer mapping or an override-list entry added or dropped)."""
    LOADER_DRIFT = "loader-drift"
    """A client's own loader loads a checkpoint with wrong ids (or another contract dimension drifts)."""
    LOADER_ERROR = "loader-error"
    """A client's own loader cannot be imported or called, or what it returns cannot encode."""
    LOADER_OBSOLETE = "loader-obsolete"
    """Plain AutoTokenizer gives the same right tokenizer as a client's loader where the loader still
    registers the checkpoint's model_type, or (the grid) where plain loading failed on an earlier release:
    the client's shim is no longer needed there."""


NOT_CHECKED = "not-checked"
"""The one spelling of 'could not be judged here', shared by verdicts, statuses and alias states."""


class Dimension(_Text):
    """A part of the tokenizer contract a client relies on, checked per attempt (README, "The contract")."""

    IDS = "ids"
    """``encode(text, add_special_tokens=False)`` against the ground truth, on ordinary text (no special or
    added token strings in it): the verdict's dimension."""
    SPECIAL_TEXT = "special_text"
    """The same on text that contains special or added token strings (chat markup pasted into a prompt)."""
    DEFAULT_CALL = "default_call"
    """``tokenizer(text)["input_ids"]`` and ``encode(text)`` with the defaults, against the declared post-processing."""
    SPECIAL_TOKENS = "special_tokens"
    """bos/eos/pad/unk tokens and ids against tokenizer_config.json and special_tokens_map.json."""
    DECODE = "decode"
    """Decoding with the declared defaults, with ``skip_special_tokens=True`` and without clean-up."""
    CHAT_TEMPLATE = "chat_template"
    """``apply_chat_template`` against a sandboxed jinja2 rendering of the checkpoint's template, and its ids."""


ACKNOWLEDGEABLE = (
    Dimension.SPECIAL_TEXT,
    Dimension.DEFAULT_CALL,
    Dimension.SPECIAL_TOKENS,
    Dimension.DECODE,
    Dimension.CHAT_TEMPLATE,
)
"""Dimensions a matrix entry may acknowledge for a version range; wrong ids are never acknowledged (expect broken)."""

CONSEQUENCES: dict[str, str] = {
    Dimension.SPECIAL_TEXT.value: "token counts and model input of text that contains special-token strings "
    "(chat markup in a prompt) differ from the checkpoint's own tokenizer",
    Dimension.DEFAULT_CALL.value: "token counts and model input: tokenizer(text) and encode(text) add other "
    "special tokens (BOS/EOS) than the checkpoint declares",
    Dimension.SPECIAL_TOKENS.value: "stop conditions and padding: bos/eos/pad/unk are not what the checkpoint "
    "declares (an eos_token_id a client stops on)",
    Dimension.DECODE.value: "displayed text: decode() gives other text than the checkpoint's own decoder "
    "(token counts are right)",
    Dimension.CHAT_TEMPLATE.value: "model input: apply_chat_template renders other prompts (or ids) than the "
    "checkpoint's chat template",
}
"""What each finding means for a benchmark client, in its maintainer's words (reports, grid, messages)."""


class Repair(_Text):
    """A shim applied on top of the verdict's remedy, judged like a remedy, with its own lifecycle."""

    DECLARED_SPECIAL_TOKENS = "declared_special_tokens"
    """The declared ``add_bos_token``/``add_eos_token`` applied to the fast backend's post-processor where
    the release ignores them (the default call then adds the BOS the checkpoint declares)."""


class DimensionStatus(_Text):
    """How one contract dimension fared in one attempt."""

    MATCH = "match"
    DRIFT = "drift"
    ACKNOWLEDGED = "acknowledged"
    """It drifts, and the matrix entry acknowledges that for this release (with its reason)."""
    NOT_CHECKED = "not-checked"
    """No ground truth for it (e.g. no tokenizer.json for the default call)."""
    ABSENT = "absent"
    """The checkpoint declares nothing to check (e.g. no chat template)."""


class TrackedAs(_Text):
    """Why the upstream watch records a model_type (the report's ``registry.model_types[*].tracked_as``)."""

    MATRIX = "matrix"
    """A case of the matrix has it."""
    ALIAS = "alias"
    """An alias of the run's registry declares it."""
    ALIAS_BASE = "alias-base"
    """An alias borrows its tokenizer mapping."""
    WATCH = "watch"
    """The matrix's ``watch:`` list names it."""


class OverrideKind(_Text):
    """What a hard-coded list whose hub tokenizer class transformers overrides holds."""

    MODEL_TYPES = "model_types"
    CHECKPOINTS = "checkpoints"
