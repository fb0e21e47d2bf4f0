"""Self-tests of ``pytest --tokcompat`` through pytester, with and without xdist."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from xml.etree import ElementTree

import pytest

from pytest_tokcompat.contract import SCHEMA_VERSION
from pytest_tokcompat.judge.probes import probe_texts
from tests.helpers import toys
from tests.helpers.ladder import judge_folder
from tests.helpers.matrices import run_plugin, write_matrix
from tests.helpers.reportdata import read_valid_report

pytest_plugins = ["pytester"]


def report_of(pytester: pytest.Pytester, name: str = "report.json") -> dict:
    return read_valid_report(pytester.path / name)


@pytest.fixture
def ladder_matrix(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One case per verdict, each expecting the verdict it should get."""
    root = pytester.path
    monkeypatch.setenv("TOKCOMPAT_CANARY", str(root / "canary"))
    toys.native_toy(root / "native")
    toys.alias_toy(root / "alias")
    toys.broken_toy(root / "broken")
    toys.remote_toy(root / "remote")
    toys.remote_toy(root / "remote-no-optin")
    for case_id in ("alias", "broken"):
        toys.golden_for(probe_texts(), root / "golden", case_id)
    pytester.makeconftest(toys.alias_conftest())
    return write_matrix(
        root,
        "  - {id: native, snapshot: native, expect: native}\n"
        "  - {id: alias, snapshot: alias, expect: alias}\n"
        "  - {id: broken, snapshot: broken, expect: broken}\n"
        "  - {id: remote, snapshot: remote, expect: auto_map, trust_remote_code: true}\n"
        "  - {id: remote-no-optin, snapshot: remote-no-optin, expect: backend}\n",
    )


def test_every_verdict_of_the_ladder(pytester: pytest.Pytester, ladder_matrix: Path) -> None:
    result = run_plugin(pytester, ladder_matrix, "--tokcompat-report=report.json", "--junitxml=junit.xml")
    result.assert_outcomes(passed=6, skipped=1)  # the deepseek_v32 alias has no case here: not checked
    verdicts = {c["id"]: c["verdict"] for c in report_of(pytester)["cases"] if c["kind"] == "case"}
    assert verdicts == {
        "native": "native",
        "alias": "alias",
        "broken": "broken",
        "remote": "auto_map",
        "remote-no-optin": "backend",
    }
    # The records travel on the test reports, not in user_properties: the JUnit XML carries none of them.
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    testcases = ElementTree.fromstring(junit).iter("testcase")
    assert sorted(case.get("name") for case in testcases) == [
        "alias",
        "alias:deepseek_v32",
        "alias:tokcompat_toy_new",
        "broken",
        "native",
        "remote",
        "remote-no-optin",
    ]
    assert list(ElementTree.fromstring(junit).iter("property")) == []
    assert '"verdict":' not in junit
    result.stdout.fnmatch_lines(
        [
            "*case*model_type*expected*verdict*parity*remedy*",
            "*alias*alias*match*",
            "note: remote-no-optin: the static view predicts auto_map, the measured verdict is backend*",
        ]
    )


PLUGINS_PER_PROCESS = """
import json, os
from pathlib import Path


def pytest_sessionfinish(session):
    # the worker id from pytest's own config: the environment may carry an outer xdist run's worker id
    process = getattr(session.config, "workerinput", {}).get("workerid", "controller")
    plugins = session.config.pluginmanager
    found = {name: plugins.has_plugin(name) for name in ("tokcompat-run", "tokcompat-reporter")}
    Path(session.config.rootpath, f"plugins-{process}.json").write_text(json.dumps(found))
"""


@pytest.mark.parametrize("xdist", [pytest.param([], id="n0")])  # its -n 2 twin: tests/e2e/test_plugin.py
def test_report_is_written_once_and_complete(
    pytester: pytest.Pytester, ladder_matrix: Path, xdist: list[str]
) -> None:
    report_is_written_once_and_complete(pytester, ladder_matrix, xdist)


def report_is_written_once_and_complete(
    pytester: pytest.Pytester, ladder_matrix: Path, xdist: list[str]
) -> None:
    """The report's contract, in one process or under xdist (the controller writes it, once)."""
    pytester.makeconftest(toys.alias_conftest() + PLUGINS_PER_PROCESS)
    result = run_plugin(pytester, ladder_matrix, "--tokcompat-report=report.json", *xdist)
    result.assert_outcomes(passed=6, skipped=1)
    result.stdout.fnmatch_lines(["*case*model_type*expected*verdict*parity*remedy*"])  # by the controller
    assert result.stdout.str().count("report written to") == 1
    # The reporter (records, report file, summary) lives on the controller only; every process collects.
    seen = {p.name: json.loads(p.read_text()) for p in pytester.path.glob("plugins-*.json")}
    workers = {"plugins-gw0.json", "plugins-gw1.json"} if xdist else set()
    assert set(seen) == {"plugins-controller.json"} | workers
    assert seen.pop("plugins-controller.json") == {"tokcompat-run": True, "tokcompat-reporter": True}
    assert all(found == {"tokcompat-run": True, "tokcompat-reporter": False} for found in seen.values())
    report = report_of(pytester)
    assert report["complete"] is True
    assert report["selection"] == {"partial": False}
    assert report["schema_version"] == SCHEMA_VERSION
    assert set(report["versions"]) >= {"transformers", "tokenizers", "huggingface_hub", "python"}
    cases = {c["id"]: c for c in report["cases"]}
    assert len(cases) == 7
    assert {k: c["verdict"] for k, c in cases.items() if c["kind"] == "case"} == {
        "native": "native",
        "alias": "alias",
        "broken": "broken",
        "remote": "auto_map",
        "remote-no-optin": "backend",
    }
    native = cases["native"]
    assert native["static"]["registered_natively"] is True
    assert native["attempts"][0]["remedy"] == "native"
    assert cases["alias"]["attempts"][0]["status"] == "load-error"
    assert cases["alias"]["verdict_matches_static"] is True
    assert not list(pytester.path.glob(".report.json.*")), "no temporary file is left behind"


def test_remote_code_never_runs_without_opt_in(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = pytester.path / "canary"
    monkeypatch.setenv("TOKCOMPAT_CANARY", str(canary))
    toys.remote_toy(pytester.path / "remote")
    # without the opt-in its tokenizer.json is loaded as it is (the backend override): no code runs
    matrix = write_matrix(pytester.path, "  - {id: remote, snapshot: remote, expect: backend}\n")
    run_plugin(pytester, matrix).assert_outcomes(passed=1, skipped=1)
    assert not canary.exists(), "the checkpoint's code ran although the entry did not opt in"
    matrix = write_matrix(
        pytester.path, "  - {id: remote, snapshot: remote, expect: auto_map, trust_remote_code: true}\n"
    )
    run_plugin(pytester, matrix).assert_outcomes(passed=1, skipped=1)
    assert canary.read_text() == "remote code ran"


def test_drift_is_caught_with_both_id_lists(pytester: pytest.Pytester) -> None:
    root = pytester.path
    folder = toys.native_toy(root / "drift")
    (folder / "tokenizer.json").unlink()  # ground truth comes from the (wrong) golden ids
    (folder / "vocab.json").write_text(json.dumps(toys.tokenizer_document()["model"]["vocab"]))
    merges = [m if isinstance(m, str) else " ".join(m) for m in toys.tokenizer_document()["model"]["merges"]]
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    toys.golden_for(probe_texts(), root / "golden", "drift", shift=1)
    matrix = write_matrix(root, "  - id: drift\n    snapshot: drift\n    expect: native\n")
    result = run_plugin(pytester, matrix)
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*models.yaml:3: case 'drift'*expected native, got broken*",
            "*ids differ from the golden ids*on 'Hello world'*",
            "*expected [[]*",
            "*actual   [[]*",
        ]
    )


def test_bad_matrix_reports_every_problem_with_file_and_line(pytester: pytest.Pytester) -> None:
    matrix = write_matrix(
        pytester.path,
        "  - id: one\n"
        "    snapshot: missing-folder\n"
        "    expect: natve\n"
        "  - id: two\n"
        "    repo: owner/name\n"
        "    expect: {'<5.5': native, '>=5.4': alias}\n"
        "    colour: blue\n",
    )
    result = run_plugin(pytester, matrix)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*the matrix has 4 problem(s)*",
            "*models.yaml:4: case 'one': snapshot folder*does not exist*",
            "*models.yaml:5: case 'one': unknown outcome 'natve'; use one of native, auto_map, alias, backend, broken*",
            "*models.yaml:8: case 'two': ranges '<5.5' and '>=5.4' overlap*",
            "*models.yaml:9: case 'two': unknown key 'colour'*",
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_no_expectation_for_the_installed_release_fails(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    matrix = write_matrix(
        pytester.path, "  - id: native\n    snapshot: native\n    expect: {'<1.0': native}\n"
    )
    result = run_plugin(pytester, matrix)
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*no expectation for transformers *add a range that covers it*"])


def _gpt2_alias_conftest(native_since: str | None, native_drift: str | None = None) -> str:
    return (
        "import pytest_tokcompat.matrix.aliases as aliases\n"
        "TOY = aliases.Alias(model_type='gpt2', base_config="
        "'transformers.models.gpt2.configuration_gpt2.GPT2Config', base_model_type='gpt2', "
        f"upstream_issue='https://example.invalid/1', native_since={native_since!r}, "
        f"native_drift={native_drift!r})\n"
        "def pytest_tokcompat_aliases(config):\n    return [TOY]\n"
    )


def test_obsolete_alias_alarm_until_the_release_is_recorded(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    matrix = write_matrix(pytester.path, "  - {id: native, snapshot: native, expect: native}\n")
    pytester.makeconftest(_gpt2_alias_conftest(native_since=None))
    result = run_plugin(pytester, matrix, "--tokcompat-report=report.json")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*[[]obsolete-alias[]] transformers * registers gpt2 natively*record native_since=*"]
    )
    assert [a["kind"] for a in report_of(pytester)["alarms"]] == ["obsolete-alias"]
    pytester.makeconftest(_gpt2_alias_conftest(native_since="0.0.1"))
    run_plugin(pytester, matrix).assert_outcomes(passed=2, skipped=1)


def test_native_drift_alarm_keeps_the_alias(pytester: pytest.Pytester) -> None:
    root = pytester.path
    folder = toys.alias_toy(root / "drifting")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    toys.golden_for(probe_texts(), root / "golden", "drifting", shift=1)
    matrix = write_matrix(root, "  - {id: drifting, snapshot: drifting, expect: broken}\n")
    pytester.makeconftest(_gpt2_alias_conftest(native_since=None))
    result = run_plugin(pytester, matrix)
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]native-drift[]]*registers gpt2 natively but plain loading*",
            "*record this release in native_drift*",
        ]
    )
    pytester.makeconftest(_gpt2_alias_conftest(native_since=None, native_drift=">=0.0.1"))
    run_plugin(pytester, matrix).assert_outcomes(passed=2, skipped=1)


def test_record_writes_golden_ids_and_fails_then_passes(pytester: pytest.Pytester) -> None:
    root = pytester.path
    toys.tiktoken_toy(root / "tt")  # no tokenizer.json: tiktoken, not transformers, records its golden ids
    matrix = write_matrix(root, "  - {id: tt, snapshot: tt, expect: native}\n")
    result = run_plugin(pytester, matrix)
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*not checked*--tokcompat-record*"])
    result = run_plugin(pytester, matrix, "--tokcompat-record")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*golden ids recorded to*tt.json*"])
    golden = json.loads((root / "golden" / "tt.json").read_text())
    assert golden["ids"]["Hello world"] and golden["implementation"]["name"] == "tiktoken"
    run_plugin(pytester, matrix).assert_outcomes(passed=1, skipped=1)


def test_record_cannot_record_what_no_independent_implementation_reads(pytester: pytest.Pytester) -> None:
    root = pytester.path
    toys.alias_toy(
        root / "alias"
    )  # vocab.json and merges.txt: the split pattern lives in transformers' class
    pytester.makeconftest(toys.alias_conftest())
    matrix = write_matrix(root, "  - {id: alias, snapshot: alias, expect: alias}\n")
    result = run_plugin(pytester, matrix, "--tokcompat-record")
    result.assert_outcomes(failed=1, passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*not checked*golden ids not recorded*"])
    assert not (root / "golden").exists()


def test_user_fixtures_are_parametrized_over_the_matrix(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    toys.alias_toy(pytester.path / "alias")
    toys.golden_for(probe_texts(), pytester.path / "golden", "alias")
    pytester.makeconftest(toys.alias_conftest())
    matrix = write_matrix(
        pytester.path,
        "  - {id: native, snapshot: native, expect: native}\n  - {id: alias, snapshot: alias, expect: alias}\n",
    )
    pytester.makepyfile(
        test_own="""
        def test_hello_is_two_tokens(tokcompat_case, tokcompat_tokenizer):
            ids = tokcompat_tokenizer.encode("hello world", add_special_tokens=False)
            assert len(ids) == 2, (tokcompat_case.id, ids)
        """
    )
    result = pytester.runpytest(f"--tokcompat-matrix={matrix}", "-p", "no:randomly", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_hello_is_two_tokens[[]native[]] PASSED*", "*[[]alias[]] PASSED*"])


def test_the_ini_option_and_the_projects_own_matrix_are_found(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    write_matrix(pytester.path, "  - {id: from-ini, snapshot: native, expect: native}\n")
    pytester.makeini("[pytest]\ntokcompat_matrix = models.yaml\n")
    result = pytester.runpytest("--tokcompat", "-p", "no:randomly", "-v")
    result.stdout.fnmatch_lines(["tokcompat: matrix *models.yaml", "*::from-ini PASSED*"])
    (pytester.path / "tox.ini").unlink()
    own = pytester.path / "matrix"
    own.mkdir()
    toys.native_toy(own / "native")
    (own / "models.yaml").write_text("cases:\n  - {id: project-own, snapshot: native, expect: native}\n")
    result = pytester.runpytest("--tokcompat", "-p", "no:randomly", "-v")
    result.stdout.fnmatch_lines(
        ["tokcompat: matrix *matrix/models.yaml", "*matrix/models.yaml::project-own PASSED*"]
    )


# --- pytest-native collection -------------------------------------------------------------------


def two_native_cases(pytester: pytest.Pytester, first_expects: str = "native") -> Path:
    toys.native_toy(pytester.path / "native")
    return write_matrix(
        pytester.path,
        f"  - {{id: one, snapshot: native, expect: {first_expects}}}\n"
        "  - {id: two, snapshot: native, expect: native}\n",
    )


def collected_ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stdout.lines if "::" in line and " " not in line]


def test_node_ids_pytest_prints_run_exactly_that_case(pytester: pytest.Pytester) -> None:
    matrix = two_native_cases(pytester)
    listed = collected_ids(run_plugin(pytester, matrix, "--collect-only", "-q"))
    assert listed == ["models.yaml::one", "models.yaml::two", "models.yaml::alias:deepseek_v32"]
    result = pytester.runpytest(
        "--tokcompat", f"--tokcompat-matrix={matrix}", "-p", "no:randomly", "-v", listed[1]
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["models.yaml::two PASSED*"])


@pytest.mark.parametrize(
    "arguments",
    [pytest.param([], id="no-arguments"), pytest.param([".", "models.yaml"], id="folder-and-file")],
)
def test_the_matrix_is_collected_once(pytester: pytest.Pytester, arguments: list[str]) -> None:
    matrix = two_native_cases(pytester)
    listed = collected_ids(run_plugin(pytester, matrix, "--collect-only", "-q", *arguments))
    assert listed == ["models.yaml::one", "models.yaml::two", "models.yaml::alias:deepseek_v32"]


def test_a_matrix_outside_the_testpaths_is_collected_natively(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "matrix").mkdir()
    toys.native_toy(pytester.path / "matrix" / "native")
    (pytester.path / "matrix" / "models.yaml").write_text(
        "cases:\n  - {id: own, snapshot: native, expect: native}\n"
    )
    result = pytester.runpytest("--tokcompat", "-p", "no:randomly", "--collect-only", "-q")
    assert collected_ids(result) == ["matrix/models.yaml::own", "matrix/models.yaml::alias:deepseek_v32"]
    result = pytester.runpytest("--tokcompat", "-p", "no:randomly", "-v", "matrix/models.yaml::own")
    result.assert_outcomes(passed=1)


def test_a_matrix_outside_the_rootdir_gets_one_synthetic_node(pytester: pytest.Pytester) -> None:
    from pytest_tokcompat.matrix.discovery import bundled_matrix
    from pytest_tokcompat.matrix.loader import load_matrix

    result = run_plugin(pytester, bundled_matrix(), "--collect-only", "-q")
    cases = [case.id for case in load_matrix(bundled_matrix()).cases]
    assert collected_ids(result) == [f"tokcompat/models.yaml::{case}" for case in cases] + [
        "tokcompat/models.yaml::alias:deepseek_v32"
    ]
    # Its own path with a case id selects that case (pytest collects the file itself then: no synthetic node).
    result = run_plugin(pytester, bundled_matrix(), "--collect-only", "-q", f"{bundled_matrix()}::{cases[0]}")
    (only,) = collected_ids(result)
    assert only.endswith(f"models.yaml::{cases[0]}") and not only.startswith("tokcompat/")


def test_an_empty_matrix_is_a_usage_error(pytester: pytest.Pytester) -> None:
    matrix = write_matrix(pytester.path, "")
    matrix.write_text("version: 1\ncases: []\n")
    result = run_plugin(pytester, matrix)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*models.yaml:2: 'cases' is empty: a run of this matrix would check nothing*"]
    )


# --- options ------------------------------------------------------------------------------------


def test_limit_options_have_their_real_defaults_shown_in_help(pytester: pytest.Pytester) -> None:
    from pytest_tokcompat.judge.judgement import DEFAULT_LIMITS
    from pytest_tokcompat.pytest_plugin.session import run_settings
    from pytest_tokcompat.settings import Limits

    config = pytester.parseconfig()
    assert run_settings(config).judge.limits == Limits(300.0, 512.0, 8192.0)
    assert (DEFAULT_LIMITS.load_timeout, DEFAULT_LIMITS.max_file_mb) == (300.0, 512.0)
    assert run_settings(pytester.parseconfig("--tokcompat-load-timeout=0")).judge.limits.load_timeout is None
    help_text = " ".join(pytester.runpytest("--help").stdout.str().split())
    assert "time limit of one tokenizer load, 0 for none (else $TOKCOMPAT_LOAD_TIMEOUT" in help_text
    assert (
        "refuse tokenizer files larger than this (else $TOKCOMPAT_MAX_FILE_MB, [tool.tokcompat]" in help_text
    )
    assert "default 300)" in help_text and "tokcompat_max_memory_mb" in help_text


@pytest.mark.parametrize(
    ("key", "values"),
    [
        ("load_timeout", ("7", "9", "11", "13")),
        ("max_file_mb", ("7", "9", "11", "13")),
        ("max_memory_mb", ("7", "9", "11", "13")),
        ("isolation", ("spawn", "inprocess", "process", "spawn")),
        ("truth_cache", ("ini-t", "toml-t", "env-t", "off")),
        ("truth_cache_max_mb", ("7", "9", "11", "0")),
    ],
)
def test_each_setting_is_a_flag_a_variable_a_pyproject_key_and_an_ini_key_in_that_order(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, key: str, values: tuple[str, ...]
) -> None:
    from pytest_tokcompat.pytest_plugin.session import run_settings
    from pytest_tokcompat.settings import BY_KEY, value_text

    setting = BY_KEY[key]
    ini, toml, env, flag = values
    monkeypatch.delenv(setting.variable, raising=False)  # whatever the caller's environment holds

    def seen(*args: str) -> str:
        judge = run_settings(pytester.parseconfig(*args)).judge
        text = value_text(judge, setting)
        return Path(text).name if setting.kind == "folder" and text != "off" else text

    default = seen()
    pytester.makeini(f"[pytest]\n{setting.ini} = {ini}\n")
    assert seen() == ini != default  # the ini key alone
    quoted = toml if setting.kind == "number" else f'"{toml}"'
    pytester.makepyprojecttoml(f"[tool.tokcompat]\n{key} = {quoted}\n")
    assert seen() == toml  # [tool.tokcompat] wins over the ini key
    monkeypatch.setenv(setting.variable, env)
    assert seen() == env  # the variable wins over both
    assert seen(f"{setting.flag}={flag}") == flag  # the flag wins over all


def test_a_bad_limit_from_the_environment_or_the_ini_file_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_matrix(pytester.path, "")
    monkeypatch.setenv("TOKCOMPAT_MAX_MEMORY_MB", "lots")
    result = pytester.runpytest("--tokcompat")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*$TOKCOMPAT_MAX_MEMORY_MB=lots: 'lots' is not a number of megabytes*"])
    monkeypatch.delenv("TOKCOMPAT_MAX_MEMORY_MB")
    pytester.makeini("[pytest]\ntokcompat_load_timeout = -3\n")
    result = pytester.runpytest("--tokcompat")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini tokcompat_load_timeout=-3: '-3' is negative: give seconds*"])


def test_a_bad_setting_from_pyproject_or_a_choice_that_does_not_exist_is_a_usage_error_naming_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once silently ignored: TOKCOMPAT_ISOLATION=inproces (a typo) judged in processes without a word."""
    write_matrix(pytester.path, "")
    monkeypatch.setenv("TOKCOMPAT_ISOLATION", "inproces")
    result = pytester.runpytest("--tokcompat")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*$TOKCOMPAT_ISOLATION=inproces: 'inproces' is not one of process, spawn, inprocess*"]
    )
    monkeypatch.delenv("TOKCOMPAT_ISOLATION")
    pytester.makepyprojecttoml("[tool.tokcompat]\ntruth_cache_max_mb = -1\n")
    result = pytester.runpytest("--tokcompat")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*pyproject.toml [[]tool.tokcompat[]] truth_cache_max_mb=-1: '-1' is negative*"]
    )
    pytester.makepyprojecttoml("[tool.tokcompat]\ntruth_cache_max_mb = 1.5\n")  # control: a usable value
    from pytest_tokcompat.pytest_plugin.session import run_settings

    assert run_settings(pytester.parseconfig()).judge.truth_cache_max_mb == 1.5


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--tokcompat-load-timeout", "nan", "'nan' is not a finite number of seconds"),
        ("--tokcompat-load-timeout", "inf", "'inf' is not a finite number of seconds"),
        ("--tokcompat-load-timeout", "-1", "'-1' is negative: give seconds, or 0 for no limit"),
        ("--tokcompat-load-timeout", "soon", "'soon' is not a number of seconds"),
        ("--tokcompat-max-file-mb", "nan", "'nan' is not a finite number of megabytes"),
        ("--tokcompat-max-file-mb", "inf", "'inf' is not a finite number of megabytes"),
        ("--tokcompat-max-file-mb", "0", "'0' is not a positive size in megabytes"),
        ("--tokcompat-max-file-mb", "-5", "'-5' is not a positive size in megabytes"),
    ],
)
def test_bad_limit_values_are_usage_errors(
    pytester: pytest.Pytester, option: str, value: str, message: str
) -> None:
    result = pytester.runpytest(f"{option}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*argument {option}: {message}*"])


# --- the report path and partial runs -----------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "why"),
    [
        pytest.param("blocker/report.json", "cannot create the folder *blocker", id="folder-is-a-file"),
        pytest.param("taken.json", "it is a folder; name a file ending in .json*", id="file-is-a-folder"),
    ],
)
def test_an_unwritable_report_path_is_a_usage_error_before_any_test(
    pytester: pytest.Pytester, given: str, why: str
) -> None:
    (pytester.path / "blocker").write_text("a file, not a folder")
    (pytester.path / "taken.json").mkdir()
    matrix = two_native_cases(pytester)
    result = run_plugin(pytester, matrix, f"--tokcompat-report={given}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*tokcompat: cannot write the report to {pytester.path / given}: {why}*a path ending in .json is that file*"
        ]
    )
    assert "collected" not in result.stdout.str(), "no test may run before the report path is known good"


def test_a_partial_run_never_replaces_the_report_of_a_whole_run(pytester: pytest.Pytester) -> None:
    from pytest_tokcompat.contract import library_versions

    matrix = two_native_cases(pytester)
    name = f"transformers-{library_versions()['transformers']}"
    # No trailing slash, no .json: a folder, created.
    run_plugin(pytester, matrix, "--tokcompat-report=reports").assert_outcomes(passed=2, skipped=1)
    whole = pytester.path / "reports" / f"{name}.json"
    before = whole.read_bytes()
    assert read_valid_report(whole)["selection"] == {"partial": False}
    result = run_plugin(pytester, matrix, "--tokcompat-report=reports", "-k", "one")
    result.assert_outcomes(passed=1)
    assert whole.read_bytes() == before
    # The report's write rule places the partial report beside the whole run's.
    beside = pytester.path / "reports" / f"{name}.run-2.json"
    partial = read_valid_report(beside)
    assert partial["selection"] == {"partial": True, "reason": "1 of 3 matrix items selected (-k 'one')"}
    assert partial["complete"] is False
    records = {record["id"]: record for record in partial["cases"]}
    assert records["one"]["verdict"] == "native"
    assert (records["two"]["status"], records["two"]["verdict"]) == ("not-checked", None)
    assert records["two"]["message"] == "not selected in this run (-k 'one')"
    result.stdout.fnmatch_lines(
        [
            f"report written to *{name}.run-2.json",
            "  partial run: 1 of 3 matrix items selected (-k 'one')",
            f"  (kept the report already at *{name}.json: another run's, or a complete one)",
        ]
    )
    # A later whole run replaces the whole run's report and removes the partial one it supersedes.
    run_plugin(pytester, matrix, "--tokcompat-report=reports").assert_outcomes(passed=2, skipped=1)
    assert whole.read_bytes() != before
    assert read_valid_report(whole)["complete"] is True
    assert not beside.exists()


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        pytest.param(
            ["models.yaml::two"], "1 of 3 matrix items selected (node ids on the command line)", id="node-id"
        ),
        pytest.param(
            ["--deselect", "models.yaml::alias:deepseek_v32"],
            "2 of 3 matrix items selected (--deselect)",
            id="deselect",
        ),
        pytest.param(["--collect-only"], "--collect-only: nothing ran", id="collect-only"),
        pytest.param(
            ["-x"], "stopped early (stopping after 1 failures): 2 selected items did not run", id="x"
        ),
    ],
)
def test_a_partial_selection_says_so_in_the_report(
    pytester: pytest.Pytester, arguments: list[str], reason: str
) -> None:
    matrix = two_native_cases(pytester, first_expects="alias")  # 'one' fails: -x stops there
    run_plugin(pytester, matrix, "--tokcompat-report=report.json", *arguments)
    # No report was there: the partial report takes the name (a later whole run replaces it).
    assert sorted(path.name for path in pytester.path.glob("report*.json")) == ["report.json"]
    report = report_of(pytester)
    assert report["selection"] == {"partial": True, "reason": reason}
    assert report["complete"] is False


def test_an_interrupted_or_broken_whole_run_is_incomplete_but_not_a_partial_selection(
    pytester: pytest.Pytester,
) -> None:
    matrix = two_native_cases(pytester)
    pytester.makeconftest(
        "def pytest_runtest_setup(item):\n"
        "    if item.name == 'one':\n"
        "        raise RuntimeError('the setup broke')\n"
        "def pytest_runtest_call(item):\n"
        "    if item.name == 'two':\n"
        "        raise KeyboardInterrupt\n"
    )
    pytester.runpytest(
        "--tokcompat",
        f"--tokcompat-matrix={matrix}",
        "--tokcompat-report=report.json",
        "-p",
        "no:randomly",
        no_reraise_ctrlc=True,
    )
    report = report_of(pytester)
    assert report["selection"] == {"partial": False}
    assert report["complete"] is False
    assert report["exit_status"] == pytest.ExitCode.INTERRUPTED
    why = {record["id"]: (record["status"], record["message"]) for record in report["cases"]}
    assert why == {
        "one": ("not-checked", "did not finish: RuntimeError: the setup broke"),
        "two": ("not-checked", "did not run in this session (pytest exit status 2)"),
        "alias:deepseek_v32": ("not-checked", "did not run in this session (pytest exit status 2)"),
    }


# --- the fixtures and the time limit ------------------------------------------------------------


def test_tokcompat_tokenizer_honours_the_limit_options(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    matrix = write_matrix(pytester.path, "  - {id: native, snapshot: native, expect: native}\n")
    pytester.makepyfile(test_own="def test_uses_it(tokcompat_tokenizer):\n    pass\n")
    result = pytester.runpytest(
        f"--tokcompat-matrix={matrix}", "-p", "no:randomly", "--tokcompat-max-file-mb=0.001"
    )
    result.assert_outcomes(errors=1)  # the fixture fails: an error at setup
    result.stdout.fnmatch_lines(["*case 'native' has no working tokenizer*over the 0.001 MB cap*"])


def test_pytest_timeouts_signal_method_still_fires_after_the_fixture(pytester: pytest.Pytester) -> None:
    folder = toys.native_toy(pytester.path / "native")
    judge_folder(folder)  # the judge's fork server is up (in-process runs share it): the fixture is quick
    matrix = write_matrix(pytester.path, "  - {id: native, snapshot: native, expect: native}\n")
    pytester.makepyfile(
        test_own="""
        import time

        def test_sleeps_past_the_timeout(tokcompat_tokenizer):
            assert tokcompat_tokenizer is not None
            open("fixture-done", "w").close()
            time.sleep(8)
        """
    )
    result = pytester.runpytest(
        f"--tokcompat-matrix={matrix}", "-p", "no:randomly", "--timeout=1", "--timeout-method=signal"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Timeout*1.0*"])
    assert (pytester.path / "fixture-done").is_file(), "the timeout struck in the fixture, not after it"


@pytest.fixture
def outer_timer() -> object:
    """A real-time timer of 1000 s with its own handler, as pytest-timeout's signal method sets one."""
    from pytest_tokcompat.judge.timelimit import time_limit

    def outer_handler(signum: int, frame: object) -> None:
        raise AssertionError("the outer timer fired")

    previous = signal.signal(signal.SIGALRM, outer_handler)
    signal.setitimer(signal.ITIMER_REAL, 1000)
    yield outer_handler, time_limit
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def test_time_limit_arms_the_smaller_timer_and_restores_the_outer_one(outer_timer: object) -> None:
    outer_handler, time_limit = outer_timer  # type: ignore[misc]
    with time_limit(5):
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 5
        assert signal.getsignal(signal.SIGALRM) is not outer_handler
    assert signal.getsignal(signal.SIGALRM) is outer_handler
    assert 900 < signal.getitimer(signal.ITIMER_REAL)[0] <= 1000


def test_time_limit_leaves_a_sooner_outer_timer_alone(outer_timer: object) -> None:
    outer_handler, time_limit = outer_timer  # type: ignore[misc]
    with time_limit(5000):
        assert signal.getsignal(signal.SIGALRM) is outer_handler
        assert 900 < signal.getitimer(signal.ITIMER_REAL)[0] <= 1000
    assert signal.getsignal(signal.SIGALRM) is outer_handler
    assert 900 < signal.getitimer(signal.ITIMER_REAL)[0] <= 1000


def test_time_limit_without_an_outer_timer_leaves_none() -> None:
    from pytest_tokcompat.judge.timelimit import LoadTimeout, time_limit

    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(LoadTimeout, match=r"longer than 0\.05 s"), time_limit(0.05):
        signal.pause()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) is before


def test_a_report_folder_the_run_creates_is_ignored_by_git(pytester: pytest.Pytester) -> None:
    matrix = two_native_cases(pytester)
    run_plugin(pytester, matrix, "--tokcompat-report=reports").assert_outcomes(passed=2, skipped=1)
    assert (pytester.path / "reports" / ".gitignore").read_text().splitlines()[-1] == "*"
    (pytester.path / "mine").mkdir()
    run_plugin(pytester, matrix, "--tokcompat-report=mine").assert_outcomes(passed=2, skipped=1)
    assert not (pytester.path / "mine" / ".gitignore").exists(), "an existing folder is the user's: untouched"
