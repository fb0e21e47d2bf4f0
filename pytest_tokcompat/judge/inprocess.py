"""The verdict's tokenizer loaded in the caller's process, for fixtures and ``load_tokenizer()``.

Checked once more here against the truth the children used: the caller's process may carry a
client's monkeypatches that the children did not."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

from pytest_tokcompat.judge.chat import frozen_clock
from pytest_tokcompat.judge.isolation import isolated_transformers
from pytest_tokcompat.judge.judgement import OK, UNCHECKED, Attempt, Judgement
from pytest_tokcompat.judge.loading import error_text, load_with
from pytest_tokcompat.judge.parity import MATCH, MISMATCH, NOT_CHECKED, Parity, Truth, check_parity
from pytest_tokcompat.judge.pristine import Watch
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.model import AttemptStatus

_IMPORTER: threading.Thread | None = None


def import_in_background() -> None:
    """Import transformers here while the children judge: the caller's own load needs it next."""
    global _IMPORTER
    if _IMPORTER is None:

        def work() -> None:
            with contextlib.suppress(Exception):  # the load itself reports it
                from transformers import AutoTokenizer  # noqa: F401

        _IMPORTER = threading.Thread(target=work, name="tokcompat-import", daemon=True)
        _IMPORTER.start()


def ids_parity(tokenizer: Any, truth: Truth, texts: list[str]) -> Parity:
    """The ids dimension alone: every probe text with a ground truth, encoded as the matrix encodes it."""
    checked = 0
    special = set(truth.special_texts)
    for text in texts:
        expected = truth.ids.get(text)
        if expected is None or text in special:
            continue
        actual = list(tokenizer.encode(text, add_special_tokens=False))
        if actual != expected:
            return Parity(MISMATCH, checked, truth.source, text, expected, actual, dimension="ids")
        checked += 1
    return Parity(MATCH, checked, truth.source)


def load_here(
    folder: Path, judgement: Judgement, registry: dict[str, Alias] | None = None, *, ids_only: bool = False
) -> Any | None:
    """The verdict's remedy loaded in the caller's process, checked against the same truth once more.

    None (and the judgement's parity says why) where it does not load here or gives other results
    here than in the child that judged it: the caller's process may carry a client's monkeypatches.
    ``ids_only`` (a verdict from the cache on disk, whose every dimension a child checked) checks
    the ids of every probe text here, not the contract's other dimensions again.
    """
    from pytest_tokcompat.matrix.aliases import REGISTRY, find_alias

    if _IMPORTER is not None:
        _IMPORTER.join()
    chosen = next((a for a in judgement.attempts if a.status in (OK, AttemptStatus.NOT_CHECKED)), None)
    if chosen is None or judgement.probe_texts is None:
        return None
    alias = find_alias(judgement.model_type, dict(REGISTRY if registry is None else registry))
    watch = Watch(folder, judgement.target, enabled=chosen.remedy == "auto_map")  # its code runs here
    try:
        tokenizer = _reload(folder, judgement, chosen, alias, judgement.probe_texts, ids_only=ids_only)
    finally:
        changed = watch.after(f"reload:{chosen.remedy}", ran_code=True)
    if changed is not None:
        judgement.verdict, judgement.parity = UNCHECKED, Parity(NOT_CHECKED, reason=changed)
        return None
    return tokenizer


def _reload(
    folder: Path,
    judgement: Judgement,
    chosen: Attempt,
    alias: Alias | None,
    texts: list[str],
    *,
    ids_only: bool,
) -> Any:
    """The load and its check here; None where either fails (the judgement's parity then says why)."""
    with isolated_transformers():
        try:
            tokenizer = load_with(folder, chosen.remedy, alias, judgement.target, judgement.repairs)
            truth = judgement.truth
            parity: Parity | None
            if truth is not None and ids_only:
                parity = ids_parity(tokenizer, truth, texts)
            else:
                with frozen_clock():
                    parity = check_parity(tokenizer, truth, texts) if truth else None
        except Exception as error:
            judgement.parity = Parity(
                NOT_CHECKED, reason=f"loads in a child process but not in this one: {error_text(error)}"
            )
            return None
    if parity is not None and chosen.parity is not None and parity.status != chosen.parity.status:
        judgement.parity = Parity(
            NOT_CHECKED, reason=f"in this process the {chosen.remedy} remedy gives: {parity.describe()}"
        )
        return None
    return tokenizer
