"""End to end: Aliases a project declares (a matrix's ``aliases:``, the pytest_tokcompat_aliases hook, ``load_tokenizer(aliases=...)``): validated like every matrix key, applied exactly as declared, judged with the same lifecycle items and alarms as the built-in ones, and never written into the module registry.

The rest of this subject's tests, and the helpers these use, are in tests/plugin/test_declared_aliases.py.
"""

from __future__ import annotations

import textwrap

import pytest
from packaging.version import Version

from pytest_tokcompat.judge.loading import transformers_version
from pytest_tokcompat.matrix.discovery import bundled_dir
from tests.helpers.reportdata import read_valid_report
from tests.plugin.test_declared_aliases import (
    DEEPSEEK_V3,
    SHIM_MEASURED,
    _run,
    matrix_aliases_are_judged_as_declared_with_lifecycle_items,
)


def test_the_grid_tells_a_client_whether_its_config_only_shim_gives_right_ids(
    pytester: pytest.Pytester,
) -> None:
    installed = Version(transformers_version())
    verdict, state = SHIM_MEASURED[
        "<5.3" if installed < Version("5.3") else ">=5.3,<5.11" if installed < Version("5.11") else ">=5.11"
    ]
    snapshot = bundled_dir() / "snapshots" / "deepseek-v3.2-exp"
    matrix = pytester.path / "models.yaml"
    matrix.write_text(
        textwrap.dedent(
            f"""\
            aliases:
              - model_type: deepseek_v32
                base_config: {DEEPSEEK_V3}
                upstream_issue: https://github.com/huggingface/transformers/issues/41251
            cases:
              - id: deepseek-v3.2-exp
                snapshot: {snapshot}
                expect: {{"<5.3": native, ">=5.3,<5.11": broken, ">=5.11": native}}
            """
        ),
        encoding="utf-8",
    )
    result = _run(pytester, matrix)
    report = read_valid_report(pytester.path / "report.json")
    records = {record["id"]: record for record in report["cases"]}
    case, alias = records["deepseek-v3.2-exp"], records["alias:deepseek_v32"]
    assert (case["verdict"], alias["state"]) == (verdict, state)
    assert alias["alias"]["base_model_type"] is None and alias["alias"]["declared_in"] == f"{matrix}:2"
    entry = report["registry"]["model_types"]["deepseek_v32"]
    assert entry["tracked_as"] == ["matrix", "alias"]
    if state == "obsolete":
        # transformers registers it: the declared shim (no native_since) is obsolete, and says where to record it
        assert entry["config"] == "DeepseekV32Config"
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(
            [
                f"*[[]obsolete-alias[]] transformers * registers deepseek_v32 natively*in its declaration ({matrix}:2)*"
            ]
        )
        assert [(a["kind"], a["link"]) for a in report["alarms"]] == [
            ("obsolete-alias", "https://github.com/huggingface/transformers/issues/41251")
        ]
    elif state == "broken":
        # the shim loads the class tokenizer_config.json names and gets the ids wrong
        assert entry["config"] is None
        shim = case["attempts"][2]
        assert (shim["remedy"], shim["status"]) == ("alias", "drift")
        assert shim["tokenizer_class"].startswith("LlamaTokenizer")
        result.assert_outcomes(passed=2)
    else:
        assert [attempt["remedy"] for attempt in case["attempts"]] == ["native"], "the shim is never tried"
        result.assert_outcomes(passed=2)


@pytest.mark.parametrize("xdist", [pytest.param(["-n", "2"], id="n2")])
def test_matrix_aliases_are_judged_as_declared_with_lifecycle_items(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    matrix_aliases_are_judged_as_declared_with_lifecycle_items(pytester, xdist)
