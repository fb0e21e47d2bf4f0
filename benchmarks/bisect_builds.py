"""Bisect: environment builds of ``pytest_tokcompat.ci.bisect.bisect_releases`` for n releases, n = 4..64.

A fake verdict function stands in for the environment build (each call is one
build): for every n and every position of the single verdict change (the
search's assumption), it counts the calls and checks the release found. Prints,
per n, the worst count against ceil(log2(n)) + 2, computed here independently of
the package's ``max_builds``. No environment is built; runs in well under a second.

Run:  python benchmarks/bisect_builds.py [--max 64] [--json OUT]
"""

from __future__ import annotations

import argparse
import math
import sys

from _common import verdict, write_json
from packaging.version import Version

from pytest_tokcompat.ci.bisect import bisect_releases, max_builds


def worst_builds(count: int) -> tuple[int, bool]:
    """The most builds over every change position, and whether every search found the change."""
    releases = [Version(f"5.{minor}.0") for minor in range(count)]
    worst, right = 0, True
    for change in range(1, count):
        calls: list[Version] = []

        def verdict_at(release: Version, change: int = change, calls: list[Version] = calls) -> str:
            calls.append(release)
            return "native" if releases.index(release) < change else "alias"

        result = bisect_releases(releases, verdict_at, subject=f"fake-{count}-{change}")
        worst = max(worst, len(calls))
        right &= result.first.release == releases[change] and result.builds == len(calls)
    return worst, right


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--min", type=int, default=4)
    parser.add_argument("--max", type=int, default=64)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)

    print(f"== bisect builds (n = {args.min}..{args.max}, fake verdicts, every change position) ==")
    rows = []
    all_met = all_right = True
    for count in range(args.min, args.max + 1):
        worst, right = worst_builds(count)
        bound = math.ceil(math.log2(count)) + 2
        met = worst <= bound
        all_met &= met
        all_right &= right
        rows.append({"n": count, "worst": worst, "bound": bound, "max_builds": max_builds(count), "met": met})
        if count in (4, 5, 8, 9, 16, 17, 32, 33, 64) or not met or not right:
            print(f"  n={count:<3} worst {worst:<3} bound {bound:<3} (package max_builds {max_builds(count)})"
                  f"{'' if right else '  WRONG RELEASE FOUND'}")  # fmt: skip
    slack = min(r["bound"] - r["worst"] for r in rows)
    print(
        f"worst builds within ceil(log2 n)+2 for every n: {verdict(all_met)} (least slack {slack}); "
        f"change found every time: {verdict(all_right)}"
    )
    write_json(
        args.json, {"name": "bisect", "rows": rows, "met": all_met, "found_right": all_right, "slack": slack}
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
