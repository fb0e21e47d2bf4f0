"""One request travels down (resolver, evaluator, ladder), one evaluation travels back up."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from pytest_tokcompat.judge import absorb as absorb_module
from pytest_tokcompat.judge import evaluate as evaluate_module
from pytest_tokcompat.judge import ladder as ladder_module
from pytest_tokcompat.judge.evaluate import PASSED, evaluate
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.request import Request
from pytest_tokcompat.settings import JudgeSettings, Limits
from pytest_tokcompat.sources import resolve as resolve_module
from tests.helpers import toys
from tests.helpers.matrices import write_matrix

MOST_PARAMETERS = 5
"""A function of the evaluator that takes more than this is passing the request's parts by hand again."""


def _parameters(module: object) -> dict[str, list[str]]:
    tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))  # type: ignore[arg-type]
    return {
        node.name: [
            a.arg
            for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.kwarg)
            if a is not None
        ]
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
    }


def test_the_evaluator_and_the_resolver_take_the_request_as_one_object() -> None:
    found = _parameters(evaluate_module)
    assert found["evaluate"] == ["request", "cache"]
    assert _parameters(resolve_module)["resolve"] == ["request", "identity"]
    many = {name: names for name, names in found.items() if len(names) > MOST_PARAMETERS}
    assert many == {}, f"pass the Request instead of its parts: {many}"
    assert "_judge" in found and "_judge_with_verdicts" in found  # control: the scan sees the helpers


REQUEST_WORDS = frozenset(
    {
        "trust_remote_code",
        "extra_texts",
        "texts",
        "golden_path",
        "registry",
        "record_as",
        "keep_tokenizer",
        "limits",
        "loaders",
        "acknowledged",
        "target",
        "settings",
        "given",
    }
)
"""The request's fields (and what resolving added) as the ladder once took them one by one."""


def test_the_ladder_and_its_jobs_take_the_subject_as_one_object() -> None:
    ladder, absorb = _parameters(ladder_module), _parameters(absorb_module)
    assert ladder["judge"] == ["subject"]
    assert absorb["make_job"][0] == "subject"
    listed = {
        name: sorted(REQUEST_WORDS.intersection(names))
        for name, names in {**ladder, **absorb}.items()
        if len(REQUEST_WORDS.intersection(names)) > 1
    }
    assert listed == {}, f"pass the Subject instead of the request's parts: {listed}"
    assert {"_try_repairs", "_judge_local", "_judge_loader"} <= ladder.keys()  # control: the scan sees them
    assert (
        len(REQUEST_WORDS.intersection(["registry", "target", "settings"])) > 1
    )  # control: a re-listing counts


def test_a_request_is_frozen_and_names_its_subject(tmp_path: Path) -> None:
    request = Request("owner/name", texts=("x",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.name = "other"  # type: ignore[misc]
    assert request.subject == "owner/name"
    toys.native_toy(tmp_path / "native")
    case = load_matrix(write_matrix(tmp_path, "  - {id: mine, snapshot: native, expect: native}\n")).cases[0]
    assert Request(case).subject == "mine"  # a matrix run is named by its case id


def test_what_comes_back_is_judged_by_the_name_the_request_gave(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "native")
    settings = JudgeSettings(limits=Limits(load_timeout=120))
    outcome = evaluate(Request(str(folder), settings=settings))
    assert outcome.status == PASSED and outcome.judgement is not None
    chosen = outcome.judgement.chosen
    assert chosen is not None and chosen.loaded_as == str(folder)  # from_pretrained got the name as given
    assert outcome.checkpoint is not None and outcome.checkpoint.folder == folder
