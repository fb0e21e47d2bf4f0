"""``load_tokenizer()``: the verdict ladder for a benchmark client, returning a working tokenizer.

A client names a model as it knows it (a folder, a hub repo, the name a server was
started with, or a matrix case id) and gets the tokenizer loaded with the least
remedy the installed transformers needs, checked against the same ground truth the
matrix uses; nothing it registers outlives the call. It resolves and evaluates
through the same resolver and evaluator as pytest and the CLI, so its record is
theirs.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_tokcompat.errors import TokenizerBroken
from pytest_tokcompat.judge.describe import describe_attempt_output, describe_attempts
from pytest_tokcompat.judge.evaluate import evaluate
from pytest_tokcompat.judge.evaluation import Evaluation
from pytest_tokcompat.judge.judgement import BROKEN, REMEDIES, UNCHECKED, Judgement
from pytest_tokcompat.matrix.aliases import Alias, alias_from_mapping
from pytest_tokcompat.matrix.discovery import bundled_matrix
from pytest_tokcompat.matrix.settings import library_settings
from pytest_tokcompat.request import Request
from pytest_tokcompat.sources.checkpoint import Checkpoint, Source

HUB, FOLDER, SNAPSHOT, FALLBACK = Source.HUB, Source.FOLDER, Source.SNAPSHOT, Source.FALLBACK


class UnpinnedRemoteCode(UserWarning):
    """Remote code ran from a branch, as the caller allowed (``allow_unpinned_remote_code``), not a pinned commit."""


class TokenizerFindings(UserWarning):
    """The tokenizer has right ids on ordinary text, but parts of its contract drift (``LoadedTokenizer.findings``)."""


@dataclass(frozen=True)
class Finding:
    """One part of the contract that drifts on the tokenizer handed back, and what it means for a client."""

    dimension: str
    consequence: str
    detail: str
    """The first difference: the call, the text, what was expected and what came."""

    def __str__(self) -> str:
        return f"{self.dimension}: {self.consequence} ({self.detail})"


@dataclass(frozen=True)
class LoadedTokenizer:
    """A tokenizer and how it was had: ``tok, verdict = load_tokenizer(...)`` unpacks the first two."""

    tokenizer: Any
    verdict: str
    """native, auto_map, alias, or not-checked (loads, but there is no ground truth for its ids)."""
    judgement: Judgement
    folder: Path
    source: Source
    """hub (the hub or its cache), folder (a local path), snapshot (a matrix case's snapshot, named by its
    id), or bundled-fallback (the hub was unreachable; the case's snapshot holds the real data)."""
    repo: str | None = None
    case_id: str | None = None
    notes: tuple[str, ...] = ()
    checkpoint: Checkpoint | None = None
    record: dict[str, Any] = field(default_factory=dict, compare=False)
    """The evaluation's record, as the pytest report and ``tokcompat check --json`` give it."""
    findings: tuple[Finding, ...] = ()
    """What still drifts on this tokenizer once its repairs are applied (empty: the whole contract holds)."""
    repairs: tuple[str, ...] = ()
    """The repairs applied on top of the verdict's remedy (``declared_special_tokens``)."""

    def __iter__(self) -> Iterator[Any]:
        yield self.tokenizer
        yield self.verdict

    @property
    def stand_in(self) -> bool:
        """True where the tokenizer is a case's stand-in snapshot (named by its case id), not the real one."""
        return self.checkpoint is not None and self.checkpoint.stand_in

    @property
    def revision(self) -> str | None:
        """The hub commit the files (and any remote code) came from; None for local files."""
        return self.checkpoint.revision if self.checkpoint is not None else None

    @property
    def from_cache(self) -> bool:
        """True where the verdict came from the verdict cache on disk (judged by an earlier process)."""
        return (self.record.get("verdict_cache") or {}).get("state") == "hit"

    @property
    def remote_files_ran(self) -> list[dict[str, Any]]:
        """The remote-code files that ran: {repo, revision, file, folder} (repo None for a local folder)."""
        return list(self.record.get("remote_files_ran", []))


def load_tokenizer(
    name_or_path: str | Path,
    *,
    revision: str | None = None,
    trust_remote_code: bool = False,
    matrix: Path | None = None,
    texts: Sequence[str] = (),
    aliases: Iterable[Alias | Mapping[str, Any]] = (),
    cache: bool = True,
    allow_unpinned_remote_code: bool = False,
    strict: bool = False,
    require: Iterable[str] = (),
) -> LoadedTokenizer:
    """Load ``name_or_path`` with the verdict ladder: the best tokenizer there is.

    That is the least remedy whose ids are right on ordinary text, loaded by the name you give
    (a hub repo id as a hub client loads it, a folder by its path), with the repairs that clear a
    finding applied (``repairs``), and what still drifts attached as ``findings`` with one
    ``TokenizerFindings`` warning. It raises TokenizerBroken only where no remedy gives right
    ids, or where the caller asks for a clean contract: ``strict=True`` (no finding at all) or
    ``require=["default_call", "special_tokens", ...]`` (those dimensions clean).

    A matrix entry for the name (by repo, served name or case id; the bundled matrix
    when ``matrix`` is None) supplies its revision, probe texts and golden ids; a case
    id (or ``MATRIX::ID``) loads the case as the matrix runs it. Remote code runs only
    when the caller passes ``trust_remote_code=True`` (an entry's opt-in is for the
    matrix's own runs), and from the hub only at a commit sha, unless the caller also passes
    ``allow_unpinned_remote_code=True`` (a client that already runs ``main``): then the branch's
    commit is what runs, recorded as ``revision`` (and ``record['unpinned_remote_code']``), with
    an ``UnpinnedRemoteCode`` warning naming the repo and commit. ``texts`` are extra
    probe texts. ``aliases`` (Alias objects or mappings with its fields) are applied exactly
    as declared (a config-only alias stays config-only), over the built-in aliases and those of
    the matrix the name was found in, replacing one of the same model_type. ``cache`` (on unless
    ``$TOKCOMPAT_VERDICT_CACHE=off``) keeps the verdict on disk, keyed by the checkpoint's file
    hashes, the installed releases, the judge and these arguments, so later processes skip
    judging and only load the remedy it names (``from_cache``). Every error is a TokcompatError: NotReachable (hub unreachable, not
    cached, no faithful offline snapshot), NotRunnable/UnknownName (a refused or
    unknown name), SnapshotError (a snapshot that cannot be assembled), MatrixError,
    CheckpointError (the checkpoint's files cannot be read), AliasError (a declared alias that
    cannot be used as given) or TokenizerBroken.
    """
    declared = [
        alias if isinstance(alias, Alias) else alias_from_mapping(alias, "load_tokenizer(aliases=...)")
        for alias in aliases
    ]
    request = Request(
        name_or_path,
        matrix=matrix or bundled_matrix(),
        revision=revision,
        trust_remote_code=trust_remote_code,
        allow_unpinned_remote_code=allow_unpinned_remote_code,
        texts=tuple(texts),
        keep_tokenizer=True,
        aliases=tuple(declared),
        verdict_cache=cache,
        settings=library_settings(),  # once per call: the variables, then [tool.tokcompat]
    )
    evaluation = evaluate(request)
    loaded = loaded_from(evaluation, name_or_path)
    _require_clean(loaded, name_or_path, strict, tuple(require))
    if loaded.findings:
        warnings.warn(
            f"{name_or_path}: {loaded.verdict} with right ids under transformers "
            f"{loaded.judgement.transformers_version}, but: " + "; ".join(str(f) for f in loaded.findings),
            TokenizerFindings,
            stacklevel=2,
        )
    if loaded.checkpoint is not None and loaded.checkpoint.unpinned_branch is not None:
        warnings.warn(
            f"{loaded.repo}: remote code ran from branch {loaded.checkpoint.unpinned_branch!r}, not a pinned "
            f"commit; the commit that ran is {loaded.revision} (pin revision={loaded.revision!r} once reviewed)",
            UnpinnedRemoteCode,
            stacklevel=2,
        )
    return loaded


def _require_clean(
    loaded: LoadedTokenizer, name_or_path: str | Path, strict: bool, require: tuple[str, ...]
) -> None:
    """TokenizerBroken where the caller asked for a clean contract and a finding stands in the way."""
    from pytest_tokcompat.model import ACKNOWLEDGEABLE

    known = {str(d) for d in ACKNOWLEDGEABLE}
    unknown = [name for name in require if name not in known]
    if unknown:
        raise ValueError(
            f"require={list(require)!r}: unknown dimension(s) {unknown}; use {', '.join(sorted(known))}"
        )
    blocking = [f for f in loaded.findings if strict or f.dimension in require]
    if blocking:
        asked = "strict=True" if strict else f"require={list(require)!r}"
        raise TokenizerBroken(
            f"{name_or_path}: {loaded.verdict} gives right ids under transformers "
            f"{loaded.judgement.transformers_version}, but you asked for {asked} and "
            + "; ".join(str(f) for f in blocking)
            + f"\n{describe_attempts(loaded.judgement)}",
            loaded.judgement,
        )


def _findings_of(judgement: Judgement) -> tuple[Finding, ...]:
    from pytest_tokcompat.judge.parity import finding_difference
    from pytest_tokcompat.model import CONSEQUENCES

    attempt = judgement.delivered
    dimensions = attempt.parity.dimensions if attempt is not None and attempt.parity is not None else {}
    return tuple(
        Finding(name, CONSEQUENCES.get(name, name), finding_difference(name, dimensions.get(name, {})))
        for name in judgement.remaining_findings
    )


def loaded_from(evaluation: Evaluation, name_or_path: str | Path) -> LoadedTokenizer:
    """The evaluation as ``load_tokenizer()`` hands it out, or the error it ended with."""
    if evaluation.error is not None:
        raise evaluation.error
    checkpoint, judgement = evaluation.checkpoint, evaluation.judgement
    assert checkpoint is not None and judgement is not None  # evaluate() keeps an error whenever it has none
    if judgement.verdict in REMEDIES and judgement.tokenizer is None:
        raise TokenizerBroken(
            f"{name_or_path}: judged {judgement.verdict} under transformers {judgement.transformers_version}, "
            f"but not in this process: {judgement.parity.reason}\n{describe_attempts(judgement)}\n"
            "  what to do: something in this process changes how transformers loads it (a client's "
            "monkeypatch, an import that patches transformers); load it before that import, or fix the patch",
            judgement,
        )
    if judgement.verdict == UNCHECKED and judgement.tokenizer is None:  # never "no remedy loads"
        raise TokenizerBroken(
            f"{name_or_path}: not checked under transformers {judgement.transformers_version} (folder "
            f"{checkpoint.folder}): {judgement.parity.reason}\n{describe_attempts(judgement)}",
            judgement,
        )
    if judgement.verdict == BROKEN or judgement.tokenizer is None:
        advice = (
            "if its code is trusted, pass trust_remote_code=True with a commit sha revision; "
            "if its model_type is new, declare an alias (load_tokenizer(..., aliases=[...]) or the matrix's "
            "aliases:); or upgrade transformers"
            if judgement.static.has_config
            else "it has no config.json (tokenizer-only), so no alias can apply: put the model's config.json "
            "beside its tokenizer files, or use a transformers release where plain loading keeps parity"
        )
        said = describe_attempt_output(judgement)
        raise TokenizerBroken(
            f"no remedy loads {name_or_path} with right ids under transformers "
            f"{judgement.transformers_version} (folder {checkpoint.folder}):\n{describe_attempts(judgement)}\n"
            + (f"{said}\n" if said else "")
            + f"  what to do: {advice}",
            judgement,
        )
    return LoadedTokenizer(
        tokenizer=judgement.tokenizer,
        verdict=judgement.verdict,
        judgement=judgement,
        folder=checkpoint.folder,
        source=checkpoint.source,
        repo=checkpoint.repo,
        case_id=checkpoint.case.id if checkpoint.case is not None else None,
        notes=(*checkpoint.notes, *evaluation.notes),
        checkpoint=checkpoint,
        record=evaluation.to_json(),
        findings=_findings_of(judgement),
        repairs=tuple(judgement.repairs),
    )
