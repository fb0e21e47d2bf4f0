"""How a client loader's result reads in the grid and the terminal summary (from report records only).

A loader's row says whether the client's own shim gives right ids; it never changes the
case's verdict. What the client must act on (wrong ids, a loader that cannot be called,
a shim made obsolete) comes as an alarm of the case's record (``loader-*``), which fails
the run like any alarm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_tokcompat.model import AttemptStatus

LOADER_ROW = "{case} / loader:{name}"
SHOWN_IDS = 8


def _ids(ids: Any) -> str:
    if not isinstance(ids, list):
        return "?"
    shown = ", ".join(str(i) for i in ids[:SHOWN_IDS])
    return f"[{shown}{', …' if len(ids) > SHOWN_IDS else ''}]"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def loader_text(result: Mapping[str, Any], limit: int = 160) -> str:
    """One line: ``parity (23 texts)``, ``drift — 21/22 texts; first: 'Hello world' [42, …] vs [19923, 2058]``,
    or the status and its reason."""
    return _main_text(result, limit) + _findings(result)


def _findings(result: Mapping[str, Any]) -> str:
    """What the row adds whatever the ids: a native registration the shim replaces, the offline setting."""
    replaced = [str(text) for text in result.get("replaces_native") or []]
    text = f"; replaces transformers' native class: {replaced[0]}" if replaced else ""
    environment = result.get("environment") or {}
    if isinstance(environment, Mapping) and environment and result.get("status") != AttemptStatus.OK:
        text += "; called with " + ", ".join(f"{k}={v}" for k, v in environment.items())
    return text


def _main_text(result: Mapping[str, Any], limit: int) -> str:
    status = str(result.get("status"))
    parity = result.get("parity") or {}
    if status == AttemptStatus.OK:
        return f"parity ({parity.get('checked', '?')} texts)"
    if status == AttemptStatus.DRIFT:
        differing, compared = result.get("differing"), result.get("compared")
        dimension = parity.get("dimension")
        if dimension not in (None, "ids"):  # the ids match: another part of the contract drifts
            why = _short(str(result.get("detail") or parity.get("reason") or ""), 80)
            return _short(f"drift in {dimension} (ids match){'; ' + why if why else ''}", limit * 2)
        count = f" — {differing}/{compared} texts" if differing is not None and compared else ""
        text = _short(repr(parity.get("text", "")), 40)
        if parity.get("status") == "decode-mismatch":
            first = f"first: decoding {_ids(parity.get('expected'))} gives {_short(repr(parity.get('actual_text')), 40)}"
        else:
            first = f"first: {text} {_ids(parity.get('actual'))} vs {_ids(parity.get('expected'))}"
        return _short(f"drift{count}; {first}", limit * 2)
    detail = str(result.get("detail") or "").strip().splitlines()
    return _short(f"{status}: {detail[0]}" if detail else status, limit)


def loader_rows(record: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The row names and results of a case record's loaders."""
    found = record.get("loaders") or []
    return [
        (LOADER_ROW.format(case=record["id"], name=result.get("name", "?")), result)
        for result in found
        if isinstance(result, Mapping)
    ]
