"""The upstream watch: every report records what its release's tokenizer registries say; the grid shows
each change between adjacent releases as an event, and one on an aliased or watched model_type is an alarm.

The registries in tests/data/registry were captured from the real releases (see capture.py there).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat import contract
from pytest_tokcompat.ci.grid import load_reports, merge
from pytest_tokcompat.ci.issues_text import issue_texts
from pytest_tokcompat.ci.markdown import render_markdown
from pytest_tokcompat.ci.watch import registry_events
from pytest_tokcompat.cli import main
from pytest_tokcompat.judge.upstream import override_lists, registry_view
from pytest_tokcompat.matrix.aliases import REGISTRY, Alias
from pytest_tokcompat.model import AlarmKind
from tests.helpers import toys
from tests.helpers.paths import DATA
from tests.helpers.reportdata import case, report, write

pytest_plugins = ["pytester"]

CAPTURED = DATA / "registry"
RELEASES = ["4.57.6", "5.5.4", "5.10.4", "5.11.0", "5.24.0"]
ISSUE = "https://github.com/huggingface/transformers/issues/41251"
CONFIG_ONLY_SHIM = {
    "model_type": "deepseek_v32",
    "base_config": "transformers.models.deepseek_v3.configuration_deepseek_v3.DeepseekV3Config",
    "base_model_type": None,
    "upstream_issue": ISSUE,
    "native_since": None,
    "native_drift": None,
    "tokenizer_class": None,
    "declared_in": "models.yaml:3",
}


def captured(release: str) -> dict[str, Any]:
    registry: dict[str, Any] = json.loads((CAPTURED / f"transformers-{release}.json").read_text())
    return registry


def with_alias(registry: dict[str, Any], alias: dict[str, Any]) -> dict[str, Any]:
    changed = copy.deepcopy(registry)
    changed["aliases"][alias["model_type"]] = alias
    return changed


def reports_with(tmp_path: Path, registries: dict[str, dict[str, Any] | None]) -> list[Path]:
    paths = []
    for release, registry in registries.items():
        document = report(release, [case("deepseek-v3.2-exp", release, "native")])
        if registry is not None:
            document["registry"] = registry
        paths.append(write(tmp_path, f"transformers-{release}.json", document))
    return paths


def test_the_captured_registries_are_what_the_report_schema_describes(tmp_path: Path) -> None:
    reports_with(tmp_path, {release: captured(release) for release in RELEASES})  # write() validates
    assert captured("5.10.4")["model_types"]["deepseek_v32"] == {
        "tracked_as": ["matrix", "alias"],
        "config": None,
        "tokenizer": None,
        "overrides": [],
    }
    assert captured("5.11.0")["model_types"]["deepseek_v32"] == {
        "tracked_as": ["matrix", "alias"],
        "config": "DeepseekV32Config",
        "tokenizer": "TokenizersBackend",
        "overrides": ["MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS"],
    }
    assert captured("4.57.6")["model_types"]["deepseek_v3"]["tokenizer"] == [None, "LlamaTokenizerFast"]
    assert captured("4.57.6")["override_lists"] == {}
    assert captured("5.24.0")["override_lists"]["MODEL_IDS_TO_TOKENIZERS_BACKEND"]["kind"] == "checkpoints"


def test_each_change_between_adjacent_releases_is_an_event() -> None:
    events = registry_events([(release, captured(release)) for release in RELEASES])
    about = {
        model_type: [
            (event.text, event.alarm, event.acknowledged)
            for event in events
            if event.model_type == model_type
        ]
        for model_type in ("deepseek_v32", "deepseek_v4", "kimi_k2")
    }
    acknowledged = "the alias records native_since 5.11.0"
    assert about["deepseek_v32"] == [
        ("5.11.0: deepseek_v32 registered natively (DeepseekV32Config)", False, acknowledged),
        ("5.11.0: deepseek_v32 tokenizer mapping added (TokenizersBackend)", False, acknowledged),
        ("5.11.0: deepseek_v32 added to MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS", False, acknowledged),
        ("5.24.0: deepseek_v32 tokenizer mapping dropped (was TokenizersBackend)", False, acknowledged),
        ("5.24.0: deepseek_v32 dropped from MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS", False, acknowledged),
    ]
    assert about["deepseek_v4"] == [  # watched: every change is an alarm
        ("5.10.4: deepseek_v4 registered natively (DeepseekV4Config)", True, None),
        ("5.10.4: deepseek_v4 tokenizer mapping added (TokenizersBackend)", True, None),
        ("5.10.4: deepseek_v4 added to MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS", True, None),
        ("5.24.0: deepseek_v4 tokenizer mapping dropped (was TokenizersBackend)", True, None),
        ("5.24.0: deepseek_v4 dropped from MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS", True, None),
    ]
    assert about["kimi_k2"] == [], "never registered through 5.24.0"
    texts = [event.text for event in events]
    # a model_type of the matrix only is news, not an alarm (its cases' verdicts speak for it)
    assert "5.5.4: deepseek_v3 added to MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS" in texts
    assert not any(event.alarm for event in events if event.model_type == "deepseek_v3")
    # list-level news: a list appears, entries no tracked model_type has
    assert "5.5.4: new override list MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS (32 model_types)" in texts
    assert "5.24.0: new override list MODEL_IDS_TO_TOKENIZERS_BACKEND (9 checkpoints)" in texts
    assert (
        "5.10.4: MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS: added deepseek_ocr, deepseek_ocr2, qwen2, "
        "step3_vl; dropped internvl_chat"
    ) in texts


def test_a_declared_shim_is_an_alarm_the_night_upstream_registers_its_model_type(tmp_path: Path) -> None:
    registries = {
        release: with_alias(captured(release), CONFIG_ONLY_SHIM) for release in ("5.10.4", "5.11.0")
    }
    grid = merge(load_reports(reports_with(tmp_path, registries)))
    [alarm] = [a for a in grid.alarms if a.kind == AlarmKind.REGISTRY_CHANGE]
    assert (alarm.subject, alarm.first_release, alarm.releases, alarm.link) == (
        "deepseek_v32",
        "5.11.0",
        ["5.11.0"],
        ISSUE,
    )
    assert alarm.message == (
        "transformers' registries changed for deepseek_v32: 5.11.0: registered natively (DeepseekV32Config); "
        "5.11.0: tokenizer mapping added (TokenizersBackend); 5.11.0: added to "
        "MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS"
    )
    assert "record native_since='5.11.0'" in alarm.action
    assert grid.exit_status() == 1, "no checkpoint of it needed: the cases here all pass"
    markdown = render_markdown(grid)
    assert "- 5.11.0: deepseek_v32 registered natively (DeepseekV32Config) **(alarm)**" in markdown
    assert f"Upstream: {ISSUE}" in markdown
    [text] = [t for t in issue_texts(grid.alarms) if t.key == "registry-change:deepseek_v32"]
    assert text.title == "tokcompat: deepseek_v32 registration changed upstream"
    assert f"### Upstream\n\n{ISSUE}\n" in text.body and "no checkpoint was needed" in text.body


@pytest.mark.parametrize(
    ("recorded", "why"),
    [
        ({"native_since": "5.11.0"}, "the alias records native_since 5.11.0"),
        ({"native_drift": ">=5.11"}, "the alias records native_drift >=5.11"),
    ],
)
def test_recording_the_release_in_the_alias_acknowledges_the_change(
    tmp_path: Path, recorded: dict[str, str], why: str
) -> None:
    alias = {**CONFIG_ONLY_SHIM, **recorded}
    registries = {release: with_alias(captured(release), alias) for release in ("5.10.4", "5.11.0")}
    grid = merge(load_reports(reports_with(tmp_path, registries)))
    assert grid.alarms == [] and grid.exit_status() == 0
    assert {event.acknowledged for event in grid.events if event.model_type == "deepseek_v32"} == {why}
    assert f"- 5.11.0: deepseek_v32 registered natively (DeepseekV32Config) ({why})" in render_markdown(grid)


def test_a_checkpoint_pattern_that_matches_a_watched_repo_is_an_alarm(tmp_path: Path) -> None:
    def registry(patterns: list[str] | None) -> dict[str, Any]:
        return contract.registry_record(
            "x",
            {
                "kimi_k2": {
                    "tracked_as": ["matrix", "watch"],
                    "config": None,
                    "tokenizer": None,
                    "overrides": [],
                }
            },
            {}
            if patterns is None
            else {"MODEL_IDS_TO_TOKENIZERS_BACKEND": {"kind": "checkpoints", "entries": patterns}},
            watch=["kimi_k2"],
            checkpoints={"moonshotai/Kimi-K2-Instruct": "kimi_k2"},
        )

    events = registry_events(
        [
            ("5.12.0", registry(["google/umt5-small"])),
            ("5.13.0", None),  # a report without the watch (an older producer) is skipped
            ("5.14.0", registry(["google/umt5-small", "moonshotai/kimi-*"])),
            ("5.15.0", registry(None)),
        ]
    )
    assert [(event.text, event.model_type, event.alarm) for event in events] == [
        (
            "5.14.0: kimi_k2 checkpoint pattern 'moonshotai/kimi-*' added to MODEL_IDS_TO_TOKENIZERS_BACKEND "
            "(matches moonshotai/Kimi-K2-Instruct)",
            "kimi_k2",
            True,
        ),
        ("5.15.0: override list MODEL_IDS_TO_TOKENIZERS_BACKEND is gone", None, False),
        (
            "5.15.0: kimi_k2 checkpoint pattern 'moonshotai/kimi-*' dropped from MODEL_IDS_TO_TOKENIZERS_BACKEND "
            "(matches moonshotai/Kimi-K2-Instruct)",
            "kimi_k2",
            True,
        ),
    ], "the entries of a list that is gone are that one event, except where they concern the matrix"
    assert events[0].previous == "5.12.0"


def test_issue_text_cli_opens_an_issue_for_a_registry_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registries = {
        release: with_alias(captured(release), CONFIG_ONLY_SHIM) for release in ("5.10.4", "5.11.0")
    }
    paths = reports_with(tmp_path, registries)
    assert main(["issue-text", *map(str, paths), "--json"]) == 0
    issues = json.loads(capsys.readouterr().out)["issues"]
    assert [issue["title"] for issue in issues] == ["tokcompat: deepseek_v32 registration changed upstream"]
    assert main(["report", *map(str, paths)]) == 1
    assert "### Upstream registry events" in capsys.readouterr().out


def test_the_registry_record_checks_its_vocabulary_and_the_schema_speaks_it() -> None:
    defs = contract.load_report_schema()["$defs"]
    assert defs["registry_entry"]["properties"]["tracked_as"]["items"]["enum"] == list(contract.TRACKED_AS)
    assert defs["override_list"]["properties"]["kind"]["enum"] == list(contract.OVERRIDE_KINDS)
    entry = {"tracked_as": ["matrix", "guess"], "config": None, "tokenizer": None, "overrides": []}
    with pytest.raises(ValueError, match="tracked_as"):
        contract.registry_record("5.0.0", {"x": entry}, {})
    with pytest.raises(ValueError, match="kind"):
        contract.registry_record("5.0.0", {}, {"L": {"kind": "repos", "entries": []}})


def test_the_installed_transformers_is_read_as_it_is() -> None:
    """The live reading agrees with transformers' own registries, whatever release is installed."""
    from transformers.models.auto import configuration_auto, tokenization_auto

    shim = Alias("kimi_k2", CONFIG_ONLY_SHIM["base_config"], "deepseek_v3", ISSUE)
    view = registry_view(["qwen3", None], {**REGISTRY, "kimi_k2": shim}, ["glm_moe_dsa"])
    assert set(view["model_types"]) == {"qwen3", "deepseek_v32", "deepseek_v3", "kimi_k2", "glm_moe_dsa"}
    assert view["model_types"]["deepseek_v3"]["tracked_as"] == ["alias-base"]
    for model_type, entry in view["model_types"].items():
        assert entry["config"] == configuration_auto.CONFIG_MAPPING_NAMES.get(model_type)
        assert (entry["tokenizer"] is None) == (model_type not in tokenization_auto.TOKENIZER_MAPPING_NAMES)
    lists = override_lists(tokenization_auto)
    known = getattr(tokenization_auto, "MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS", None)
    if known is None:  # a release without the list (4.x)
        assert "MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS" not in lists
    else:
        assert lists["MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS"] == {
            "kind": "model_types",
            "entries": sorted(known),
        }
    assert view["override_lists"] == lists and view["watch"] == ["glm_moe_dsa"]
    assert view["aliases"]["kimi_k2"]["declared_in"] == "built-in"


def test_the_registries_are_read_in_a_child_as_they_are_here() -> None:
    """The report's watch is read in a child forked from the judge's server (the controller never imports
    transformers); it says what reading the registries here says."""
    from pytest_tokcompat.judge.child import ISOLATION_ENV, isolation_mode
    from pytest_tokcompat.judge.upstream import read_upstream

    assert isolation_mode() == "process", f"run without {ISOLATION_ENV}"
    shim = Alias("kimi_k2", CONFIG_ONLY_SHIM["base_config"], None, ISSUE, declared_in="models.yaml:3")
    registry = {**REGISTRY, "kimi_k2": shim}
    in_child = read_upstream(["qwen3"], registry, ["glm_moe_dsa"], {"Qwen/Qwen3-0.6B": "qwen3"})
    assert in_child == registry_view(["qwen3"], registry, ["glm_moe_dsa"], {"Qwen/Qwen3-0.6B": "qwen3"})
    assert in_child["aliases"]["kimi_k2"]["declared_in"] == "models.yaml:3"
    assert in_child["checkpoints"] == {"Qwen/Qwen3-0.6B": "qwen3"}


def test_a_report_is_never_lost_to_registries_that_cannot_be_read(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The read runs in this process here, so that the conftest's stand-in for a transformers whose registries
    # look like nothing known is the one that runs (a forked child would not see it).
    monkeypatch.setenv("TOKCOMPAT_ISOLATION", "inprocess")
    toys.native_toy(pytester.path / "native")
    matrix = pytester.path / "models.yaml"
    matrix.write_text("watch: [kimi_k2]\ncases:\n  - {id: native, snapshot: native, expect: native}\n")
    pytester.makeconftest(
        """
        import pytest_tokcompat.judge.upstream as upstream

        def unreadable(*args, **kwargs):
            raise AttributeError("module has no attribute 'CONFIG_MAPPING_NAMES'")

        def pytest_configure(config):
            config._tokcompat_saved = upstream.registry_view
            upstream.registry_view = unreadable

        def pytest_unconfigure(config):
            upstream.registry_view = config._tokcompat_saved
        """
    )
    result = pytester.runpytest(
        "--tokcompat", f"--tokcompat-matrix={matrix}", "--tokcompat-report=report.json", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "upstream watch not recorded in the report: AttributeError: module has no attribute 'CONFIG_MAPPING_NAMES'"
        ]
    )
    document = contract.read_report(pytester.path / "report.json")
    assert "registry" not in document
    assert [r["id"] for r in document["cases"]] == ["alias:deepseek_v32", "native"]
