"""The probe corpus: built-in texts, the entry's own texts, and texts derived from the checkpoint itself.

Each built-in text targets a place where tokenizer front-ends are known to diverge
(pre-tokenizer regexes, whitespace handling, byte fallback, added tokens). A fixed
list cannot know which characters a checkpoint's pre-tokenizer treats specially,
so each case also gets probes drawn from its own files: every special and added
token in the contexts where their lstrip/rstrip/single_word flags matter, a sweep
of the vocabulary over the whole id range (the highest ids included), a text for
every script, combining-mark and number class its vocabulary holds, digit runs of
every length up to 12, and mixed whitespace. The derivation is deterministic (a
random generator seeded with the sha256 of the checkpoint's tokenizer files) and
bounded by the budget below, so two runs on the same files probe the same texts.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from pytest_tokcompat.judge.static import TOKENIZER_FILES
from pytest_tokcompat.judge.vocabulary import (
    VocabularyIndex,
    character_class,
    decode_ids,
)


class ProbeKind(str, Enum):
    """Where a probe text comes from; a drift names it, and the report counts probes by it."""

    BUILTIN = "builtin"
    SPECIAL = "special"
    ENTRY = "entry"
    DIGITS = "digits"
    WHITESPACE = "whitespace"
    SCRIPT = "script"
    VOCAB = "vocab"

    def __str__(self) -> str:
        return str(self.value)


BUILTIN_PROBES: tuple[str, ...] = (
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    " leading space",
    "  two leading spaces",
    "runs   of     spaces",
    "trailing spaces   ",
    "line one\nline two\n\nline four",
    "tab\tseparated\tvalues",
    "\n\n\tmixed\r\nwhitespace \t\n",
    "中文分词测试，看看结果。",
    "日本語のテキストとカタカナ",
    "한국어 문장입니다",
    "emoji 🤖🎉👩‍👩‍👧 and flags 🇫🇷",
    "def add(x, y):\n    return x + y  # sum\n",
    'if (a != b) { printf("%d\\n", a); }',
    "numbers 1234567890 3.14159 -42 1e-9",
    "Ünïcödé àccents ñ ß ø",
    "decomposed: cafe\u0301 nai\u0308ve",
    "URL https://example.com/path?q=1&r=2",
)

# The probe budget (README, "Probes drawn from the checkpoint"): at most
# SPECIAL_BUDGET / SPECIAL_GROUP + 2 * (VOCAB_STRATA + VOCAB_TOP) + SCRIPT_BUDGET + 12 + len(WHITESPACE_PROBES)
# = 128 + 144 + 128 + 12 + 6 = 418 derived texts per case, on top of the built-in corpus and the entry's texts.
SPECIAL_BUDGET = 1024
"""Special and added tokens probed: all of them up to this many; beyond it, a seeded sample (specials first)."""
SPECIAL_GROUP = 8
"""Special-token probes per text: the template below repeated for this many tokens (in id order), so that a
checkpoint with 800 added tokens costs 100 calls, not 800; each token keeps its three contexts."""
VOCAB_STRATA = 64
"""The id range is cut into this many equal strata, and one seeded id is drawn from each."""
VOCAB_TOP = 8
"""The highest ids are always swept."""
VOCAB_RUN = 3
"""Each swept id gives two texts: the id decoded alone, and it with its next neighbours (this many ids)."""
SCRIPT_BUDGET = 128
"""Script, combining-mark and number classes of the vocabulary, one text each (a seeded sample beyond this)."""
SCRIPT_TOKENS = 4
"""Vocabulary strings per class text: two decoded together, a space, two more decoded together."""
DIGIT_LENGTHS = tuple(range(1, 13))
PI_DIGITS = "141592653589793238462643383279502884197169399375105820974944592307816406286208998628034825"
"""Digit runs are consecutive slices of pi's decimals (run n starts after runs 1..n-1), so no two lengths
share their digits and none repeats the built-in corpus's '1234567890'."""
WHITESPACE_PROBES: tuple[str, ...] = (
    "line one\r\nline two\r\n\r\nline four\r\n",
    "\tindented\n\t\tdouble\ttab\n",
    "non\u00a0breaking\u00a0space and\u00a0 mixed \u00a0",
    "mixed \t \u00a0 \r\n\t end",
    "\u3000ideographic space, thin\u2009space, em\u2003space",
    " \r\n \n\r \t\r\n",
)
SPECIAL_TEMPLATE = "Hello {token} world{token}x\n{token}user\nHi"
"""One text per special token: between words with spaces on both sides (lstrip/rstrip), glued inside a word
(single_word), and at the start of a chat-like line."""


@dataclass(frozen=True)
class Probe:
    """One derived probe text, with its kind and what it was drawn from (an id range, a token, a class)."""

    kind: str
    text: str
    source: str = ""


class ProbeTexts(list[str]):
    """The probe texts of a case, in checking order, each with its kind (``kinds[text]``)."""

    def __init__(self, texts: Iterable[str] = (), kinds: dict[str, str] | None = None) -> None:
        super().__init__(texts)
        self.kinds: dict[str, str] = dict(kinds or {})
        self.sources: dict[str, str] = {}
        self.derived: set[str] = set()
        """Texts drawn from the checkpoint (``derive_probes``), not from the built-in corpus or the entry."""

    def counts(self) -> dict[str, int]:
        """How many probes of each kind there are."""
        found: dict[str, int] = {}
        for text in self:
            kind = self.kinds.get(text, str(ProbeKind.BUILTIN))
            found[kind] = found.get(kind, 0) + 1
        return found


def special_token_probes(special_tokens: Sequence[str]) -> list[str]:
    """Texts that embed the checkpoint's first special tokens between words (kept from the first corpus)."""
    probes: list[str] = []
    for token in special_tokens[:4]:
        probes.append(f"{token}Hello{token} world")
    return probes


def probe_texts(
    extra: Iterable[str] = (), special_tokens: Sequence[str] = (), derived: Iterable[Probe] = ()
) -> ProbeTexts:
    """The corpus for one case: built-ins, the checkpoint's specials, the entry's texts, then derived probes.

    A text that occurs twice keeps its first kind. Without ``derived`` this is the corpus of
    the first releases, text for text.
    """
    found = ProbeTexts()
    sources: list[tuple[str, str, str]] = [(t, str(ProbeKind.BUILTIN), "") for t in BUILTIN_PROBES]
    sources += [(t, str(ProbeKind.SPECIAL), "") for t in special_token_probes(special_tokens)]
    sources += [(t, str(ProbeKind.ENTRY), "") for t in extra]
    first_corpus = len(sources)
    sources += [(p.text, str(p.kind), p.source) for p in derived]
    for index, (text, kind, source) in enumerate(sources):
        if text and text not in found.kinds:
            found.append(text)
            found.kinds[text] = kind
            if source:
                found.sources[text] = source
            if index >= first_corpus:
                found.derived.add(text)
    return found


def checkpoint_digest(folder: Path) -> str:
    """sha256 over the names and bytes of the checkpoint's tokenizer files: the derivation's seed."""
    digest = hashlib.sha256()
    for name in TOKENIZER_FILES:
        path = folder / name
        if path.is_file():
            digest.update(name.encode() + b"\0")
            with path.open("rb") as stream:
                for block in iter(lambda: stream.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def digit_runs() -> list[str]:
    """A run of every length 1..12, each from its own slice of pi's decimals."""
    starts = itertools.accumulate((0, *DIGIT_LENGTHS[:-1]))
    return [PI_DIGITS[start : start + length] for start, length in zip(starts, DIGIT_LENGTHS, strict=True)]


def read_json_dict(path: Path) -> dict[str, Any]:
    """A JSON object file's content; {} where it is missing or not an object (the static view reports those)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def token_content(value: Any) -> str | None:
    """A token as tokenizer_config.json writes it: a string, or an AddedToken object with its content."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def declared_added_tokens(folder: Path, reference: Any = None) -> list[tuple[int | None, str, bool]]:
    """Every special and added token the checkpoint declares: (id or None, content, special), in id order.

    From tokenizer.json's added tokens (``reference``), tokenizer_config.json's added_tokens_decoder,
    and the named and additional special tokens of tokenizer_config.json and special_tokens_map.json.
    """
    found: dict[str, tuple[int | None, bool]] = {}
    if reference is not None:
        for token_id, token in reference.get_added_tokens_decoder().items():
            found.setdefault(str(token.content), (int(token_id), bool(token.special)))
    config = read_json_dict(folder / "tokenizer_config.json")
    decoder = config.get("added_tokens_decoder")
    for key, value in decoder.items() if isinstance(decoder, dict) else []:
        content = token_content(value)
        if content and str(key).isdigit() and content not in found:
            found[content] = (int(key), bool(isinstance(value, dict) and value.get("special")))
    for source in (config, read_json_dict(folder / "special_tokens_map.json")):
        named = [source.get(f"{name}_token") for name in ("bos", "eos", "unk", "pad", "sep", "cls", "mask")]
        extra = source.get("additional_special_tokens")
        for value in [*named, *(extra if isinstance(extra, list) else [])]:
            content = token_content(value)
            if content and content not in found:
                id_of = reference.token_to_id(content) if reference is not None else None
                found[content] = (id_of, True)
    ordered = sorted(found.items(), key=lambda item: (item[1][0] is None, item[1][0] or 0, item[0]))
    return [(token_id, content, special) for content, (token_id, special) in ordered]


def _special_probes(tokens: list[tuple[int | None, str, bool]], rng: random.Random) -> list[Probe]:
    if len(tokens) > SPECIAL_BUDGET:
        specials = [t for t in tokens if t[2]]
        others = [t for t in tokens if not t[2]]
        keep = specials[:SPECIAL_BUDGET] + rng.sample(others, max(0, SPECIAL_BUDGET - len(specials)))
        tokens = [t for t in tokens if t in set(keep)]
    probes: list[Probe] = []
    for start in range(0, len(tokens), SPECIAL_GROUP):
        group = tokens[start : start + SPECIAL_GROUP]
        text = " ".join(SPECIAL_TEMPLATE.format(token=content) for _, content, _ in group)
        known = [token_id for token_id, _, _ in group if token_id is not None]
        ids = f", ids {min(known)}-{max(known)}" if known else ""
        names = ", ".join(repr(content) for _, content, _ in group)
        probes.append(Probe(str(ProbeKind.SPECIAL), text, f"{len(group)} special/added tokens{ids}: {names}"))
    return probes


def _vocab_probes(reference: Any, rng: random.Random) -> list[Probe]:
    size = int(reference.get_vocab_size(with_added_tokens=True))
    if size <= 0:
        return []
    chosen: set[int] = set(range(max(0, size - VOCAB_TOP), size))
    for stratum in range(VOCAB_STRATA):
        low, high = stratum * size // VOCAB_STRATA, (stratum + 1) * size // VOCAB_STRATA
        if high > low:
            chosen.add(rng.randrange(low, high))
    probes: list[Probe] = []
    for token_id in sorted(chosen):
        run = list(range(token_id, min(size, token_id + VOCAB_RUN)))
        for ids in ([token_id], run):
            text = decode_ids(reference, ids)
            if text.strip():
                where = f"id {ids[0]}" if len(ids) == 1 else f"ids {ids[0]}-{ids[-1]}"
                probes.append(Probe(str(ProbeKind.VOCAB), text, f"{where} of {size}"))
    return probes


def _script_probes(reference: Any, rng: random.Random, path: Path | None) -> list[Probe]:
    index = VocabularyIndex(reference, path)
    if not index.text:
        return []
    classes: dict[str, list[str]] = {}
    for char in set(index.text):
        name = character_class(char)
        if name is not None and char != "\ufffd":
            classes.setdefault(name, []).append(char)
    names = sorted(classes)
    if len(names) > SCRIPT_BUDGET:
        names = sorted(rng.sample(names, SCRIPT_BUDGET))
    probes: list[Probe] = []
    for name in names:
        chars = sorted(classes[name])
        rng.shuffle(chars)
        chosen: list[int] = []
        for char in chars[: SCRIPT_TOKENS * 4]:
            token_id = index.find(char, rng)
            if token_id is not None and token_id not in chosen:
                chosen.append(token_id)
            if len(chosen) == SCRIPT_TOKENS:
                break
        if not chosen:
            continue
        half = (len(chosen) + 1) // 2
        text = decode_ids(reference, chosen[:half]) + " " + decode_ids(reference, chosen[half:])
        if text.strip():
            probes.append(Probe(str(ProbeKind.SCRIPT), text, f"{name}: ids {', '.join(map(str, chosen))}"))
    return probes


_DERIVED: dict[str, list[Probe]] = {}


def derive_probes(folder: Path, reference: Any = None) -> list[Probe]:
    """The probes drawn from the checkpoint in ``folder`` (``reference``: its tokenizer.json, parsed).

    Without a tokenizer.json there is no vocabulary to sweep: the special-token, digit and
    whitespace probes are still derived; they are checked where golden ids cover them.
    Cached per file digest, so cases that share a tokenizer derive it once per process.
    """
    digest = checkpoint_digest(folder)
    key = f"{digest}:{reference is not None}"
    if key not in _DERIVED:
        rng = random.Random(digest)
        probes = _special_probes(declared_added_tokens(folder, reference), rng)
        probes += [Probe(str(ProbeKind.DIGITS), run, f"{len(run)} digits") for run in digit_runs()]
        probes += [Probe(str(ProbeKind.WHITESPACE), text, "mixed whitespace") for text in WHITESPACE_PROBES]
        if reference is not None:
            probes += _script_probes(reference, rng, folder / "tokenizer.json")
            probes += _vocab_probes(reference, rng)
        if len(_DERIVED) > 8:
            _DERIVED.clear()
        _DERIVED[key] = probes
    return list(_DERIVED[key])
