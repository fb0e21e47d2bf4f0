"""The upstream watch across releases: each change of transformers' tokenizer-relevant registries
between two adjacent grid columns is an event; one on an aliased or watched model_type is an alarm.

Every report records (``registry``) what its release says about the model_types the
matrix cares about, and the full hard-coded override lists. Comparing adjacent
releases shows the night upstream registers a model_type, gives it a tokenizer
mapping or puts it on (or takes it off) a list whose hub tokenizer class it
overrides -- with ``main`` in the release set, within a day of the merge, and with
no checkpoint of that model_type needed. Reads reports only (the CI layer).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from pytest_tokcompat.matrix.versions import matching_ranges, parse_range
from pytest_tokcompat.model import AlarmKind, OverrideKind, TrackedAs

LISTED = 12
"""At most this many entries are named in one list-level event; the rest are counted."""


@dataclass
class RegistryEvent:
    release: str
    """The release where the change shows (the later of the two adjacent columns)."""
    previous: str
    model_type: str | None
    """The model_type it is about; None for a change of a list that concerns no tracked model_type."""
    change: str
    """What changed, e.g. "registered natively (DeepseekV32Config)"."""
    tracked_as: list[str] = field(default_factory=list)
    alarm: bool = False
    acknowledged: str | None = None
    """Why a change on an aliased model_type raises no alarm (the alias records the release)."""
    link: str | None = None

    @property
    def text(self) -> str:
        subject = f"{self.model_type} " if self.model_type else ""
        return f"{self.release}: {subject}{self.change}"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "text": self.text}


Column = tuple[str, Mapping[str, Any] | None]


def _tokenizer_text(value: Any) -> str:
    if isinstance(value, list):
        return "/".join(item if isinstance(item, str) else "-" for item in value) or "no class"
    return str(value)


def _named(entries: Sequence[str]) -> str:
    shown = ", ".join(entries[:LISTED])
    return shown + (f" and {len(entries) - LISTED} more" if len(entries) > LISTED else "")


def _entries(registry: Mapping[str, Any], name: str) -> set[str]:
    found = registry.get("override_lists", {}).get(name)
    return set(found.get("entries", [])) if isinstance(found, Mapping) else set()


def _kind(old: Mapping[str, Any], new: Mapping[str, Any], name: str) -> str:
    for registry in (new, old):
        found = registry.get("override_lists", {}).get(name)
        if isinstance(found, Mapping) and isinstance(found.get("kind"), str):
            return str(found["kind"])
    return "model_types"


def _entry_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """How the config and tokenizer mappings of one model_type changed."""
    changes: list[str] = []
    before, after = old.get("config"), new.get("config")
    if before is None and after is not None:
        changes.append(f"registered natively ({after})")
    elif before is not None and after is None:
        changes.append(f"no longer registered natively (was {before})")
    elif before != after:
        changes.append(f"config class changed from {before} to {after}")
    before, after = old.get("tokenizer"), new.get("tokenizer")
    if before is None and after is not None:
        changes.append(f"tokenizer mapping added ({_tokenizer_text(after)})")
    elif before is not None and after is None:
        changes.append(f"tokenizer mapping dropped (was {_tokenizer_text(before)})")
    elif before != after:
        changes.append(
            f"tokenizer mapping changed from {_tokenizer_text(before)} to {_tokenizer_text(after)}"
        )
    return changes


def _acknowledged(model_type: str, release: str, registry: Mapping[str, Any]) -> str | None:
    """Whether the alias of ``model_type`` already records ``release``: native_since at or before it,
    or a native_drift range that admits it."""
    alias = registry.get("aliases", {}).get(model_type)
    if not isinstance(alias, Mapping):
        return None
    since, drift = alias.get("native_since"), alias.get("native_drift")
    try:
        if isinstance(since, str) and Version(release) >= Version(since):
            return f"the alias records native_since {since}"
        if isinstance(drift, str) and matching_ranges([parse_range(drift)], release):
            return f"the alias records native_drift {drift}"
    except (InvalidVersion, ValueError):
        return None
    return None


def _classify(event: RegistryEvent, registry: Mapping[str, Any]) -> RegistryEvent:
    """An event on a watched model_type is an alarm; on an aliased one, unless the alias records the release."""
    if event.model_type is None:
        return event
    entry = registry.get("model_types", {}).get(event.model_type)
    event.tracked_as = list(entry.get("tracked_as", [])) if isinstance(entry, Mapping) else []
    watched = event.model_type in registry.get("watch", []) or TrackedAs.WATCH in event.tracked_as
    aliased = TrackedAs.ALIAS in event.tracked_as or event.model_type in registry.get("aliases", {})
    alias = registry.get("aliases", {}).get(event.model_type)
    if (
        isinstance(alias, Mapping)
        and isinstance(alias.get("upstream_issue"), str)
        and alias["upstream_issue"]
    ):
        event.link = alias["upstream_issue"]
    if aliased:
        event.acknowledged = _acknowledged(event.model_type, event.release, registry)
    event.alarm = watched or (aliased and event.acknowledged is None)
    return event


def _list_events(
    previous: str, release: str, old: Mapping[str, Any], new: Mapping[str, Any], tracked: Sequence[str]
) -> list[RegistryEvent]:
    """Entries added to or dropped from the override lists: one event per tracked model_type (or matrix
    checkpoint a pattern matches), and one per list for the entries that concern none of them."""
    events: list[RegistryEvent] = []
    checkpoints: Mapping[str, Any] = {**old.get("checkpoints", {}), **new.get("checkpoints", {})}
    old_lists, new_lists = old.get("override_lists", {}), new.get("override_lists", {})
    for name in sorted(set(old_lists) | set(new_lists)):
        before, after = _entries(old, name), _entries(new, name)
        kind = _kind(old, new, name)
        if name in new_lists and name not in old_lists:
            events.append(
                RegistryEvent(release, previous, None, f"new override list {name} ({len(after)} {kind})")
            )
        elif name in old_lists and name not in new_lists:
            events.append(RegistryEvent(release, previous, None, f"override list {name} is gone"))
        other: dict[str, list[str]] = {"added": [], "dropped": []}
        for entry, verb in [
            *((e, "added") for e in sorted(after - before)),
            *((e, "dropped") for e in sorted(before - after)),
        ]:
            where = f"{verb} {'to' if verb == 'added' else 'from'} {name}"
            if kind == OverrideKind.MODEL_TYPES:
                if entry in tracked:
                    events.append(RegistryEvent(release, previous, entry, where))
                else:
                    other[verb].append(entry)
                continue
            repos = [repo for repo in checkpoints if fnmatch.fnmatch(repo.lower(), entry.lower())]
            if not repos:
                other[verb].append(entry)
                continue
            change = f"checkpoint pattern {entry!r} {where} (matches {', '.join(repos)})"
            model_types: list[str | None] = [
                m for m in dict.fromkeys(checkpoints[repo] for repo in repos) if isinstance(m, str)
            ]
            for model_type in model_types or [None]:
                events.append(RegistryEvent(release, previous, model_type, change))
        parts = []
        if other["added"] and name in old_lists:  # a new list's entries are its own event
            parts.append(f"added {_named(other['added'])}")
        if other["dropped"] and name in new_lists:
            parts.append(f"dropped {_named(other['dropped'])}")
        if parts:
            events.append(RegistryEvent(release, previous, None, f"{name}: {'; '.join(parts)}"))
    return events


def _pair_events(
    previous: str, release: str, old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[RegistryEvent]:
    old_types, new_types = old.get("model_types", {}), new.get("model_types", {})
    tracked = [model_type for model_type in new_types if model_type in old_types]
    events = [
        RegistryEvent(release, previous, model_type, change)
        for model_type in tracked
        for change in _entry_changes(old_types[model_type], new_types[model_type])
    ]
    events += _list_events(previous, release, old, new, tracked)
    return [_classify(event, new) for event in events]


def registry_events(columns: Sequence[Column]) -> list[RegistryEvent]:
    """Every change between adjacent releases that both recorded the watch (a release whose report has
    no ``registry`` is skipped: the next one is compared with the last that had one)."""
    events: list[RegistryEvent] = []
    last: tuple[str, Mapping[str, Any]] | None = None
    for release, registry in columns:
        if not isinstance(registry, Mapping):
            continue
        if last is not None:
            events += _pair_events(last[0], release, last[1], registry)
        last = (release, registry)
    return events


REGISTRY_CHANGE = AlarmKind.REGISTRY_CHANGE


def event_alarms(events: Sequence[RegistryEvent]) -> list[dict[str, Any]]:
    """One registry-change alarm per model_type with alarming events: every such event in its message,
    the first release, what to do, and the upstream issue where an alias names one."""
    grouped: dict[str, list[RegistryEvent]] = {}
    for event in events:
        if event.alarm and event.model_type is not None:
            grouped.setdefault(event.model_type, []).append(event)
    alarms: list[dict[str, Any]] = []
    for model_type, found in grouped.items():
        first = found[0]
        watched = TrackedAs.WATCH in first.tracked_as
        if TrackedAs.ALIAS in first.tracked_as and not watched:
            action = (
                f"the {model_type} alias may be obsolete or need a change: judge a checkpoint of {model_type} "
                f"under transformers {first.release} (add one to the matrix if it has none); if plain loading "
                f"keeps parity there, record native_since='{Version(first.release).base_version}' for it, if it "
                "drifts record the release in native_drift"
            )
        else:
            action = (
                f"{model_type} is on the matrix's watch list: see what the change means for your shim or client "
                f"(add a checkpoint of {model_type} to the matrix to have its ids judged, declare or retire its "
                f"alias), then take {model_type} off 'watch:'"
            )
        alarms.append(
            {
                "kind": str(REGISTRY_CHANGE),
                "subject": model_type,
                "transformers_version": first.release,
                "releases": list(dict.fromkeys(event.release for event in found)),
                "message": "transformers' registries changed for "
                + model_type
                + ": "
                + "; ".join(event.text.replace(f" {model_type} ", " ", 1) for event in found),
                "action": action,
                "link": next((event.link for event in found if event.link), None),
            }
        )
    return alarms
