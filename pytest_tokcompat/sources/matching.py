"""Names a user gives, matched to matrix entries: hub repo ids, served names and case ids.

Kept apart from the hub client: matching reads the matrix alone and never reaches the hub.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_tokcompat.errors import UnknownName
from pytest_tokcompat.matrix.cases import Case
from pytest_tokcompat.matrix.discovery import bundled_matrix
from pytest_tokcompat.matrix.loader import load_matrix


@dataclass(frozen=True)
class NameMatch:
    """The matrix entry a name stands for, how it matched, and entries it could be mistaken for."""

    case: Case
    by: str
    """'repo', 'served name' or 'id'."""
    matrix: Path
    shadowed: tuple[Case, ...] = ()

    @property
    def repo(self) -> str | None:
        return self.case.repo


def _named(cases: list[Case], name: str, names: Callable[[Case], Iterable[str]], exact: bool) -> list[Case]:
    if exact:
        return [c for c in cases if name in names(c)]
    folded = name.casefold()
    return [c for c in cases if any(folded == other.casefold() for other in names(c))]


def find_case(name: str, matrix: Path | None = None) -> NameMatch | None:
    """The entry for ``name``: by repo id first, then by served name, then by case id.

    A served name wins over a case id because it is what a serving engine reports
    (``--served-model-name glm-5`` serves lukealonso/GLM-5-NVFP4, not zai-org/GLM-5).
    Served names and ids are typed by hand, so where none is spelt exactly as given,
    case is ignored (``DeepSeek-V3.2-Exp`` finds the case ``deepseek-v3.2-exp``).
    """
    path = matrix or bundled_matrix()
    cases = load_matrix(path).cases
    by_repo = [c for c in cases if c.repo is not None and c.repo.lower() == name.lower()]
    if by_repo:
        return NameMatch(by_repo[0], "repo", path)
    for exact in (True, False):
        served = _named(cases, name, lambda c: c.served_names, exact)
        by_id = _named(cases, name, lambda c: (c.id,), exact)
        if len(served) > 1:
            listed = ", ".join(f"{c.id} ({c.repo or c.snapshot})" for c in served)
            raise UnknownName(
                f"{name!r} is a served name of several matrix entries ({listed}) in {path}; pass the repo id "
                "instead"
            )
        if served:
            return NameMatch(served[0], "served name", path, tuple(c for c in by_id if c is not served[0]))
        if len(by_id) > 1:
            listed = ", ".join(c.id for c in by_id)
            raise UnknownName(
                f"{name!r} matches several case ids of {path} when case is ignored ({listed}); spell it as "
                "the matrix does"
            )
        if by_id:
            return NameMatch(by_id[0], "id", path)
    return None


def hub_id_problem(name: str) -> str | None:
    """Why ``name`` cannot be a hub repo id (``owner/name`` or a bare ``name`` such as ``gpt2``); None if it can."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id  # type: ignore[attr-defined]

    try:
        validate_repo_id(name)
    except HFValidationError as error:
        return str(error).strip().splitlines()[0] if str(error).strip() else "not a valid repo id"
    return None


def tried_message(name: str, matrix: Path | None, hub_outcome: str, *, found_nothing: bool = True) -> str:
    """Every way ``name`` was looked up, in order, and what each found; then how to name a checkpoint.

    ``found_nothing`` False: the hub could not say (offline, not cached), so the name may be fine.
    """
    where = matrix or bundled_matrix()
    short = name.rstrip("/").rsplit("/", 1)[-1]
    short = short if short and hub_id_problem(short) is None else "NAME"
    lead = "names no checkpoint" if found_nothing else "could not be had"
    return (
        f"{name!r} {lead} here; tried, in order: a folder (no folder {Path(name).absolute()}); "
        f"a case id, served name or repo in {where} (none, case-insensitive); a hub repo id ({hub_outcome}). "
        f"Pass a checkpoint folder or the tokenizer's hub repo id (e.g. `tokcompat check OWNER/{short}`, "
        f"load_tokenizer('OWNER/{short}')), or add `served_names: [{name}]` to the matrix entry of the "
        "model it serves"
    )


def unknown_name_message(name: str, matrix: Path | None) -> str:
    """The error for a name that is no folder, no matrix name and cannot be a hub repo id."""
    return tried_message(name, matrix, f"not one: {hub_id_problem(name) or 'unknown'}")
