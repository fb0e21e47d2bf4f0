"""The judge's settings: one table, one precedence rule, one error, passed on to what a command starts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_tokcompat import environment
from pytest_tokcompat.api import load_tokenizer
from pytest_tokcompat.ci import bisect
from pytest_tokcompat.cli import main
from pytest_tokcompat.errors import CheckpointError
from pytest_tokcompat.settings import (
    OPTIONS,
    SETTINGS,
    JudgeSettings,
    SettingError,
    passed_on,
    passed_on_flags,
    resolve_judge_settings,
)
from tests.helpers import toys


@pytest.fixture(autouse=True)
def no_callers_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the caller's environment says of these settings, the tests start from the defaults."""
    for setting in SETTINGS:
        monkeypatch.delenv(setting.variable, raising=False)


def test_every_setting_has_its_flag_ini_key_and_a_declared_variable() -> None:
    assert [s.key for s in SETTINGS][:3] == ["load_timeout", "max_file_mb", "max_memory_mb"]
    for setting in SETTINGS:
        assert setting.flag == "--tokcompat-" + setting.key.replace("_", "-")
        assert setting.ini == "tokcompat_" + setting.key
        assert setting.variable in environment.BY_NAME, f"declare {setting.variable} in environment.py"
    defaults = resolve_judge_settings(environ={})
    assert defaults.limits == JudgeSettings().limits and defaults.isolation == "process"
    assert defaults.origin == {}  # control: nothing given, the declared defaults


def test_a_folder_is_relative_to_where_it_was_given(tmp_path: Path) -> None:
    project, here = tmp_path / "project", tmp_path / "here"
    table = ("pyproject.toml [tool.tokcompat]", {"truth_cache": "t", "verdict_cache": "off"}, project)
    settings = resolve_judge_settings(table=table, cwd=here)
    assert settings.truth_cache == project / "t" and settings.verdict_cache is None
    assert settings.origin == {
        "truth_cache": table[0] + " truth_cache",
        "verdict_cache": table[0] + " verdict_cache",
    }
    flagged = resolve_judge_settings(flags={"truth_cache": "mine"}, table=table, cwd=here)
    assert flagged.truth_cache == here / "mine", "the flag wins, relative to the current folder"


@pytest.mark.parametrize(
    ("key", "text", "why"),
    [
        ("isolation", "inproces", "is not one of process, spawn, inprocess"),
        ("verdict_cache_max_mb", "lots", "is not a number of megabytes"),
        ("truth_cache_max_mb", "-1", "is negative"),
        ("max_file_mb", "0", "is not a positive size"),
        ("load_timeout", "nan", "is not a finite number of seconds"),
    ],
)
def test_a_value_that_cannot_be_used_is_refused_naming_its_source(key: str, text: str, why: str) -> None:
    setting = next(s for s in SETTINGS if s.key == key)
    with pytest.raises(SettingError, match=rf"^\${setting.variable}={text}: '{text}' {why}"):
        resolve_judge_settings(environ={setting.variable: text})
    with pytest.raises(SettingError, match=rf"^ini {setting.ini}={text}: "):
        resolve_judge_settings(environ={}, ini=("ini", {key: text}, Path.cwd()))
    assert resolve_judge_settings(environ={}).origin == {}  # control: unset, nothing refused


def test_what_was_given_is_passed_on_and_the_defaults_are_not() -> None:
    settings = resolve_judge_settings(flags={"load_timeout": "0", "truth_cache": "off", "isolation": "spawn"})
    assert passed_on(settings) == {
        "TOKCOMPAT_LOAD_TIMEOUT": "0",
        "TOKCOMPAT_ISOLATION": "spawn",
        "TOKCOMPAT_TRUTH_CACHE": "off",
    }
    assert passed_on_flags(settings) == [
        "--tokcompat-load-timeout=0",
        "--tokcompat-isolation=spawn",
        "--tokcompat-truth-cache=off",
    ]
    assert passed_on(resolve_judge_settings()) == {}  # control: the defaults stay the child's own


def test_load_tokenizer_honours_the_file_size_limit_of_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It judged under the default limits whatever the variables said (only the plugin read them)."""
    folder = toys.native_toy(tmp_path / "native")
    monkeypatch.setenv("TOKCOMPAT_VERDICT_CACHE", "off")
    monkeypatch.setenv("TOKCOMPAT_MAX_FILE_MB", "0.000001")
    with pytest.raises(CheckpointError, match="MB cap"):
        load_tokenizer(folder)
    monkeypatch.delenv("TOKCOMPAT_MAX_FILE_MB")  # control: under the default limit it loads
    assert load_tokenizer(folder).verdict == "native"


def test_check_takes_the_settings_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = toys.native_toy(tmp_path / "native")
    assert main(["check", str(folder), "--tokcompat-max-file-mb", "0.000001"]) == 2
    assert "over the 1e-06 MB cap" in capsys.readouterr().err
    assert main(["check", str(folder), "--tokcompat-isolation", "bogus"]) == 2
    assert "'bogus' is not one of process, spawn, inprocess" in capsys.readouterr().err
    assert main(["check", str(folder), "--tokcompat-max-file-mb", "64"]) == 0  # control


def test_bisect_passes_its_settings_flags_to_each_child_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands: list[list[str]] = []

    def fake_run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        if command[0].endswith("uv") and command[1] == "venv":
            (Path(command[-1]) / "bin").mkdir(parents=True)
        return subprocess.CompletedProcess(command, 0, json.dumps({"verdict": "native"}), "")

    monkeypatch.setattr(bisect.subprocess, "run", fake_run)
    given = resolve_judge_settings(flags={"load_timeout": "60"})
    target = bisect.Target("case", str(tmp_path), settings=tuple(passed_on_flags(given)))
    verdict = bisect.UvVerdict(target, tmp_path / "envs", uv="/fake/uv", requirement="/src")(
        Version("5.11.0")
    )
    check = next(c for c in commands if "check" in c)
    assert verdict == "native" and check[-1] == "--tokcompat-load-timeout=60"
    assert "check" in commands[-1] and len(commands) == 3  # control: venv, install, check


def test_the_verdict_cache_is_the_librarys_a_variable_and_a_pyproject_key_never_a_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only load_tokenizer() keeps verdicts: a flag of pytest or a command would change nothing."""
    assert {s.key for s in SETTINGS} - {s.key for s in OPTIONS} == {"verdict_cache", "verdict_cache_max_mb"}
    given = resolve_judge_settings(environ={"TOKCOMPAT_VERDICT_CACHE": "off"})
    assert passed_on_flags(given) == [] and passed_on(given) == {}  # nothing a child command would take
    folder = toys.native_toy(tmp_path / "native")
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.tokcompat]\nverdict_cache = "verdicts"\n')
    monkeypatch.chdir(project)
    monkeypatch.delenv("TOKCOMPAT_CONFIG", raising=False)
    assert load_tokenizer(folder).record["verdict_cache"]["state"] == "stored"
    assert list((project / "verdicts").glob("*/*.json")), "kept where [tool.tokcompat] says"
    monkeypatch.setenv("TOKCOMPAT_VERDICT_CACHE", "off")  # control: the variable wins over the file
    assert "verdict_cache" not in load_tokenizer(folder).record


def test_the_isolation_flag_reaches_each_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_tokcompat.judge import child

    folder = toys.native_toy(tmp_path / "native")
    ran_here: list[str] = []
    real = child.run_in_process

    def recorded(job: Any, timeout: float | None) -> Any:
        ran_here.append(job.remedy)
        return real(job, timeout)

    monkeypatch.setattr(child, "run_in_process", recorded)
    assert main(["check", str(folder)]) == 0
    assert ran_here == [], "the default: each attempt in a child process"  # control
    assert main(["check", str(folder), "--tokcompat-isolation", "inprocess"]) == 0
    assert ran_here and ran_here[0] == "native", "the command's flag, down to the child's job"


def test_the_snapshot_cache_is_a_setting_and_the_caches_default_beside_it(tmp_path: Path) -> None:
    ini = ("ini", {"cache": "snaps"}, tmp_path)
    settings = resolve_judge_settings(environ={}, ini=ini, cwd=tmp_path / "here")
    assert settings.cache == tmp_path / "snaps" and settings.origin["cache"] == "ini tokcompat_cache"
    assert settings.truth_cache == tmp_path / "snaps" / "truth"
    assert settings.verdict_cache == tmp_path / "snaps" / "verdicts"
    flagged = resolve_judge_settings(
        flags={"cache": "mine"}, environ={"TOKCOMPAT_CACHE": str(tmp_path / "env")}, cwd=tmp_path
    )
    assert flagged.cache == tmp_path / "mine", "the flag wins over the variable"
    assert passed_on_flags(flagged) == [f"--tokcompat-cache={tmp_path / 'mine'}"]
    assert resolve_judge_settings(environ={"TOKCOMPAT_CACHE": "off"}, cwd=tmp_path).cache == tmp_path / "off"
    home = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    defaults = resolve_judge_settings(environ=home)
    assert defaults.cache == tmp_path / "xdg" / "pytest-tokcompat" / "snapshots"  # control: nothing given
    assert defaults.truth_cache == tmp_path / "xdg" / "pytest-tokcompat" / "truth"


def test_the_resolver_assembles_snapshots_in_the_requests_cache(tmp_path: Path) -> None:
    from pytest_tokcompat.matrix.discovery import bundled_matrix
    from pytest_tokcompat.matrix.loader import load_matrix
    from pytest_tokcompat.request import Request
    from pytest_tokcompat.sources.resolve import resolve
    from pytest_tokcompat.sources.snapshots import cache_root

    case = next(c for c in load_matrix(bundled_matrix()).cases if c.snapshot is not None)
    settings = resolve_judge_settings(flags={"cache": str(tmp_path / "snaps")}, environ={})
    checkpoint = resolve(Request(case, settings=settings))
    assert (
        checkpoint.folder.parent == tmp_path / "snaps"
        and (checkpoint.folder / "tokenizer_config.json").is_file()
    )
    default = resolve(Request(case, settings=resolve_judge_settings()))
    assert default.folder.parent == cache_root() != tmp_path / "snaps"  # control: the session's cache
