"""Names a client passes to ``load_tokenizer()`` and the CLI: tokenizer-only folders and repos, bare hub
names (``gpt2``), case-insensitive served names and case ids, ``tokcompat resolve --json``, and errors
that cite the name given.

The checkpoints are real bundled ones: DeepSeek-V3's files (its tokenizer.json is the ground truth)
with config.json left out, as a folder, in a filled hub cache and on a local hub (HF_ENDPOINT).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer

from pytest_tokcompat import load_tokenizer
from pytest_tokcompat.cli import main
from pytest_tokcompat.errors import NotReachable, TokenizerBroken, UnknownName
from pytest_tokcompat.matrix.discovery import bundled_matrix
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.sources.checkpoint import MatchedBy
from pytest_tokcompat.sources.resolve import describe_json, identify, resolve
from tests.helpers import hubcache, hubserver
from tests.helpers.paths import REPO

BUNDLED = load_matrix(bundled_matrix())
TEXTS = ["Hello world", "数学 한국어 👩‍👩‍👧 café", "def f(x):\n\treturn x  # 42"]


def tokenizer_files(case_id: str) -> dict[str, bytes]:
    """The real files of a bundled snapshot, without config.json: what a tokenizer-only repo holds."""
    files = hubcache.snapshot_files(hubcache.bundled_case(case_id))
    del files["config.json"]
    return {name: content for name, content in files.items() if not name.endswith(".py")}


def tokenizer_only_folder(root: Path, case_id: str = "deepseek-v3") -> Path:
    root.mkdir(parents=True)
    for name, content in tokenizer_files(case_id).items():
        (root / name).write_bytes(content)
    return root


def assert_judged_by_tokenizer_json(record: dict[str, Any]) -> None:
    """The record of a tokenizer-only checkpoint: no model_type, no alias, tokenizer.json's ids the truth."""
    assert record["static"]["has_config"] is False and record["static"]["model_type"] is None
    assert record["failure"] is None, record["message"]
    native = record["attempts"][0]
    assert (
        native["remedy"] == "native" and native["parity"]["source"] == "tokenizer.json (tokenizers library)"
    )
    counts = native["parity"]["probe_counts"]
    assert {"builtin", "special", "vocab", "script", "digits", "whitespace"} <= set(counts)
    assert set(native["parity"]["dimensions"]) == {
        "ids",
        "special_text",
        "default_call",
        "special_tokens",
        "decode",
        "chat_template",
    }
    if native["status"] == "ok":
        assert record["verdict"] == "native" and [a["remedy"] for a in record["attempts"]] == ["native"]
    else:  # e.g. transformers 5.5.4: plain loading rebuilds a Llama tokenizer, and nothing can be aliased
        assert native["status"] == "drift" and record["verdict"] in ("backend", "broken")
        alias = next(a for a in record["attempts"] if a["remedy"] == "alias")
        assert alias["status"] == "skipped"
        backend = next(a for a in record["attempts"] if a["remedy"] == "backend")
        assert (backend["status"] == "ok") == (record["verdict"] == "backend")
        assert "no config.json (tokenizer-only): no model_type, so no alias applies" in alias["detail"]


def assert_loads_right_or_broken(name: str | Path, folder_of_truth: Path, record: dict[str, Any]) -> None:
    if record["verdict"] == "broken":
        with pytest.raises(
            TokenizerBroken, match=r"no config\.json \(tokenizer-only\), so no alias can apply"
        ):
            load_tokenizer(name)
        return
    loaded = load_tokenizer(name)
    assert (loaded.verdict, loaded.record["static"]["has_config"]) == (record["verdict"], False)
    truth = Tokenizer.from_file(str(folder_of_truth / "tokenizer.json"))
    for text in TEXTS:
        ids = loaded.tokenizer.encode(text, add_special_tokens=False)
        assert ids == truth.encode(text, add_special_tokens=False).ids


# ---- 1. tokenizer-only folders and repos --------------------------------------------------------------


@pytest.fixture
def local_hub() -> Iterator[hubserver.LocalHub]:
    with hubserver.serving() as served:
        yield served


def _check_record(name: str) -> dict[str, Any]:
    from pytest_tokcompat.judge.evaluate import evaluate
    from pytest_tokcompat.request import Request

    return evaluate(Request(name, matrix=bundled_matrix())).to_json()


# ---- 2. bare hub names ----------------------------------------------------------------------------------


def test_the_order_is_folder_then_matrix_names_then_the_hub(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hubcache.add_repo(cache, "qwen3-0.6b", tokenizer_files("deepseek-v3"))  # a hub repo of a case id's name
    assert identify("qwen3-0.6b").by is MatchedBy.ID, "a case id comes before a hub repo of that name"
    monkeypatch.chdir(tmp_path)
    folder = tokenizer_only_folder(tmp_path / "qwen3-0.6b")
    assert identify("qwen3-0.6b").by is MatchedBy.FOLDER, "a folder comes first"
    assert resolve("qwen3-0.6b").folder.resolve() == folder


def test_an_unknown_name_lists_what_was_tried(cache: Path, local_hub: hubserver.LocalHub) -> None:
    with pytest.raises(UnknownName) as caught:
        resolve("not a name!")
    message = str(caught.value)
    assert message.startswith("'not a name!' names no checkpoint here; tried, in order: a folder (no folder ")
    assert f"a case id, served name or repo in {bundled_matrix()} (none, case-insensitive)" in message
    assert "a hub repo id (not one: " in message and "served_names: [not a name!]" in message
    with pytest.raises(
        NotReachable,
        match=r"'nobody-knows' could not be had here; tried, in order: .*hub repo id \(nobody-knows@main is not in the hub cache",
    ):
        resolve("nobody-knows")


# ---- 3. case-insensitive names, resolve --json, the name given in errors --------------------------------


@pytest.mark.parametrize("name", ["DeepSeek-V3.2-Exp", "deepseek-v3.2-exp", "DEEPSEEK-V3.2-EXP"])
def test_case_ids_are_case_insensitive(name: str) -> None:
    identity = identify(name)
    assert (identity.by, identity.case) == (MatchedBy.ID, BUNDLED.by_id("deepseek-v3.2-exp"))


def test_served_names_are_case_insensitive_and_an_exact_spelling_wins(tmp_path: Path) -> None:
    matrix = tmp_path / "models.yaml"
    matrix.write_text(
        "version: 1\ncases:\n"
        "  - {id: a, repo: o/a, served_names: [My-Model], expect: native}\n"
        "  - {id: b, repo: o/b, served_names: [my-model-b], expect: native}\n"
        "  - {id: My-Model-B, repo: o/c, expect: native}\n"
    )
    assert identify("my-model", matrix).case.id == "a"  # type: ignore[union-attr]
    assert identify("MY-MODEL", matrix).by is MatchedBy.SERVED_NAME
    assert identify("My-Model-B", matrix).case.id == "My-Model-B", "exact id before a folded served name"  # type: ignore[union-attr]
    assert identify("MY-MODEL-B", matrix).case.id == "b", "folded: a served name before an id"  # type: ignore[union-attr]
    assert identify(f"{matrix}::my-model-b", matrix).case.id == "My-Model-B"  # type: ignore[union-attr]


def test_resolve_json_is_machine_readable(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resolve", "--json", "DeepSeek-V3.2-Exp"]) == 0
    document = json.loads(capsys.readouterr().out)
    case = BUNDLED.by_id("deepseek-v3.2-exp")
    assert document == {
        "name": "DeepSeek-V3.2-Exp",
        "error": None,
        "matched_by": "id",
        "case_id": "deepseek-v3.2-exp",
        "location": case.location,
        "matrix": str(bundled_matrix()),
        "source": "snapshot",
        "folder": str(case.snapshot),
        "repo": "deepseek-ai/DeepSeek-V3.2-Exp",
        "revision": None,
        "cached_revision": None,
        "fallback": None,
        "stand_in": False,
        "trust_remote_code": False,
        "served_names": [],
        "notes": [],
    }
    commit = hubcache.add_repo(cache, "gpt2", tokenizer_files("deepseek-v3"))
    code, bare = describe_json("gpt2", None)
    assert code == 0
    assert (bare["matched_by"], bare["source"], bare["repo"], bare["case_id"]) == (
        "repo id",
        "hub",
        "gpt2",
        None,
    )
    assert (bare["cached_revision"], bare["folder"]) == (
        commit,
        str(cache / "models--gpt2" / "snapshots" / commit),
    )
    code, served = describe_json("GLM-5-NVFP4", None)
    assert (served["matched_by"], served["case_id"], served["source"]) == (
        "served name",
        "glm-5-nvfp4",
        "hub",
    )
    # GLM-5's snapshot holds real tokenizer files now, so it is the fallback; Kimi's is a stand-in, never one
    assert served["stand_in"] is False and served["fallback"] == str(BUNDLED.by_id("glm-5-nvfp4").snapshot)
    code, kimi = describe_json("moonshotai/Kimi-K2-Instruct", None)
    assert kimi["stand_in"] is True and kimi["fallback"] is None, "a stand-in is never a fallback"
    code, shadowed = describe_json("glm-5", None)
    assert any(f"(or {bundled_matrix()}::glm-5)" in note for note in shadowed["notes"])
    code, real = describe_json("Qwen/Qwen3-0.6B", None)
    assert (real["source"], real["fallback"]) == ("hub", str(BUNDLED.by_id("qwen3-0.6b").snapshot))


def test_errors_cite_the_name_given_never_the_deepseek_example() -> None:
    """No message of the front-ends and the resolver names a model the user did not give."""
    package = REPO / "pytest_tokcompat"
    modules = ["sources/resolve.py", "sources/hub.py", "api.py"]
    modules += [str(path.relative_to(package)) for path in sorted((package / "cli").glob("*.py"))]
    assert "cli/check.py" in modules  # control: the command modules are read
    for module in modules:
        source = (package / module).read_text(encoding="utf-8")
        assert "huggingface-cli" not in source, module
        assert "deepseek-ai/" not in source.lower(), module


def test_an_empty_folder_is_named_in_the_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty-model"
    empty.mkdir()
    assert main(["check", str(empty)]) == 2
    err = capsys.readouterr().err
    assert f"{empty} holds neither config.json nor tokenizer files" in err and "deepseek" not in err.lower()


def test_a_matrix_entry_may_name_a_bare_hub_repo(tmp_path: Path) -> None:
    matrix = tmp_path / "models.yaml"
    matrix.write_text("version: 1\ncases:\n  - {id: small-gpt, repo: GPT2, expect: native}\n")
    identity = identify("gpt2", matrix)
    assert (identity.by, identity.case.id, identity.repo) == (MatchedBy.REPO, "small-gpt", "GPT2")  # type: ignore[union-attr]
