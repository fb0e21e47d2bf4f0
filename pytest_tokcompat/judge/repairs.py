"""Repairs: the post-load shims clients carry, applied on top of a remedy and judged like one.

A release can load a checkpoint with right ids and still ignore what it declares, for example
``add_bos_token: true`` in tokenizer_config.json (the R1 distills on 5.x: ``tokenizer(text)`` gets
no BOS). Clients fix that after loading; so does ``load_tokenizer()``. Each repair here is what
such a client writes, so the judge can say when it is needed and when it becomes obsolete.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_tokcompat.judge.declared import Declared, read_declared
from pytest_tokcompat.model import Repair


class RepairNotApplicable(Exception):
    """The repair does not apply to this tokenizer (not a fast backend, nothing declared)."""


def declared_special_tokens_applicable(declared: Declared) -> bool:
    """Whether the checkpoint declares BOS/EOS flags that the repair can apply."""
    return (declared.add_bos_token is not None and "bos" in declared.special_tokens) or (
        declared.add_eos_token is not None and "eos" in declared.special_tokens
    )


def apply_declared_special_tokens(tokenizer: Any, folder: Path) -> None:
    """Make the fast backend's post-processor add exactly the BOS/EOS the checkpoint declares.

    What a client writes as ``tokenizer.backend_tokenizer.post_processor = TemplateProcessing(...)``:
    ``[BOS] $A [EOS]`` with each present as ``add_bos_token``/``add_eos_token`` say, keeping a
    ByteLevel post-processor's offset handling in front of it.
    """
    from tokenizers import processors

    backend = getattr(tokenizer, "backend_tokenizer", None) or getattr(tokenizer, "_tokenizer", None)
    if backend is None or not hasattr(backend, "post_processor"):
        raise RepairNotApplicable(f"{type(tokenizer).__name__} has no fast backend to repair")
    declared = read_declared(folder)
    if not declared_special_tokens_applicable(declared):
        raise RepairNotApplicable("the checkpoint declares neither add_bos_token nor add_eos_token")
    bos = declared.special_tokens.get("bos") if declared.add_bos_token else None
    eos = declared.special_tokens.get("eos") if declared.add_eos_token else None
    specials: list[tuple[str, int]] = []
    for token in (bos, eos):
        if token is None:
            continue
        token_id = backend.token_to_id(token)
        if token_id is None:
            raise RepairNotApplicable(f"the declared token {token!r} is not in the vocabulary")
        if (token, token_id) not in specials:
            specials.append((token, int(token_id)))

    def side(sequence: str, type_id: int) -> list[str]:
        return [
            *([f"{bos}:{type_id}"] if bos else []),
            f"{sequence}:{type_id}",
            *([f"{eos}:{type_id}"] if eos else []),
        ]

    single = side("$A", 0)
    template = processors.TemplateProcessing(
        single=" ".join(single), pair=" ".join([*single, *side("$B", 1)]), special_tokens=specials
    )
    existing = backend.post_processor
    if existing is not None and type(existing).__name__ == "ByteLevel":
        backend.post_processor = processors.Sequence([existing, template])
    else:
        backend.post_processor = template


def apply_repair(tokenizer: Any, repair: str, folder: Path) -> None:
    """Apply one repair by name; RepairNotApplicable where it cannot apply, ValueError for an unknown one."""
    if repair == Repair.DECLARED_SPECIAL_TOKENS:
        apply_declared_special_tokens(tokenizer, folder)
        return
    raise ValueError(f"unknown repair {repair!r} (known: {', '.join(str(r) for r in Repair)})")
