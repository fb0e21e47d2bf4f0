"""``load_tokenizer()``: the verdict ladder for a benchmark client, returning a working tokenizer.

A client names a model as it knows it (a folder, a hub repo, or the name a server
was started with) and gets the tokenizer loaded with the least remedy the
installed transformers needs, checked against the same ground truth the matrix
uses; nothing it registers outlives the call.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_tokcompat.errors import NotReachable, TokenizerBroken
from pytest_tokcompat.judge.evaluate import describe_attempts
from pytest_tokcompat.judge.ladder import BROKEN, Judgement, judge
from pytest_tokcompat.matrix.aliases import Alias, alias_from_mapping, effective_registry
from pytest_tokcompat.matrix.loader import Case
from pytest_tokcompat.sources.hub import NameMatch, UnknownName, find_case, resolve_repo, unknown_name_message
from pytest_tokcompat.sources.snapshots import materialize, read_sources

HUB, FOLDER, SNAPSHOT = "hub", "folder", "bundled-snapshot"


@dataclass(frozen=True)
class LoadedTokenizer:
    """A tokenizer and how it was had: ``tok, verdict = load_tokenizer(...)`` unpacks the first two."""

    tokenizer: Any
    verdict: str
    """native, auto_map, alias, or not-checked (loads, but there is no ground truth for its ids)."""
    judgement: Judgement
    folder: Path
    source: str
    """hub (the hub or its cache), folder (a local path), or bundled-snapshot (the hub was unreachable)."""
    repo: str | None = None
    case_id: str | None = None
    notes: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[Any]:
        yield self.tokenizer
        yield self.verdict

    @property
    def remote_files_ran(self) -> list[str]:
        return self.judgement.remote_files_ran


def _snapshot_fallback(case: Case, reason: NotReachable) -> tuple[Path, str]:
    sources = read_sources(case.snapshot) if case.snapshot else None
    if sources and sources.get("stand_in"):
        # A stand-in vocabulary checks the loading path, not a benchmark's token counts: never hand it out.
        raise NotReachable(
            f"{reason}; the offline snapshot of case {case.id!r} has stand-in tokenizer data, which would give "
            "other ids than the real tokenizer: fill the hub cache (huggingface-cli download) and retry"
        )
    note = (
        f"the hub could not be reached ({reason}); used the offline snapshot of case {case.id!r} "
        f"from {case.source}"
    )
    if case.note:
        note += f" (its note: {case.note})"
    return materialize(case.snapshot) if case.snapshot else Path(), note


def load_tokenizer(
    name_or_path: str | Path,
    *,
    revision: str | None = None,
    trust_remote_code: bool = False,
    matrix: Path | None = None,
    aliases: Iterable[Alias | Mapping[str, Any]] = (),
) -> LoadedTokenizer:
    """Load ``name_or_path`` with the verdict ladder; TokenizerBroken where nothing loads it right.

    A matrix entry for the name (by repo, served name or case id; the bundled matrix
    when ``matrix`` is None) supplies its revision, probe texts and golden ids. Remote
    code runs only when the caller passes ``trust_remote_code=True`` (an entry's opt-in
    is for the matrix's own runs), and from the hub only at a commit sha. ``aliases`` (Alias
    objects or mappings with its fields) are applied exactly as declared, replacing a built-in
    alias of their model_type; ValueError names what is wrong with one.
    Raises NotReachable (hub unreachable, not cached, no offline snapshot),
    NotRunnable/UnknownName (a refused or unknown name) or TokenizerBroken.
    """
    registry = effective_registry(
        alias if isinstance(alias, Alias) else alias_from_mapping(alias, "load_tokenizer(aliases=...)")
        for alias in aliases
    )
    local = Path(name_or_path)
    found: NameMatch | None = None
    notes: list[str] = []
    if isinstance(name_or_path, Path) or local.is_dir():
        folder, source, repo = materialize(local), FOLDER, None
    else:
        name = str(name_or_path)
        found = find_case(name, matrix)
        if found is None and "/" not in name:
            raise UnknownName(unknown_name_message(name, matrix))
        repo = found.repo if found is not None else name
        if repo is None:
            assert found is not None and found.case.snapshot is not None
            folder, source = materialize(found.case.snapshot), SNAPSHOT
        else:
            if found is not None:
                # The entry pins the revision; whether its code runs is the caller's decision alone
                # (the matrix's opt-in applies to the matrix's own test runs).
                revision = revision or found.case.revision
                if found.case.trust_remote_code and not trust_remote_code:
                    notes.append(
                        f"case {found.case.id!r} opts in to trust_remote_code for the matrix's runs; "
                        "its code runs here only if you pass trust_remote_code=True"
                    )
                if found.by != "repo":
                    notes.append(f"{name!r} is the {found.by} of case {found.case.id!r}: loaded {repo}")
                notes.extend(
                    f"{name!r} is also the id of case {o.id!r} ({o.repo}); pass {o.repo} to load that one"
                    for o in found.shadowed
                )
            try:
                folder, source = resolve_repo(repo, revision, trust_remote_code=trust_remote_code), HUB
            except NotReachable as error:
                if found is None or found.case.snapshot is None:
                    raise
                folder, note = _snapshot_fallback(found.case, error)
                source = SNAPSHOT
                notes.append(note)
    case = found.case if found is not None else None
    judgement = judge(
        folder,
        trust_remote_code=trust_remote_code,
        extra_texts=case.texts if case else (),
        golden_path=case.golden_path if case else None,
        registry=registry,
        keep_tokenizer=True,
    )
    if judgement.verdict == BROKEN or judgement.tokenizer is None:
        raise TokenizerBroken(
            f"no remedy loads {name_or_path} with right ids under transformers "
            f"{judgement.transformers_version} (folder {folder}):\n{describe_attempts(judgement)}\n"
            "  what to do: if its code is trusted, pass trust_remote_code=True with a commit sha revision; "
            "if its model_type is new, add an alias to pytest_tokcompat.matrix.aliases; or upgrade transformers",
            judgement,
        )
    return LoadedTokenizer(
        tokenizer=judgement.tokenizer,
        verdict=judgement.verdict,
        judgement=judgement,
        folder=folder,
        source=source,
        repo=repo,
        case_id=case.id if case else None,
        notes=tuple(notes),
    )
