"""A client's own loader judged beside the verdict: declared, run in its own child, reported, rendered.

The loaders are ``tests/data/client_pkg/tokcompat_selftest_client/loaders.py``: a config-only alias (registers ``deepseek_v32`` as the
V3 config without borrowing the tokenizer mapping, as client shims do) and a post-load repair wrapped
in a class, run on the bundled DeepSeek-V3.2-Exp snapshot under the installed transformers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import reportdata

from pytest_tokcompat.ci.grid import merge
from pytest_tokcompat.ci.loaders import loader_text
from pytest_tokcompat.ci.markdown import render_markdown
from pytest_tokcompat.ci.render import render_html
from pytest_tokcompat.errors import MatrixError
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.matrix.clients import ClientLoader, parse_loader_option
from pytest_tokcompat.matrix.loader import bundled_dir, parse_matrix

pytest_plugins = ["pytester"]
LOADERS = Path(__file__).parent / "data" / "client_pkg" / "tokcompat_selftest_client" / "loaders.py"
CONFIG_ONLY = "cfg=client_loaders:config_only_alias"
REPAIR = "repair=client_loaders:RepairedTokenizer.from_pretrained:tokenizer"


def _matrix(folder: Path, extra: str = "") -> Path:
    snapshot = bundled_dir() / "snapshots" / "deepseek-v3.2-exp"
    path = folder / "models.yaml"
    path.write_text(
        "version: 1\n"
        f"{extra}"
        "cases:\n"
        f"  - id: deepseek-v3.2-exp\n    snapshot: {json.dumps(str(snapshot))}\n"
        '    expect: {"<5.3": native, ">=5.3,<5.11": alias, ">=5.11": native}\n',
        encoding="utf-8",
    )
    return path


@pytest.fixture
def client(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(client_loaders=LOADERS.read_text(encoding="utf-8"))
    pytester.syspathinsert()
    return pytester


def _loaders(report: dict[str, Any]) -> tuple[str, dict[str, dict[str, Any]]]:
    record = next(r for r in report["cases"] if r["id"] == "deepseek-v3.2-exp")
    return record["verdict"], {result["name"]: result for result in record["loaders"]}


@pytest.mark.e2e
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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("no-colon-here", "is not of the form"),
        ("a=b:c:d:e", "is not of the form"),
        ("x=client_loaders:config_only_alias", "two loaders are named 'x'"),
    ],
)
def test_a_bad_loader_option_is_a_usage_error(client: pytest.Pytester, given: str, says: str) -> None:
    matrix = _matrix(client.path)
    result = client.runpytest(
        "--tokcompat",
        f"--tokcompat-matrix={matrix}",
        "--tokcompat-loader",
        "x=client_loaders:config_only_alias",
        "--tokcompat-loader",
        given,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*tokcompat: *{says}*"])


def test_parse_loader_option() -> None:
    assert parse_loader_option("mypkg.tokenizer:load") == ClientLoader("mypkg", "mypkg.tokenizer", "load")
    assert parse_loader_option("aiperf=a.b:Tokenizer.from_pretrained:tokenizer") == ClientLoader(
        "aiperf", "a.b", "Tokenizer.from_pretrained", "tokenizer"
    )


def test_matrix_loaders_are_validated_with_their_line(tmp_path: Path) -> None:
    text = (
        "loaders:\n"
        '  - {name: ok, call: "m:f", kwargs: {use_fast: true}}\n'
        '  - {name: bad, call: "no colon"}\n'
        '  - {name: ok, call: "m:g"}\n'
        '  - {call: "m:f", extra: 1}\n'
        "cases:\n  - {id: a, repo: o/a, expect: native}\n"
    )
    with pytest.raises(MatrixError) as raised:
        parse_matrix(text, tmp_path / "models.yaml")
    problems = [str(p) for p in raised.value.problems]
    assert len(problems) == 4, problems
    assert problems[0].startswith(f"{tmp_path / 'models.yaml'}:3: loader 'bad': 'call' must be")
    assert ":4: loader 'ok': a second loader of that name" in problems[1]
    assert ":5: a loader: unknown key(s) ['extra']" in problems[2]
    assert ":5: a loader: 'name' must be a plain name" in problems[3]
    good = parse_matrix(
        text.split("  - {name: bad")[0] + "cases:\n  - {id: a, repo: o/a, expect: native}\n",
        tmp_path / "m.yaml",
    )
    assert good.loaders == [ClientLoader("ok", "m", "f", "", {"use_fast": True})]


def _with_loader(record: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    name = result["name"]
    return {
        **record,
        "loaders": [{"call": "mypkg.tokenizer:load", "attr": None, "kwargs": {}, **result, "name": name}],
    }


def test_the_grid_shows_each_loader_beside_the_verdict_per_release(tmp_path: Path) -> None:
    drift = {
        "name": "aiperf",
        "status": "drift",
        "detail": "ids differ",
        "parity": {
            "status": "mismatch",
            "checked": 0,
            "source": "tokenizer.json (tokenizers library)",
            "text": "Hello world",
            "expected": [19923, 2058],
            "actual": [42, 6629, 10030],
        },
        "differing": 21,
        "compared": 22,
    }
    ok = {"name": "aiperf", "status": "ok", "parity": {"status": "match", "checked": 22}}
    paths = [
        reportdata.write(
            tmp_path,
            f"{version}.json",
            reportdata.report(
                version, [_with_loader(reportdata.case("deepseek-v3.2-exp", version, verdict), result)]
            ),
        )
        for version, verdict, result in (("5.5.4", "alias", drift), ("5.11.0", "native", ok))
    ]
    grid = merge([(path, json.loads(path.read_text())) for path in paths])
    markdown = render_markdown(grid)
    assert "| deepseek-v3.2-exp | alias | native Δ |" in markdown
    assert (
        "| deepseek-v3.2-exp / loader:aiperf | drift — 21/22 texts; first: 'Hello world' [42, 6629, 10030] vs "
        "[19923, 2058] | parity (22 texts) |"
    ) in markdown
    assert "loader:aiperf" in render_html(grid)
    assert grid.to_json()["loaders"]["deepseek-v3.2-exp / loader:aiperf"]["5.5.4"]["status"] == "drift"
    assert (
        grid.exit_status() == ExitCode.OK
    )  # the records carry no alarm: the rows alone change no exit status


# ---- the pytest_tokcompat_loaders hook --------------------------------------------------------------------


HOOK_CONFTEST = """
from pytest_tokcompat.matrix.clients import ClientLoader


def pytest_tokcompat_loaders(config):
    assert config.getoption("tokcompat"), "called only under --tokcompat"
    return [
        "hooked=client_loaders:config_only_alias",
        {"name": "hooked-map", "call": "client_loaders:RepairedTokenizer.from_pretrained", "attr": "tokenizer"},
        ClientLoader("hooked-obj", "client_loaders", "config_only_alias"),
    ]
"""


@pytest.mark.e2e
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


def test_without_tokcompat_the_hook_is_never_called(client: pytest.Pytester) -> None:
    client.makeconftest(HOOK_CONFTEST)
    client.makepyfile(test_plain="def test_plain():\n    assert True\n")
    client.runpytest("-p", "no:randomly").assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("returned", "says"),
    [
        ("'client_loaders:config_only_alias'", "returned str; return a list of loader specs"),
        ("['not a spec']", "loader 'not a spec' is not of the form"),
        ("[42]", "returned 42 in its list"),
        ("[{'call': 'm:f', 'extra': 1}]", "a loader has unknown key(s) ['extra']"),
        ("['x=client_loaders:f', 'x=client_loaders:g']", "two loaders are named 'x'"),
    ],
)
def test_a_bad_hook_result_is_a_usage_error_naming_the_conftest(
    client: pytest.Pytester, returned: str, says: str
) -> None:
    conftest = client.makeconftest(f"def pytest_tokcompat_loaders(config):\n    return {returned}\n")
    result = client.runpytest("--tokcompat", f"--tokcompat-matrix={_matrix(client.path)}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert len(result.stderr.lines) <= 2 and result.stderr.lines[0].startswith("ERROR: tokcompat: ")
    assert says in result.stderr.str()
    if "two loaders" not in says:
        assert f"{conftest} (pytest_tokcompat_loaders)" in result.stderr.str()
