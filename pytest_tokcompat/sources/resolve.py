"""The one resolver: whatever a user names, one checkpoint folder with its context.

pytest items, the fixtures, ``load_tokenizer()``, ``tokcompat check``, ``tokcompat
resolve`` and (through its child ``check``) ``tokcompat bisect`` all come through
here, so a name means the same folder, golden ids, probe texts and opt-in
everywhere. The rules:

- a matrix case (a ``Case``, its id, or ``MATRIX::ID``, pytest's node id) resolves as
  the matrix runs it: its snapshot (assembled and verified) when it has one, else its
  hub repo at its revision;
- a hub repo id or a served name resolves to the hub (or its cache); where that
  cannot be had, to the snapshot of the case it names, if that holds the real data;
- a folder is used as it is (assembled if it carries a manifest); the snapshot
  folder of a case, or its assembled cache entry, resolves to that case, so its
  golden ids travel with it;
- ``trust_remote_code`` is the caller's argument; a matrix entry's opt-in applies to
  the matrix's own runs (a ``Case`` target) only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_tokcompat.errors import (
    MatrixError,
    NotReachable,
    NotRunnable,
    RepoNotFound,
    SnapshotError,
    UnknownName,
)
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.matrix.cases import Case
from pytest_tokcompat.matrix.discovery import bundled_matrix
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.request import Request
from pytest_tokcompat.sources.checkpoint import NAMES_THE_CASE, Checkpoint, Identity, MatchedBy, Source
from pytest_tokcompat.sources.hub import cached_snapshot, is_commit_sha, resolve_repo
from pytest_tokcompat.sources.matching import find_case, hub_id_problem, tried_message, unknown_name_message
from pytest_tokcompat.sources.remote_code import refuse_cross_repo_code
from pytest_tokcompat.sources.snapshots import Assembled, assemble, entry_name, is_stand_in

__all__ = ["describe", "describe_json", "identify", "resolve", "resolve_name"]


def identify(target: str | Path | Case, matrix: Path | None = None) -> Identity:
    """What ``target`` names in ``matrix`` (the bundled one by default); no hub access.

    Raises UnknownName (a name that is none of these), MatrixError (the matrix to look
    it up in has problems).
    """
    if isinstance(target, Case):
        return Identity(target.id, MatchedBy.MATRIX_RUN, target, target.repo, None, target.source)
    text = str(target)
    path = Path(text)
    if isinstance(target, Path) or path.is_dir():
        return _identify_folder(text, path, matrix)
    if "::" in text:
        return _identify_node_id(text)
    where = matrix or bundled_matrix()
    found = find_case(text, where)
    if found is None:
        # Not a folder, not a name in the matrix: a hub repo id, bare (``gpt2``) or ``owner/name``.
        if hub_id_problem(text) is None:
            return Identity(text, MatchedBy.REPO_ID, None, text, None, where)
        raise UnknownName(unknown_name_message(text, matrix))
    return Identity(text, MatchedBy(found.by), found.case, found.repo, None, where, found.shadowed)


def _identify_node_id(text: str) -> Identity:
    """``MATRIX::ID``, as pytest prints a case's node id: unambiguous where an id is also a served name."""
    file, _, case_id = text.rpartition("::")
    loaded = load_matrix(file)
    folded = [c for c in loaded.cases if c.id.casefold() == case_id.casefold()]
    try:
        case = loaded.by_id(case_id) if len(folded) != 1 else folded[0]
    except KeyError:
        listed = ", ".join(c.id for c in loaded.cases) or "none"
        raise UnknownName(f"{file} has no case {case_id!r} (its cases: {listed})") from None
    return Identity(text, MatchedBy.NODE_ID, case, case.repo, None, loaded.path)


def _identify_folder(text: str, folder: Path, matrix: Path | None) -> Identity:
    """A folder, recognised as a case's snapshot folder or its assembled cache entry where it is one."""
    resolved = folder.resolve()
    for where in dict.fromkeys(m for m in (matrix, bundled_matrix()) if m is not None):
        try:
            cases = load_matrix(where).cases
        except MatrixError:
            continue  # a folder needs no matrix; a broken one only loses the case context
        for case in cases:
            if case.snapshot is None:
                continue
            if case.snapshot.resolve() == resolved:
                return Identity(text, MatchedBy.SNAPSHOT_FOLDER, case, case.repo, folder, where)
            try:
                entry = entry_name(case.snapshot)
            except (SnapshotError, OSError):
                continue
            if entry == folder.name:
                return Identity(text, MatchedBy.ASSEMBLED_FOLDER, case, case.repo, folder, where)
    return Identity(text, MatchedBy.FOLDER, None, None, folder, None)


def resolve(request: Request | str | Path | Case, identity: Identity | None = None) -> Checkpoint:
    """Turn what a request names (a bare name: a request with the defaults) into a checkpoint: folder,
    case context, source and notes.

    ``request.matrix`` is where names are looked up (the bundled matrix when None; folders are also
    looked up in the bundled one); ``identity``, where :func:`identify` found it already, is resolved as
    it is. A ``Case`` is a matrix run: its own opt-in applies; for every other name only the request's
    ``trust_remote_code`` does. ``allow_unpinned_remote_code`` lets that opt-in run a hub repo's code at
    a branch (the commit is recorded); never in a matrix run. Raises NotReachable (the files cannot be
    had here: not checked), UnknownName or NotRunnable (a name or an opt-in that cannot be used as
    given), SnapshotError, MatrixError.
    """
    request = request if isinstance(request, Request) else Request(request)
    identity = identity if identity is not None else identify(request.name, request.matrix)
    try:
        return _resolve(identity, request)
    except RepoNotFound as error:
        if identity.by is not MatchedBy.REPO_ID:
            raise
        # No folder, no matrix name, and the hub has no such repo: an unknown name, with what was tried.
        raise UnknownName(tried_message(identity.target, identity.matrix, str(error))) from None
    except NotReachable as error:
        if identity.by is MatchedBy.REPO_ID:
            raise NotReachable(
                tried_message(identity.target, identity.matrix, str(error), found_nothing=False)
            ) from None
        if not identity.shadowed:
            raise
        hints = "; ".join(
            f"{identity.target!r} is also the id of case {other.id!r}: pass {other.source}::{other.id} for that one"
            for other in identity.shadowed
        )
        raise NotReachable(f"{error}; {hints}") from None


def _resolve(identity: Identity, request: Request) -> Checkpoint:
    case, revision, texts = identity.case, request.revision, request.texts
    matrix_run = identity.by is MatchedBy.MATRIX_RUN
    trust = case.trust_remote_code if (matrix_run and case is not None) else request.trust_remote_code
    allow_unpinned = request.allow_unpinned_remote_code and trust and not matrix_run
    asked: str | None = None  # the revision asked of the hub
    notes: list[str] = []
    if case is not None and case.trust_remote_code and not trust:
        notes.append(
            f"case {case.id!r} opts in to trust_remote_code for the matrix's own runs; here its code runs "
            "only if you opt in (--trust-remote-code, load_tokenizer(..., trust_remote_code=True))"
        )
    if case is not None and identity.by is MatchedBy.SERVED_NAME:
        notes.append(f"{identity.target!r} is the served name of case {case.id!r}: resolved {case.repo}")
    notes.extend(
        f"{identity.target!r} is also the id of case {other.id!r} ({other.repo}); pass {other.repo} "
        f"(or {other.source}::{other.id}) for that one"
        for other in identity.shadowed
    )
    assembled: Assembled | None = None
    source: Source
    stand_in = False
    if case is None:
        if identity.folder is not None:
            assembled, source = assemble(identity.folder, request.settings.cache), Source.FOLDER
            folder = assembled.folder
        else:
            assert identity.repo is not None
            asked = revision
            folder = resolve_repo(
                identity.repo, revision, trust_remote_code=trust, allow_unpinned_remote_code=allow_unpinned
            )
            source = Source.HUB
    elif identity.by in NAMES_THE_CASE and case.snapshot is not None:
        assembled, source = assemble(case.snapshot, request.settings.cache), Source.SNAPSHOT
        folder, stand_in = assembled.folder, is_stand_in(case.snapshot)
        if identity.folder is not None and identity.folder.resolve() not in (
            folder.resolve(),
            case.snapshot.resolve(),
        ):
            notes.append(
                f"{identity.folder} is an assembled snapshot of case {case.id!r}; judged the verified cache "
                f"entry {folder} instead"
            )
        if stand_in:
            notes.append(
                f"the snapshot of case {case.id!r} holds stand-in tokenizer data"
                + (f" ({case.note})" if case.note else "")
                + ": it checks the loading path, and its ids are not the real tokenizer's"
            )
    else:
        repo = identity.repo or case.repo
        assert repo is not None  # a case without a snapshot has a repo (the matrix validates it)
        try:
            asked = revision or case.revision
            folder = resolve_repo(
                repo, asked, trust_remote_code=trust, allow_unpinned_remote_code=allow_unpinned
            )
            source = Source.HUB
        except NotReachable as error:
            if case.snapshot is None:
                raise
            if is_stand_in(case.snapshot):
                # A stand-in vocabulary checks the loading path, not a benchmark's token counts.
                raise NotReachable(
                    f"{error}; the offline snapshot of case {case.id!r} has stand-in tokenizer data, which "
                    f"would give other ids than the real tokenizer: fill the hub cache (hf download {repo}) and retry "
                    f"(to judge the case's stand-in snapshot itself, pass {case.source}::{case.id})"
                ) from None
            assembled, source = assemble(case.snapshot, request.settings.cache), Source.FALLBACK
            folder = assembled.folder
            note = (
                f"the hub could not be reached ({error}); used the offline snapshot of case {case.id!r} "
                f"from {case.source}"
            )
            notes.append(note + (f" (its note: {case.note})" if case.note else ""))
    if assembled is not None and assembled.rebuilt:
        notes.append(assembled.rebuilt)
    origin = assembled.origin if assembled is not None and assembled.origin != assembled.folder else None
    if trust and source is not Source.HUB:
        # Hub repos are checked when their code is fetched; a local folder's auto_map can point elsewhere too.
        refuse_cross_repo_code(folder, str(origin or folder))
    unpinned: str | None = None
    if source is Source.HUB and allow_unpinned and not is_commit_sha(asked):
        unpinned = asked or "main"
        notes.append(
            f"remote code allowed at {unpinned!r}, not pinned (allow_unpinned_remote_code): the code that ran is "
            f"{identity.repo or (case.repo if case is not None else '')}@{folder.name}; pin it with "
            f"revision={folder.name!r} once reviewed"
        )
    golden = case.golden_path if case is not None else None
    if source is Source.HUB and case is not None and case.snapshot is not None and is_stand_in(case.snapshot):
        golden = None
        notes.append(
            f"the golden ids of case {case.id!r} were recorded from its stand-in snapshot; they are not the "
            f"ground truth of {case.repo}, so they are not used"
        )
    return Checkpoint(
        target=identity.target,
        folder=folder,
        source=source,
        case=case,
        repo=identity.repo if identity.repo is not None else (case.repo if case is not None else None),
        revision=folder.name if source is Source.HUB else None,
        trust_remote_code=trust,
        golden_path=golden,
        texts=(*(case.texts if case is not None else ()), *texts),
        origin=origin,
        stand_in=stand_in,
        matched_by=identity.by,
        matrix=identity.matrix,
        notes=tuple(notes),
        unpinned_branch=unpinned,
        file_digests=(
            tuple(assembled.digests.items())
            if assembled is not None and assembled.digests is not None and assembled.folder == folder
            else None
        ),
    )


def describe_json(name: str, matrix: Path | None) -> tuple[ExitCode, dict[str, Any]]:
    """``tokcompat resolve NAME --json``: what a name stands for, as (exit status, document).

    Nothing is fetched and nothing assembled: the hub cache is only looked at, so a
    script can ask before a judgement where a name will go.
    """
    try:
        identity = identify(name, matrix)
    except (MatrixError, UnknownName) as error:
        return ExitCode.BAD_INPUT, {"name": name, "error": str(error)}
    case = identity.case
    source, folder, fallback = _where(identity)
    revision = case.revision if case is not None else None
    cached = cached_snapshot(identity.repo, revision) if source is Source.HUB and identity.repo else None
    local = folder if folder is not None else cached
    notes = [
        f"{name!r} is also the id of case {other.id!r} ({other.repo}); pass {other.repo} "
        f"(or {other.source}::{other.id}) to use that one"
        for other in identity.shadowed
    ]
    if case is not None and case.snapshot is not None and is_stand_in(case.snapshot):
        notes.append(f"the snapshot of case {case.id!r} holds stand-in tokenizer data")
    return ExitCode.OK, {
        "name": name,
        "error": None,
        "matched_by": str(identity.by),
        "case_id": case.id if case is not None else None,
        "location": case.location if case is not None else None,
        "matrix": str(identity.matrix) if identity.matrix is not None else None,
        "source": str(source),
        "folder": str(local) if local is not None else None,
        "repo": identity.repo if identity.repo is not None else (case.repo if case is not None else None),
        "revision": revision,
        "cached_revision": cached.name if cached is not None else None,
        "fallback": str(fallback) if fallback is not None else None,
        "stand_in": bool(case is not None and case.snapshot is not None and is_stand_in(case.snapshot)),
        "trust_remote_code": bool(case is not None and case.trust_remote_code),
        "served_names": list(case.served_names) if case is not None else [],
        "notes": notes,
    }


def _where(identity: Identity) -> tuple[Source, Path | None, Path | None]:
    """(the source it resolves to, its local folder where known without the hub, the offline fallback)."""
    case = identity.case
    if case is None:
        if identity.folder is not None:
            return Source.FOLDER, identity.folder.absolute(), None
        return Source.HUB, None, None
    if identity.by in NAMES_THE_CASE and case.snapshot is not None:
        return Source.SNAPSHOT, case.snapshot, None
    faithful = case.snapshot is not None and not is_stand_in(case.snapshot)
    return Source.HUB, None, case.snapshot if faithful else None


def describe(name: str, matrix: Path | None) -> tuple[ExitCode, str]:
    """``tokcompat resolve NAME``: what a name stands for, as (exit status, text); no hub access."""
    code, document = describe_json(name, matrix)
    if code:
        return code, f"tokcompat resolve: {document['error']}"
    identity = identify(name, matrix)
    case = identity.case
    cached = document["cached_revision"]
    in_cache = f"cached at {cached}" if cached else "not in the hub cache"
    if case is None:
        if identity.folder is not None:
            return (
                ExitCode.OK,
                f"{name}: a folder that no case of the matrix names (no golden ids, no opt-in)",
            )
        return ExitCode.OK, (
            f"{name}: a hub repo id with no matrix entry (no revision pin, no remote code opt-in; "
            f"no folder of that name, no case id or served name in {identity.matrix}); {in_cache}"
        )
    opt_in = "yes (for the matrix's own runs; elsewhere pass --trust-remote-code)"
    lines = [
        f"{name} -> {case.repo or '(no hub repo)'}",
        f"  matched by {identity.by} of case {case.id!r} ({case.location})",
        f"  revision: {case.revision or '(default branch)'}",
        f"  trust_remote_code: {opt_in if case.trust_remote_code else 'no'}",
        f"  offline snapshot: {case.snapshot if case.snapshot else 'none'}",
        f"  resolves to: {_resolves_to(identity)}",
    ]
    if document["source"] == str(Source.HUB):
        lines.append(f"  hub cache: {in_cache}")
    if case.served_names:
        lines.append(f"  served names: {', '.join(case.served_names)}")
    lines.extend(f"  note: {note}" for note in document["notes"] if "is also the id of case" in note)
    return ExitCode.OK, "\n".join(lines)


def _resolves_to(identity: Identity) -> str:
    case = identity.case
    assert case is not None
    if identity.by in NAMES_THE_CASE and case.snapshot is not None:
        return "the case's snapshot, as the matrix runs it"
    if case.snapshot is not None and not is_stand_in(case.snapshot):
        return "the hub (or its cache); the case's snapshot where the hub cannot be reached"
    return "the hub (or its cache)"


def resolve_name(
    name: str, revision: str | None = None, *, trust_remote_code: bool = False, matrix: Path | None = None
) -> Path:
    """The folder a name resolves to; see :func:`resolve`, which this wraps."""
    try:
        request = Request(name, matrix, revision, trust_remote_code)
        return resolve(request).folder
    except MatrixError as error:
        raise NotRunnable(f"cannot read the matrix to look up {name!r}: {error}") from None
