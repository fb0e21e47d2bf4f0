"""Self-tests of ``pytest --tokcompat`` through pytester, with and without xdist."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import toys
from reportdata import read_valid_report

from pytest_tokcompat.contract import SCHEMA_VERSION
from pytest_tokcompat.judge.probes import probe_texts

pytest_plugins = ["pytester"]

XDIST_MODES = [pytest.param([], id="n0"), pytest.param(["-n", "2"], id="n2")]


def write_matrix(root: Path, body: str) -> Path:
    path = root / "models.yaml"
    path.write_text("version: 1\ncases:\n" + body, encoding="utf-8")
    return path


def run(pytester: pytest.Pytester, matrix: Path, *extra: str) -> pytest.RunResult:
    return pytester.runpytest("--tokcompat", f"--tokcompat-matrix={matrix}", "-p", "no:randomly", *extra)


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
        "  - {id: remote-no-optin, snapshot: remote-no-optin, expect: broken}\n",
    )


@pytest.mark.parametrize("xdist", XDIST_MODES)
def test_every_verdict_of_the_ladder(
    pytester: pytest.Pytester, ladder_matrix: Path, xdist: list[str]
) -> None:
    result = run(pytester, ladder_matrix, "--tokcompat-report=report.json", *xdist)
    result.assert_outcomes(passed=6, skipped=1)  # the deepseek_v32 alias has no case here: not checked
    verdicts = {c["id"]: c["verdict"] for c in report_of(pytester)["cases"] if c["kind"] == "case"}
    assert verdicts == {
        "native": "native",
        "alias": "alias",
        "broken": "broken",
        "remote": "auto_map",
        "remote-no-optin": "broken",
    }
    result.stdout.fnmatch_lines(
        [
            "*case*model_type*expected*verdict*parity*remedy*",
            "*alias*alias*match*",
            "note: remote-no-optin: the static view predicts auto_map, the measured verdict is broken*",
        ]
    )


@pytest.mark.parametrize("xdist", XDIST_MODES)
def test_report_is_written_once_and_complete(
    pytester: pytest.Pytester, ladder_matrix: Path, xdist: list[str]
) -> None:
    run(pytester, ladder_matrix, "--tokcompat-report=report.json", *xdist)
    report = report_of(pytester)
    assert report["schema_version"] == SCHEMA_VERSION
    assert set(report["versions"]) >= {"transformers", "tokenizers", "huggingface_hub", "python"}
    cases = {c["id"]: c for c in report["cases"]}
    assert len(cases) == 7
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
    matrix = write_matrix(pytester.path, "  - {id: remote, snapshot: remote, expect: broken}\n")
    run(pytester, matrix).assert_outcomes(passed=1, skipped=1)
    assert not canary.exists(), "the checkpoint's code ran although the entry did not opt in"
    matrix = write_matrix(
        pytester.path, "  - {id: remote, snapshot: remote, expect: auto_map, trust_remote_code: true}\n"
    )
    run(pytester, matrix).assert_outcomes(passed=1, skipped=1)
    assert canary.read_text() == "remote code ran"


@pytest.mark.parametrize("xdist", XDIST_MODES)
def test_drift_is_caught_with_both_id_lists(pytester: pytest.Pytester, xdist: list[str]) -> None:
    root = pytester.path
    folder = toys.native_toy(root / "drift")
    (folder / "tokenizer.json").unlink()  # ground truth comes from the (wrong) golden ids
    (folder / "vocab.json").write_text(json.dumps(toys.tokenizer_document()["model"]["vocab"]))
    merges = [m if isinstance(m, str) else " ".join(m) for m in toys.tokenizer_document()["model"]["merges"]]
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    toys.golden_for(probe_texts(), root / "golden", "drift", shift=1)
    matrix = write_matrix(root, "  - id: drift\n    snapshot: drift\n    expect: native\n")
    result = run(pytester, matrix, *xdist)
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
    result = run(pytester, matrix)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*the matrix has 4 problem(s)*",
            "*models.yaml:4: case 'one': snapshot folder*does not exist*",
            "*models.yaml:5: case 'one': unknown outcome 'natve'; use one of native, auto_map, alias, broken*",
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
    result = run(pytester, matrix)
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


@pytest.mark.parametrize("xdist", XDIST_MODES)
def test_obsolete_alias_alarm_until_the_release_is_recorded(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    toys.native_toy(pytester.path / "native")
    matrix = write_matrix(pytester.path, "  - {id: native, snapshot: native, expect: native}\n")
    pytester.makeconftest(_gpt2_alias_conftest(native_since=None))
    result = run(pytester, matrix, "--tokcompat-report=report.json", *xdist)
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*[[]obsolete-alias[]] transformers * registers gpt2 natively*record native_since=*"]
    )
    assert [a["kind"] for a in report_of(pytester)["alarms"]] == ["obsolete-alias"]
    pytester.makeconftest(_gpt2_alias_conftest(native_since="0.0.1"))
    run(pytester, matrix, *xdist).assert_outcomes(passed=2, skipped=1)


def test_native_drift_alarm_keeps_the_alias(pytester: pytest.Pytester) -> None:
    root = pytester.path
    folder = toys.alias_toy(root / "drifting")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    toys.golden_for(probe_texts(), root / "golden", "drifting", shift=1)
    matrix = write_matrix(root, "  - {id: drifting, snapshot: drifting, expect: broken}\n")
    pytester.makeconftest(_gpt2_alias_conftest(native_since=None))
    result = run(pytester, matrix)
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*[[]native-drift[]]*registers gpt2 natively but plain loading*",
            "*record this release in native_drift*",
        ]
    )
    pytester.makeconftest(_gpt2_alias_conftest(native_since=None, native_drift=">=0.0.1"))
    run(pytester, matrix).assert_outcomes(passed=2, skipped=1)


def test_record_writes_golden_ids_and_fails_then_passes(pytester: pytest.Pytester) -> None:
    root = pytester.path
    toys.alias_toy(root / "alias")
    pytester.makeconftest(toys.alias_conftest())
    matrix = write_matrix(root, "  - {id: alias, snapshot: alias, expect: alias}\n")
    result = run(pytester, matrix)
    result.assert_outcomes(failed=1, passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*not checked*--tokcompat-record*"])
    result = run(pytester, matrix, "--tokcompat-record")
    result.assert_outcomes(failed=1, passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*golden ids recorded to*alias.json*"])
    golden = json.loads((root / "golden" / "alias.json").read_text())
    assert golden["ids"]["Hello world"]
    run(pytester, matrix).assert_outcomes(passed=2, skipped=1)


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


def test_without_the_flag_nothing_is_added_and_transformers_is_not_imported(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_plain="""
        import sys

        def test_light():
            assert "transformers" not in sys.modules
            assert "tokenizers" not in sys.modules
        """
    )
    env_copy = dict(os.environ)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist")
    assert os.environ == env_copy
    result.assert_outcomes(passed=1)
    assert "tokcompat: matrix" not in result.stdout.str()


def test_collect_only_imports_neither_transformers_nor_tokenizers(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    matrix = write_matrix(pytester.path, "  - {id: native, snapshot: native, expect: native}\n")
    pytester.makeconftest(
        "import sys\n"
        "def pytest_collection_finish(session):\n"
        "    print('HEAVY', sorted(m for m in ('transformers', 'tokenizers') if m in sys.modules))\n"
    )
    result = pytester.runpytest_subprocess(
        "--tokcompat", f"--tokcompat-matrix={matrix}", "--collect-only", "-s", "-p", "no:randomly"
    )
    result.stdout.fnmatch_lines(["*<CaseItem native>*", "HEAVY []"])


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
