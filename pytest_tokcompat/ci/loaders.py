"""How a client loader's result reads in the grid and the terminal summary (from report records only).

A loader's row says whether the client's own shim gives right ids; it never changes the
case's verdict. What the client must act on (wrong ids, a loader that cannot be called,
a shim made obsolete) comes as an alarm of the case's record (``loader-*``), which fails
the run like any alarm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_tokcompat.matrix.clients import obsolete_action
from pytest_tokcompat.model import FAILED_ATTEMPTS, AlarmKind, AttemptStatus

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
    """What the row adds whatever the ids: a native registration the shim replaces; where it failed, the
    offline setting it was called with and what the tool set to serve the repo id."""
    replaced = [str(text) for text in result.get("replaces_native") or []]
    text = f"; replaces transformers' native class: {replaced[0]}" if replaced else ""
    if result.get("status") == AttemptStatus.OK:
        return text
    environment = result.get("environment") or {}
    if isinstance(environment, Mapping) and environment:
        text += "; called with " + ", ".join(f"{k}={v}" for k, v in environment.items())
    set_by_tool = result.get("set_by_tool") or {}
    if isinstance(set_by_tool, Mapping) and set_by_tool:
        called = f" {result['loaded_as']!r}" if result.get("loaded_as") else ""
        settings = ", ".join(f"{k}={v}" for k, v in set_by_tool.items())
        text += f"; called as{called} by repo id with {settings} set by tokcompat"
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


def _native_status(record: Mapping[str, Any]) -> str | None:
    found = [
        a for a in record.get("attempts") or [] if isinstance(a, Mapping) and a.get("remedy") == "native"
    ]
    return str(found[0].get("status")) if found else None


def _acknowledged(native_since: Any, release: str) -> bool:
    try:
        return isinstance(native_since, str) and Version(release) >= Version(native_since)
    except InvalidVersion:
        return False


class LoaderHistory:
    """A loader's rows read release by release, oldest first: where plain loading failed a case and, on a
    later release, gives the same right ids as the loader, the loader's shim is obsolete from there (what
    one release's run cannot see of a shim that steps aside by itself)."""

    def __init__(self) -> None:
        self.needed: dict[tuple[str, str], str] = {}
        """(case, loader) -> the first release where plain AutoTokenizer did not load the case right."""

    def obsolete(
        self, record: Mapping[str, Any], result: Mapping[str, Any], release: str
    ) -> dict[str, Any] | None:
        """The loader-obsolete alarm of ``result`` (a loader's result on ``record``) under ``release``."""
        case, name = str(record.get("id")), str(result.get("name"))
        native = _native_status(record)
        if native in FAILED_ATTEMPTS:
            self.needed.setdefault((case, name), release)
            return None
        needed = self.needed.get((case, name))
        if (
            needed is None
            or native != AttemptStatus.OK
            or result.get("status") != AttemptStatus.OK
            or _acknowledged(result.get("native_since"), release)
        ):
            return None
        attr = f":{result['attr']}" if result.get("attr") else ""
        return {
            "kind": AlarmKind.LOADER_OBSOLETE.value,
            "subject": f"loader:{name}",
            "transformers_version": release,
            "message": (
                f"plain AutoTokenizer.from_pretrained loads {case} with the same right ids as your loader {name} "
                f"({result.get('call')}{attr}) under transformers {release}, which it did not under {needed}: "
                f"your shim is obsolete from {release}"
            ),
            "action": obsolete_action(name, release),
            "case": case,
        }
