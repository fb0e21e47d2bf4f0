"""The built-in probe corpus.

Each text targets a place where tokenizer front-ends are known to diverge
(pre-tokenizer regexes, whitespace handling, byte fallback, added tokens), so
that a tokenizer which agrees on all of them is very likely to agree on real
prompts too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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


def special_token_probes(special_tokens: Sequence[str]) -> list[str]:
    """Texts that embed the checkpoint's own special tokens between words."""
    probes: list[str] = []
    for token in special_tokens[:4]:
        probes.append(f"{token}Hello{token} world")
    return probes


def probe_texts(extra: Iterable[str] = (), special_tokens: Sequence[str] = ()) -> list[str]:
    """The corpus for one case: built-ins, the checkpoint's specials, the entry's own texts."""
    seen: dict[str, None] = {}
    for text in (*BUILTIN_PROBES, *special_token_probes(special_tokens), *extra):
        seen.setdefault(text, None)
    return list(seen)
