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

from pytest_tokcompat.ci.grid import merge
from pytest_tokcompat.ci.markdown import render_markdown
from pytest_tokcompat.ci.render import render_html
from pytest_tokcompat.errors import MatrixError
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.matrix.clients import ClientLoader, parse_loader_option
from pytest_tokcompat.matrix.discovery import bundled_dir
from pytest_tokcompat.matrix.loader import parse_matrix
from tests.helpers import reportdata
from tests.helpers.paths import DATA

pytest_plugins = ["pytester"]
LOADERS = DATA / "client_pkg" / "tokcompat_selftest_client" / "loaders.py"
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
