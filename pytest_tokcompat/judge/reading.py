"""What a child reads of a checkpoint before any load: its probe texts and their ground truth.

Apart from the ladder because it runs in the first child only (``job.run_job``); later children are
handed what it found."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from pytest_tokcompat.errors import CheckpointError
from pytest_tokcompat.judge.loading import error_text
from pytest_tokcompat.judge.parity import (
    Truth,
    golden_probes,
    golden_truth,
    ground_truth,
    reference_tokenizer,
)
from pytest_tokcompat.judge.probes import derive_probes, probe_texts
from pytest_tokcompat.judge.static import special_tokens


def read_truth(
    folder: Path,
    emit: Callable[[dict[str, Any]], None],
    *,
    extra_texts: list[str],
    golden_path: Path | None,
    record: bool,
    acknowledged: dict[str, str],
) -> tuple[list[str], Truth | None, str | None]:
    """The probe texts and their ground truth, recording missing golden ids where asked."""
    from pytest_tokcompat.judge import golden

    truth_error: str | None = None
    try:
        reference = reference_tokenizer(folder)
    except CheckpointError:
        raise
    except BaseException as error:  # a Rust panic while parsing is a BaseException
        reference, truth_error = None, _unreadable(folder, error)
    derived = derive_probes(folder, reference) if truth_error is None else []
    derived += [] if reference is not None else golden_probes(golden_path)
    texts = probe_texts(extra_texts, special_tokens(folder, reference), derived)
    truth: Truth | None = None
    recorded: dict[str, Any] | None = None
    if truth_error is None:
        try:
            truth = ground_truth(folder, texts, golden_path, reference)
        except CheckpointError:
            raise
        except BaseException as error:
            truth_error = _unreadable(folder, error)
        if truth_error is None and reference is None and record:
            # derived probes without golden ids are recorded too (and their kinds, for the next run)
            missing = [text for text in texts if truth is None or text not in truth.ids]
            found = golden.independent_ids(folder, missing) if missing else None
            if isinstance(found, str):
                truth = truth or golden_truth(folder, texts, "golden ids", {}, {})
                truth.missing_reason = found
            elif found is not None:
                recorded = found.to_json()
                recorded["kinds"] = {t: texts.kinds[t] for t in found.ids if t in texts.derived}
                truth = golden.with_recorded(truth, folder, texts, found, golden_path)
    if truth is not None:
        truth.acknowledged = dict(acknowledged)
    emit(
        {
            "kind": "truth",
            "texts": texts,
            "truth": asdict(truth) if truth is not None else None,
            "truth_error": truth_error,
            "recorded": recorded,
        }
    )
    return texts, truth, truth_error


def _unreadable(folder: Path, error: BaseException) -> str:
    if isinstance(error, (MemoryError, RecursionError)):
        return (
            f"the ground truth could not be computed: it hit a resource limit ({error_text(error)}); "
            "raise TOKCOMPAT_MAX_MEMORY_MB if the checkpoint is genuine"
        )
    return (
        f"the ground truth could not be computed: the tokenizers library fails on {folder / 'tokenizer.json'} "
        f"({error_text(error)}); the checkpoint cannot be judged until the file is fixed"
    )
