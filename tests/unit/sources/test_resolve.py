"""The one resolver and the one default-matrix rule: every target to one checkpoint with its context, offline."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from pytest_tokcompat.cli import main
from pytest_tokcompat.errors import NotReachable, NotRunnable, UnknownName
from pytest_tokcompat.matrix.discovery import bundled_matrix, default_matrix, find_rootdir
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.request import Request
from pytest_tokcompat.sources.checkpoint import MatchedBy, Source
from pytest_tokcompat.sources.resolve import describe, identify, resolve
from pytest_tokcompat.sources.snapshots import materialize
from tests.helpers import toys
from tests.helpers.matrices import write_matrix

BUNDLED = load_matrix(bundled_matrix())
# a case with golden ids whose snapshot assembles in milliseconds (a copy, nothing derived)
GOLDEN_CASE = BUNDLED.by_id("mistral-7b-v0.1")


@pytest.fixture(scope="module")
def _snapshot_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's assembled-snapshot cache if the run has one, else one for this module (assembling
    GLM-5's stand-in takes seconds)."""
    return Path(os.environ.get("TOKCOMPAT_CACHE") or tmp_path_factory.mktemp("snapshots"))


@pytest.fixture(autouse=True)
def _own_snapshot_cache(_snapshot_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKCOMPAT_CACHE", str(_snapshot_cache))


# ---- the default matrix: option, ini, the project's matrix/models.yaml from the rootdir, the bundled one --


def test_default_matrix_takes_the_option_then_the_ini_then_the_project_then_the_bundled(
    tmp_path: Path,
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    own = write_matrix(project / "matrix", "  - {id: x, repo: o/x, expect: native}\n")
    elsewhere.mkdir()
    assert default_matrix("m.yaml", "ini.yaml", project, cwd=elsewhere) == elsewhere / "m.yaml"
    assert default_matrix(None, "ci/ini.yaml", project, cwd=elsewhere) == project / "ci" / "ini.yaml"
    assert default_matrix(None, None, project, cwd=elsewhere) == own
    assert default_matrix(None, None, elsewhere, cwd=project) == bundled_matrix()
    assert default_matrix(None, None, None, cwd=project) == bundled_matrix()  # no rootdir: never the cwd's


def test_the_cli_finds_the_projects_matrix_from_a_subfolder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    write_matrix(project / "matrix", "  - {id: project-case, repo: o/project, expect: native}\n")
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (project / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(project / "src" / "deep")
    assert find_rootdir(Path.cwd()) == project.resolve()
    assert main(["resolve", "project-case"]) == 0
    assert capsys.readouterr().out.startswith("project-case -> o/project")


# ---- targets ---------------------------------------------------------------------------------------------


def test_a_case_id_resolves_as_the_matrix_runs_it_with_its_golden_ids(cache: Path) -> None:
    checkpoint = resolve("mistral-7b-v0.1")
    assert (checkpoint.source, checkpoint.matched_by) == (Source.SNAPSHOT, MatchedBy.ID)
    assert checkpoint.case == GOLDEN_CASE and checkpoint.golden_path == GOLDEN_CASE.golden_path
    assert checkpoint.folder == materialize(GOLDEN_CASE.snapshot)
    assert checkpoint.origin == GOLDEN_CASE.snapshot and checkpoint.repo == "mistralai/Mistral-7B-v0.1"
    assert checkpoint.revision is None  # local files
    with pytest.raises(dataclasses.FrozenInstanceError):
        checkpoint.folder = Path("/elsewhere")  # type: ignore[misc]


def test_the_snapshot_folder_and_the_assembled_cache_entry_resolve_to_their_case(cache: Path) -> None:
    assembled = materialize(GOLDEN_CASE.snapshot)
    for folder, by in (
        (GOLDEN_CASE.snapshot, MatchedBy.SNAPSHOT_FOLDER),
        (assembled, MatchedBy.ASSEMBLED_FOLDER),
    ):
        checkpoint = resolve(str(folder))
        assert (checkpoint.case, checkpoint.matched_by, checkpoint.source) == (
            GOLDEN_CASE,
            by,
            Source.SNAPSHOT,
        )
        assert checkpoint.folder == assembled and checkpoint.golden_path == GOLDEN_CASE.golden_path


def test_a_copied_assembled_entry_is_judged_from_the_verified_cache_entry(
    cache: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "copies" / materialize(GOLDEN_CASE.snapshot).name
    shutil.copytree(materialize(GOLDEN_CASE.snapshot), copy)
    checkpoint = resolve(copy)
    assert checkpoint.case == GOLDEN_CASE and checkpoint.folder == materialize(GOLDEN_CASE.snapshot)
    assert any("judged the verified cache entry" in note for note in checkpoint.notes)


def test_a_bare_folder_has_no_case(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "native")
    checkpoint = resolve(Request(folder, texts=("extra text",)))
    assert (checkpoint.case, checkpoint.source, checkpoint.golden_path) == (None, Source.FOLDER, None)
    assert checkpoint.folder == folder and checkpoint.texts == ("extra text",)


def test_a_repo_id_falls_back_to_a_faithful_snapshot_and_keeps_the_case(cache: Path) -> None:
    checkpoint = resolve("mistralai/Mistral-7B-v0.1")  # the hub cache is empty and offline
    assert (checkpoint.source, checkpoint.matched_by, checkpoint.case) == (
        Source.FALLBACK,
        MatchedBy.REPO,
        GOLDEN_CASE,
    )
    assert checkpoint.golden_path == GOLDEN_CASE.golden_path
    assert any("the hub could not be reached" in note for note in checkpoint.notes)


def test_a_node_id_names_a_case_that_a_served_name_shadows(cache: Path) -> None:
    served = resolve("glm-5")  # a served name of glm-5-nvfp4 (the hub offline: its snapshot, real data)
    assert (served.case, served.source) == (BUNDLED.by_id("glm-5-nvfp4"), Source.FALLBACK)
    checkpoint = resolve(f"{bundled_matrix()}::glm-5")
    assert (checkpoint.case, checkpoint.matched_by) == (BUNDLED.by_id("glm-5"), MatchedBy.NODE_ID)
    assert checkpoint.source == Source.SNAPSHOT and not checkpoint.stand_in


def test_a_stand_in_is_not_handed_out_for_a_repo_id(cache: Path) -> None:
    with pytest.raises(NotReachable, match="stand-in tokenizer data"):  # Kimi's vocabulary is a stand-in
        resolve("moonshotai/Kimi-K2-Instruct")
    assert resolve("kimi-k2-instruct").stand_in  # its case id is the case as the matrix runs it
    with pytest.raises(UnknownName, match="has no case 'nope'"):
        resolve(f"{bundled_matrix()}::nope")


def test_the_entrys_opt_in_applies_to_matrix_runs_only(tmp_path: Path) -> None:
    toys.remote_toy(tmp_path / "remote")
    matrix = write_matrix(
        tmp_path, "  - {id: r, snapshot: remote, trust_remote_code: true, expect: auto_map}\n"
    )
    case = load_matrix(matrix).cases[0]
    assert resolve(case).trust_remote_code is True  # the matrix's own run
    by_name = resolve(Request("r", matrix=matrix))
    assert by_name.trust_remote_code is False
    assert any("opts in to trust_remote_code for the matrix's own runs" in note for note in by_name.notes)
    assert resolve(Request("r", matrix=matrix, trust_remote_code=True)).trust_remote_code is True


def test_identify_touches_no_file_and_describe_says_where_a_name_goes(cache: Path) -> None:
    identity = identify("deepseek-ai/DeepSeek-V3")
    assert (identity.by, identity.case, identity.repo) == (
        MatchedBy.REPO,
        BUNDLED.by_id("deepseek-v3"),
        "deepseek-ai/DeepSeek-V3",
    )
    assert not list(cache.iterdir())
    code, text = describe("qwen3-0.6b", None)
    assert code == 0 and "resolves to: the case's snapshot, as the matrix runs it" in text
    code, text = describe("glm-5", None)
    assert code == 0 and f"(or {bundled_matrix()}::glm-5)" in text


# ---- remote code from another repo (issue 10) -----------------------------------------------------------


def cross_repo_toy(folder: Path) -> Path:
    toys.remote_toy(folder)
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"]["AutoConfig"] = "other/repo--configuration_toy.ToyConfig"
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_an_opted_in_local_folder_with_code_from_another_repo_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    canary = tmp_path / "canary"
    monkeypatch.setenv("TOKCOMPAT_CANARY", str(canary))
    folder = cross_repo_toy(tmp_path / "cross")
    with pytest.raises(NotRunnable, match=r"auto_map names code in another repo \('other/repo--"):
        resolve(Request(folder, trust_remote_code=True))
    assert resolve(folder).trust_remote_code is False  # without an opt-in nothing runs, nothing to refuse
    assert main(["check", str(folder), "--trust-remote-code", "--json"]) == 2
    record = json.loads(capsys.readouterr().out)
    assert record["failure"] == "bad-input" and "other/repo's default branch, unpinned" in record["message"]
    assert not canary.exists()


def test_a_matrix_snapshot_with_code_from_another_repo_fails_its_case(tmp_path: Path) -> None:
    from pytest_tokcompat.judge.evaluate import FAILED, evaluate
    from pytest_tokcompat.request import Request

    cross_repo_toy(tmp_path / "cross")
    matrix = write_matrix(
        tmp_path, "  - {id: c, snapshot: cross, trust_remote_code: true, expect: auto_map}\n"
    )
    outcome = evaluate(Request(load_matrix(matrix).cases[0]))
    assert outcome.status == FAILED and "auto_map names code in another repo" in outcome.message
    assert outcome.judgement is None  # refused before anything loads
