"""A client's own loader judged with the lifecycle of an alias: wrong ids, a loader that cannot be
imported or called, and a shim made obsolete are alarms that fail the run; a shim that registers over
transformers' native class is a finding of its own. On the tiny native toy (gpt2) under the installed
transformers, through ``pytest --tokcompat`` in pytester."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import toys
from tests.helpers.reportdata import read_valid_report

pytest_plugins = ["pytester"]

CLIENT = '''
import os


def plain(path, **kwargs):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def adds(path, add=None, **kwargs):
    """A shim that adds a token (as a client's post-load fix might): 'Hello wor' then encodes as one id."""
    tokenizer = plain(path)
    if add:
        tokenizer.add_tokens([add])
    return tokenizer


def offline_branch(path, **kwargs):
    if os.environ.get("HF_HUB_OFFLINE"):
        raise ValueError(f"Repo id must be in the form 'repo_name' or 'namespace/repo_name': {path!r}")
    return plain(path)


def replaces_native(path, **kwargs):
    from transformers import AutoConfig, GPT2Config

    class ClientGPT2Config(GPT2Config):
        model_type = "gpt2"

    AutoConfig.register("gpt2", ClientGPT2Config, exist_ok=True)
    return plain(path)
'''


@pytest.fixture
def client(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(client_shims=CLIENT)
    pytester.syspathinsert()
    toys.native_toy(pytester.path / "native")
    return pytester


def _matrix(root: Path, expect: str = "native", loaders: str = "") -> Path:
    path = root / "models.yaml"
    path.write_text(
        f"version: 1\n{loaders}cases:\n  - id: toy\n    snapshot: native\n    expect: {expect}\n",
        encoding="utf-8",
    )
    return path


def _run(client: pytest.Pytester, matrix: Path, *extra: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    result = client.runpytest(
        "--tokcompat",
        f"--tokcompat-matrix={matrix}",
        "-p",
        "no:randomly",
        "--tokcompat-report=report.json",
        *extra,
    )
    report = read_valid_report(client.path / "report.json")
    return result, next(r for r in report["cases"] if r["id"] == "toy")


def _kinds(record: dict[str, Any]) -> list[str]:
    return [alarm["kind"] for alarm in record["alarms"]]


def test_a_loader_that_gives_right_ids_passes(client: pytest.Pytester) -> None:
    result, record = _run(client, _matrix(client.path), "--tokcompat-loader", "mine=client_shims:plain")
    result.assert_outcomes(passed=1, skipped=1)
    assert record["loaders"][0]["status"] == "ok" and record["alarms"] == []


def test_a_drifting_loader_fails_the_run_naming_the_loader_the_case_and_the_text(
    client: pytest.Pytester,
) -> None:
    matrix = _matrix(client.path)
    result, record = _run(
        client,
        matrix,
        "--tokcompat-loader",
        "mine=client_shims:adds",
        "--tokcompat-loader-kwargs",
        '{"add": "Hello wor"}',
    )
    result.assert_outcomes(failed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert (
        record["loaders"][0]["kwargs"] == {"add": "Hello wor"} and record["loaders"][0]["status"] == "drift"
    )
    assert _kinds(record) == ["loader-drift"]
    alarm = record["alarms"][0]
    assert alarm["subject"] == "loader:mine" and alarm["case"] == "toy"
    assert "your loader mine (client_shims:adds) loads toy with wrong ids" in alarm["message"]
    assert "first: 'Hello world' gives [" in alarm["message"], alarm["message"]
    assert "here plain AutoTokenizer.from_pretrained gives right ids" in alarm["action"]
    result.stdout.fnmatch_lines(
        ["*models.yaml:*your loader mine (client_shims:adds) loads toy with wrong ids*"]
    )
    # the control: the same loader without the keyword argument adds nothing, and passes
    result, record = _run(client, matrix, "--tokcompat-loader", "mine=client_shims:adds")
    result.assert_outcomes(passed=1, skipped=1)
    assert record["alarms"] == []


def test_a_loader_whose_module_cannot_be_imported_fails_the_run_naming_it(client: pytest.Pytester) -> None:
    result, record = _run(client, _matrix(client.path), "--tokcompat-loader", "mine=client_shimz:plain")
    result.assert_outcomes(failed=1, skipped=1)
    assert _kinds(record) == ["loader-error"]
    message = record["alarms"][0]["message"]
    assert "your loader mine (client_shimz:plain) cannot be used on toy" in message
    assert "ModuleNotFoundError: No module named 'client_shimz'" in message


def test_a_shim_that_registers_over_a_right_native_class_is_obsolete_and_a_finding(
    client: pytest.Pytester,
) -> None:
    result, record = _run(
        client,
        _matrix(client.path),
        "--tokcompat-loader",
        "over=client_shims:replaces_native",
        "--tokcompat-loader",
        "plain=client_shims:plain",
    )
    result.assert_outcomes(failed=1, skipped=1)
    over, plain = record["loaders"]
    assert over["status"] == "ok" and plain["status"] == "ok"  # the ids are right either way
    assert over["registers"] == ["gpt2"] and plain["registers"] == []
    assert over["replaces_native"] == [
        "AutoConfig's 'gpt2' is client_shims.replaces_native.<locals>.ClientGPT2Config, not transformers' own GPT2Config"
    ]
    assert plain["replaces_native"] == []
    assert _kinds(record) == ["loader-obsolete"] and record["alarms"][0]["subject"] == "loader:over"
    version = record["transformers_version"]
    message = record["alarms"][0]["message"]
    assert f"registers gpt2 for toy under transformers {version}, where plain AutoTokenizer" in message
    assert f"your shim is obsolete from {version}" in message
    result.stdout.fnmatch_lines(
        ["*toy / loader:over: parity (*replaces transformers' native class: AutoConfig's*"]
    )
    # recorded: the alarm is acknowledged, the finding stays
    recorded = '  - {name: over, call: "client_shims:replaces_native", native_since: "1.0"}\n'
    result, record = _run(client, _matrix(client.path, loaders="loaders:\n" + recorded))
    result.assert_outcomes(passed=1, skipped=1)
    assert record["alarms"] == [] and record["loaders"][0]["native_since"] == "1.0"
    assert record["loaders"][0]["replaces_native"]


def test_a_plain_wrapper_is_never_obsolete_on_its_own_release(client: pytest.Pytester) -> None:
    earlier = '{"<1.0": alias, ">=1.0": native}'  # plain loading was not enough before: the grid's business
    result, record = _run(
        client, _matrix(client.path, earlier), "--tokcompat-loader", "mine=client_shims:plain"
    )
    result.assert_outcomes(passed=1, skipped=1)
    assert record["alarms"] == [] and record["loaders"][0]["registers"] == []


def test_a_loader_is_called_without_the_offline_setting_the_grid_made(
    client: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("TOKCOMPAT_SET_BY_TOOL", "HF_HUB_OFFLINE")  # as tokcompat grid's environments say
    matrix = _matrix(client.path)
    result, record = _run(client, matrix, "--tokcompat-loader", "aiperf=client_shims:offline_branch")
    result.assert_outcomes(passed=1, skipped=1)
    assert record["loaders"][0]["status"] == "ok" and record["loaders"][0]["environment"] == {}
    # the control: where the user's own environment is offline, the loader runs offline and says so
    monkeypatch.delenv("TOKCOMPAT_SET_BY_TOOL")
    result, record = _run(client, matrix, "--tokcompat-loader", "aiperf=client_shims:offline_branch")
    result.assert_outcomes(failed=1, skipped=1)
    assert record["loaders"][0]["environment"] == {"HF_HUB_OFFLINE": "1"}
    assert "cannot be used on toy under transformers" in record["alarms"][0]["message"]
    assert "called with HF_HUB_OFFLINE=1" in record["alarms"][0]["message"]


@pytest.mark.parametrize(
    ("given", "says"),
    [
        (["--tokcompat-loader-kwargs", "{bad"], "--tokcompat-loader-kwargs '{bad' is not JSON"),
        (["--tokcompat-loader-kwargs", "other={}"], "no loader is named 'other'"),
    ],
)
def test_bad_loader_kwargs_are_a_usage_error(client: pytest.Pytester, given: list[str], says: str) -> None:
    result = client.runpytest(
        "--tokcompat",
        f"--tokcompat-matrix={_matrix(client.path)}",
        "--tokcompat-loader",
        "mine=client_shims:plain",
        *given,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str() and len(result.stderr.lines) <= 2, result.stderr.str()


def test_the_ini_option_gives_keyword_arguments(client: pytest.Pytester) -> None:
    client.makeini(
        "[pytest]\ntokcompat_loaders =\n    mine=client_shims:adds\n"
        'tokcompat_loader_kwargs =\n    mine={"add": "Hello wor"}\n'
    )
    result, record = _run(client, _matrix(client.path))
    result.assert_outcomes(failed=1, skipped=1)
    assert record["loaders"][0]["kwargs"] == {"add": "Hello wor"} and _kinds(record) == ["loader-drift"]


# ---- the grid, the job summary and the issue text, from report records ---------------------------------------


def _loader_failed(record: dict[str, Any], alarm: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    return {
        **record,
        "status": "failed",
        "alarms": [alarm],
        "loaders": [{"name": "cfg", "call": "client:load", "attr": None, "kwargs": {}, **result}],
    }


def test_the_grid_raises_the_loaders_alarms_naming_loader_cases_and_releases(tmp_path: Path) -> None:
    import json

    from pytest_tokcompat.ci.grid import merge
    from pytest_tokcompat.ci.issues_text import issue_texts
    from pytest_tokcompat.ci.markdown import render_markdown
    from pytest_tokcompat.exitcodes import ExitCode
    from tests.helpers import reportdata

    drift = {"status": "drift", "detail": "ids differ", "differing": 357, "compared": 400}
    drift["parity"] = {"status": "mismatch", "checked": 0, "text": "Hello", "expected": [1], "actual": [2, 3]}
    ok = {"status": "ok", "parity": {"status": "match", "checked": 400}}
    ok_replacing = {
        **ok,
        "replaces_native": ["AutoConfig's 'deepseek_v32' is client.Config, not transformers' own"],
    }
    reports = []
    for version, verdict, result, kind in (
        ("5.5.4", "alias", drift, "loader-drift"),
        ("5.10.4", "alias", drift, "loader-drift"),
        ("5.11.0", "native", ok_replacing, "loader-obsolete"),
    ):
        records = [
            _loader_failed(
                reportdata.case(case_id, version, verdict),
                reportdata.alarm(kind, "loader:cfg", version, f"your loader cfg … {case_id} under {version}")
                | {"case": case_id},
                result,
            )
            for case_id in ("deepseek-v3.2-exp", "deepseek-v3.2")
        ]
        path = reportdata.write(tmp_path, f"{version}.json", reportdata.report(version, records))
        reports.append((path, json.loads(path.read_text())))
    grid = merge(reports)
    assert grid.exit_status() == ExitCode.ALARMS
    text = render_markdown(grid)
    assert "| deepseek-v3.2-exp | alias | alias | native Δ |" in text, "the verdicts are as expected: no ✗"
    assert "drift — 357/400 texts" in text
    assert "parity (400 texts); replaces transformers' native class: AutoConfig's 'deepseek_v32'" in text
    assert (
        "- **loader-drift** `loader:cfg` on cases deepseek-v3.2, deepseek-v3.2-exp, first in transformers 5.5.4 "
        "(also 5.10.4)"
    ) in text or (
        "- **loader-drift** `loader:cfg` on cases deepseek-v3.2-exp, deepseek-v3.2, first in transformers 5.5.4 "
        "(also 5.10.4)"
    ) in text, text
    assert "- **loader-obsolete** `loader:cfg` on cases" in text and "first in transformers 5.11.0" in text
    issues = {issue.title: issue for issue in issue_texts(grid.alarms)}
    assert set(issues) == {
        "tokcompat: your loader:cfg gives wrong token ids",
        "tokcompat: your loader:cfg shim is obsolete",
    }
    obsolete = issues["tokcompat: your loader:cfg shim is obsolete"].body
    assert "### Cases" in obsolete and "from transformers 5.11.0 on" in obsolete


def test_a_loader_row_names_the_dimension_that_drifts_where_the_ids_match() -> None:
    from pytest_tokcompat.ci.loaders import loader_text

    chat = {
        "status": "drift",
        "detail": "chat_template: apply_chat_template renders another text",
        "differing": 0,
        "compared": 400,
        "parity": {"status": "contract-mismatch", "checked": 400, "dimension": "chat_template"},
    }
    assert loader_text(chat) == (
        "drift in chat_template (ids match); chat_template: apply_chat_template renders another text"
    )
    ids = {**chat, "differing": 3, "parity": {"status": "mismatch", "dimension": "ids", "text": "a"}}
    assert loader_text(ids).startswith("drift — 3/400 texts; first: 'a' ? vs ?")  # the control: ids drift


def test_the_grid_finds_a_shim_that_steps_aside_obsolete_from_the_release_plain_loading_is_right(
    tmp_path: Path,
) -> None:
    """aiperf's alias skips itself where transformers knows the type: no run of one release can tell."""
    import json

    from pytest_tokcompat.ci.grid import Grid, merge
    from pytest_tokcompat.ci.markdown import render_markdown
    from pytest_tokcompat.exitcodes import ExitCode
    from tests.helpers import reportdata

    ok = {"status": "ok", "parity": {"status": "match", "checked": 400}}
    drift = {
        "status": "drift",
        "parity": {"status": "mismatch", "text": "Hello"},
        "differing": 3,
        "compared": 4,
    }

    def grid_of(native_since: str | None, plain_before: bool) -> Grid:
        reports = []
        for version, verdict, result in (
            ("5.5.4", "alias", drift),
            ("5.10.4", "alias", drift),
            ("5.11.0", "native", ok),
        ):
            if plain_before:  # the control: plain loading was right all along
                record = reportdata.case("deepseek-v3.2-exp", version, "native")
            else:
                record = reportdata.case("deepseek-v3.2-exp", version, verdict, drift=True)
            loader = {"name": "aiperf", "call": "aiperf.tok:Tokenizer.from_pretrained", "attr": "tokenizer"}
            loader |= {"kwargs": {}, **result} | ({"native_since": native_since} if native_since else {})
            record["loaders"] = [loader]
            path = reportdata.write(tmp_path, f"{version}.json", reportdata.report(version, [record]))
            reports.append((path, json.loads(path.read_text())))
        return merge(reports)

    grid = grid_of(None, plain_before=False)
    assert grid.exit_status() == ExitCode.ALARMS
    obsolete = [alarm for alarm in grid.alarms if alarm.kind == "loader-obsolete"]
    assert len(obsolete) == 1 and obsolete[0].first_release == "5.11.0", obsolete
    assert obsolete[0].cases == ["deepseek-v3.2-exp"]
    assert "which it did not under 5.5.4: your shim is obsolete from 5.11.0" in obsolete[0].message
    assert "your loader aiperf (aiperf.tok:Tokenizer.from_pretrained:tokenizer)" in obsolete[0].message
    assert (
        "- **loader-obsolete** `loader:aiperf` on case deepseek-v3.2-exp, first in transformers 5.11.0"
        in (render_markdown(grid))
    )
    assert not [a for a in grid_of("5.11", plain_before=False).alarms if a.kind == "loader-obsolete"]
    assert grid_of(None, plain_before=True).exit_status() == ExitCode.OK
