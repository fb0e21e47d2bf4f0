"""The verdict ladder: the least remedy with which AutoTokenizer loads a checkpoint AND tokenizes right.

Remedies are tried in order of how much they ask of a user: plain loading, the
checkpoint's own code (only where the entry opts in), our config alias, then the backend
override (tokenizer.json loaded with the fast backend as it is). A remedy that loads but
gives other ids on ordinary text is not a remedy; what else drifts is a finding beside the
verdict, and a repair (the declared BOS/EOS) is tried on the verdict's remedy where one
would clear a finding. Each attempt loads the checkpoint by the name the client gives
(``LoadTarget``: a hub repo id from the hub cache, a folder by its path as given), since
transformers chooses classes by that name. Every attempt runs in a
child process of its own (``judge/child.py``), so nothing one attempt does (a
monkeypatch, an exit, a panic, a hang, a thread, a flood of output) reaches the
next attempt, the next case or the caller; a checkpoint the judge could not
finish (a time or memory limit, an unreadable file) is not-checked, never broken.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_tokcompat import environment
from pytest_tokcompat.judge import cacheguard
from pytest_tokcompat.judge.absorb import Found, absorb, make_job
from pytest_tokcompat.judge.inprocess import import_in_background, load_here
from pytest_tokcompat.judge.inputs import check_checkpoint_files
from pytest_tokcompat.judge.job import attempt_name
from pytest_tokcompat.judge.judgement import (
    BROKEN,
    DRIFT,
    OK,
    REMEDIES,
    SKIPPED,
    UNCHECKED,
    Attempt,
    Judgement,
    LoaderResult,
    unread_view,
)
from pytest_tokcompat.judge.loading import transformers_version
from pytest_tokcompat.judge.observed import NotObserved
from pytest_tokcompat.judge.parity import NOT_CHECKED, Parity, Truth
from pytest_tokcompat.judge.pristine import Watch
from pytest_tokcompat.judge.static import StaticView
from pytest_tokcompat.judge.subject import Subject
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.model import AttemptStatus, Dimension, Repair
from pytest_tokcompat.sources.names import LoadTarget

__all__ = ["judge"]


def _skip_reason(remedy: str, view: StaticView, trust_remote_code: bool, alias: Alias | None) -> str | None:
    if remedy == "auto_map":
        if not view.has_auto_map:
            return "the checkpoint ships no auto_map"
        if not trust_remote_code:
            return (
                "trust_remote_code is off; opt in if you trust the checkpoint's code: `trust_remote_code: "
                "true` in its matrix entry, `tokcompat check --trust-remote-code`, or "
                "load_tokenizer(..., trust_remote_code=True)"
            )
    if remedy == "backend" and "tokenizer.json" not in view.tokenizer_files:
        return "the checkpoint ships no tokenizer.json for the fast backend to load as it is"
    if remedy == "alias":
        if alias is None and not view.has_config:
            return "the checkpoint has no config.json (tokenizer-only): no model_type, so no alias applies"
        if alias is None:
            return f"no alias for model_type {view.model_type!r} in the registry"
        if view.registered_natively:
            return f"transformers registers {view.model_type!r} natively; an alias never replaces it"
    return None


def _count_differing(tokenizer: Any, truth: Truth, texts: list[str]) -> tuple[int, int]:
    """How many of the texts with a ground truth the tokenizer encodes differently, of how many."""
    compared = [text for text in texts if text in truth.ids]
    differing = sum(
        1 for text in compared if list(tokenizer.encode(text, add_special_tokens=False)) != truth.ids[text]
    )
    return differing, len(compared)


def judge(subject: Subject) -> Judgement:
    """Run the ladder on one checkpoint's files under the installed transformers.

    Each attempt loads ``subject.folder``'s files by ``subject.target`` (the name the client gives; by
    default the folder's path) and runs in a child process. Where the verdict's attempt has a
    default-call finding that the declared BOS/EOS repair clears, the repair is recorded; where the
    target is a repo id matched by transformers' name-keyed rules, the folder path is judged too
    (``local``). ``subject.record_as`` (a case id) records golden ids that are missing, from an
    independent implementation of the checkpoint's own format, where the checkpoint has no
    tokenizer.json; the request's ``keep_tokenizer`` loads the verdict's remedy once more, in this
    process, after the judgement, for fixtures and ``load_tokenizer()``. Each of the request's
    ``loaders`` (a client's own loader) is then called in a child process of its own and checked
    against the same truth: its result is recorded beside the verdict and never changes it.
    ``subject.acknowledged`` maps the contract dimensions the matrix entry acknowledges for this
    release to the reason (their drift is reported, not failed). Raises CheckpointError where the
    checkpoint's files cannot be read.
    """
    with cacheguard.judging_with(subject.settings):  # what its attempts leave in the caches is discarded
        return _judge(subject)


def _judge(subject: Subject) -> Judgement:
    from pytest_tokcompat.judge import child, golden, pristine, truthcache
    from pytest_tokcompat.matrix.aliases import find_alias

    request, folder, golden_path = subject.request, subject.folder, subject.golden_path
    if request.keep_tokenizer:
        import_in_background()
    registry, settings = subject.registry, subject.settings
    limits = settings.limits
    check_checkpoint_files(folder, limits.max_file_mb)  # special files, dangling links: never opened
    recording = subject.record_as is not None and golden_path is not None
    refusal = golden.write_refusal(golden_path) if recording and golden_path is not None else None
    record = recording and refusal is None
    found = Found()
    watch = pristine.Watch(folder, subject.target, enabled=subject.trust_remote_code or bool(request.loaders))
    truths = (
        None
        if record
        else truthcache.lookup(folder, list(subject.texts), golden_path, settings, watch.digests())
    )
    if truths is not None and truths.hit is not None:  # computed by an earlier run: no child reads it again
        found.texts, found.truth = truths.hit.texts, truths.hit.truth
        found.truth.acknowledged = dict(subject.acknowledged)
    attempts: list[Attempt] = []
    stop: str | None = None
    for remedy in REMEDIES:
        if stop is not None:
            attempts.append(Attempt(remedy, SKIPPED, f"not tried: {stop}"))
            continue
        alias = find_alias(found.view.model_type, registry) if found.view is not None else None
        reason = _skip_reason(remedy, found.view, subject.trust_remote_code, alias) if found.view else None
        if reason:
            attempts.append(Attempt(remedy, SKIPPED, reason))
            continue
        job = make_job(subject, remedy, alias, found, record=record)
        attempt = absorb(
            child.run(job, limits.load_timeout), remedy, found, limits.load_timeout, job.max_memory_mb
        )
        if remedy == "auto_map" and found.view is not None:
            attempt.remote_files = list(found.view.remote_code_files)
        attempts.append(attempt)
        if _distrusted(attempt, watch.after(remedy, ran_code=remedy == "auto_map")) is not None:
            stop = watch.not_tried()
        if stop is None and (found.view is None or found.texts is None):
            stop = f"the checkpoint could not be read ({attempt.detail})"
        if stop is None and attempt.status in (OK, AttemptStatus.NOT_CHECKED):
            break
    recorded = _write_recorded(found, subject) if record else None
    verdict, parity = _verdict(attempts, found, refusal)
    chosen = next((a for a in attempts if a.remedy == verdict), None)
    repairs, repair_attempts = _try_repairs(subject, chosen, found, record, watch)
    local = _judge_local(subject, verdict, found, record, watch)
    judged_loaders = [
        _judge_loader(subject, loader, found, record, stop, watch) for loader in request.loaders
    ]
    watch.after("the judgement's end", ran_code=False)  # a write that landed after the last attempt's check
    if watch.changed is not None:  # nothing measured on files that checkpoint code changed counts
        verdict, parity = UNCHECKED, Parity(NOT_CHECKED, reason=watch.changed)
    elif truths is not None:
        truths.keep(found.texts, found.truth, found.truth_error)
    judgement = Judgement(
        transformers_version=child.server_version() or transformers_version(),
        static=found.view or unread_view(),
        verdict=verdict,
        parity=parity,
        attempts=attempts,
        texts=len(found.texts or []),
        truth_source=found.truth.source if found.truth else None,
        recorded=recorded,
        truth=found.truth,
        probe_texts=found.texts,
        repairs=repairs,
        repair_attempts=repair_attempts,
        local=local,
        target=subject.target,
    )
    judgement.loaders = judged_loaders
    if request.keep_tokenizer and verdict in (*REMEDIES, UNCHECKED) and watch.changed is None:
        judgement.tokenizer = load_here(folder, judgement, registry)
    return judgement


def _distrusted(attempt: Attempt, changed: str | None) -> str | None:
    """The attempt after which the checkpoint's files were found changed (``changed``): not checked."""
    if changed is not None:
        attempt.status, attempt.detail, attempt.undecided = AttemptStatus.NOT_CHECKED, changed, True
        attempt.parity = Parity(NOT_CHECKED, reason=changed)
    return changed


def _try_repairs(
    subject: Subject, chosen: Attempt | None, found: Found, record: bool, watch: Watch
) -> tuple[list[str], list[Attempt]]:
    """The declared BOS/EOS repair on the verdict's remedy, where the default call is a finding it may
    clear; kept only where the repaired tokenizer keeps right ids and the finding is gone."""
    from pytest_tokcompat.judge import child
    from pytest_tokcompat.judge.repairs import declared_special_tokens_applicable

    if chosen is None or str(Dimension.DEFAULT_CALL) not in chosen.drifting or found.truth is None:
        return [], []
    if watch.changed is not None:
        return [], []
    contract = found.truth.contract
    if contract is None or not declared_special_tokens_applicable(contract.declared):
        return [], []
    repair = str(Repair.DECLARED_SPECIAL_TOKENS)
    alias = _alias_for(found, subject.registry)
    job = make_job(subject, chosen.remedy, alias if chosen.remedy == "alias" else None, found, record=record)
    job.repairs = [repair]
    timeout = subject.settings.limits.load_timeout
    run = child.run(job, timeout)
    attempt = absorb(run, attempt_name(job), found, timeout, job.max_memory_mb)
    _distrusted(attempt, watch.after(attempt_name(job), ran_code=chosen.remedy == "auto_map"))
    cleared = attempt.status == OK and str(Dimension.DEFAULT_CALL) not in attempt.drifting
    return ([repair] if cleared else []), [attempt]


def _alias_for(found: Found, registry: dict[str, Alias]) -> Alias | None:
    from pytest_tokcompat.matrix.aliases import find_alias

    return find_alias(found.view.model_type, registry) if found.view is not None else None


def _judge_local(subject: Subject, verdict: str, found: Found, record: bool, watch: Watch) -> list[Attempt]:
    """Where the client's repo id is matched by a name-keyed rule, the same files by their folder path:
    plain loading, then the backend override where that drifts (what a user of a local copy gets)."""
    from pytest_tokcompat.judge import child

    target = subject.target
    if target is None or not target.by_repo_id or found.view is None or not found.view.name_keyed:
        return []
    if watch.changed is not None:
        return []
    if verdict not in REMEDIES or found.texts is None:
        return []
    local = replace(subject, target=LoadTarget(str(subject.folder)))
    timeout = subject.settings.limits.load_timeout
    attempts: list[Attempt] = []
    for remedy in ("native", "backend"):
        if _skip_reason(remedy, found.view, False, None):
            break
        job = make_job(local, remedy, None, found, record=record)
        attempt = absorb(child.run(job, timeout), remedy, found, timeout, job.max_memory_mb)
        attempts.append(attempt)
        if _distrusted(attempt, watch.after(remedy, ran_code=False)) is not None:
            break
        if attempt.status in (OK, AttemptStatus.NOT_CHECKED):
            break
    return attempts


def _judge_loader(
    subject: Subject, loader: ClientLoader, found: Found, record: bool, stop: str | None, watch: Watch
) -> LoaderResult:
    """One client loader in its own child, against the ground truth the ladder's children read."""
    from pytest_tokcompat.judge import child

    name = f"loader:{loader.name}"
    if found.view is None or found.texts is None or watch.changed is not None:
        why = watch.not_tried() or stop
        return LoaderResult(loader, Attempt(name, AttemptStatus.NOT_CHECKED, f"not tried: {why}"))
    job = make_job(subject, None, None, found, record=record, loader=loader)
    job.environ = client_environ(job.environ)
    timeout = subject.settings.limits.load_timeout
    run = child.run(job, timeout)
    attempt = absorb(run, name, found, timeout, job.max_memory_mb, keep_replay=True)
    _distrusted(attempt, watch.after(name, ran_code=True))  # a client's loader runs foreign code too
    counts: dict[str, int] = {}
    if attempt.status == DRIFT and attempt.replay is not None and found.truth is not None:
        with contextlib.suppress(Exception, NotObserved):  # the count is extra detail, never the result
            counts["differing"], counts["compared"] = _count_differing(
                attempt.replay, found.truth, found.texts
            )
    attempt.replay = None
    replaced = next((m for m in run.messages if m.get("kind") == "replaces-native"), {})
    registered = next((m for m in run.messages if m.get("kind") == "registers"), {})
    set_by_tool = job.target.client_environment() if job.target is not None else {}
    offline = {
        key: job.environ[key] for key in OFFLINE_VARIABLES if job.environ.get(key) and key not in set_by_tool
    }
    return LoaderResult(
        loader,
        attempt,
        counts.get("differing"),
        counts.get("compared"),
        [str(text) for text in replaced.get("replaces", [])],
        offline,
        [str(name) for name in registered.get("registers", [])],
        set_by_tool,
    )


SET_BY_TOOL = "TOKCOMPAT_SET_BY_TOOL"
"""Comma-separated names of variables a tool of ours set in this environment (``tokcompat grid`` sets
HF_HUB_OFFLINE for its own runs); a client's loader is called without them, as the client's code runs."""


OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def client_environ(environ: dict[str, str]) -> dict[str, str]:
    """The environment a client loader is called in: ours without what our tools set (``SET_BY_TOOL``)."""
    dropped = {
        name.strip() for name in (environment.read(SET_BY_TOOL, environ) or "").split(",") if name.strip()
    }
    return {key: value for key, value in environ.items() if key not in dropped and key != SET_BY_TOOL}


def _verdict(attempts: list[Attempt], found: Found, refusal: str | None) -> tuple[str, Parity]:
    """The least remedy that works, provided nothing before it was left undecided by the judge's limits."""
    chosen = next((a for a in attempts if a.status in (OK, AttemptStatus.NOT_CHECKED)), None)
    before = attempts[: attempts.index(chosen) + 1] if chosen is not None else attempts
    undecided = [a for a in before if a.undecided]
    if found.truth_error is not None:
        return UNCHECKED, Parity(NOT_CHECKED, reason=found.truth_error)
    missing = found.truth is None or bool(found.truth.missing)
    not_recorded = refusal or (found.truth.missing_reason if found.truth is not None else None)
    if not_recorded and missing:  # asked to record, and could not: nothing to check against
        return UNCHECKED, Parity(NOT_CHECKED, reason=not_recorded)
    if undecided:
        first = undecided[0]
        reason = f"the {first.remedy} attempt could not be judged: {first.detail}"
        return UNCHECKED, Parity(NOT_CHECKED, reason=reason)
    if chosen is not None and chosen.parity is not None:
        if chosen.status == OK:
            return chosen.remedy, chosen.parity
        reason = f"the tokenizer loads ({chosen.remedy}) but its ids were not checked: {chosen.parity.reason}"
        reason += f"; {refusal}" if refusal else ""
        return UNCHECKED, Parity(NOT_CHECKED, chosen.parity.checked, chosen.parity.source, reason=reason)
    tried = [a.parity for a in attempts if a.parity is not None]
    return BROKEN, tried[0] if tried else Parity(NOT_CHECKED, reason="no remedy loaded the tokenizer")


def _write_recorded(found: Found, subject: Subject) -> Path | None:
    """Write the golden ids a child recorded: only those that were missing, never over existing ones."""
    from pytest_tokcompat.judge import golden

    record_as, golden_path = subject.record_as, subject.golden_path
    if not found.recorded or record_as is None or golden_path is None:
        return None
    kinds = found.recorded.get("kinds")
    recording = golden.Recording.from_json(found.recorded)
    added = golden.merge_golden(golden_path, record_as, recording, kinds if isinstance(kinds, dict) else None)
    return golden_path if added else None
