"""End to end: Merges recovered from tiktoken ranks: the fast recovery gives exactly what the plain BPE run gives.

The rest of this subject's tests, and the helpers these use, are in tests/unit/sources/test_tiktoken_bpe.py.
"""

from __future__ import annotations

import pytest

from pytest_tokcompat.sources.tiktoken_bpe import load_ranks
from tests.helpers.plain_bpe import RANK_FILES, bundled_rank_file
from tests.unit.sources.test_tiktoken_bpe import assert_same_as_oracle


@pytest.mark.parametrize("snapshot", sorted(RANK_FILES))
def test_same_merges_as_plain_bpe_on_a_real_vocabulary(snapshot: str) -> None:
    """Seconds per vocabulary (the oracle is the slow part); Llama 3's has tokens no merge reaches."""
    assert_same_as_oracle(load_ranks(bundled_rank_file(snapshot)))
