"""A client's own loader judged with the lifecycle of an alias: wrong ids, a loader that cannot be
imported or called, and a shim made obsolete are alarms that fail the run; a shim that registers over
transformers' native class is a finding of its own. On the tiny native toy (gpt2) under the installed
transformers, through ``pytest --tokcompat`` in pytester."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import toys
from reportdata import read_valid_report

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


def test_a_shim_made_obsolete_is_an_alarm_until_its_release_is_recorded(client: pytest.Pytester) -> None:
    earlier = '{"<1.0": alias, ">=1.0": native}'  # the matrix says plain loading was not enough before
    result, record = _run(
        client, _matrix(client.path, earlier), "--tokcompat-loader", "mine=client_shims:plain"
    )
    result.assert_outcomes(failed=1, skipped=1)
    assert _kinds(record) == ["loader-obsolete"]
    alarm = record["alarms"][0]
    assert "your shim is obsolete from " + record["transformers_version"] in alarm["message"]
    assert "record native_since:" in alarm["action"]
    recorded = '  - {name: mine, call: "client_shims:plain", native_since: "1.0"}\n'
    result, record = _run(client, _matrix(client.path, earlier, "loaders:\n" + recorded))
    result.assert_outcomes(passed=1, skipped=1)
    assert record["alarms"] == [] and record["loaders"][0]["native_since"] == "1.0"
    # and a case the matrix always expected native never makes a wrapper "obsolete"
    result, record = _run(client, _matrix(client.path), "--tokcompat-loader", "mine=client_shims:plain")
    result.assert_outcomes(passed=1, skipped=1)


def test_a_shim_that_registers_over_the_native_class_is_a_finding_even_with_right_ids(
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
    result.assert_outcomes(passed=1, skipped=1)  # the ids are right: a finding, not an alarm
    over, plain = record["loaders"]
    assert over["status"] == "ok" and plain["status"] == "ok"
    assert over["replaces_native"] == [
        "AutoConfig's 'gpt2' is client_shims.replaces_native.<locals>.ClientGPT2Config, not transformers' own GPT2Config"
    ]
    assert plain["replaces_native"] == []
    result.stdout.fnmatch_lines(
        ["*toy / loader:over: parity (*replaces transformers' native class: AutoConfig's*"]
    )


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

    import reportdata

    from pytest_tokcompat.ci.grid import EXIT_ALARMS, merge, render_markdown
    from pytest_tokcompat.ci.issues_text import issue_texts

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
    assert grid.exit_status() == EXIT_ALARMS
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
