"""Hub resolution through the real huggingface_hub calls, against a real cache layout and a local hub.

Every test builds its own cache (tests/helpers/hubcache.py) and points HF_HUB_CACHE at it. Offline tests
run in this process (HF_HUB_OFFLINE=1); online ones run the same calls in a subprocess pointed
at a local HTTP server that speaks the Hub's API (tests/helpers/hubserver.py) through HF_ENDPOINT, so
nothing of huggingface_hub is patched and nothing reaches the network.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from huggingface_hub.utils import filter_repo_objects

from pytest_tokcompat import cli
from pytest_tokcompat.errors import NotReachable, NotRunnable
from pytest_tokcompat.judge.evaluate import FAILED, NOT_CHECKED, evaluate
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.request import Request
from pytest_tokcompat.sources import hub, remote_code
from pytest_tokcompat.sources.resolve import describe, resolve_name
from tests.helpers import hubcache, hubserver, toys
from tests.helpers.matrices import write_matrix
from tests.helpers.paths import MATRIX_DIR

pytest_plugins = ["pytester"]

DEEPSEEK = "deepseek-ai/DeepSeek-V3.2-Exp"
KIMI = "moonshotai/Kimi-K2-Instruct"
GOLDEN = MATRIX_DIR / "golden"


def case_of(root: Path, body: str) -> object:
    return load_matrix(write_matrix(root, body)).cases[0]


# ---- a full cache ---------------------------------------------------------------------------------


def test_full_cache_resolves_offline_with_tokenizer_files_only(cache: Path) -> None:
    repo, commit = hubcache.add_bundled(cache, "deepseek-v3.2-exp")
    folder = hub.resolve_repo(repo, None)
    assert folder == cache / "models--deepseek-ai--DeepSeek-V3.2-Exp" / "snapshots" / commit
    assert {"config.json", "tokenizer.json", "tokenizer_config.json"} <= {p.name for p in folder.iterdir()}
    assert hub.resolve_repo(repo, commit) == folder  # by commit sha, no ref needed
    assert not list(folder.glob("*.safetensors"))


def test_the_patterns_never_select_weights_or_unnamed_code() -> None:
    listing = [
        *hubcache.NOT_CACHED,
        "config.json",
        "tokenizer.json",
        "tokenizer.model",
        "tiktoken.model",
        "qwen.tiktoken",
        "chat_template.jinja",
        "special_tokens_map.json",
        "tokenization_kimi.py",
        "pytorch_model.bin",
        "original/consolidated.00.pth",
    ]
    selected = set(filter_repo_objects(listing, allow_patterns=hub.TOKENIZER_PATTERNS))
    assert selected == {
        "config.json",
        "tokenizer.json",
        "tokenizer.model",
        "tiktoken.model",
        "qwen.tiktoken",
        "chat_template.jinja",
        "special_tokens_map.json",
    }


# ---- what cannot be had: not checked, with what to do ---------------------------------------------


def test_a_cache_missing_a_file_is_not_checked_and_says_how_to_fill_it(cache: Path) -> None:
    repo, _ = hubcache.add_bundled(cache, "deepseek-v3.2-exp", omit=("tokenizer.json",))
    with pytest.raises(NotReachable) as caught:
        hub.resolve_repo(repo, None)
    message = str(caught.value)
    assert "cached snapshot is incomplete" in message
    assert "tokenizer.json" in message
    assert f"tokcompat check {repo}" in message and "HF_HUB_CACHE" in message


@pytest.mark.parametrize("require_hub", [False, True])
def test_an_unreachable_case_is_skipped_or_with_require_hub_failed(
    pytester: pytest.Pytester, cache: Path, require_hub: bool
) -> None:
    hubcache.add_bundled(cache, "deepseek-v3.2-exp", omit=("tokenizer.json",))
    matrix = write_matrix(pytester.path, f"  - {{id: ds, repo: {DEEPSEEK}, expect: native}}\n")
    flags = ["--tokcompat-require-hub"] if require_hub else []
    result = pytester.runpytest(
        "--tokcompat", f"--tokcompat-matrix={matrix}", "-p", "no:randomly", "-rs", *flags
    )
    if require_hub:
        result.assert_outcomes(failed=1, skipped=1)  # the case; the deepseek_v32 alias (no case of it)
        result.stdout.fnmatch_lines(["*case 'ds' not checked*cached snapshot is incomplete*tokenizer.json*"])
    else:
        result.assert_outcomes(skipped=2)  # never passed
        result.stdout.fnmatch_lines(["SKIPPED*not checked*cached snapshot is incomplete*"])


def test_a_revision_not_in_the_cache_names_what_the_cache_holds(cache: Path, tmp_path: Path) -> None:
    repo, commit = hubcache.add_bundled(cache, "deepseek-v3.2-exp")
    for revision in ("0" * 40, "v1.0"):
        with pytest.raises(NotReachable) as caught:
            hub.resolve_repo(repo, revision)
        message = str(caught.value)
        assert f"{repo}@{revision} is not in the hub cache" in message
        assert f"refs [main -> {commit[:12]}]" in message
        assert f"--revision {revision}" in message
    outcome = evaluate(
        Request(case_of(tmp_path, f"  - {{id: ds, repo: {DEEPSEEK}, revision: v1.0, expect: native}}\n"))
    )
    assert outcome.status == NOT_CHECKED and "not in the hub cache" in outcome.message


def test_a_repo_never_cached(cache: Path) -> None:
    with pytest.raises(NotReachable, match="the cache holds nothing of this repo"):
        hub.resolve_repo("owner/absent", None)


def test_a_tokenizer_only_repo_resolves_and_a_repo_without_tokenizer_files_is_refused(cache: Path) -> None:
    commit = hubcache.add_repo(cache, "owner/noconfig", {"tokenizer_config.json": b"{}"}, listed={})
    assert hub.resolve_repo("owner/noconfig", None).name == commit  # no config.json: judged, not refused
    hubcache.add_repo(cache, "owner/weights", {"README.md": b"weights only"}, listed={})
    with pytest.raises(NotRunnable, match=r"has neither config\.json nor tokenizer files"):
        hub.resolve_repo("owner/weights", None)


# ---- served names -----------------------------------------------------------------------------------


def test_a_served_name_resolves_to_its_repo(cache: Path) -> None:
    repo, commit = hubcache.add_bundled(cache, "glm-5-nvfp4")
    assert repo == "lukealonso/GLM-5-NVFP4"
    assert resolve_name("glm-5") == cache / "models--lukealonso--GLM-5-NVFP4" / "snapshots" / commit
    code, text = describe("glm-5", None)
    assert code == 0
    assert text.startswith("glm-5 -> lukealonso/GLM-5-NVFP4")
    assert "served name of case 'glm-5-nvfp4'" in text
    assert "also the id of case 'glm-5' (zai-org/GLM-5)" in text
    code, text = describe("deepseek-v3.2-exp", None)
    assert (code, text.splitlines()[0]) == (0, f"deepseek-v3.2-exp -> {DEEPSEEK}")


def test_an_unknown_served_name_says_how_to_pass_the_repo(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(NotReachable) as caught:  # a bare name is a hub id too: not cached, offline
        resolve_name("my-served-llm")
    message = str(caught.value)
    assert message.startswith("'my-served-llm' could not be had here; tried, in order: a folder (no folder ")
    assert "a case id, served name or repo in" in message and "(none, case-insensitive)" in message
    assert "load_tokenizer('OWNER/my-served-llm')" in message and "deepseek" not in message.lower()
    assert "served_names: [my-served-llm]" in message
    code, text = describe("my-served-llm", None)
    assert code == 0 and "a hub repo id with no matrix entry" in text and "not in the hub cache" in text
    assert cli.main(["check", "my-served-llm"]) == 3
    assert "tokcompat check OWNER/my-served-llm" in capsys.readouterr().err
    duplicated = write_matrix(
        tmp_path,
        "  - {id: a, repo: o/a, served_names: [x], expect: native}\n"
        "  - {id: b, repo: o/b, served_names: [x], expect: native}\n",
    )
    code, text = describe("x", duplicated)
    assert code == 2 and "served name of several matrix entries" in text


# ---- remote code ------------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", [None, "main", "v1.0"])
def test_remote_code_at_a_branch_or_tag_is_refused(cache: Path, tmp_path: Path, revision: str | None) -> None:
    repo, _ = hubcache.add_bundled(cache, "kimi-k2-instruct", refs=("main", "v1.0"))
    with pytest.raises(NotRunnable) as caught:
        hub.resolve_repo(repo, revision, trust_remote_code=True)
    assert "trust_remote_code is refused" in str(caught.value)
    assert "40 hex characters" in str(caught.value)
    pinned = f", revision: {revision}" if revision else ""
    case = case_of(
        tmp_path, f"  - {{id: k, repo: {repo}, trust_remote_code: true{pinned}, expect: auto_map}}\n"
    )
    outcome = evaluate(Request(case))
    assert outcome.status == FAILED and "trust_remote_code is refused" in outcome.message
    assert hub.resolve_repo(repo, revision).is_dir()  # without remote code, a branch is fine


def test_remote_code_runs_only_pinned_and_only_the_files_auto_map_names(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    canary = tmp_path / "canary"
    monkeypatch.setenv("TOKCOMPAT_CANARY", str(canary))
    folder = toys.remote_toy(tmp_path / "toy")
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    commit = hubcache.add_repo(cache, "toy/remote", files)
    assert cli.main(["check", "toy/remote", "--trust-remote-code"]) == 2
    assert "trust_remote_code is refused" in capsys.readouterr().err
    assert not canary.exists()
    assert cli.main(["check", "toy/remote", "--trust-remote-code", "--revision", commit, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["verdict"] == "auto_map"
    assert [(f["repo"], f["revision"], f["file"]) for f in record["remote_files_ran"]] == [
        ("toy/remote", commit, "configuration_toy.py"),
        ("toy/remote", commit, "tokenization_toy.py"),
    ]
    assert canary.read_text() == "remote code ran"


def test_a_named_code_file_missing_from_the_cache_is_not_checked(cache: Path) -> None:
    repo, commit = hubcache.add_bundled(cache, "kimi-k2-instruct", omit=("tokenization_kimi.py",))
    with pytest.raises(NotReachable, match=r"remote code file tokenization_kimi\.py is not in the hub cache"):
        hub.resolve_repo(repo, commit, trust_remote_code=True)
    assert hub.resolve_repo(repo, commit).is_dir()  # code is fetched only for entries that opt in


def test_modules_imported_relatively_are_fetched_too(cache: Path) -> None:
    files = {
        "config.json": json.dumps({"model_type": "x"}).encode(),
        "tokenizer_config.json": json.dumps({"auto_map": {"AutoTokenizer": [None, "tok.T"]}}).encode(),
        "tok.py": b"from .helpers import thing\n",
        "helpers.py": b"thing = 1\n",
    }
    commit = hubcache.add_repo(cache, "o/rel", files, omit=("helpers.py",))
    with pytest.raises(NotReachable, match=r"remote code file helpers\.py"):
        hub.resolve_repo("o/rel", commit, trust_remote_code=True)


def test_code_in_another_repo_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"auto_map": {"AutoConfig": "other/repo--conf.C"}}))
    with pytest.raises(NotRunnable, match="names code in another repo"):
        remote_code.remote_code_modules(tmp_path, "o/x")


# ---- online, against a local hub (tests/helpers/hubserver.py, reached through HF_ENDPOINT) --------------------


@pytest.fixture
def local_hub() -> Iterator[hubserver.LocalHub]:
    with hubserver.serving() as served:
        yield served


def served_bundled(local_hub: hubserver.LocalHub, case_id: str, **options: Any) -> tuple[str, str]:
    """Serve a bundled snapshot under its repo id, with weights and modeling code beside it: (repo, commit)."""
    case = hubcache.bundled_case(case_id)
    assert case.repo is not None
    files = {
        **hubcache.snapshot_files(case),
        **{name: b"not for a tokenizer" for name in hubcache.NOT_CACHED},
    }
    return case.repo, local_hub.add(case.repo, files, **options)


# ---- environment read at call time ------------------------------------------------------------------


def test_the_cache_folder_and_offline_mode_are_read_at_call_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub.hub_cache_dir() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "explicit"))
    assert hub.hub_cache_dir() == tmp_path / "explicit"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert hub.hub_offline() is False
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.hub_offline() is True


def test_prefetch_resolves_entries_concurrently_and_returns_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each resolution waits until all three are under way: resolved one after another, none could pass.
    all_started = threading.Barrier(3, timeout=60)

    def resolve_together(repo: str, revision: str | None, *, trust_remote_code: bool = False) -> Path:
        all_started.wait()
        if repo == "owner/absent":
            raise hub.NotReachable("owner/absent is not cached")
        return Path("/cache") / repo

    monkeypatch.setattr(hub, "resolve_repo", resolve_together)
    entries = [("owner/a", None, False), ("owner/b", "main", False), ("owner/absent", None, False)]
    results = hub.prefetch([*entries, entries[0]])
    assert results.keys() == {("owner/a", None), ("owner/b", "main"), ("owner/absent", None)}
    assert results[("owner/a", None)] == Path("/cache/owner/a")
    assert results[("owner/b", "main")] == Path("/cache/owner/b")
    assert isinstance(results[("owner/absent", None)], hub.NotReachable)
