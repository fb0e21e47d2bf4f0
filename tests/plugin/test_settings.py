"""One configuration: ``[tool.tokcompat]`` read by ``pytest --tokcompat`` and every ``tokcompat`` command.

Each front-end test names the matrix only in ``[tool.tokcompat]`` and shows the run
used it, with a control: the same command without the table uses another matrix.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_tokcompat.cli import main
from pytest_tokcompat.errors import ConfigError
from pytest_tokcompat.matrix.discovery import bundled_matrix
from pytest_tokcompat.matrix.settings import find_project_config, resolve_settings
from tests.helpers import toys

pytest_plugins = ["pytester"]

MATRIX = "version: 1\ncases:\n  - {id: mine, snapshot: native, expect: native}\n"


def client_repo(root: Path, table: str = '[tool.tokcompat]\nmatrix = "ci/tokenizers.yaml"\n') -> Path:
    """A client's repository: its matrix in ci/tokenizers.yaml, named only in pyproject.toml."""
    (root / "ci").mkdir(parents=True)
    toys.native_toy(root / "ci" / "native")
    (root / "ci" / "tokenizers.yaml").write_text(MATRIX, encoding="utf-8")
    (root / "pyproject.toml").write_text(f'[project]\nname = "client"\n\n{table}', encoding="utf-8")
    return root / "ci" / "tokenizers.yaml"


def test_precedence_is_flag_then_env_then_table_then_ini_then_default(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.tokcompat]\nmatrix = "table.yaml"\nreleases = "latest"\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    env = {"TOKCOMPAT_MATRIX": "env.yaml"}

    def matrix(flags: dict[str, str], environ: dict[str, str], ini: dict[str, str]) -> Path:
        return resolve_settings(cwd=sub, flags=flags, environ=environ, ini=ini, ini_root=tmp_path).matrix

    assert matrix({"matrix": "flag.yaml"}, env, {"matrix": "ini.yaml"}) == sub / "flag.yaml"
    assert matrix({}, env, {"matrix": "ini.yaml"}) == sub / "env.yaml"
    assert matrix({}, {}, {"matrix": "ini.yaml"}) == tmp_path / "table.yaml"  # relative to pyproject.toml
    (tmp_path / "pyproject.toml").write_text("[tool.other]\nx = 1\n")
    assert matrix({}, {}, {"matrix": "ini.yaml"}) == tmp_path / "ini.yaml"
    assert matrix({}, {}, {}) == bundled_matrix().resolve()
    settings = resolve_settings(cwd=sub, environ={})
    assert settings.releases is None and settings.output == sub / "tokcompat-grid"
    assert settings.origin["matrix"] == "the bundled matrix"


def test_the_nearest_table_upwards_wins_and_none_switches_it_off(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.tokcompat]\nmatrix = "outer.yaml"\n')
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'no-table'\n")
    assert find_project_config(inner, {}).path == tmp_path / "pyproject.toml"
    assert find_project_config(inner, {"TOKCOMPAT_CONFIG": "none"}).path is None
    named = find_project_config(inner, {"TOKCOMPAT_CONFIG": str(tmp_path / "a" / "pyproject.toml")})
    assert named.path == tmp_path / "a" / "pyproject.toml" and dict(named.values) == {}


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            '[tool.tokcompat]\nmatrx = "m.yaml"\n',
            "unknown key 'matrx'; use one of cache, isolation, load_timeout, loaders, matrix",
        ),
        ("[tool.tokcompat]\nmatrix = 3\n", "matrix must be a non-empty string"),
        ('[tool.tokcompat]\nloaders = "a:b"\n', "loaders must be a list of strings"),
        ("[tool.tokcompat\nmatrix = 1\n", "not valid TOML"),
        ('[tool]\ntokcompat = "x"\n', "[tool.tokcompat] must be a table"),
    ],
)
def test_bad_configuration_is_one_line_naming_the_file_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    table: str,
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["resolve", "gpt2"]) == 0, "the control: the name resolves where no table is bad"
    capsys.readouterr()
    (tmp_path / "pyproject.toml").write_text(table)
    with pytest.raises(ConfigError, match=r"pyproject\.toml"):
        find_project_config(tmp_path, {})
    assert main(["resolve", "gpt2"]) == 2
    err = capsys.readouterr().err
    assert message in err and str(tmp_path / "pyproject.toml") in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_resolve_and_check_use_the_table_s_matrix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    matrix = client_repo(tmp_path / "repo")
    (tmp_path / "repo" / "src").mkdir()
    monkeypatch.chdir(tmp_path / "repo" / "src")  # a subfolder: the table is found upwards
    assert main(["resolve", "mine", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["matrix"], document["case_id"]) == (str(matrix), "mine")
    assert main(["check", "mine", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["id"], record["verdict"], record["expected"]) == ("mine", "native", "native")
    # the control: without the table, and with the file elsewhere, "mine" is in no matrix
    (tmp_path / "repo" / "pyproject.toml").write_text('[project]\nname = "client"\n')
    matrix.rename(tmp_path / "repo" / "ci" / "other.yaml")
    main(["resolve", "mine", "--json"])
    document = json.loads(capsys.readouterr().out)
    assert (document["matrix"], document["case_id"]) == (str(bundled_matrix().resolve()), None)


def test_the_readme_layout_needs_no_matrix_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    matrix = client_repo(tmp_path, table="")  # ci/tokenizers.yaml, no [tool.tokcompat]
    monkeypatch.chdir(tmp_path)
    assert main(["resolve", "mine", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["matrix"] == str(matrix)


def test_pytest_tokcompat_uses_the_table_s_matrix_before_the_ini(pytester: pytest.Pytester) -> None:
    client_repo(pytester.path)
    toys.native_toy(pytester.path / "native")
    (pytester.path / "ini.yaml").write_text(
        MATRIX.replace("id: mine, snapshot: native", "id: ini-one, snapshot: native")
    )
    pytester.makeini("[pytest]\ntokcompat_matrix = ini.yaml\n")
    result = pytester.runpytest("--tokcompat", "-p", "no:randomly", "-v")
    result.stdout.fnmatch_lines(["tokcompat: matrix *ci/tokenizers.yaml", "*tokenizers.yaml::mine PASSED*"])
    assert result.ret == 0
    # the control: the same run without the table takes the ini's matrix
    (pytester.path / "pyproject.toml").write_text('[project]\nname = "client"\n')
    result = pytester.runpytest("--tokcompat", "-p", "no:randomly", "-v")
    result.stdout.fnmatch_lines(["tokcompat: matrix *ini.yaml", "*ini.yaml::ini-one PASSED*"])


def test_the_table_s_report_folder_is_where_pytest_writes_and_report_reads(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    client_repo(pytester.path, '[tool.tokcompat]\nmatrix = "ci/tokenizers.yaml"\nreport = "reports"\n')
    result = pytester.runpytest("--tokcompat", "-p", "no:randomly")
    assert result.ret == 0
    written = sorted((pytester.path / "reports").glob("transformers-*.json"))
    assert len(written) == 1
    monkeypatch.chdir(pytester.path)
    capsys.readouterr()
    assert main(["report", "--format", "json"]) == 0
    assert "mine" in json.loads(capsys.readouterr().out)["rows"]
    (pytester.path / "pyproject.toml").write_text('[tool.tokcompat]\nmatrix = "ci/tokenizers.yaml"\n')
    assert main(["report"]) == 2  # the control: no folder named, no reports given
    assert "no reports given" in capsys.readouterr().err


def test_the_table_s_loaders_replace_the_ini_s_and_join_the_command_line_s(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    (pytester.path / "models.yaml").write_text(MATRIX)
    pytester.makeini("[pytest]\ntokcompat_loaders =\n    x=pkg:from_ini\n")
    argv = [
        "--tokcompat",
        "--tokcompat-matrix=models.yaml",
        "--collect-only",
        "--tokcompat-loader",
        "x=pkg:cli",
    ]
    result = pytester.runpytest(*argv)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, "the control: the ini's x and the command line's x"
    result.stderr.fnmatch_lines(["*two loaders are named 'x'*"])
    (pytester.path / "pyproject.toml").write_text('[tool.tokcompat]\nloaders = ["y=pkg:from_table"]\n')
    assert pytester.runpytest(*argv).ret == 0, "the table's loaders replace the ini's"
    (pytester.path / "pyproject.toml").write_text('[tool.tokcompat]\nloaders = ["x=pkg:from_table"]\n')
    result = pytester.runpytest(*argv)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*two loaders are named 'x'*"])
