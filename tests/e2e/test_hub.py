# ruff: noqa: F811 (the fixtures tests/unit/sources/test_hub.py defines, imported by name)
"""End to end: Hub resolution through the real huggingface_hub calls, against a real cache layout and a local hub.

The rest of this subject's tests, and the helpers these use, are in tests/unit/sources/test_hub.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_tokcompat import cli
from pytest_tokcompat.sources import hub
from tests.helpers import hubcache, hubserver
from tests.helpers.matrices import write_matrix
from tests.unit.sources.test_hub import DEEPSEEK, GOLDEN, KIMI, local_hub, served_bundled  # noqa: F401 (fixtures)


def test_pytest_tokcompat_on_a_matrix_of_hub_ids_passes(pytester: pytest.Pytester, cache: Path) -> None:
    hubcache.add_bundled(cache, "deepseek-v3.2-exp")
    hubcache.add_bundled(cache, "qwen3-0.6b")
    _, kimi_commit = hubcache.add_bundled(cache, "kimi-k2-instruct")
    (pytester.path / "golden").mkdir()
    for name in ("qwen3-0.6b.json", "kimi-k2-instruct.json"):
        shutil.copy(GOLDEN / name, pytester.path / "golden" / name)
    matrix = write_matrix(
        pytester.path,
        f"  - {{id: deepseek-v3.2-exp, repo: {DEEPSEEK}, expect: native}}\n"
        "  - {id: qwen3-0.6b, repo: Qwen/Qwen3-0.6B, expect: native}\n"
        f"  - {{id: kimi-k2-instruct, repo: {KIMI}, revision: '{kimi_commit}', trust_remote_code: true,"
        " expect: auto_map}\n",
    )
    result = pytester.runpytest_subprocess(
        "--tokcompat",
        f"--tokcompat-matrix={matrix}",
        "--tokcompat-require-hub",
        "--tokcompat-report=report.json",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=4)  # the three cases and the deepseek_v32 alias item
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    cases = {c["id"]: c for c in report["cases"] if c["kind"] == "case"}
    assert {k: c["verdict"] for k, c in cases.items()} == {
        "deepseek-v3.2-exp": "native",
        "qwen3-0.6b": "native",
        "kimi-k2-instruct": "auto_map",
    }
    ran = cases["kimi-k2-instruct"]["remote_files_ran"]
    assert {"repo": KIMI, "revision": kimi_commit, "file": "tokenization_kimi.py"}.items() <= ran[-1].items()
    assert cases["deepseek-v3.2-exp"]["remote_files_ran"] == []


def test_cli_check_of_a_hub_id_uses_the_cache(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, commit = hubcache.add_bundled(cache, "deepseek-v3.2-exp")
    assert cli.main(["check", DEEPSEEK]) == 0
    assert "verdict: native" in capsys.readouterr().out
    assert cli.main(["check", DEEPSEEK, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["verdict"] == "native"
    assert record["path"].endswith(f"snapshots/{commit}")


def test_a_repo_is_fetched_with_only_its_tokenizer_files_then_resolves_offline(
    cache: Path, local_hub: hubserver.LocalHub
) -> None:
    repo, commit = served_bundled(local_hub, "deepseek-v3.2-exp")
    online, offline = hubserver.resolve_online(
        local_hub.url, cache, [{"repo": repo}, {"repo": repo, "revision": commit}]
    )
    folder = cache / "models--deepseek-ai--DeepSeek-V3.2-Exp" / "snapshots" / commit
    assert online == {
        "folder": str(folder),
        # the revision's tokenizer files, and its file list kept beside them (a later offline run judges it
        # only when every listed file is cached)
        "files": [".tokcompat-files.json", "config.json", "tokenizer.json", "tokenizer_config.json"],
    }
    assert offline == online
    downloads = [
        r.path.rsplit("/", 1)[1] for r in local_hub.requests if r.method == "GET" and "/resolve/" in r.path
    ]
    assert sorted(downloads) == ["config.json", "tokenizer.json", "tokenizer_config.json"]  # once each
    assert (folder / "tokenizer.json").read_bytes() == local_hub.repos[repo].files["tokenizer.json"]
    assert (cache / "models--deepseek-ai--DeepSeek-V3.2-Exp" / "refs" / "main").read_text() == commit
    assert hub.resolve_repo(repo, None) == folder  # and this process, offline, finds it by its ref


def test_remote_code_is_fetched_only_at_a_commit_and_only_what_auto_map_names(
    cache: Path, local_hub: hubserver.LocalHub
) -> None:
    repo, commit = served_bundled(local_hub, "kimi-k2-instruct")
    at_branch, pinned = hubserver.resolve_online(
        local_hub.url,
        cache,
        [
            {"repo": repo, "trust_remote_code": True},
            {"repo": repo, "revision": commit, "trust_remote_code": True},
        ],
    )
    assert at_branch["error"] == "NotRunnable" and "trust_remote_code is refused" in at_branch["message"]
    assert "tokenization_kimi.py" in pinned["files"]
    fetched = local_hub.paths_fetched(repo)
    assert "tokenization_kimi.py" in fetched
    assert not {"modeling_deepseek.py", "model-00001-of-00002.safetensors", "README.md"} & fetched
    assert all(commit in r.path for r in local_hub.asked_about(repo)), "the branch was never asked for"


def test_a_gated_repo_says_whether_hf_token_is_missing_or_lacks_access(
    cache: Path, local_hub: hubserver.LocalHub
) -> None:
    repo, _ = served_bundled(local_hub, "deepseek-v3.2-exp", granted=frozenset({"hf_granted"}))
    no_token, no_access, granted = hubserver.resolve_online(
        local_hub.url,
        cache,
        [{"repo": repo}, {"repo": repo, "token": "hf_other"}, {"repo": repo, "token": "hf_granted"}],
    )
    assert no_token["error"] == "NotReachable"
    assert "gated repo" in no_token["message"] and "HF_TOKEN is not set" in no_token["message"]
    assert no_access["error"] == "NotReachable"
    assert "HF_TOKEN is set but its account has no access" in no_access["message"]
    assert "tokenizer.json" in granted["files"]
    tokens = {r.token for r in local_hub.asked_about(repo)}
    assert tokens == {None, "hf_other", "hf_granted"}


def test_a_revision_or_repo_the_hub_does_not_have(cache: Path, local_hub: hubserver.LocalHub) -> None:
    repo, _ = served_bundled(local_hub, "deepseek-v3.2-exp")
    no_revision, no_repo = hubserver.resolve_online(
        local_hub.url, cache, [{"repo": repo, "revision": "v9"}, {"repo": "owner/absent"}]
    )
    assert no_revision == {
        "error": "NotReachable",
        "message": f"{repo} has no revision 'v9': check the commit sha in the matrix entry",
    }
    assert (
        no_repo["error"] == "RepoNotFound" and "was not found on the hub, or is private" in no_repo["message"]
    )


def test_when_the_hub_refuses_or_is_down_the_cached_snapshot_is_used(
    cache: Path, local_hub: hubserver.LocalHub
) -> None:
    repo, commit = hubcache.add_bundled(cache, "deepseek-v3.2-exp")
    served_bundled(local_hub, "deepseek-v3.2-exp", granted=frozenset({"hf_granted"}))
    (refused,) = hubserver.resolve_online(local_hub.url, cache, [{"repo": repo}])
    assert refused["folder"] == str(cache / "models--deepseek-ai--DeepSeek-V3.2-Exp" / "snapshots" / commit)
    assert local_hub.paths_fetched(repo) == set()
    down, absent = hubserver.resolve_online(
        hubserver.unreachable_endpoint(), cache, [{"repo": repo}, {"repo": "owner/absent"}]
    )
    assert down == refused
    assert absent["error"] == "NotReachable"
    assert "not in the hub cache and the hub cannot be reached" in absent["message"]
