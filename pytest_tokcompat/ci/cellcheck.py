"""Whether a cached cell file may stand for its cell: the records inside must be that cell's.

A cell file sits at the path of its key, but nothing about the path proves what it
holds: a file holding another case's records (written by a stale run, a damaged copy,
or code that ran in an environment) would otherwise be reused as the cell, the victim's
row would vanish and the grid would say complete. So a file is accepted only when the
key it names, the fields that made the key (case, release versions, matrix, judge) and
the records all fit the cell being planned; anything else is discarded and judged again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_tokcompat.contract import ALIAS, CASE, SCHEMA_VERSION, schema_problems


def records_problem(
    records: Any, cell: str, case_ids: Iterable[str], alias_ids: Iterable[str], extras: str
) -> str | None:
    """Why ``records`` cannot be the cell ``cell`` (a case id, or ``extras`` for the alias cell); None if
    they can: a case cell holds exactly that case's record, the extras cell the aliases (every one the
    matrix and the built-in registry name, no case), and every record fits the report schema."""
    if not isinstance(records, list) or not records or not all(isinstance(r, dict) for r in records):
        return "it holds no records"
    ids = [str(record.get("id")) for record in records]
    if cell != extras:
        if len(records) != 1 or records[0].get("kind") != CASE or ids[0] != cell:
            return f"it holds the records of {', '.join(sorted(set(ids)))}, not of {cell}"
    else:
        cases = set(case_ids)
        wrong = sorted({i for r, i in zip(records, ids, strict=True) if r.get("kind") != ALIAS or i in cases})
        if wrong:
            return f"it holds {', '.join(wrong)}, which are not aliases"
        if len(set(ids)) != len(ids):
            return "it holds an alias twice"
        missing = sorted(set(alias_ids) - set(ids))
        if missing:
            return f"it lacks {', '.join(missing)}"
    document = {
        "schema_version": SCHEMA_VERSION,
        "versions": {},
        "transformers_version": "0",
        "matrix": "",
        "exit_status": 0,
        "complete": True,
        "cases": records,
        "alarms": [],
    }
    problems = schema_problems(document)
    return f"a record does not fit the report schema ({problems[0]})" if problems else None
