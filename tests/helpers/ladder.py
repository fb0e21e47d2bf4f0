"""The ladder on a folder, for tests that judge files directly (no name to resolve, no matrix entry).

The product's ladder takes one :class:`~pytest_tokcompat.judge.subject.Subject`; this builds it from
the few words a test cares about, so a test says what it varies and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from pytest_tokcompat.judge.judgement import Judgement
from pytest_tokcompat.judge.ladder import judge
from pytest_tokcompat.judge.subject import Subject
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.request import Request
from pytest_tokcompat.settings import JudgeSettings, Limits, judge_settings_from_environment
from pytest_tokcompat.sources.names import LoadTarget


def judge_folder(
    folder: Path,
    *,
    trust_remote_code: bool = False,
    extra_texts: Sequence[str] = (),
    golden_path: Path | None = None,
    registry: dict[str, Alias] | None = None,
    record_as: str | None = None,
    keep_tokenizer: bool = False,
    limits: Limits | None = None,
    loaders: Sequence[ClientLoader] = (),
    acknowledged: Mapping[str, str] | None = None,
    target: LoadTarget | None = None,
    settings: JudgeSettings | None = None,
) -> Judgement:
    """``judge()`` on ``folder``'s files with a request built from these fields (``limits`` replace the
    settings' own; no settings: the variables', then the defaults)."""
    settings = settings if settings is not None else judge_settings_from_environment()
    if limits is not None:
        settings = replace(settings, limits=limits)
    request = Request(
        folder,
        trust_remote_code=trust_remote_code,
        texts=tuple(extra_texts),
        record=record_as is not None,
        keep_tokenizer=keep_tokenizer,
        registry=registry,
        loaders=tuple(loaders),
        settings=settings,
    )
    subject = Subject(
        folder,
        request,
        trust_remote_code,
        tuple(extra_texts),
        golden_path,
        target,
        dict(acknowledged or {}),
        record_as,
    )
    return judge(subject)
