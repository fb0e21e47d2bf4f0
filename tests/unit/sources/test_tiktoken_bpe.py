"""Merges recovered from tiktoken ranks: the fast recovery gives exactly what the plain BPE run gives.

The oracle (tests/helpers/plain_bpe.py) is the straightforward algorithm the module used before it was sped
up: BPE on each token's bytes with only the merges ranked below it, every pair's rank recomputed at
every step.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_tokcompat.sources.tiktoken_bpe import bpe_vocab_and_merges
from tests.helpers.plain_bpe import plain_vocab_and_merges

FAST = settings(suppress_health_check=[HealthCheck.too_slow])
"""Examples per test from the profile (tests/conftest.py): a few on a developer's run, the full count in CI."""


def assert_same_as_oracle(ranks: dict[bytes, int]) -> None:
    vocab, merges = bpe_vocab_and_merges(ranks)
    expected_vocab, expected_merges = plain_vocab_and_merges(ranks)
    assert list(vocab.items()) == list(expected_vocab.items())  # vocab.json keeps the file's order
    assert merges == expected_merges


# Three byte values, so words repeat pairs ("aaaa": equal pair ranks side by side, leftmost wins);
# space is a byte GPT-2's table shifts (to "Ġ").
WORDS = st.lists(st.sampled_from(b"ab "), min_size=1, max_size=8).map(bytes)


@st.composite
def rank_tables(draw: st.DrawFn, unique: bool = True) -> dict[bytes, int]:
    """Every substring of a few words, some left out, in any rank order.

    So a token's halves are often ranked above it, some tokens are reached by no lower merge, some
    single bytes are missing, and the BPE runs merge several times before the last cut.
    """
    words = draw(st.lists(WORDS, min_size=1, max_size=5))
    substrings = sorted(
        {word[i:j] for word in words for i in range(len(word)) for j in range(i + 1, len(word) + 1)}
    )
    kept = [token for token in substrings if draw(st.integers(0, 9)) > 0]  # about one in ten left out
    if unique:
        ranks = draw(st.permutations(range(len(kept) + 3)))[: len(kept)]  # gaps, any order
    else:
        ranks = draw(st.lists(st.integers(0, 8), min_size=len(kept), max_size=len(kept)))
    return dict(zip(kept, ranks, strict=True))


@FAST
@given(rank_tables())
def test_same_merges_as_plain_bpe(ranks: dict[bytes, int]) -> None:
    assert_same_as_oracle(ranks)


@FAST
@given(rank_tables(unique=False))
def test_same_merges_as_plain_bpe_even_with_repeated_ranks(ranks: dict[bytes, int]) -> None:
    """tiktoken's ranks are unique; a table whose are not still gets the plain run's merges, in its order."""
    assert_same_as_oracle(ranks)


@pytest.mark.parametrize(
    ("ranks", "merges"),
    [
        # "abc": "ab" (0) before "bc" (1), whose rank is lower than "abc"'s.
        ({b"ab": 0, b"bc": 1, b"abc": 2}, [("a", "b"), ("b", "c"), ("ab", "c")]),
        # "abc": the lower-ranked "bc" merges first.
        ({b"bc": 0, b"ab": 1, b"abc": 2}, [("b", "c"), ("a", "b"), ("a", "bc")]),
        # "abc" ranked below both halves: three bytes are left, no merge.
        ({b"abc": 0, b"ab": 1, b"bc": 2}, [("a", "b"), ("b", "c")]),
        # "aaaa": "aa" merges leftmost first, then "aa" + "aa" beats "aaa" + "a".
        ({b"aa": 0, b"aaaa": 1}, [("a", "a"), ("aa", "aa")]),
        # "aaa": equal pair ranks, the left pair merges.
        ({b"aa": 0, b"aaa": 1}, [("a", "a"), ("aa", "a")]),
        # "aaaaa": leftmost "aa" twice (aa, aa, a), then "aaa": cut after two bytes, not three.
        ({b"aa": 0, b"aaa": 1, b"aaaaa": 2}, [("a", "a"), ("aa", "a"), ("aa", "aaa")]),
        # "abab": "ab" merges at both ends, leftmost first; "aba", ranked above "abab", plays no part.
        ({b"ab": 0, b"abab": 1, b"aba": 2}, [("a", "b"), ("ab", "ab"), ("ab", "a")]),
        # "abcd": nothing below it merges "bc" + "d" or "a" + "bcd"; parts a, bc, d remain: no merge.
        ({b"bc": 0, b"abcd": 1, b"bcd": 2}, [("b", "c"), ("bc", "d")]),
    ],
)
def test_known_merges(ranks: dict[bytes, int], merges: list[tuple[str, str]]) -> None:
    assert bpe_vocab_and_merges(ranks)[1] == merges
    assert plain_vocab_and_merges(ranks)[1] == merges
