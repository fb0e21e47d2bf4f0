"""Judge what the client gets: the name it loads, what the checkpoint declares, graded findings, repairs.

Each behaviour is measured on the contract toys (``contract_toys.py``), whose drift the installed
transformers shows or not, checked directly by one transformers call (``drift_shows``) so a test
never asserts a drift this release does not have. The full-size real checkpoints are in
``test_client_call_e2e.py``.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

from pytest_tokcompat import cli
from pytest_tokcompat.api import TokenizerFindings, load_tokenizer
from pytest_tokcompat.errors import TokenizerBroken
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.judge.alarms import findings_alarm, verdict_alarm
from pytest_tokcompat.judge.chat import FROZEN_NOW, reference_environment
from pytest_tokcompat.judge.loading import transformers_version
from pytest_tokcompat.judge.parity import ground_truth, reference_tokenizer
from pytest_tokcompat.judge.probes import probe_texts
from pytest_tokcompat.model import AlarmKind
from pytest_tokcompat.sources.names import LoadTarget, lay_out_as_hub, load_target
from pytest_tokcompat.sources.resolve import resolve
from tests.helpers.contract_toys import contract_toy, with_chat_template
from tests.helpers.ladder import judge_folder
from tests.unit.judge.test_contract_dimensions import drift_shows


def _needs(drift: str, folder: Path) -> None:
    if not drift_shows(drift, folder):
        pytest.skip(
            f"transformers {transformers_version()} honours the toy's {drift} declaration: nothing to judge"
        )


# ---- the name the client loads ------------------------------------------------------------------------


def test_a_snapshot_laid_out_as_a_hub_repo_loads_by_its_repo_id_offline(tmp_path: Path) -> None:
    folder = contract_toy(tmp_path / "toy")
    target = lay_out_as_hub("owner/Toy-Model", folder, tmp_path / "hub")
    snapshot = tmp_path / "hub" / "models--owner--Toy-Model" / "snapshots" / str(target.revision)
    assert sorted(p.name for p in snapshot.iterdir()) == sorted(p.name for p in folder.iterdir())
    assert all((snapshot / p.name).resolve() == p.resolve() for p in folder.iterdir())
    assert (snapshot.parent.parent / "refs" / "main").read_text() == target.revision
    assert lay_out_as_hub("owner/Toy-Model", folder, tmp_path / "hub") == target  # the same content: reused
    judgement = judge_folder(folder, target=target)
    native = judgement.attempt("native")
    assert native is not None and native.loaded_as == "owner/Toy-Model"
    assert (judgement.verdict, native.status) == ("native", "ok")
    # a changed folder is a new snapshot, never a rewrite of the old one
    (folder / "extra.txt").write_text("x", encoding="utf-8")
    assert lay_out_as_hub("owner/Toy-Model", folder, tmp_path / "hub").revision != target.revision


def test_remote_code_loads_by_repo_id_from_the_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """transformers files a repo's remote code under the commit it finds in the file's path: the layout
    must give it one (a layout under a 'snapshots' folder did not: TypeError in get_cached_module_file)."""
    from tests.helpers import toys

    monkeypatch.setenv("TOKCOMPAT_CACHE", str(tmp_path / "cache" / "snapshots"))
    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "modules"))
    canary = tmp_path / "canary"
    monkeypatch.setenv("TOKCOMPAT_CANARY", str(canary))
    folder = toys.remote_toy(tmp_path / "remote")
    target = lay_out_as_hub("toy/remote", folder)
    assert "snapshots/" not in str(target.cache_dir) + "/"
    judgement = judge_folder(folder, target=target, trust_remote_code=True)
    remote = judgement.attempt("auto_map")
    assert remote is not None and (remote.status, remote.loaded_as) == ("ok", "toy/remote"), remote
    assert judgement.verdict == "auto_map" and canary.exists()
    with pytest.raises(ValueError, match="snapshots"):
        lay_out_as_hub("toy/remote", folder, tmp_path / "snapshots" / "hub")


def test_a_repo_id_load_never_reaches_the_network(tmp_path: Path) -> None:
    """Control of the offline claim: a repo id with no snapshot in the given cache fails at once, by name."""
    target = LoadTarget("owner/not-cached", "0" * 40, str(tmp_path / "empty-hub"))
    judgement = judge_folder(contract_toy(tmp_path / "toy"), target=target)
    native = judgement.attempt("native")
    assert native is not None and native.status == "load-error"
    assert native.seconds < 30


def test_a_folder_is_loaded_by_the_path_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    contract_toy(tmp_path / "owner" / "Toy-Model")
    monkeypatch.chdir(tmp_path)
    checkpoint = resolve("owner/Toy-Model")  # a relative path that looks like a hub id
    assert load_target(checkpoint) == LoadTarget("owner/Toy-Model")
    absolute = resolve(tmp_path / "owner" / "Toy-Model")
    assert load_target(absolute) == LoadTarget(str(tmp_path / "owner" / "Toy-Model"))


def test_a_hub_checkpoint_loads_by_its_repo_id_from_a_layout_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tokenizer-only repo loads offline as it does online: the files the repo lacks are marked absent
    (.no_exist), in a layout of our own; the user's hub cache is never written to."""
    import shutil

    from pytest_tokcompat.sources.checkpoint import Checkpoint, Source

    monkeypatch.setenv("TOKCOMPAT_CACHE", str(tmp_path / "cache"))
    snapshot = tmp_path / "hub" / "models--o--tok-only" / "snapshots" / ("a" * 40)
    shutil.copytree(contract_toy(tmp_path / "toy"), snapshot)
    (snapshot / "config.json").unlink()  # a tokenizer-only repo
    before = sorted(str(p) for p in (tmp_path / "hub").rglob("*"))
    checkpoint = Checkpoint(target="o/tok-only", folder=snapshot, source=Source.HUB, repo="o/tok-only")
    target = load_target(checkpoint)
    assert target.name == "o/tok-only" and target.cache_dir == str(tmp_path / "cache-hub")
    absent = tmp_path / "cache-hub" / "models--o--tok-only" / ".no_exist" / str(target.revision)
    assert (absent / "config.json").is_file() and not (absent / "tokenizer.json").exists()
    judgement = judge_folder(snapshot, target=target)
    native = judgement.attempt("native")
    assert native is not None and native.status == "ok", native
    assert sorted(str(p) for p in (tmp_path / "hub").rglob("*")) == before
    (
        absent / "config.json"
    ).unlink()  # control: without the mark, offline loading cannot tell absent from uncached
    assert judge_folder(snapshot, target=target).attempt("native").status == "load-error"  # type: ignore[union-attr]


# ---- what the checkpoint declares ------------------------------------------------------------------------


def _declare_added_token(folder: Path, content: str) -> int:
    from tokenizers import Tokenizer

    new_id = Tokenizer.from_file(str(folder / "tokenizer.json")).get_vocab_size(with_added_tokens=True)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config.setdefault("added_tokens_decoder", {})[str(new_id)] = {
        "content": content,
        "lstrip": False,
        "normalized": False,
        "rstrip": False,
        "single_word": False,
        "special": True,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return new_id


def test_the_ground_truth_has_the_added_tokens_the_config_declares(tmp_path: Path) -> None:
    folder = contract_toy(tmp_path / "toy")
    token_id = _declare_added_token(folder, "<|audio_pad|>")
    text = "a <|audio_pad|> b"
    from tokenizers import Tokenizer

    assert token_id not in Tokenizer.from_file(str(folder / "tokenizer.json")).encode(text).ids  # the premise
    reference = reference_tokenizer(folder)
    assert reference is not None and token_id in reference.encode(text, add_special_tokens=False).ids
    truth = ground_truth(folder, probe_texts([text]), None, reference)
    assert truth is not None and text in truth.special_texts
    judgement = judge_folder(folder, extra_texts=[text])
    native = judgement.attempt("native")
    assert native is not None and native.parity is not None
    assert native.parity.dimensions["special_text"]["status"] == "match"  # transformers adds it too
    assert judgement.verdict == "native"


# ---- the clock -------------------------------------------------------------------------------------------


def test_a_template_that_prints_the_clock_renders_at_one_instant_on_both_sides(tmp_path: Path) -> None:
    template = (
        "{{ strftime_now('%Y-%m-%d %H:%M:%S.%f') }}\n"
        "{% for m in messages %}{{ m.role }}: {{ m.content if m.content is not none else '' }}\n{% endfor %}"
    )
    folder = with_chat_template(contract_toy(tmp_path / "toy"), template)
    judgement = judge_folder(folder)
    native = judgement.attempt("native")
    assert native is not None and native.parity is not None
    chat = native.parity.dimensions["chat_template"]
    assert (chat["status"], chat["checked"]) == ("match", 8), chat
    rendered = reference_environment().from_string(template).render(messages=[])
    assert rendered.startswith(FROZEN_NOW.strftime("%Y-%m-%d %H:%M:%S.%f"))  # control: it prints the clock


# ---- findings, graded -----------------------------------------------------------------------------------


def test_right_ids_with_a_finding_is_native_not_broken(tmp_path: Path) -> None:
    folder = contract_toy(tmp_path / "toy", "decode")
    _needs("decode", folder)
    judgement = judge_folder(folder)
    assert (judgement.verdict, judgement.findings) == ("native", ["decode"])
    assert "displayed text" in judgement.parity.describe()
    alarm = findings_alarm("toy", judgement)
    assert alarm is not None and alarm.kind == AlarmKind.UNACKNOWLEDGED_FINDING
    assert "displayed text" in alarm.message and "acknowledge decode" in alarm.action
    clean = judge_folder(contract_toy(tmp_path / "clean"))
    assert (clean.verdict, clean.findings, findings_alarm("clean", clean)) == ("native", [], None)


def test_check_exits_4_for_right_ids_with_findings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = contract_toy(tmp_path / "toy", "decode")
    _needs("decode", folder)
    assert cli.main(["check", str(folder), "--json"]) == ExitCode.FINDINGS
    record = json.loads(capsys.readouterr().out)
    assert (record["verdict"], record["findings"]) == ("native", ["decode"])
    assert cli.main(["check", str(contract_toy(tmp_path / "clean"))]) == ExitCode.OK


# ---- repairs --------------------------------------------------------------------------------------------


def test_the_declared_bos_is_repaired_and_load_tokenizer_applies_it(tmp_path: Path) -> None:
    folder = contract_toy(tmp_path / "toy", "default_call")
    _needs("default_call", folder)
    judgement = judge_folder(folder)
    assert (judgement.verdict, judgement.findings) == ("native", ["default_call"])  # the premise, measured
    assert judgement.repairs == ["declared_special_tokens"]
    assert judgement.remaining_findings == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", TokenizerFindings)  # repaired: nothing left to warn about
        loaded = load_tokenizer(folder, cache=False)
    bos = loaded.tokenizer.bos_token_id
    assert loaded.repairs == ("declared_special_tokens",) and loaded.findings == ()
    assert loaded.tokenizer("Hello world")["input_ids"][0] == bos
    assert loaded.tokenizer.encode("Hello world", add_special_tokens=False)[0] != bos


def test_load_tokenizer_attaches_findings_and_refuses_them_only_when_asked(tmp_path: Path) -> None:
    folder = contract_toy(tmp_path / "toy", "decode")
    _needs("decode", folder)
    with pytest.warns(TokenizerFindings, match="displayed text"):
        loaded = load_tokenizer(folder, cache=False)
    assert [f.dimension for f in loaded.findings] == ["decode"] and loaded.verdict == "native"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TokenizerFindings)
        assert load_tokenizer(folder, cache=False, require=["default_call"]).verdict == "native"
        with pytest.raises(TokenizerBroken, match=r"strict=True.*decode"):
            load_tokenizer(folder, cache=False, strict=True)
        with pytest.raises(TokenizerBroken, match="require=\\['decode'\\]"):
            load_tokenizer(folder, cache=False, require=["decode"])
        with pytest.raises(ValueError, match="unknown dimension"):
            load_tokenizer(folder, cache=False, require=["decod"])


def test_wrong_ids_that_the_backend_override_gets_right_are_backend(tmp_path: Path) -> None:
    folder = contract_toy(tmp_path / "toy", "script")
    _needs("script", folder)
    judgement = judge_folder(folder)
    native, backend = judgement.attempt("native"), judgement.attempt("backend")
    assert native is not None and native.status == "drift"
    assert backend is not None and backend.status == "ok"
    assert judgement.verdict == "backend"
    alarm = verdict_alarm("toy", "native", judgement)
    assert alarm is not None and "a repair is needed" in alarm.action
    loaded = load_tokenizer(folder, cache=False)
    text = "नमस्ते दुनिया"
    expected = reference_tokenizer(folder).encode(text, add_special_tokens=False).ids  # type: ignore[union-attr]
    assert list(loaded.tokenizer.encode(text, add_special_tokens=False)) == expected


def test_a_backend_expectation_that_plain_loading_meets_is_an_obsolete_repair(tmp_path: Path) -> None:
    judgement = judge_folder(contract_toy(tmp_path / "clean"))
    alarm = verdict_alarm("clean", "backend", judgement)
    assert alarm is not None and alarm.kind == AlarmKind.OBSOLETE_REPAIR
    assert f"obsolete from {judgement.transformers_version}" in alarm.message
    assert verdict_alarm("clean", "native", judgement) is None  # control: as expected, no alarm


def test_the_repo_id_is_part_of_the_verdict_cache_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_tokcompat.judge.verdicts import key_fields
    from pytest_tokcompat.sources.checkpoint import Checkpoint, Source

    monkeypatch.setenv("TOKCOMPAT_CACHE", str(tmp_path / "cache"))
    folder = contract_toy(tmp_path / "toy")
    as_folder = Checkpoint(target=str(folder), folder=folder, source=Source.FOLDER)
    as_repo = Checkpoint(target="o/n", folder=folder, source=Source.SNAPSHOT, repo="o/n")
    assert key_fields(as_folder, {}, None)["loaded_as"] == str(folder)
    assert key_fields(as_repo, {}, None)["loaded_as"] == "o/n"
    assert not os.path.exists(tmp_path / "cache-hub")  # the key needs the name only: nothing laid out
    load_target(as_repo)
    assert os.path.isdir(tmp_path / "cache-hub" / "models--o--n")  # beside the snapshot cache
