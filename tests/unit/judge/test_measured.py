"""The verdict is measured, never claimed (issue 21): an attempt's child sends what its tokenizer answered,
and the parent computes parity from those answers against its own ground truth.

Remote code runs in the attempt's child and can change anything there: the judge's functions, the
modules in ``sys.modules``, the frames on its pipe. None of that may change the verdict. Each forgery
below runs in a remote-code tokenizer whose ids are wrong; each has a control that shows the same
setup (the same toy without the forgery, or the forgery on a tokenizer with right ids) is seen.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_tokcompat import cli
from pytest_tokcompat.judge.absorb import Found as _Found
from pytest_tokcompat.judge.absorb import absorb as _absorb
from pytest_tokcompat.judge.chat import frozen_clock
from pytest_tokcompat.judge.observed import (
    Malformed,
    Replay,
    observe,
    questions_for,
    read_report,
)
from pytest_tokcompat.judge.parity import Truth, check_parity, ground_truth, reference_tokenizer
from pytest_tokcompat.judge.probes import derive_probes, probe_texts
from pytest_tokcompat.judge.static import special_tokens
from pytest_tokcompat.model import AttemptStatus, Verdict
from tests.helpers import toys
from tests.helpers.contract_toys import DRIFTS, contract_toy, with_chat_template
from tests.unit.judge.test_isolation import judge_within

WRONG_IDS = """

_encode = ToyTokenizerFast.encode


def _shifted(self, text, *args, **kwargs):
    return [i + 1 for i in _encode(self, text, *args, **kwargs)]


ToyTokenizerFast.encode = _shifted
"""
"""Appended to the remote toy: its tokenizer gives every id one too high (an honest judge: drift)."""

MARK = """
from pathlib import Path
Path({marker!r}).write_text("the forgery ran")
"""

_FRAMES = """
import json, os, struct

def _frame(message):
    body = json.dumps(message).encode()
    return struct.pack(">I", len(body)) + body

for _name in os.listdir("/proc/self/fd"):
    try:
        if int(_name) > 2 and os.readlink(f"/proc/self/fd/{_name}").startswith("pipe:"):
            os.write(int(_name), _frame({"kind": "attempt", "attempt": json.loads(%r)}) + _frame({"kind": "end"}))
    except OSError:
        pass
os._exit(0)
"""
_OLD_CLAIM = {
    "remedy": "auto_map",
    "status": "ok",
    "tokenizer_class": "ToyTokenizerFast",
    "parity": {"status": "match", "checked": 9, "source": "forged"},
}
_BAD_OBSERVATIONS = {
    "remedy": "auto_map",
    "loaded": True,
    "observations": {
        "encode": {"Hello": {"value": ["1", "2"]}},
        "decode": {"raw": {}, "default": {}, "skip": {}},
        "call": {},
        "encode_default": {},
        "attributes": {},
        "chat": [],
    },
}

FORGERIES = {
    "check_parity-monkeypatched": """
from pytest_tokcompat.judge import ladder, parity

def _always(tokenizer, truth, texts):
    return parity.Parity("match", 99, "forged")

parity.check_parity = _always
ladder.check_parity = _always
""",
    "sys.modules-replaced": """
import sys, types
from pytest_tokcompat.judge import ladder, parity
_fake = types.ModuleType("pytest_tokcompat.judge.parity")
_fake.__dict__.update(vars(parity))
_fake.check_parity = lambda tokenizer, truth, texts: parity.Parity("match", 99, "forged")
sys.modules["pytest_tokcompat.judge.parity"] = _fake
sys.modules["pytest_tokcompat.judge.ladder"].check_parity = _fake.check_parity
""",
    "the-report-claims-ok": """
from pytest_tokcompat.judge import ladder, parity
_to_json = ladder.Attempt.to_json

def _claim(self):
    return {**_to_json(self), "status": "ok", "detail": None, "parity": {"status": "match", "checked": 9}}

ladder.Attempt.to_json = _claim
""",
    "observe-fed-an-honest-tokenizer": """
import os
from transformers import PreTrainedTokenizerFast as _Honest
import pytest_tokcompat.judge.job as _job
_observe = _job.observe

def _honest(tokenizer, *args, **kwargs):
    path = os.path.join(tokenizer.name_or_path, "tokenizer.json")
    return _observe(_Honest(tokenizer_file=path), *args, **kwargs)

_job.observe = _honest
""",
    "a-function-rewritten-in-place": """
import os
from transformers import PreTrainedTokenizerFast as _Honest
from pytest_tokcompat.judge import observed as _observed
_original = _observed.observe
_copy = type(_original)(_original.__code__, _original.__globals__, "_copy", _original.__defaults__)
vars(_observed).update(_copy=_copy, _os=os, _Honest=_Honest)  # new names: what the rewritten code reads

def _honest(tokenizer, *args, **kwargs):
    path = _os.path.join(tokenizer.name_or_path, "tokenizer.json")
    return _copy(_Honest(tokenizer_file=path), *args, **kwargs)

_original.__code__ = _honest.__code__
""",
    "a-forged-ok-frame-then-exit": _FRAMES % json.dumps(_OLD_CLAIM),
    "forged-observations-of-the-wrong-type": _FRAMES % json.dumps(_BAD_OBSERVATIONS),
}


def _forging_toy(folder: Path, forgery: str, marker: Path, *, wrong_ids: bool = True) -> Path:
    """The remote toy whose code first marks that it ran, then forges; its class then gets wrong ids."""
    prelude = MARK.format(marker=str(marker)) + textwrap.dedent(forgery)
    toys.hostile_remote_toy(folder, prelude)
    if wrong_ids:
        with (folder / "tokenization_toy.py").open("a", encoding="utf-8") as stream:
            stream.write(WRONG_IDS)
    return folder


def test_control_a_remote_tokenizer_with_wrong_ids_drifts_and_the_ladder_moves_on(tmp_path: Path) -> None:
    """Control: with no forgery, the wrong ids are a drift of auto_map; the backend loads tokenizer.json right."""
    judgement = judge_within(_forging_toy(tmp_path / "toy", "", tmp_path / "ran"), trust_remote_code=True)
    remote = judgement.attempt("auto_map")
    assert (tmp_path / "ran").is_file()
    assert remote is not None and remote.status == AttemptStatus.DRIFT
    assert "ids differ" in (remote.detail or "")
    assert judgement.verdict == Verdict.BACKEND


@pytest.mark.parametrize("forgery", FORGERIES.values(), ids=FORGERIES.keys())
def test_what_remote_code_overrides_in_its_child_never_becomes_the_verdict(
    tmp_path: Path, forgery: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _forging_toy(tmp_path / "toy", forgery, tmp_path / "ran")
    judgement = judge_within(folder, trust_remote_code=True)
    assert (tmp_path / "ran").is_file(), "the forgery did not run"
    remote = judgement.attempt("auto_map")
    assert remote is not None and remote.status in (AttemptStatus.DRIFT, AttemptStatus.NOT_CHECKED)
    assert judgement.verdict in (Verdict.BACKEND, Verdict.NOT_CHECKED)
    if remote.status == AttemptStatus.NOT_CHECKED:  # a frame the parent cannot read: says why, in one line
        assert "nothing it reported is used" in (remote.detail or "")
        assert "\n" not in (remote.detail or "")
    for expected in ("native", "auto_map"):
        code = cli.main(["check", str(folder), "--trust-remote-code", "--expect", expected, "--json"])
        record = json.loads(capsys.readouterr().out)
        assert code != 0 and record["verdict"] == judgement.verdict, expected


def test_control_a_right_remote_tokenizer_whose_code_runs_is_auto_map(tmp_path: Path) -> None:
    """Control: remote code that runs (the marker) beside a tokenizer with right ids, without touching
    the judge: auto_map. What decides is what the tokenizer answers."""
    judgement = judge_within(
        _forging_toy(tmp_path / "toy", "", tmp_path / "ran", wrong_ids=False), trust_remote_code=True
    )
    assert (tmp_path / "ran").is_file()
    assert judgement.verdict == Verdict.AUTO_MAP


def test_a_right_tokenizer_whose_code_patches_the_judge_is_not_checked(tmp_path: Path) -> None:
    """Right ids, but the code replaced the judge's check_parity in its process: the answers were
    recorded by code the judge no longer owns, so the attempt is not checked (named, one line)."""
    folder = _forging_toy(
        tmp_path / "toy", FORGERIES["check_parity-monkeypatched"], tmp_path / "ran", wrong_ids=False
    )
    remote = judge_within(folder, trust_remote_code=True).attempt("auto_map")
    assert (tmp_path / "ran").is_file()
    assert remote is not None and remote.status == AttemptStatus.NOT_CHECKED
    assert "pytest_tokcompat.judge.parity.check_parity" in (remote.detail or "")
    assert "\n" not in (remote.detail or "")


# ---- the replay is check_parity on what the tokenizer answered ---------------------------------------


class _Shifted:
    """A tokenizer whose encode(text, add_special_tokens=False) gives ids one too high; the rest as given."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    def encode(self, text: str, **kwargs: Any) -> list[int]:
        ids = list(self._tokenizer.encode(text, **kwargs))
        return [i + 1 for i in ids] if kwargs == {"add_special_tokens": False} else ids

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tokenizer, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._tokenizer(*args, **kwargs)


def _case(folder: Path) -> tuple[Any, Truth, list[str]]:
    from transformers import AutoTokenizer

    reference = reference_tokenizer(folder)
    texts = probe_texts((), special_tokens(folder, reference), derive_probes(folder, reference))
    truth = ground_truth(folder, texts, None, reference)
    assert truth is not None and truth.contract is not None
    return AutoTokenizer.from_pretrained(str(folder)), truth, list(texts)


def _replayed(tokenizer: Any, truth: Truth, texts: list[str]) -> dict[str, Any]:
    with frozen_clock():
        observations = observe(tokenizer, texts, questions_for(truth), (Exception,))
    report = read_report({"loaded": True, "observations": json.loads(json.dumps(observations))})
    assert report.observations is not None
    return check_parity(Replay(report.observations), truth, texts).to_json()


@pytest.mark.parametrize("drift", [None, *DRIFTS])
def test_the_replay_gives_what_check_parity_gives_on_the_tokenizer_itself(
    tmp_path: Path, drift: str | None
) -> None:
    folder = contract_toy(tmp_path / "toy", drift)
    if drift is None:
        with_chat_template(folder, "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
    tokenizer, truth, texts = _case(folder)
    with frozen_clock():
        direct = check_parity(tokenizer, truth, texts).to_json()
    assert _replayed(tokenizer, truth, texts) == direct
    assert direct["dimensions"]  # the comparison covers every dimension, not an empty result


def test_the_replay_sees_wrong_ids_as_check_parity_does(tmp_path: Path) -> None:
    """Control for the equivalence: a tokenizer with wrong ids is a mismatch both ways, on the same text."""
    tokenizer, truth, texts = _case(contract_toy(tmp_path / "toy"))
    shifted = _Shifted(tokenizer)
    with frozen_clock():
        direct = check_parity(shifted, truth, texts).to_json()
    assert direct["status"] == "mismatch"
    assert _replayed(shifted, truth, texts) == direct


# ---- a report of the wrong shape is not checked, with a one-line reason -----------------------------


def _report(tmp_path: Path) -> dict[str, Any]:
    tokenizer, truth, texts = _case(contract_toy(tmp_path / "toy"))
    with frozen_clock():
        observations = observe(tokenizer, texts, questions_for(truth), (Exception,))
    return {"remedy": "native", "loaded": True, "observations": json.loads(json.dumps(observations))}


def _first(table: dict[str, Any]) -> str:
    return next(iter(table))


BREAKS = {
    "ids-as-strings": (lambda o: o["encode"].update({_first(o["encode"]): {"value": ["1"]}}), "encode of"),
    "ids-as-booleans": (lambda o: o["encode"].update({_first(o["encode"]): {"value": [True]}}), "encode of"),
    "a-decode-as-a-list": (
        lambda o: o["decode"]["raw"].update({_first(o["decode"]["raw"]): {"value": [1]}}),
        "decode (raw)",
    ),
    "an-answer-with-two-values": (
        lambda o: o["encode"].update({_first(o["encode"]): {"value": [1], "error": "x"}}),
        "encode of",
    ),
    "a-decode-call-missing": (lambda o: o["decode"].pop("skip"), "one object per decode call"),
    "an-unasked-conversation": (
        lambda o: o["chat"].append({"conversation": "forged", "add_generation_prompt": True}),
        "for no conversation it was asked",
    ),
    "no-observations": (lambda o: o.clear(), "encode answers are not an object"),
}


@pytest.mark.parametrize(("damage", "reason"), BREAKS.values(), ids=BREAKS.keys())
def test_a_report_of_the_wrong_shape_is_refused_in_one_line(tmp_path: Path, damage: Any, reason: str) -> None:
    report = _report(tmp_path)
    read_report(json.loads(json.dumps(report)))  # control: the untouched report reads
    damage(report["observations"])
    with pytest.raises(Malformed) as raised:
        read_report(report)
    assert reason in str(raised.value) and "\n" not in str(raised.value)


def _run(truth_messages: list[dict[str, Any]], report: dict[str, Any]) -> Any:
    messages = [*truth_messages, {"kind": "attempt", "attempt": report}, {"kind": "end"}]
    return SimpleNamespace(messages=messages, untrusted=None, stdout="", stderr="")


@pytest.mark.parametrize("wrong", ["shape", "missing"])
def test_an_attempt_whose_observations_are_wrong_or_short_is_not_checked(tmp_path: Path, wrong: str) -> None:
    from dataclasses import asdict

    _, truth, texts = _case(contract_toy(tmp_path / "toy"))
    report = _report(tmp_path / "again")
    found = _Found(texts=texts, truth=truth)
    measured = _absorb(_run([], json.loads(json.dumps(report))), "native", found, None)
    assert measured.status == AttemptStatus.OK  # control: the honest report measures as a match
    truth_frame = {"kind": "truth", "texts": texts, "truth": asdict(truth), "truth_error": None}
    if wrong == "shape":
        report["observations"]["encode"][texts[0]] = {"value": "not ids"}
    else:
        del report["observations"]["encode"][texts[0]]
    refused = _absorb(_run([truth_frame], report), "native", _Found(), None)
    assert refused.status == AttemptStatus.NOT_CHECKED and refused.undecided
    assert "nothing it reported is used" in (refused.detail or "")
    assert ("not of its type" if wrong == "shape" else "without the answer to") in (refused.detail or "")


SHIFTING_LOADER = """
from transformers import AutoTokenizer


class Shifted:
    def __init__(self, tokenizer, shift):
        self._tokenizer, self._shift = tokenizer, shift

    def encode(self, text, **kwargs):
        return [i + self._shift for i in self._tokenizer.encode(text, **kwargs)]

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)

    def __call__(self, *args, **kwargs):
        return self._tokenizer(*args, **kwargs)


def load(path, shift=0):
    return Shifted(AutoTokenizer.from_pretrained(path), shift)
"""


def test_a_client_loaders_differing_ids_are_counted_by_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_tokcompat.matrix.clients import ClientLoader

    (tmp_path / "shifting_loader.py").write_text(SHIFTING_LOADER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    folder = toys.native_toy(tmp_path / "toy")
    loaders = [
        ClientLoader("same", "shifting_loader", "load"),
        ClientLoader("shifted", "shifting_loader", "load", kwargs={"shift": 1}),
    ]
    same, shifted = judge_within(folder, loaders=loaders).loaders
    assert same.attempt.status == AttemptStatus.OK and same.differing is None  # control: nothing differs
    assert shifted.attempt.status == AttemptStatus.DRIFT
    assert shifted.compared and shifted.differing == shifted.compared  # every id is one too high
    assert shifted.attempt.replay is None  # the recording is not kept past the count
