"""A checkpoint's vocabulary as text: its strings by id (byte-level BPE decoded), and the character
classes they hold, from which ``probes`` draws its vocabulary and script probes."""

from __future__ import annotations

import bisect
import codecs
import itertools
import json
import random
import re
import unicodedata
from pathlib import Path
from typing import Any


def _byte_level(reference: Any) -> bool:
    try:
        state = reference.decoder.__getstate__() if reference.decoder is not None else b""
    except Exception:
        return False
    return b"ByteLevel" in (state if isinstance(state, bytes) else str(state).encode())


def _byte_table() -> dict[int, int]:
    """The byte-level alphabet (GPT-2's printable stand-ins for the 256 bytes) back to the bytes."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {code: code for code in printable}
    shifted = 0
    for byte in range(256):
        if byte not in table:
            table[256 + shifted] = byte
            shifted += 1
    return table


_BYTE_TABLE = _byte_table()


_BYTE_ENCODING = codecs.charmap_build(
    "".join(chr(c) for c, _ in sorted(_BYTE_TABLE.items(), key=lambda i: i[1]))
)
"""A charmap codec from the byte-level alphabet to bytes (str -> bytes in C, whole vocabulary at once)."""


def _vocabulary_from_file(path: Path, size: int) -> dict[str, int] | None:
    """The model's vocab object read straight from tokenizer.json (cheaper than ``get_vocab``), if it parses."""
    try:
        text = path.read_text(encoding="utf-8")
        start = text.index("{", text.index('"vocab"', text.index('"model"')))
        vocab, _ = json.JSONDecoder().raw_decode(text, start)
    except (OSError, ValueError):
        return None
    if not isinstance(vocab, dict) or len(vocab) != size:
        return None
    return vocab


def vocabulary_strings(reference: Any, path: Path | None = None) -> tuple[list[int], list[str]]:
    """The model vocabulary's ids and token strings as text, in id order.

    Approximate (partial UTF-8 sequences become U+FFFD): the strings only pick tokens by
    script, and the probe texts are then decoded by the reference itself. Done with a
    handful of whole-vocabulary string operations, not one Python step per token.
    """
    size = int(reference.get_vocab_size(with_added_tokens=False))
    vocab = _vocabulary_from_file(path, size) if path is not None else None
    if vocab is None:
        vocab = reference.get_vocab(with_added_tokens=False)
    ids = list(vocab.values())
    keys = list(vocab)
    if ids != sorted(ids):
        keys = sorted(vocab, key=vocab.__getitem__)
        ids = sorted(ids)
    if not _byte_level(reference):
        return ids, "\0".join(keys).replace("\u2581", " ").split("\0")
    # "Ā" is the byte-level stand-in for byte 0: two of them separate tokens in the decoded bytes
    raw, _ = codecs.charmap_encode("ĀĀ".join(keys), "replace", _BYTE_ENCODING)
    strings = raw.decode("utf-8", "replace").split("\0\0")
    if len(strings) != len(keys):  # a token holding two NUL bytes: one by one
        strings = [
            codecs.charmap_encode(k, "replace", _BYTE_ENCODING)[0].decode("utf-8", "replace") for k in keys
        ]
    return ids, strings


def character_class(char: str) -> str | None:
    """The script (or combining-mark or number class) of a non-ASCII letter, mark or number, else None.

    Python has no Unicode script property; the first word of the character's name stands in for
    it (LATIN, CYRILLIC, DEVANAGARI, THAI, CJK, HANGUL, ...). Marks are also split by their
    canonical combining class, which is what normalizers and pre-tokenizers act on.
    """
    if char.isascii():
        return None
    category = unicodedata.category(char)
    if category[0] not in "LMN":
        return None
    word = unicodedata.name(char, "UNNAMED").split(" ", 1)[0]
    if category[0] == "M":
        return f"mark {word} ccc={unicodedata.combining(char)}"
    if category[0] == "N":
        return f"number {word}"
    return f"script {word}"


_ID_AFTER_TOKEN = re.compile(r'(?<!\\)":(\d+)')


class VocabularyIndex:
    """The vocabulary as one text, to list the characters it holds and find a token holding a given one.

    Fast path: the BPE ``vocab`` object of tokenizer.json as raw JSON text, its layout
    whitespace removed, a byte-level vocabulary mapped back to bytes and decoded as a
    whole, so that no Python object is made per token; a character is found with a
    single-character search and its token's id read after the token (``"...":1234``).
    Other formats fall back to the vocabulary's strings token by token.
    """

    def __init__(self, reference: Any, path: Path | None) -> None:
        self.reference = reference
        section = self._bpe_section(path) if path is not None else None
        self.ids: list[int] = []
        self.strings: list[str] = []
        self.starts: list[int] = []
        self.fast = section is not None
        if section is not None:
            self.text = (
                _from_byte_level(section) if _byte_level(reference) else section.replace("\u2581", " ")
            )
        else:
            self.ids, self.strings = vocabulary_strings(reference, path)
            self.text = "".join(self.strings)
            self.starts = list(itertools.accumulate(map(len, self.strings), initial=0))

    @staticmethod
    def _bpe_section(path: Path) -> str | None:
        try:
            data = path.read_bytes()
            start = data.index(b"{", data.index(b'"vocab"', data.index(b'"model"')))
            end = data.index(b'"merges"', start)
            section = data[start:end]
            # tokens hold no layout whitespace (byte-level: Ġ, Ċ; sentencepiece: ▁), the JSON around them does
            for blank in (b" ", b"\n", b"\r", b"\t"):
                section = section.replace(blank, b"")
            return section.decode("utf-8")
        except (OSError, ValueError):
            return None

    def find(self, char: str, rng: random.Random) -> int | None:
        """The id of a vocabulary token holding ``char``, searched from a seeded position on."""
        position = self.text.find(char, rng.randrange(len(self.text)))
        position = self.text.find(char) if position < 0 else position
        if position < 0:
            return None
        if not self.fast:
            index = bisect.bisect_right(self.starts, position) - 1
            return None if "\ufffd" in self.strings[index] else self.ids[index]
        found = _ID_AFTER_TOKEN.search(self.text, position)
        if found is None:
            return None
        token_id = int(found.group(1))
        decoded = decode_ids(self.reference, [token_id])
        return token_id if char in decoded and "\ufffd" not in decoded else None


def _from_byte_level(text: str) -> str:
    """Byte-level text (GPT-2's stand-in characters) as the text its bytes spell, in a few whole-text steps."""
    try:
        import numpy
    except ImportError:  # transformers depends on numpy; without it, the slower codec
        raw, _ = codecs.charmap_encode(text, "replace", _BYTE_ENCODING)
        return raw.decode("utf-8", "replace")
    table = numpy.full(max(_BYTE_TABLE) + 2, ord("?"), dtype=numpy.uint8)
    table[list(_BYTE_TABLE)] = list(_BYTE_TABLE.values())
    codes = numpy.frombuffer(text.encode("utf-32-le"), dtype=numpy.uint32)
    codes = numpy.minimum(codes, len(table) - 1)  # anything outside the alphabet reads as '?'
    return bytes(table[codes].tobytes()).decode("utf-8", "replace")


def decode_ids(reference: Any, ids: list[int]) -> str:
    try:
        return str(reference.decode(ids, skip_special_tokens=False))
    except Exception:  # an id the model does not have (a hole in the id range)
        return ""
