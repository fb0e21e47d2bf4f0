"""Which expectation applies to the installed transformers.

Ranges are PEP 440 specifier sets. A pre-release or dev build (``5.30.0.dev0``)
first matches as itself, with pre-releases admitted; where no range admits it,
it is judged as the release it leads to (``5.30.0``), since a dev build carries
that release's changes. A version that still matches nothing has no expectation:
that is an error for the case, never a pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class VersionRange:
    """One ``expect`` key: the original text and its parsed specifier set (empty = any version)."""

    text: str
    specifiers: SpecifierSet

    def contains(self, version: Version) -> bool:
        return self.specifiers.contains(version, prereleases=True)


def parse_range(text: str) -> VersionRange:
    """Parse an ``expect`` key; raises ValueError with a readable reason."""
    cleaned = text.strip()
    if cleaned in ("", "*"):
        return VersionRange(text, SpecifierSet(""))
    try:
        specifiers = SpecifierSet(cleaned)
    except InvalidSpecifier as error:
        raise ValueError(f"{text!r} is not a PEP 440 version specifier ({error})") from None
    if not list(specifiers):
        raise ValueError(f"{text!r} is not a PEP 440 version specifier")
    return VersionRange(text, specifiers)


def parse_version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise ValueError(f"{text!r} is not a PEP 440 version") from None


def matching_ranges(ranges: Iterable[VersionRange], version: str | Version) -> list[VersionRange]:
    """The ranges that admit ``version``, trying the release it leads to when it is a pre-release."""
    parsed = version if isinstance(version, Version) else parse_version(version)
    ranges = list(ranges)
    found = [r for r in ranges if r.contains(parsed)]
    if not found and (parsed.is_prerelease or parsed.is_devrelease or parsed.local):
        release = Version(parsed.base_version)
        found = [r for r in ranges if r.contains(release)]
    return found


def _probe_points(ranges: Sequence[VersionRange]) -> list[Version]:
    """Versions at, just above and just below every boundary: enough to witness an overlap."""
    points = {Version("0.0.1"), Version("99999")}
    for version_range in ranges:
        for spec in version_range.specifiers:
            raw = spec.version.rstrip(".*")
            try:
                boundary = Version(raw)
            except InvalidVersion:
                continue
            release = list(boundary.release)
            points.add(boundary)
            points.add(Version(f"{boundary.base_version}.post1"))
            points.add(Version(".".join(map(str, [*release, 9999]))))
            for index in range(len(release) - 1, -1, -1):
                if release[index] > 0:
                    below = [*release[:index], release[index] - 1, 9999]
                    points.add(Version(".".join(map(str, below))))
                    break
    return sorted(points)


def overlapping_pairs(ranges: Sequence[VersionRange]) -> list[tuple[VersionRange, VersionRange, Version]]:
    """Pairs of ranges that admit a common version, with that version as the witness."""
    overlaps: list[tuple[VersionRange, VersionRange, Version]] = []
    points = _probe_points(ranges)
    for i, first in enumerate(ranges):
        for second in ranges[i + 1 :]:
            witness = next((p for p in points if first.contains(p) and second.contains(p)), None)
            if witness is not None:
                overlaps.append((first, second, witness))
    return overlaps
