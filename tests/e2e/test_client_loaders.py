# ruff: noqa: F811 (the fixtures tests/unit/ci/test_client_loaders.py defines, imported by name)
"""End to end: A client's own loader judged beside the verdict: declared, run in its own child, reported, rendered.

The rest of this subject's tests, and the helpers these use, are in tests/unit/ci/test_client_loaders.py.
"""

from __future__ import annotations

import pytest

from pytest_tokcompat.ci.grid import merge
from pytest_tokcompat.ci.loaders import loader_text
from pytest_tokcompat.ci.markdown import render_markdown
from pytest_tokcompat.exitcodes import ExitCode
from tests.helpers import reportdata
from tests.unit.ci.test_client_loaders import CONFIG_ONLY, HOOK_CONFTEST, REPAIR, _loaders, _matrix, client  # noqa: F401 (fixtures)


def test_config_only_alias_drifts_where_the_verdict_is_alias_and_keeps_parity_where_native(
    client: pytest.Pytester,
) -> None:
    matrix = _matrix(client.path)
    result = client.runpytest(
        "--tokcompat",
        f"--tokcompat-matrix={matrix}",
        "-p",
        "no:randomly",
        "--tokcompat-loader",
        CONFIG_ONLY,
        "--tokcompat-loader",
        REPAIR,
        "--tokcompat-report=report.json",
    )
    report = reportdata.read_valid_report(client.path / "report.json")
    verdict, loaders = _loaders(report)
    config_only, repair = loaders["cfg"], loaders["repair"]
    record = next(r for r in report["cases"] if r["id"] == "deepseek-v3.2-exp")
    kinds = sorted((alarm["kind"], alarm["subject"]) for alarm in record["alarms"])
    assert verdict in ("alias", "native"), verdict
    if verdict == "alias":  # transformers does not know deepseek_v32: the config-only shim rebuilds Llama
        assert config_only["status"] == "drift", config_only
        assert config_only["parity"]["status"] == "mismatch"
        assert 0 < config_only["differing"] <= config_only["compared"]
        assert kinds == [("loader-drift", "loader:cfg")]
        result.assert_outcomes(passed=1, failed=1)  # the alias item passes; the loader's alarm fails the case
    else:  # registered natively: the shim steps aside (registers nothing) and plain loading keeps parity
        assert config_only["status"] == "ok", config_only
        assert config_only["parity"]["status"] == "match"
        assert config_only["registers"] == [] and kinds == []  # obsolete from when: the grid's to tell
        result.assert_outcomes(passed=2)
    assert repair["status"] == "ok", repair  # repaired after loading: right ids on either
    assert (
        repair["attr"] == "tokenizer" and repair["call"] == "client_loaders:RepairedTokenizer.from_pretrained"
    )
    summary = result.stdout.str()
    assert f"deepseek-v3.2-exp / loader:cfg: {loader_text(config_only)}" in summary
    assert f"deepseek-v3.2-exp / loader:repair: {loader_text(repair)}" in summary
    grid = merge([(client.path / "report.json", report)])
    text = render_markdown(grid)
    assert f"| deepseek-v3.2-exp | {verdict} |" in text
    assert f"| deepseek-v3.2-exp / loader:cfg | {loader_text(config_only)} |" in text
    if verdict == "alias":
        assert grid.exit_status() == ExitCode.ALARMS
        assert "- **loader-drift** `loader:cfg` on case deepseek-v3.2-exp" in text
    else:
        assert grid.exit_status() == ExitCode.OK


def test_the_loader_runs_isolated_its_registrations_stay_in_its_child(client: pytest.Pytester) -> None:
    """The conftest checks transformers' registries; here the in-process pytester run shares them."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    before = sorted(CONFIG_MAPPING._extra_content)
    matrix = _matrix(client.path)
    result = client.runpytest(
        "--tokcompat", f"--tokcompat-matrix={matrix}", "-p", "no:randomly", "--tokcompat-loader", CONFIG_ONLY
    )
    assert result.parseoutcomes()["passed"] >= 1
    assert sorted(CONFIG_MAPPING._extra_content) == before


def test_matrix_key_and_ini_option_declare_loaders_and_failures_are_records(client: pytest.Pytester) -> None:
    matrix = _matrix(
        client.path,
        "loaders:\n"
        '  - {name: wrapped, call: "client_loaders:RepairedTokenizer.from_pretrained", attr: tokenizer}\n'
        '  - {name: missing, call: "client_loaders:no_such_loader"}\n',
    )
    client.makeini(
        "[pytest]\ntokcompat_loaders =\n    nowrap=client_loaders:RepairedTokenizer.from_pretrained\n"
    )
    result = client.runpytest(
        "--tokcompat", f"--tokcompat-matrix={matrix}", "-p", "no:randomly", "--tokcompat-report=report.json"
    )
    result.assert_outcomes(passed=1, failed=1)  # the loader that cannot be called fails the case
    _, loaders = _loaders(reportdata.read_valid_report(client.path / "report.json"))
    assert list(loaders) == ["wrapped", "missing", "nowrap"]
    assert loaders["wrapped"]["status"] == "ok"
    assert loaders["missing"]["status"] == "load-error"
    assert "no attribute 'no_such_loader'" in loaders["missing"]["detail"]
    assert loaders["nowrap"]["status"] == "load-error"
    assert "give the attribute path to the tokenizer" in loaders["nowrap"]["detail"]


def test_the_hook_declares_loaders_after_the_matrix_and_before_the_options(client: pytest.Pytester) -> None:
    client.makeconftest(HOOK_CONFTEST)
    client.makepyfile(
        other_plugin="def pytest_tokcompat_loaders(config):\n    return ['second=client_loaders:config_only_alias']\n"
    )
    matrix = _matrix(
        client.path, 'loaders:\n  - {name: from-matrix, call: "client_loaders:config_only_alias"}\n'
    )
    result = client.runpytest(
        "--tokcompat",
        f"--tokcompat-matrix={matrix}",
        "-p",
        "no:randomly",
        "-p",
        "other_plugin",
        "--tokcompat-loader",
        REPAIR,
        "--tokcompat-report=report.json",
    )
    verdict, loaders = _loaders(reportdata.read_valid_report(client.path / "report.json"))
    # drifting shims (where the verdict is alias) are alarms that fail the case
    result.assert_outcomes(**({"passed": 1, "failed": 1} if verdict == "alias" else {"passed": 2}))
    # every implementation is called and the lists concatenated (pluggy: the last registered first)
    assert list(loaders) == ["from-matrix", "hooked", "hooked-map", "hooked-obj", "second", "repair"]
    assert loaders["hooked-map"]["status"] == "ok" and loaders["hooked-map"]["attr"] == "tokenizer"
    expected = "drift" if verdict == "alias" else "ok"
    assert {loaders[name]["status"] for name in ("from-matrix", "hooked", "hooked-obj", "second")} == {
        expected
    }
