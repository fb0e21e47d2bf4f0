"""Checkpoint files changed by an attempt's code: the attempt is not-checked, nothing later runs on the changed
files, and the files are put back byte for byte (issue 21: "a later attempt can see checkpoint file edits").

Each hostile toy proves its write happened (with the check off, the later attempt sees it and the files stay
changed); each has a control without the write that gives its normal verdict. The fork server is forced into
its subreaper mode, so that what holds is this check, never a read-only mount of the checkpoint.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_tokcompat.api import load_tokenizer
from pytest_tokcompat.errors import TokenizerBroken
from pytest_tokcompat.judge import child, pristine, reaper, truthcache, verdicts
from pytest_tokcompat.judge.evaluate import FAILED, PASSED, evaluate
from pytest_tokcompat.judge.judgement import Judgement
from pytest_tokcompat.judge.pristine import Fingerprint
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.model import AttemptStatus, Verdict
from pytest_tokcompat.request import Request
from pytest_tokcompat.sources.names import lay_out_as_hub
from tests.helpers import hubcache, toys
from tests.helpers.ladder import judge_folder

REWRITE_THEN_FAIL = """
with open({path!r}, "w") as _stream:  # through a symlink, this is the blob it points to
    _stream.write("{{}}")
raise RuntimeError("tokcompat test: the toy's code fails after its write")
"""
"""At import: tokenizer.json rewritten, then the auto_map load fails, so the ladder goes on to the backend."""

ONLY_FAIL = """
raise RuntimeError("tokcompat test: the toy's code fails")
"""

ADD_IN_FROM_PRETRAINED = """

class ToyTokenizerFast(ToyTokenizerFast):
    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        with open({log!r}, "a") as stream:
            stream.write("loaded\\n")
        if {add!r}:
            with open({add!r}, "w") as stream:
                stream.write('{{"<added>": 9999}}')
        return super().from_pretrained(*args, **kwargs)
"""
"""In from_pretrained: a file added to the checkpoint; every call is logged (outside the checkpoint)."""


@pytest.fixture(autouse=True)
def subreaper(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A fork server of this test's own that contains attempts without a mount namespace."""
    monkeypatch.setattr(child, "CONTAINMENT", reaper.SUBREAPER)
    child._shutdown()
    child._SERVER = None
    yield
    child._shutdown()
    child._SERVER = None


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def truth_entries() -> list[Path]:
    return list(Path(os.environ[truthcache.CACHE_ENV]).rglob("*.truth"))


def verdict_entries() -> list[Path]:
    return list(Path(os.environ[verdicts.CACHE_ENV]).rglob("*.json"))


def adding_toy(folder: Path, log: Path, add: Path | None) -> Path:
    toys.remote_toy(folder)
    code = textwrap.dedent(ADD_IN_FROM_PRETRAINED).format(log=str(log), add=str(add) if add else "")
    with (folder / "tokenization_toy.py").open("a", encoding="utf-8") as stream:
        stream.write(code)
    return folder


# ---- a folder -------------------------------------------------------------------------------------------


def test_tokenizer_json_rewritten_at_import_is_not_checked_and_put_back(tmp_path: Path) -> None:
    folder = tmp_path / "rewrites"
    toys.hostile_remote_toy(folder, REWRITE_THEN_FAIL.format(path=str(folder / "tokenizer.json")))
    before = snapshot(folder)
    judgement = judge_folder(folder, trust_remote_code=True)
    line = (
        "attempt auto_map changed tokenizer.json of the checkpoint: its result and every later one is not "
        "trusted; the files were put back as the judge read them"
    )
    assert judgement.verdict == Verdict.NOT_CHECKED
    assert judgement.parity.reason == line
    remote, backend = judgement.attempt("auto_map"), judgement.attempt("backend")
    assert remote is not None and remote.status == AttemptStatus.NOT_CHECKED and remote.detail == line
    assert backend is not None and backend.status == AttemptStatus.SKIPPED
    assert backend.detail == "not tried: attempt auto_map changed the checkpoint's files"  # it never ran
    assert snapshot(folder) == before  # byte for byte
    assert truth_entries() == []  # nothing measured here is kept


def test_load_tokenizer_says_not_checked_and_keeps_no_verdict(tmp_path: Path) -> None:
    folder = tmp_path / "rewrites"
    toys.hostile_remote_toy(folder, REWRITE_THEN_FAIL.format(path=str(folder / "tokenizer.json")))
    with pytest.raises(TokenizerBroken) as caught:
        load_tokenizer(folder, trust_remote_code=True)
    assert "not checked under transformers" in str(caught.value)
    assert "attempt auto_map changed tokenizer.json of the checkpoint" in str(caught.value)
    assert "no remedy loads" not in str(caught.value)
    assert verdict_entries() == [] and truth_entries() == []


def test_control_load_tokenizer_keeps_the_verdict_of_the_toy_without_the_write(tmp_path: Path) -> None:
    loaded = load_tokenizer(toys.hostile_remote_toy(tmp_path / "fails", ONLY_FAIL), trust_remote_code=True)
    assert loaded.verdict == Verdict.BACKEND
    assert len(verdict_entries()) == 1


def test_control_without_the_write_the_backend_remedy_loads(tmp_path: Path) -> None:
    folder = toys.hostile_remote_toy(tmp_path / "fails", ONLY_FAIL)
    judgement = judge_folder(folder, trust_remote_code=True)
    assert judgement.verdict == Verdict.BACKEND, judgement.parity.reason
    assert len(truth_entries()) == 1


def test_control_with_the_check_off_the_backend_attempt_sees_the_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pristine, "CHECKED", False)
    folder = tmp_path / "rewrites"
    toys.hostile_remote_toy(folder, REWRITE_THEN_FAIL.format(path=str(folder / "tokenizer.json")))
    judgement = judge_folder(folder, trust_remote_code=True)
    backend = judgement.attempt("backend")
    assert backend is not None and backend.status == AttemptStatus.LOAD_ERROR, backend.detail
    assert judgement.verdict == Verdict.BROKEN  # the false verdict the check prevents
    assert (folder / "tokenizer.json").read_text(encoding="utf-8") == "{}"


def test_a_file_added_in_from_pretrained_is_removed_and_nothing_reloads(tmp_path: Path) -> None:
    log, folder = tmp_path / "calls.log", tmp_path / "adds"
    adding_toy(folder, log, folder / "added_tokens.json")
    before = snapshot(folder)
    judgement = judge_folder(folder, trust_remote_code=True, keep_tokenizer=True)
    assert judgement.verdict == Verdict.NOT_CHECKED
    assert judgement.parity.reason is not None
    assert judgement.parity.reason.startswith(
        "attempt auto_map changed added_tokens.json (added) of the checkpoint: its result and every later "
        "one is not trusted"
    )
    assert judgement.tokenizer is None
    assert log.read_text(encoding="utf-8") == "loaded\n"  # the in-process reload never ran
    assert snapshot(folder) == before and not (folder / "added_tokens.json").exists()


def test_control_adding_nothing_the_verdict_and_the_reload_stand(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    judgement = judge_folder(
        adding_toy(tmp_path / "adds-nothing", log, None), trust_remote_code=True, keep_tokenizer=True
    )
    assert judgement.verdict == Verdict.AUTO_MAP, judgement.parity.reason
    assert judgement.tokenizer is not None
    assert log.read_text(encoding="utf-8") == "loaded\nloaded\n"  # the attempt, then the reload here


def test_control_with_the_check_off_the_added_file_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pristine, "CHECKED", False)
    log, folder = tmp_path / "calls.log", tmp_path / "adds"
    adding_toy(folder, log, folder / "added_tokens.json")
    judgement = judge_folder(folder, trust_remote_code=True)
    assert judgement.verdict == Verdict.AUTO_MAP
    assert json.loads((folder / "added_tokens.json").read_text(encoding="utf-8")) == {"<added>": 9999}


def test_the_in_process_reload_that_adds_a_file_is_not_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempt's child writes nothing (its log is empty when it runs); the reload in this process does."""
    log, folder = tmp_path / "calls.log", tmp_path / "adds-later"
    adding_toy(folder, log, None)
    code = (folder / "tokenization_toy.py").read_text(encoding="utf-8")
    late = f"if {str(log)!r} and os.path.exists({str(log)!r}) and open({str(log)!r}).read().count('loaded') > 1:\n"
    late += f"            open({str(folder / 'added_tokens.json')!r}, 'w').write('{{}}')\n"
    code = code.replace(
        "        return super().from_pretrained(",
        "        " + late + "        return super().from_pretrained(",
    )
    (folder / "tokenization_toy.py").write_text(code, encoding="utf-8")
    before = snapshot(folder)
    judgement = judge_folder(folder, trust_remote_code=True, keep_tokenizer=True)
    assert judgement.tokenizer is None and judgement.verdict == Verdict.NOT_CHECKED
    assert (judgement.parity.reason or "").startswith(
        "attempt reload:auto_map changed added_tokens.json (added)"
    )
    assert snapshot(folder) == before


# ---- a hub cache laid out as snapshot_download leaves it ---------------------------------------------------

REPO = "toy/rewrites"
COMMIT = "c0ffee" + "0" * 34


def hub_toy(cache: Path, tmp_path: Path, prelude: str) -> tuple[Path, Path]:
    """The remote toy in the hub cache: its snapshot's tokenizer.json link, and the blob it points to."""
    link = cache / f"models--{REPO.replace('/', '--')}" / "snapshots" / COMMIT / "tokenizer.json"
    folder = toys.hostile_remote_toy(tmp_path / "toy", prelude.format(path=str(link)))
    hubcache.add_repo(cache, REPO, {p.name: p.read_bytes() for p in folder.iterdir()}, commit=COMMIT)
    assert link.is_symlink()
    return link, link.resolve()


def test_a_write_through_the_snapshot_symlink_into_the_blob_is_put_back(cache: Path, tmp_path: Path) -> None:
    link, blob = hub_toy(cache, tmp_path, REWRITE_THEN_FAIL)
    target, content = os.readlink(link), blob.read_bytes()
    outcome = evaluate(Request(REPO, revision=COMMIT, trust_remote_code=True))
    assert outcome.status == FAILED and outcome.judgement is not None
    assert outcome.judgement.verdict == Verdict.NOT_CHECKED
    assert (
        "not checked: attempt auto_map changed tokenizer.json (through its symlink) of the checkpoint: its "
        "result and every later one is not trusted"
    ) in outcome.message
    assert link.is_symlink() and os.readlink(link) == target
    assert blob.read_bytes() == content  # the user's hub cache is left as it was
    assert truth_entries() == []


def test_control_the_hub_toy_without_the_write_passes(cache: Path, tmp_path: Path) -> None:
    hub_toy(cache, tmp_path, ONLY_FAIL)
    outcome = evaluate(Request(REPO, revision=COMMIT, trust_remote_code=True))
    assert outcome.status == PASSED, outcome.message
    assert outcome.judgement is not None and outcome.judgement.verdict == Verdict.BACKEND


def test_control_with_the_check_off_the_blob_stays_poisoned(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pristine, "CHECKED", False)
    _, blob = hub_toy(cache, tmp_path, REWRITE_THEN_FAIL)
    outcome = evaluate(Request(REPO, revision=COMMIT, trust_remote_code=True))
    assert outcome.judgement is not None and outcome.judgement.verdict == Verdict.BROKEN
    assert blob.read_bytes() == b"{}"


# ---- the fingerprint itself ------------------------------------------------------------------------------


def test_a_touch_is_no_change_and_a_retargeted_link_or_removal_is(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "native")
    (tmp_path / "elsewhere.json").write_text("{}", encoding="utf-8")
    (folder / "vocab.json").symlink_to(tmp_path / "elsewhere.json")
    taken = Fingerprint.take({pristine.CHECKPOINT: folder})
    os.utime(folder / "tokenizer.json", ns=(1, 1))  # stamp moved, bytes the same: no false alarm
    assert taken.changes() == []
    (folder / "vocab.json").unlink()
    (folder / "vocab.json").symlink_to(folder / "config.json")
    (folder / "tokenizer_config.json").unlink()
    assert taken.changes() == ["tokenizer_config.json (removed)", "vocab.json (replaced)"]
    assert taken.restore() == [] and taken.changes() == []
    assert os.readlink(folder / "vocab.json") == str(tmp_path / "elsewhere.json")


def test_a_folder_removed_or_made_read_only_is_put_back(tmp_path: Path) -> None:
    import shutil

    folder = toys.native_toy(tmp_path / "native")
    (folder / "sub").mkdir()
    (folder / "sub" / "vocab.txt").write_text("a\nb\n", encoding="utf-8")
    before = snapshot(folder)
    taken = Fingerprint.take({pristine.CHECKPOINT: folder})
    shutil.rmtree(folder)
    assert "folder (removed)" in taken.changes()
    assert taken.restore() == [] and snapshot(folder) == before
    (folder / "sub" / "vocab.txt").write_text("x", encoding="utf-8")
    (folder / "sub").chmod(0o555)  # refuses a new file in it (not to root): its mode is put back first
    try:
        assert taken.changes() == ["sub/vocab.txt"]
        assert taken.restore() == [] and snapshot(folder) == before
        assert ((folder / "sub").stat().st_mode & 0o777) != 0o555
    finally:
        (folder / "sub").chmod(0o755)


def test_the_hub_layout_it_is_loaded_through_is_watched_too(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "native")
    target = lay_out_as_hub("toy/native", folder, tmp_path / "layout")
    roots = pristine.roots_of(folder, target)
    assert set(roots) == {pristine.CHECKPOINT, "hub layout", "hub layout .no_exist"}
    taken = Fingerprint.take(roots)
    link = roots["hub layout"] / "tokenizer.json"
    link.unlink()
    link.write_text("{}", encoding="utf-8")  # the layout's link replaced: the folder itself is untouched
    (roots["hub layout .no_exist"] / "vocab.json").unlink()
    assert taken.changes() == [
        "hub layout tokenizer.json (replaced)",
        "hub layout .no_exist vocab.json (removed)",
    ]
    assert taken.restore() == [] and taken.changes() == []
    assert link.is_symlink() and link.resolve() == (folder / "tokenizer.json").resolve()


def test_the_fingerprints_hashes_are_the_truth_cache_keys(tmp_path: Path) -> None:
    folder = toys.remote_toy(tmp_path / "remote")
    (folder / ".marks").mkdir()
    (folder / ".marks" / "x").write_text("ours", encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"weights")
    digests = Fingerprint.take({pristine.CHECKPOINT: folder}).digests(pristine.CHECKPOINT)
    assert digests is not None and "tokenizer.json" in digests
    assert truthcache.key_fields(folder, [], None, digests) == truthcache.key_fields(folder, [], None)


# ---- a client's loader runs foreign code too ------------------------------------------------------------

REWRITING_LOADER = """
import os
from transformers import AutoTokenizer


def load(path, rewrite=False):
    tokenizer = AutoTokenizer.from_pretrained(path)
    if rewrite:
        with open(os.path.join(path, "tokenizer.json"), "w") as stream:
            stream.write("{}")
    return tokenizer
"""


def judge_with_loaders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rewrite: bool) -> Judgement:
    (tmp_path / "rewriting_loader.py").write_text(REWRITING_LOADER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaders = [
        ClientLoader("rewrites", "rewriting_loader", "load", kwargs={"rewrite": rewrite}),
        ClientLoader("after", "rewriting_loader", "load"),
    ]
    return judge_folder(toys.native_toy(tmp_path / "toy"), loaders=loaders)


def test_a_loader_that_rewrites_tokenizer_json_makes_the_case_not_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot(toys.native_toy(tmp_path / "toy"))
    judgement = judge_with_loaders(tmp_path, monkeypatch, rewrite=True)
    line = (
        "attempt loader:rewrites changed tokenizer.json of the checkpoint: its result and every later one is "
        "not trusted; the files were put back as the judge read them"
    )
    assert judgement.verdict == Verdict.NOT_CHECKED and judgement.parity.reason == line
    rewrites, after = judgement.loaders
    assert rewrites.attempt.status == AttemptStatus.NOT_CHECKED and rewrites.attempt.detail == line
    assert after.attempt.status == AttemptStatus.NOT_CHECKED
    assert after.attempt.detail == "not tried: attempt loader:rewrites changed the checkpoint's files"
    assert snapshot(tmp_path / "toy") == before


def test_control_loaders_that_write_nothing_keep_the_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    judgement = judge_with_loaders(tmp_path, monkeypatch, rewrite=False)
    assert judgement.verdict == Verdict.NATIVE
    assert [result.attempt.status for result in judgement.loaders] == [AttemptStatus.OK, AttemptStatus.OK]


def test_control_with_the_check_off_the_next_loader_sees_the_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pristine, "CHECKED", False)
    judgement = judge_with_loaders(tmp_path, monkeypatch, rewrite=True)
    rewrites, after = judgement.loaders
    assert rewrites.attempt.status == AttemptStatus.OK
    assert after.attempt.status == AttemptStatus.LOAD_ERROR, after.attempt.detail
