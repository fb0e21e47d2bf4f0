"""The adoption done-when, for real: a fresh client repository with a config-only ``deepseek_v32`` shim,
judged by ``tokcompat grid --with . --loader …`` under 5.5.4 and 5.11.0 (two tox-uv environments, the
bundled matrix). e2e: it builds the environments (uv's package cache makes a repeat cheap)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.e2e.test_grid_e2e import environment as grid_environment
from tests.e2e.test_grid_e2e import git_repository, tokcompat
from tests.helpers.paths import DATA

SHIM = DATA / "client_pkg" / "tokcompat_selftest_client" / "loaders.py"


def environment(tmp_path: Path) -> dict[str, str]:
    """The grid e2e environment without HF_HUB_OFFLINE: the grid keeps its snapshot-only runs off the hub
    itself, and a loader runs offline only where the user's own environment is (aiperf's offline branch)."""
    return {k: v for k, v in grid_environment(tmp_path).items() if k != "HF_HUB_OFFLINE"}


PYPROJECT = """[build-system]
requires = ["hatchling>=1.24"]
build-backend = "hatchling.build"

[project]
name = "myclient"
version = "0.1.0"
requires-python = ">=3.10"
"""


def test_a_client_repository_gets_its_shims_alarms_and_a_rerun_reuses_every_cell(tmp_path: Path) -> None:
    repo = tmp_path / "myclient-repo"
    (repo / "myclient").mkdir(parents=True)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "myclient" / "__init__.py").write_text("")
    shutil.copy(SHIM, repo / "myclient" / "loaders.py")
    git_repository(repo)
    env = environment(tmp_path)
    argv = ["grid", "--with", ".", "--releases", "5.5.4,5.11.0"]
    done = tokcompat([*argv, "--loader", "myclient.loaders:config_only_alias"], repo, env)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    drift = next(line for line in out.splitlines() if line.startswith("- **loader-drift** `loader:myclient`"))
    assert "first in transformers 5.5.4" in drift and "deepseek-v3.2-exp" in drift, drift
    assert "your loader myclient (myclient.loaders:config_only_alias) loads " in drift, drift
    assert "with wrong ids" in drift, drift
    # 5.11.0 registers deepseek_v32: there the shim's deepseek row keeps parity (its other drifts, on cases
    # whose plain load needs a repair there, e.g. R1-Distill-Llama's backend override, stay alarms)
    row = next(
        line for line in out.splitlines() if line.startswith("| deepseek-v3.2-exp / loader:myclient |")
    )
    cells = [cell.strip() for cell in row.split("|")[2:4]]
    assert cells[0].startswith("drift") and not cells[1].startswith("drift"), row
    obsolete = next(
        line for line in out.splitlines() if line.startswith("- **loader-obsolete** `loader:myclient`")
    )
    assert "first in transformers 5.11.0" in obsolete and "your shim is obsolete from 5.11.0" in obsolete, (
        obsolete
    )
    assert "| deepseek-v3.2-exp / loader:myclient | drift — " in out

    again = tokcompat([*argv, "--loader", "myclient.loaders:config_only_alias"], repo, env)
    assert again.returncode == 1
    assert "(nothing changed)" in again.stdout and ", judged 0" in again.stdout, again.stdout

    misspelt = tokcompat([*argv, "--loader", "myclient.loaderz:config_only_alias"], repo, env)
    assert misspelt.returncode == 1, misspelt.stdout + misspelt.stderr
    error = next(
        line
        for line in misspelt.stdout.splitlines()
        if line.startswith("- **loader-error** `loader:myclient`")
    )
    assert "ModuleNotFoundError: No module named 'myclient.loaderz'" in error, error


def test_aiperfs_own_loader_drifts_before_5_11_and_is_obsolete_from_there(tmp_path: Path) -> None:
    """aiperf 0.13.0 from the package index, its own Tokenizer.from_pretrained and no wrapper of ours,
    called by the entry's repo id as aiperf's users call it (its offline branch: snapshot_download from
    the hub cache, which the grid lays out). The grid's HF_HUB_OFFLINE=1 once sent it into that branch with
    the folder's path (HFValidationError on every release)."""
    from pytest_tokcompat.matrix.discovery import bundled_dir

    snapshot = bundled_dir() / "snapshots" / "deepseek-v3.2-exp"
    matrix = tmp_path / "m.yaml"
    matrix.write_text(
        "version: 1\ncases:\n  - id: deepseek-v3.2-exp\n    repo: deepseek-ai/DeepSeek-V3.2-Exp\n"
        f'    snapshot: "{snapshot}"\n'
        '    expect: {"<5.3": native, ">=5.3,<5.11": alias, ">=5.11": native}\n'
    )
    loader = "aiperf=aiperf.common.tokenizer:Tokenizer.from_pretrained:_tokenizer"
    argv = ["grid", "--matrix", str(matrix), "--with", "aiperf==0.13.0", "--loader", loader]
    done = tokcompat([*argv, "--releases", "5.5.4,5.10.4,5.11.0"], tmp_path, environment(tmp_path))
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    row = next(line for line in out.splitlines() if line.startswith("| deepseek-v3.2-exp / loader:aiperf |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")][1:]
    assert [cell.split(" ")[0] for cell in cells] == ["drift", "drift", "parity"], row
    assert (
        "- **loader-drift** `loader:aiperf` on case deepseek-v3.2-exp, first in transformers 5.5.4 (also 5.10.4)"
        in out
    )
    assert (
        "first in transformers 5.11.0 (also nowhere else)" in out
        and "your shim is obsolete from 5.11.0" in out
    )
    assert "HFValidationError" not in out
    reports = sorted((tmp_path / "tokcompat-grid" / "reports").glob("*.json"))
    called = [
        (result["loaded_as"], result["set_by_tool"].get("HF_HUB_OFFLINE"))
        for report in reports
        for case in json.loads(report.read_text(encoding="utf-8")).get("cases", [])
        for result in case.get("loaders") or []
    ]
    assert called == [("deepseek-ai/DeepSeek-V3.2-Exp", "1")] * 3, called
