"""Bisecting releases: the build bound, monotone and non-monotone histories, refusals, the CLI, the uv builder."""

from __future__ import annotations

import json
import math
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_tokcompat.ci import bisect, releases
from pytest_tokcompat.ci.bisect import Target, UvVerdict, bisect_releases, max_builds
from pytest_tokcompat.ci.releases import Page
from pytest_tokcompat.cli import main
from pytest_tokcompat.errors import BisectError, BuildError
from tests.helpers.paths import SIMPLE_INDEX

INDEX = "https://index.invalid/simple"


def releases_list(count: int) -> list[Version]:
    return [Version(f"5.{minor}.0") for minor in range(count)]


class Fake:
    """A verdict per release from a list of verdicts, counting builds."""

    def __init__(self, history: list[str], releases_: list[Version]) -> None:
        self.by_release = dict(zip(releases_, history, strict=True))
        self.builds: list[Version] = []

    def __call__(self, release: Version) -> str:
        self.builds.append(release)
        return self.by_release[release]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 8, 9, 16, 17, 100, 1000])
def test_max_builds_is_ceil_log2_plus_two(count: int) -> None:
    assert max_builds(count) == math.ceil(math.log2(count)) + 2


@pytest.mark.parametrize("count", [2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 60])
def test_monotone_history_finds_the_change_within_the_bound(count: int) -> None:
    ordered = releases_list(count)
    for change in range(1, count):
        fake = Fake(["alias"] * change + ["native"] * (count - change), ordered)
        result = bisect_releases(ordered, fake, subject="case")
        assert result.first.release == ordered[change]
        assert (result.reference.verdict, result.first.verdict) == ("alias", "native")
        assert len(fake.builds) == result.builds <= max_builds(count)
        assert len(set(fake.builds)) == len(fake.builds), "a release was built twice"


def test_unsorted_input_is_bisected_in_version_order() -> None:
    ordered = [Version(v) for v in ("4.57.6", "5.0.0", "5.2.0", "5.10.4", "5.11.0")]
    fake = Fake(["alias", "alias", "alias", "alias", "native"], ordered)
    result = bisect_releases(list(reversed(ordered)), fake, subject="deepseek-v3.2-exp")
    assert result.line() == "deepseek-v3.2-exp: alias -> native, first in transformers 5.11.0"


@pytest.mark.parametrize(
    "history",
    [
        "AABABB",
        "ABBBBBBC",
        "AAAABAAB",
        "ABABABABAB",
        "AACCCCBB",
        "ABCDEFGH",
    ],
)
def test_non_monotone_history_ends_on_a_real_change(history: str) -> None:
    ordered = releases_list(len(history))
    fake = Fake(list(history), ordered)
    result = bisect_releases(ordered, fake, subject="case")
    first = ordered.index(result.first.release)
    assert history[first] != history[0], "the release found must differ from the reference"
    assert history[first - 1] == history[0], "and its predecessor must still agree with it"
    assert result.first.verdict == history[first]
    assert len(fake.builds) <= max_builds(len(history))


def test_probes_are_reported_as_they_go() -> None:
    ordered = releases_list(9)
    lines: list[str] = []
    fake = Fake(["alias"] * 6 + ["native"] * 3, ordered)
    result = bisect_releases(ordered, fake, subject="case", report=lines.append)
    done = [line for line in lines if "->" in line]
    assert done[0] == "probe 1: transformers 5.0.0 -> alias"
    assert done[1] == "probe 2: transformers 5.8.0 -> native"
    assert len(done) == result.builds
    assert any("building transformers 5.0.0" in line for line in lines)


@pytest.mark.parametrize("history", ["AA", "AAAAAA", "ABA", "ABBBA"])
def test_refuses_when_both_ends_agree(history: str) -> None:
    ordered = releases_list(len(history))
    fake = Fake(list(history), ordered)
    with pytest.raises(BisectError, match=r"both transformers 5\.0\.0 and") as caught:
        bisect_releases(ordered, fake, subject="case")
    assert "narrow" in str(caught.value)
    assert len(fake.builds) == 2


@pytest.mark.parametrize("count", [0, 1])
def test_refuses_fewer_than_two_releases(count: int) -> None:
    with pytest.raises(BisectError, match="at least two releases"):
        bisect_releases(releases_list(count), lambda release: "alias", subject="case")


def test_a_failed_build_stops_the_bisection() -> None:
    def verdict_at(release: Version) -> str:
        if release == Version("5.2.0"):
            raise BuildError("cannot build an environment for transformers 5.2.0")
        return "alias" if release < Version("5.3.0") else "native"

    with pytest.raises(BuildError, match=r"5\.2\.0"):
        bisect_releases(releases_list(5), verdict_at, subject="case")


def test_select_range_and_bad_order() -> None:
    ordered = releases_list(6)
    assert bisect.select_range(ordered, Version("5.2.0"), Version("5.4.0")) == ordered[2:5]
    with pytest.raises(BisectError, match="after"):
        bisect.select_range(ordered, Version("5.4.0"), Version("5.2.0"))


# The command: releases from the recorded index page, verdicts from a fake.


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, object]:
    for name in releases.INDEX_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_INDEX_URL", INDEX)
    monkeypatch.setenv("TOKCOMPAT_CACHE", str(tmp_path / "snapshots"))
    monkeypatch.setattr(
        releases, "fetch_page", lambda url: Page(url, releases.JSON_TYPE, SIMPLE_INDEX.read_bytes())
    )
    state: dict[str, object] = {"builds": [], "history": lambda release: "alias"}

    def make(target: Target, cache: Path) -> Callable[[Version], str]:
        state["target"], state["cache"] = target, cache

        def verdict_at(release: Version) -> str:
            builds = state["builds"]
            assert isinstance(builds, list)
            builds.append(release)
            history = state["history"]
            assert callable(history)
            return str(history(release))

        return verdict_at

    monkeypatch.setattr(bisect, "make_verdict_function", make)
    return state


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    folder = tmp_path / "my-ckpt"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "deepseek_v32"}')
    return folder


def test_cli_bisects_a_folder(
    offline: dict[str, object], checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    offline["history"] = lambda release: "native" if release >= Version("5.10.4") else "alias"
    code = main(
        ["bisect", str(checkpoint), "--from", "4.45.2", "--to", "5.11.0", "--cache", str(tmp_path / "c")]
    )
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[-1] == "my-ckpt: alias -> native, first in transformers 5.10.4"
    assert out[0].startswith("bisecting my-ckpt over 6 transformers releases, 4.45.2 .. 5.11.0")
    builds = offline["builds"]
    assert isinstance(builds, list)
    assert len(builds) <= max_builds(6)
    assert sum("->" in line and line.startswith("probe") for line in out) == len(builds)
    assert offline["cache"] == tmp_path / "c"
    target = offline["target"]
    assert isinstance(target, Target)
    assert target.argument == str(checkpoint.resolve())


def test_cli_looks_a_case_up_in_the_matrix(
    offline: dict[str, object], checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    matrix = tmp_path / "models.yaml"
    matrix.write_text(
        "version: 1\ncases:\n  - id: my-case\n    snapshot: my-ckpt\n    trust_remote_code: true\n"
        "    expect: alias\n"
    )
    offline["history"] = lambda release: "broken" if release >= Version("5.0.0") else "alias"
    code = main(["bisect", "my-case", "--matrix", str(matrix), "--to", "5.1.0"])
    assert code == 0, capsys.readouterr().err
    assert capsys.readouterr().out.splitlines()[-1] == "my-case: alias -> broken, first in transformers 5.0.0"
    target = offline["target"]
    assert isinstance(target, Target)
    # The child gets the case by its node id (the absolute matrix and the id), so its golden ids travel;
    # the entry's opt-in is for the matrix's own runs, not for bisect unless the caller passes it.
    assert (target.subject, target.argument) == ("my-case", f"{matrix}::my-case")
    assert not target.trust_remote_code
    capsys.readouterr()
    assert main(["bisect", "my-case", "--matrix", str(matrix), "--to", "5.1.0", "--trust-remote-code"]) == 0
    target = offline["target"]
    assert isinstance(target, Target) and target.trust_remote_code


def test_cli_finds_a_case_in_the_projects_matrix_by_absolute_path(
    offline: dict[str, object], checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "matrix").mkdir(parents=True)
    (project / "tox.ini").write_text("[tox]\n")
    (project / "matrix" / "models.yaml").write_text(
        f"version: 1\ncases:\n  - {{id: mine, snapshot: {checkpoint}, expect: alias}}\n"
    )
    offline["history"] = lambda release: "broken" if release >= Version("5.0.0") else "alias"
    monkeypatch.chdir(project / "matrix")
    assert main(["bisect", "mine", "--to", "5.1.0"]) == 0
    target = offline["target"]
    assert isinstance(target, Target)
    assert target.argument == f"{project / 'matrix' / 'models.yaml'}::mine"


@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--from", "4.45.2", "--to", "5.11.0"], "no change to find"),
        (["--from", "4.46.0"], "not a published release"),
        (["--to", "5.10.3"], "not a published release"),
        (["--from", "5.11.0", "--to", "5.0.0"], "after"),
        (["--from", "5.11.0"], "at least two releases"),
        (["--from", "soon"], "not a version"),
    ],
)
def test_cli_refuses_clearly(
    argv: list[str], message: str, checkpoint: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bisect", str(checkpoint), *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.usefixtures("offline")
def test_cli_refuses_an_unknown_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    matrix = tmp_path / "models.yaml"
    matrix.write_text("version: 1\ncases:\n  - {id: other, repo: o/n, expect: native}\n")
    assert main(["bisect", "nope", "--matrix", str(matrix)]) == 2
    assert "neither a folder nor a case id" in capsys.readouterr().err


def test_cli_refuses_when_an_environment_cannot_be_built(
    offline: dict[str, object], checkpoint: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def history(release: Version) -> str:
        raise BuildError(f"cannot build an environment for transformers {release}: no wheel")

    offline["history"] = history
    assert main(["bisect", str(checkpoint), "--from", "5.0.0"]) == 2
    assert "cannot build an environment for transformers 5.0.0" in capsys.readouterr().err


# The real builder, with a fake uv that records what it is asked to do.

FAKE_UV = """#!{python}
import json, os, pathlib, sys
log = pathlib.Path({log!r})
with log.open("a") as handle:
    handle.write(json.dumps(sys.argv[1:]) + "\\n")
if os.environ.get("FAKE_UV_FAIL") and sys.argv[1:3] == ["pip", "install"]:
    print("no solution found", file=sys.stderr)
    sys.exit(1)
if sys.argv[1] == "venv":
    env = pathlib.Path(sys.argv[-1])
    (env / "bin").mkdir(parents=True, exist_ok=True)
    python = env / "bin" / "python"
    python.write_text("#!{python}\\nimport json, sys\\n"
                      "print(json.dumps({{'argv': sys.argv[1:], 'verdict': {verdict!r}}}))\\n")
    python.chmod(0o755)
"""


def fake_uv(tmp_path: Path, verdict: str) -> tuple[Path, Path]:
    log = tmp_path / "uv.log"
    script = tmp_path / "uv"
    script.write_text(FAKE_UV.format(python=sys.executable, log=str(log), verdict=verdict))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, log


@pytest.mark.skipif(sys.platform == "win32", reason="the fake uv is a POSIX script")
def test_uv_verdict_builds_a_throwaway_env_and_reads_the_verdict(tmp_path: Path) -> None:
    uv, log = fake_uv(tmp_path, "native")
    cache = tmp_path / "cache"
    target = Target("case", "/snap/case", "abc123", True)
    judge = UvVerdict(target, cache, uv=str(uv), requirement="/src/pytest-tokcompat")
    assert judge(Version("5.11.0")) == "native"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls[0][0] == "venv"
    assert calls[1][:2] == ["pip", "install"]
    assert "transformers==5.11.0" in calls[1] and "/src/pytest-tokcompat" in calls[1]
    assert calls[1][calls[1].index("--link-mode") + 1] == "copy", "copies, not links into uv's cache"
    assert list(cache.iterdir()) == [], "the environment must be thrown away"


@pytest.mark.skipif(sys.platform == "win32", reason="the fake uv is a POSIX script")
def test_uv_verdict_reports_a_failed_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uv, _ = fake_uv(tmp_path, "native")
    monkeypatch.setenv("FAKE_UV_FAIL", "1")
    judge = UvVerdict(Target("case", "/snap"), tmp_path / "cache", uv=str(uv), requirement="x")
    with pytest.raises(
        BuildError, match=r"(?s)environment for transformers 5\.0\.0: uv pip install failed.*no solution"
    ):
        judge(Version("5.0.0"))


def test_uv_verdict_reports_a_missing_uv(tmp_path: Path) -> None:
    judge = UvVerdict(Target("case", "/snap"), tmp_path, uv=str(tmp_path / "no-uv"), requirement="x")
    with pytest.raises(BuildError, match="not found"):
        judge(Version("5.0.0"))


def test_package_requirement_is_a_wheel_of_the_running_files(tmp_path: Path) -> None:
    """Never the index (the package may be unpublished), never the checkout (there may be none)."""
    import zipfile

    wheel = Path(bisect.package_requirement(tmp_path))
    assert wheel.is_file() and wheel.name == "pytest_tokcompat-0.1.0-py3-none-any.whl"
    assert wheel.is_relative_to(tmp_path)
    source = Path(bisect.__file__).read_bytes()
    assert zipfile.ZipFile(wheel).read("pytest_tokcompat/ci/bisect.py") == source


REAL_CHILD_UV = """#!{python}
import pathlib, sys
if sys.argv[1] == "venv":
    env = pathlib.Path(sys.argv[-1])
    (env / "bin").mkdir(parents=True, exist_ok=True)
    python = env / "bin" / "python"
    python.write_text('#!/bin/sh\\nexec {python} "$@"\\n')
    python.chmod(0o755)
"""


def test_bare_bisect_of_a_case_searches_where_its_expect_ranges_change(
    offline: dict[str, object], checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    matrix = tmp_path / "models.yaml"
    matrix.write_text(
        "version: 1\ncases:\n  - id: my-case\n    snapshot: my-ckpt\n    expect:\n"
        '      ">=5.11": native\n      "<5.1": native\n      ">=5.1,<5.11": alias\n'
    )
    offline["history"] = lambda release: (
        "alias" if Version("5.0.0") <= release < Version("5.11") else "native"
    )
    assert main(["bisect", "my-case", "--matrix", str(matrix)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (
        "my-case: the matrix expects native -> alias from 5.1.0, alias -> native from 5.11.0; "
        "bisecting around each (--from/--to for another range)"
    )
    assert out[-2:] == [
        "my-case: native -> alias, first in transformers 5.0.0 (the matrix expects it first in 5.1.0: "
        "correct its expect ranges)",
        "my-case: alias -> native, first in transformers 5.11.0 (as the matrix expects)",
    ]
    builds = offline["builds"]
    assert isinstance(builds, list) and len(builds) == len(set(builds)), "one judgement per release"
    # the control: one outcome everywhere names no change, and the whole span has none to find
    matrix.write_text("version: 1\ncases:\n  - {id: my-case, snapshot: my-ckpt, expect: native}\n")
    offline["history"] = lambda release: "native"
    assert main(["bisect", "my-case", "--matrix", str(matrix)]) == 2
    assert "no change to find" in capsys.readouterr().err
