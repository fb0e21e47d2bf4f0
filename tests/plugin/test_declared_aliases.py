"""Aliases a project declares (a matrix's ``aliases:``, the pytest_tokcompat_aliases hook,
``load_tokenizer(aliases=...)``): validated like every matrix key, applied exactly as declared, judged
with the same lifecycle items and alarms as the built-in ones, and never written into the module registry."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_tokcompat import load_tokenizer
from pytest_tokcompat.cli import main
from pytest_tokcompat.errors import MatrixError, TokenizerBroken
from pytest_tokcompat.judge.probes import probe_texts
from pytest_tokcompat.judge.remedies import applied_alias
from pytest_tokcompat.matrix.aliases import REGISTRY, Alias, effective_registry
from pytest_tokcompat.matrix.loader import load_matrix
from tests.helpers import toys
from tests.helpers.ladder import judge_folder
from tests.helpers.matrices import run_plugin
from tests.helpers.reportdata import read_valid_report

pytest_plugins = ["pytester"]

GPT2 = "transformers.models.gpt2.configuration_gpt2.GPT2Config"
DEEPSEEK_V3 = "transformers.models.deepseek_v3.configuration_deepseek_v3.DeepseekV3Config"
CONFIG_ONLY_TYPE = "tokcompat_toy_config_only"


def problems_of(path: Path) -> list[str]:
    with pytest.raises(MatrixError) as caught:
        load_matrix(path)
    return [str(problem) for problem in caught.value.problems]


def test_a_matrix_declares_aliases_and_a_watch_list(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            version: 1
            aliases:
              - model_type: kimi_k2
                base_config: {DEEPSEEK_V3}
                base_model_type: deepseek_v3
                tokenizer_class: PreTrainedTokenizerFast
                upstream_issue: https://example.invalid/kimi
                native_drift: ">=5.3,<5.4"
                reason: our serving stack's shim
              - model_type: deepseek_v32
                base_config: {DEEPSEEK_V3}
                upstream_issue: https://example.invalid/v32
                native_since: "5.11.0"
            watch: [glm_moe_dsa, qwen3_5]
            cases: [{{id: x, repo: org/x, expect: native}}]
            """
        ),
        encoding="utf-8",
    )
    matrix = load_matrix(path)
    kimi, v32 = matrix.aliases
    assert kimi == Alias(
        model_type="kimi_k2",
        base_config=DEEPSEEK_V3,
        base_model_type="deepseek_v3",
        upstream_issue="https://example.invalid/kimi",
        native_drift=">=5.3,<5.4",
        tokenizer_class="PreTrainedTokenizerFast",
        reason="our serving stack's shim",
        declared_in=f"{path}:3",
    )
    assert (v32.base_model_type, v32.tokenizer_class, v32.native_since) == (None, None, "5.11.0")
    assert v32.config_only and not kimi.config_only
    assert v32.declared_in == f"{path}:10"
    assert matrix.watch == ("glm_moe_dsa", "qwen3_5")
    assert v32.to_json()["declared_in"] == f"{path}:10" and v32.to_json()["base_model_type"] is None


def test_bad_alias_declarations_are_located_one_line_problems(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            aliases:
              - model_type: kimi k2
                base_config: DeepseekV3Config
                colour: red
                native_since: 5.x
                native_drift: "=>5"
              - model_type: deepseek_v32
                base_config: transformers.DeepseekV3Config
                upstream_issue: x
              - model_type: deepseek_v32
                base_config: transformers.DeepseekV3Config
                upstream_issue: y
              - just a name
            watch: [kimi_k2, kimi_k2]
            cases: [{id: x, repo: org/x, expect: native}]
            """
        ),
        encoding="utf-8",
    )
    assert problems_of(path) == [
        f"{path}:2: alias 'kimi k2': no 'upstream_issue'; add 'upstream_issue: ...' (the upstream issue or "
        "pull request that tracks native support)",
        f"{path}:2: alias 'kimi k2': 'model_type' must be a model_type (letters, digits, '_', '.', '-'), "
        "got 'kimi k2'; write 'model_type: deepseek_v32'",
        f"{path}:3: alias 'kimi k2': 'base_config' must be the dotted path of a config class, got "
        "'DeepseekV3Config'; write 'base_config: transformers.models.deepseek_v3.configuration_deepseek_v3."
        "DeepseekV3Config'",
        f"{path}:4: alias 'kimi k2': unknown alias key 'colour'; use one of base_config, base_model_type, "
        "model_type, native_drift, native_since, reason, tokenizer_class, upstream_issue",
        f"{path}:5: alias 'kimi k2': 'native_since' must be a quoted release, got '5.x'; write e.g. "
        "'native_since: \"5.11.0\"'",
        f"{path}:6: alias 'kimi k2': 'native_drift' is not a version range: '=>5' is not a PEP 440 version "
        "specifier (Invalid specifier: '=>5'); write e.g. '>=5.3,<5.4'",
        f"{path}:10: alias 'deepseek_v32': declared twice (first at line 7); keep one declaration",
        f"{path}:13: an alias must be a mapping; write 'model_type:', 'base_config:', 'upstream_issue:'",
        f"{path}:14: 'watch' names 'kimi_k2' more than once; keep one",
    ]


def test_a_declared_alias_replaces_the_built_in_one_for_the_run_only() -> None:
    built_in = REGISTRY["deepseek_v32"]
    declared = Alias("deepseek_v32", DEEPSEEK_V3, None, "https://example.invalid/v32", declared_in="m.yaml:3")
    hooked = Alias("kimi_k2", DEEPSEEK_V3, None, "https://example.invalid/kimi", declared_in="conftest.py")
    registry = effective_registry([declared], [hooked])
    assert registry == {"deepseek_v32": declared, "kimi_k2": hooked}
    assert {"deepseek_v32": built_in} == REGISTRY, "the module registry is never changed"
    assert effective_registry() == REGISTRY and effective_registry() is not REGISTRY


def test_a_config_only_alias_borrows_no_tokenizer_mapping() -> None:
    from transformers.models.auto import configuration_auto, tokenization_auto

    config_only = Alias(CONFIG_ONLY_TYPE, GPT2, None, "x")
    borrowing = Alias(CONFIG_ONLY_TYPE, GPT2, "gpt2", "x")
    with applied_alias(config_only) as config_class:
        assert CONFIG_ONLY_TYPE in configuration_auto.CONFIG_MAPPING
        assert CONFIG_ONLY_TYPE not in tokenization_auto.TOKENIZER_MAPPING_NAMES
        assert config_class not in tokenization_auto.TOKENIZER_MAPPING
    with applied_alias(borrowing) as config_class:
        names = tokenization_auto.TOKENIZER_MAPPING_NAMES
        assert names[CONFIG_ONLY_TYPE] == names["gpt2"]
        assert config_class in tokenization_auto.TOKENIZER_MAPPING
    assert CONFIG_ONLY_TYPE not in configuration_auto.CONFIG_MAPPING


def test_an_alias_whose_base_config_cannot_be_imported_is_that_attempts_error(tmp_path: Path) -> None:
    folder = toys.alias_toy(tmp_path / "toy")
    golden = toys.golden_for(probe_texts(), tmp_path / "golden", "toy")
    wrong = Alias(toys.TOY_ALIAS_TYPE, "transformers.NoSuchConfig", "gpt2", "x", declared_in="m.yaml:4")
    judgement = judge_folder(folder, golden_path=golden, registry=effective_registry([wrong]))
    attempt = judgement.attempt("alias")
    assert judgement.verdict == "broken" and attempt is not None and attempt.status == "load-error"
    assert attempt.detail is not None and attempt.detail.startswith(
        f"ValueError: alias '{toys.TOY_ALIAS_TYPE}' (m.yaml:4): base_config 'transformers.NoSuchConfig' "
        "cannot be imported here"
    )


def test_the_ladder_applies_a_declared_alias_exactly_as_declared(tmp_path: Path) -> None:
    folder = toys.alias_toy(tmp_path / "toy")
    golden = toys.golden_for(probe_texts(), tmp_path / "golden", "toy")
    borrowing = Alias(toys.TOY_ALIAS_TYPE, GPT2, "gpt2", "x")
    config_only = Alias(toys.TOY_ALIAS_TYPE, GPT2, None, "x")
    right = judge_folder(folder, golden_path=golden, registry=effective_registry([borrowing]))
    assert right.verdict == "alias" and right.static.alias == toys.TOY_ALIAS_TYPE
    as_declared = judge_folder(folder, golden_path=golden, registry=effective_registry([config_only]))
    attempt = as_declared.attempt("alias")
    assert as_declared.verdict == "broken"
    assert attempt is not None and attempt.status == "load-error", "no tokenizer mapping was borrowed"


def test_load_tokenizer_takes_declared_aliases(tmp_path: Path) -> None:
    folder = toys.alias_toy(tmp_path / "toy")
    with pytest.raises(TokenizerBroken):
        load_tokenizer(folder)
    declared = {"model_type": toys.TOY_ALIAS_TYPE, "base_config": GPT2, "base_model_type": "gpt2"}
    with pytest.raises(ValueError, match=r"^load_tokenizer\(aliases=...\): alias 'tokcompat_toy_new': no "):
        load_tokenizer(folder, aliases=[declared])
    loaded = load_tokenizer(folder, aliases=[{**declared, "upstream_issue": "https://example.invalid/1"}])
    # the toy has no tokenizer.json and the folder no golden ids: it loads, its ids are not checked
    assert loaded.verdict == "not-checked"
    assert [(a.remedy, a.status) for a in loaded.judgement.attempts] == [
        ("native", "load-error"),
        ("auto_map", "skipped"),
        ("alias", "not-checked"),
    ]
    assert loaded.tokenizer.encode("hello world", add_special_tokens=False)


def test_a_case_is_judged_with_its_own_matrix_aliases_outside_pytest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tokcompat check CASE` and `load_tokenizer(CASE, matrix=...)` judge a case as its matrix runs it: with
    the aliases that matrix declares (applied as declared, in the attempt's child process)."""
    matrix = _two_shim_matrix(tmp_path)
    assert main(["check", "borrowing", "--matrix", str(matrix), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["verdict"] == "alias" and record["alarms"] == []
    assert main(["check", "config-only", "--matrix", str(matrix), "--json"]) == 1
    record = json.loads(capsys.readouterr().out)
    assert record["verdict"] == "broken"
    # the toy has no tokenizer.json for the backend override to fall back on
    assert [a["status"] for a in record["attempts"]] == ["load-error", "skipped", "load-error", "skipped"]
    assert load_tokenizer("borrowing", matrix=matrix).verdict == "alias"
    # the caller's own alias goes over the matrix's: config-only, as declared, for the borrowing toy
    config_only = Alias(toys.TOY_ALIAS_TYPE, GPT2, None, "https://example.invalid/mine")
    with pytest.raises(TokenizerBroken):
        load_tokenizer("borrowing", matrix=matrix, aliases=[config_only])


# --- self-tests through pytester ----------------------------------------------------------------


def _two_shims(root: Path) -> None:
    """Two toys of new model_types: one for a borrowing alias, one for a config-only alias."""
    toys.alias_toy(root / "borrowing")
    folder = toys.alias_toy(root / "config-only")
    (folder / "config.json").write_text(json.dumps({"model_type": CONFIG_ONLY_TYPE}))
    for case_id in ("borrowing", "config-only"):
        toys.golden_for(probe_texts(), root / "golden", case_id)


def _two_shim_matrix(root: Path, *extra_lines: str) -> Path:
    """The two shims, a matrix declaring their aliases (borrowing and config-only) and a case for each."""
    _two_shims(root)
    matrix = root / "models.yaml"
    lines = [
        "aliases:",
        f"  - model_type: {toys.TOY_ALIAS_TYPE}",
        f"    base_config: {GPT2}",
        "    base_model_type: gpt2",
        "    upstream_issue: https://example.invalid/borrowing",
        f"  - model_type: {CONFIG_ONLY_TYPE}",
        f"    base_config: {GPT2}",
        "    upstream_issue: https://example.invalid/config-only",
        *extra_lines,
        "cases:",
        "  - {id: borrowing, snapshot: borrowing, expect: alias}",
        "  - {id: config-only, snapshot: config-only, expect: alias}",
    ]
    matrix.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return matrix


def _run(pytester: pytest.Pytester, matrix: Path, *extra: str) -> pytest.RunResult:
    return run_plugin(pytester, matrix, "--tokcompat-report=report.json", *extra)


@pytest.mark.parametrize(
    "xdist", [pytest.param([], id="n0")]
)  # its -n 2 twin: tests/e2e/test_declared_aliases.py
def test_matrix_aliases_are_judged_as_declared_with_lifecycle_items(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    matrix_aliases_are_judged_as_declared_with_lifecycle_items(pytester, xdist)


def matrix_aliases_are_judged_as_declared_with_lifecycle_items(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A matrix's aliases, judged in one process or under xdist: the same items, records and registry."""
    root = pytester.path
    matrix = _two_shim_matrix(root, "watch: [kimi_k2]")
    result = _run(pytester, matrix, *xdist)
    # borrowing and its alias item pass; the config-only shim is no remedy: its case fails, its alias
    # item says so (state broken); the built-in deepseek_v32 alias has no case here (not checked)
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*models.yaml:*case 'config-only'*expected alias, got broken*"])
    report = read_valid_report(root / "report.json")
    records = {record["id"]: record for record in report["cases"]}
    assert records["config-only"]["attempts"][2]["status"] == "load-error"
    borrowing, config_only = records[f"alias:{toys.TOY_ALIAS_TYPE}"], records[f"alias:{CONFIG_ONLY_TYPE}"]
    assert (borrowing["status"], borrowing["state"]) == ("passed", "needed")
    assert (config_only["status"], config_only["state"]) == ("passed", "broken")
    assert borrowing["alias"]["declared_in"] == f"{matrix}:2"
    assert config_only["alias"]["base_model_type"] is None
    assert records["alias:deepseek_v32"]["alias"]["declared_in"] == "built-in"
    watched = report["registry"]["model_types"]
    assert watched[toys.TOY_ALIAS_TYPE]["tracked_as"] == ["matrix", "alias"]
    assert watched["gpt2"]["tracked_as"] == ["alias-base"] and watched["gpt2"]["config"] == "GPT2Config"
    assert watched["kimi_k2"] == {"tracked_as": ["watch"], "config": None, "tokenizer": None, "overrides": []}
    assert set(report["registry"]["aliases"]) == {toys.TOY_ALIAS_TYPE, CONFIG_ONLY_TYPE, "deepseek_v32"}
    assert report["registry"]["watch"] == ["kimi_k2"]


def test_a_conftest_declares_aliases_through_the_hook(pytester: pytest.Pytester) -> None:
    root = pytester.path
    toys.alias_toy(root / "shim")
    toys.golden_for(probe_texts(), root / "golden", "shim")
    matrix = root / "models.yaml"
    matrix.write_text("cases:\n  - {id: shim, snapshot: shim, expect: alias}\n", encoding="utf-8")
    pytester.makeconftest(
        f"""
        def pytest_tokcompat_aliases(config):
            return [{{"model_type": "{toys.TOY_ALIAS_TYPE}", "base_config": "{GPT2}",
                      "base_model_type": "gpt2", "upstream_issue": "https://example.invalid/hook"}}]
        """
    )
    _run(pytester, matrix).assert_outcomes(passed=2, skipped=1)
    record = next(
        r for r in read_valid_report(root / "report.json")["cases"] if r["id"].startswith("alias:tok")
    )
    assert record["alias"]["declared_in"] == f"{root / 'conftest.py'} (pytest_tokcompat_aliases)"
    assert record["state"] == "needed"


def test_a_bad_hook_declaration_stops_the_run_with_one_line(pytester: pytest.Pytester) -> None:
    toys.native_toy(pytester.path / "native")
    matrix = pytester.path / "models.yaml"
    matrix.write_text("cases:\n  - {id: native, snapshot: native, expect: native}\n", encoding="utf-8")
    pytester.makeconftest(
        """
        def pytest_tokcompat_aliases(config):
            return [{"model_type": "kimi_k2", "base_config": "DeepseekV3Config"}]
        """
    )
    result = _run(pytester, matrix)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    conftest = pytester.path / "conftest.py"
    result.stderr.fnmatch_lines(
        [
            f"ERROR: tokcompat: {conftest} (pytest_tokcompat_aliases): alias 'kimi_k2': no 'upstream_issue' "
            "(add 'upstream_issue: ...' *); 'base_config' must be the dotted path of a config class, got "
            "'DeepseekV3Config' (write *)"
        ]
    )


# What the config-only deepseek_v32 -> DeepseekV3Config shim (as aiperf 0.13.0 and vLLM ship it) gives on the
# bundled DeepSeek-V3.2-Exp snapshot, measured per release (README, "Your own aliases"): before 5.3 plain
# loading keeps parity and the shim is never needed; from 5.3 to 5.10 plain loading fails and the shim loads
# LlamaTokenizer, which gets every probe text wrong; from 5.11 transformers registers deepseek_v32 natively.
SHIM_MEASURED = {
    "<5.3": ("native", "unused"),
    ">=5.3,<5.11": ("broken", "broken"),
    ">=5.11": ("native", "obsolete"),
}
