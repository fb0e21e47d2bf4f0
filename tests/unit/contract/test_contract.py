"""The report contract: its builders, its reader's agreement with jsonschema, and writes that never
lose a finished run (two runs at once, a partial run after a complete one, another matrix)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat import contract
from pytest_tokcompat.contract import reading, validator, writing
from pytest_tokcompat.errors import ReportError
from pytest_tokcompat.model import AliasState, AttemptStatus, CaseStatus, Verdict
from tests.helpers.reportdata import (
    alias_record,
    assert_valid_report,
    case,
    not_checked,
    report,
    report_schema_errors,
)

EARLY, MIDDLE, LATE, LATER = (f"2026-11-29T03:0{minute}:00.000000+00:00" for minute in (1, 2, 3, 4))


def full(version: str = "5.24.0", **times: Any) -> dict[str, Any]:
    return report(version, [case("a", version, "native")], **times)


def partial(version: str = "5.24.0", **times: Any) -> dict[str, Any]:
    return report(
        version, [case("a", version, "native")], selection={"partial": True, "reason": "-k a"}, **times
    )


def interrupted(version: str = "5.24.0", **times: Any) -> dict[str, Any]:
    return report(version, [not_checked("a")], complete=False, exit_status=2, **times)


def names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if not path.name.startswith("."))


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


# --- builders ---------------------------------------------------------------------------------


def test_builders_make_valid_records_and_reports() -> None:
    records = [
        case("a", "5.24.0", "native"),
        case("b", "5.24.0", "broken", "alias", drift=True),
        alias_record("deepseek_v32", "5.24.0", "failed", "obsolete"),
        not_checked("c"),
        not_checked("alias:glm_moe_dsa"),
    ]
    document = assert_valid_report(report("5.24.0", records, complete=False, exit_status=2))
    by_id = {record["id"]: record for record in document["cases"]}
    assert [record["id"] for record in document["cases"]] == [
        "alias:deepseek_v32", "alias:glm_moe_dsa", "a", "b", "c"
    ]  # fmt: skip
    assert by_id["alias:deepseek_v32"]["state"] == "obsolete" and "verdict" not in by_id["alias:deepseek_v32"]
    assert by_id["alias:glm_moe_dsa"] == {
        "kind": "alias",
        "id": "alias:glm_moe_dsa",
        "status": "not-checked",
        "state": None,
        "message": "did not run in this session (pytest exit status 2)",
        "alias": None,
        "cases": [],
        "alarms": [],
    }
    assert (by_id["c"]["status"], by_id["c"]["verdict"]) == ("not-checked", None)
    assert document["alarms"] == by_id["b"]["alarms"]
    assert (document["exit_status"], document["complete"]) == (2, False)


def test_case_record_takes_the_judgement_and_checks_the_vocabulary() -> None:
    judgement = {"verdict": Verdict.ALIAS, "static": {"predicted": "alias"}, "attempts": []}
    record = contract.case_record("x", CaseStatus.PASSED, "", expected="alias", judgement=judgement)
    assert record["verdict"] == "alias" and type(record["verdict"]) is str
    assert record["verdict_matches_static"] is True
    with pytest.raises(ValueError, match="'fine' is not a valid Verdict"):
        contract.case_record("x", "passed", "", verdict="fine")
    with pytest.raises(ValueError, match="'ok' is not a valid CaseStatus"):
        contract.case_record("x", "ok", "")
    with pytest.raises(ValueError, match="'needed!' is not a valid AliasState"):
        contract.alias_record("m", "passed", "needed!", "")


def test_the_schema_speaks_the_model_vocabulary() -> None:
    defs = contract.load_report_schema()["$defs"]
    assert defs["attempt_status"]["enum"] == [status.value for status in AttemptStatus]
    assert "crashed" in defs["attempt_status"]["enum"]
    assert defs["case_status"]["enum"] == [status.value for status in CaseStatus]
    assert defs["verdict"]["enum"] == [verdict.value for verdict in Verdict]
    assert defs["alias_state"]["enum"] == [state.value for state in AliasState]
    from pytest_tokcompat.model import AlarmKind, Outcome, Remedy

    assert defs["alarm_kind"]["enum"] == [kind.value for kind in AlarmKind]
    assert defs["outcome"]["enum"] == [outcome.value for outcome in Outcome]
    assert defs["remedy"]["enum"] == [remedy.value for remedy in Remedy]
    assert contract.load_report_schema()["properties"]["schema_version"]["const"] == contract.SCHEMA_VERSION


def test_the_schema_names_the_evaluators_failures_and_sources() -> None:
    from pytest_tokcompat.judge.evaluation import Failure
    from pytest_tokcompat.sources.checkpoint import Source

    properties = contract.load_report_schema()["$defs"]["case_record"]["properties"]
    assert properties["failure"]["anyOf"][1]["enum"] == [failure.value for failure in Failure]
    assert properties["source"]["enum"] == [source.value for source in Source]


def test_every_evaluation_record_is_a_valid_case_record(tmp_path: Path) -> None:
    """Judged, unreadable (not checked) and bad input: the evaluator's records, with the resolver's
    fields (source, notes, remote_files_ran with repo and revision), pass the schema."""
    from pytest_tokcompat.judge.evaluate import evaluate
    from pytest_tokcompat.judge.evaluation import Failure
    from pytest_tokcompat.request import Request
    from tests.helpers import toys

    native = evaluate(Request(toys.native_toy(tmp_path / "native")))
    unreadable_folder = toys.native_toy(tmp_path / "unreadable")
    (unreadable_folder / "config.json").write_text("{")
    unreadable = evaluate(Request(unreadable_folder))
    remote = evaluate(Request(toys.remote_toy(tmp_path / "remote"), trust_remote_code=True))
    bad = evaluate(Request("not a model name"))  # cannot be a folder, a case or a hub repo id
    assert (native.failure, unreadable.failure, remote.failure, bad.failure) == (
        None,
        Failure.UNREADABLE,
        None,
        Failure.BAD_INPUT,
    )
    records = [e.to_json() for e in (native, unreadable, remote, bad)]
    assert records[1]["verdict"] == Verdict.NOT_CHECKED and records[1]["status"] == CaseStatus.FAILED
    assert records[2]["remote_files_ran"] and all(
        set(item) >= {"repo", "revision", "file"} for item in records[2]["remote_files_ran"]
    )
    document = assert_valid_report(report("5.24.0", records))
    contract.validate_report(json.loads(json.dumps(document)), "evaluations")  # the built-in reader agrees


# --- the reader agrees with jsonschema -----------------------------------------------------------


def _keywords(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = set(node) - {"properties", "$defs"}
        for key, value in node.items():
            if key in ("properties", "$defs"):
                found |= {k for sub in value.values() for k in _keywords(sub)}
            else:
                found |= _keywords(value)
        return found
    if isinstance(node, list):
        return {k for item in node for k in _keywords(item)}
    return set()


def test_the_schema_uses_only_what_the_built_in_reader_understands() -> None:
    assert _keywords(contract.load_report_schema()) <= validator.SchemaSubset.KEYWORDS


def _variants() -> list[Any]:
    base = report("5.24.0", [case("a", "5.24.0", "native", drift=True), alias_record("m", "5.24.0")])
    variants: list[Any] = [base, [], "x", None]
    paths: list[tuple[Any, ...]] = [
        ("versions",),
        ("exit_status",),
        ("complete",),
        ("matrix",),
        ("cases", 1, "status"),
        ("cases", 1, "verdict"),
        ("cases", 1, "expected"),
        ("cases", 1, "attempts"),
        ("cases", 1, "attempts", 0, "remedy"),
        ("cases", 1, "attempts", 0, "parity"),
        ("cases", 1, "attempts", 0, "seconds"),
        ("cases", 1, "attempts", 0, "warnings"),
        ("cases", 1, "static", "predicted"),
        ("cases", 1, "remote_files_ran"),
        ("cases", 1, "id"),
        ("cases", 0, "state"),
        ("cases", 0, "id"),
        ("cases", 0, "kind"),
        ("alarms",),
    ]
    values: list[Any] = [None, 5, -1, 1.5, 2.0, "", "x", "a\nb", "alias:", True, [], [5], {}, {"status": 1}]
    for path in paths:
        for value in values:
            document = json.loads(json.dumps(base))
            node = document
            for step in path[:-1]:
                node = node[step]
            node[path[-1]] = value
            variants.append(document)
        document = json.loads(json.dumps(base))
        node = document
        for step in path[:-1]:
            node = node[step]
        del node[path[-1]]
        variants.append(document)
    return variants


def test_the_built_in_reader_agrees_with_jsonschema() -> None:
    variants = _variants()
    valid = 0
    reader, schema = reading.report_reader(), contract.load_report_schema()
    for document in variants:
        ours = contract.schema_problems(document)
        theirs = report_schema_errors(document)
        assert bool(ours) == bool(theirs), (document, ours, theirs)
        messages = list(reader.errors(document, schema, ()))
        assert reader.valid(document, schema) is not bool(messages), "the fast path and the messages agree"
        valid += not ours
    assert 10 < valid < len(variants) - 100, "the variants test both sides"


def test_validate_report_raises_one_line_naming_the_source() -> None:
    document = report("5.24.0", [case("a", "5.24.0", "native")])
    document["cases"][0]["attempts"] = 5
    document["cases"][0]["status"] = "great"
    with pytest.raises(ReportError) as caught:
        contract.validate_report(document, source="reports/x.json")
    assert str(caught.value) == (
        'reports/x.json: $.cases[0].status: "great" is not one of "passed", "failed", "not-checked" '
        "(and 1 more); regenerate it with `pytest --tokcompat --tokcompat-report` of this tokcompat version"
    )
    assert contract.validate_report(report("5.24.0", []), source="r") is not None


# --- writes that never lose a finished run -------------------------------------------------------


def test_a_first_report_goes_to_the_target(tmp_path: Path) -> None:
    target = tmp_path / "reports" / "transformers-5.24.0.json"
    assert contract.write_report(target, full(started_at=EARLY, finished_at=MIDDLE)) == target
    assert names(target.parent) == ["transformers-5.24.0.json"]
    assert (target.parent / contract.LOCK_NAME).exists()


def test_a_complete_report_is_never_replaced_by_a_partial_or_interrupted_one(tmp_path: Path) -> None:
    target = tmp_path / "transformers-5.24.0.json"
    contract.write_report(target, full(started_at=EARLY, finished_at=MIDDLE))
    written = contract.write_report(target, partial(started_at=LATE, finished_at=LATER))
    assert written.name == "transformers-5.24.0.run-2.json" and read(written)["selection"]["partial"]
    assert read(target)["complete"] is True and "selection" not in read(target)
    written = contract.write_report(target, interrupted(started_at=LATE, finished_at=LATER))
    assert written.name == "transformers-5.24.0.run-3.json"
    assert read(target) == full(started_at=EARLY, finished_at=MIDDLE)


def test_an_earlier_run_is_replaced_and_its_leftovers_removed(tmp_path: Path) -> None:
    target = tmp_path / "transformers-5.24.0.json"
    contract.write_report(
        target, interrupted(started_at="2026-11-29T01:00:00+00:00", finished_at="2026-11-29T02:00:00+00:00")
    )
    contract.write_report(target, full(started_at=EARLY, finished_at=MIDDLE))  # an earlier, unfinished run
    assert names(tmp_path) == ["transformers-5.24.0.json"] and read(target)["complete"] is True
    contract.write_report(target, partial(started_at=LATE, finished_at=LATE))
    assert names(tmp_path) == ["transformers-5.24.0.json", "transformers-5.24.0.run-2.json"]
    # the next complete run supersedes both: a rerun of the grid leaves one report per release
    assert contract.write_report(target, full(started_at=LATER, finished_at=LATER)) == target
    assert names(tmp_path) == ["transformers-5.24.0.json"] and read(target)["finished_at"] == LATER


def test_two_runs_at_once_both_keep_their_report(tmp_path: Path) -> None:
    # tflatest and tfpre on one release: the second started before the first finished
    target = tmp_path / "transformers-5.24.0.json"
    first, second = full(started_at=EARLY, finished_at=LATE), full(started_at=MIDDLE, finished_at=LATER)
    assert contract.write_report(target, first) == target
    assert contract.write_report(target, second).name == "transformers-5.24.0.run-2.json"
    assert read(target) == first and read(tmp_path / "transformers-5.24.0.run-2.json") == second


@pytest.mark.parametrize(
    "existing",
    [
        pytest.param("not a report at all", id="not JSON"),
        pytest.param('{"some": "other json"}', id="another JSON file"),
        pytest.param(json.dumps(full(matrix="other/models.yaml", finished_at=EARLY)), id="another matrix"),
        pytest.param(json.dumps(full()), id="no started_at to tell"),
    ],
)
def test_what_is_not_an_earlier_run_of_this_matrix_stays(tmp_path: Path, existing: str) -> None:
    target = tmp_path / "transformers-5.24.0.json"
    target.write_text(existing)
    document = full(started_at=MIDDLE, finished_at=LATE) if "other" in existing else full()
    written = contract.write_report(target, document)
    assert written.name == "transformers-5.24.0.run-2.json" and read(written) == document
    assert target.read_text() == existing


def test_a_report_in_an_older_format_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "transformers-5.24.0.json"
    target.write_text(json.dumps({"schema_version": 1, "cases": [], "complete": True}))
    assert contract.write_report(target, full(started_at=LATE)) == target
    assert read(target)["schema_version"] == contract.SCHEMA_VERSION


def test_write_json_atomic_keeps_its_signature_and_the_rule(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    contract.write_json_atomic(target, full(started_at=EARLY, finished_at=MIDDLE))
    assert contract.write_json_atomic(target, partial(started_at=LATE)).name == "r.run-2.json"
    other = tmp_path / "deeper" / "plain.json"
    assert contract.write_json_atomic(other, {"a": 1}) == other and read(other) == {"a": 1}


WRITER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from pytest_tokcompat import contract

    folder, number, go = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    document = json.loads((folder.parent / "document.json").read_text())
    document["cases"][0]["message"] = f"writer {number}"
    while not go.exists():
        time.sleep(0.001)
    print(contract.write_report(folder / "transformers-5.24.0.json", document).name)
    """
)


def test_concurrent_writers_never_lose_a_finished_run(tmp_path: Path) -> None:
    """Six complete runs of one release finish at once (all started before any finished): six reports."""
    folder = tmp_path / "reports"
    (tmp_path / "document.json").write_text(json.dumps(full(started_at=EARLY, finished_at=MIDDLE)))
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(folder), str(number), str(go)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for number in range(6)
    ]
    go.touch()
    written = sorted(writer.communicate(timeout=120)[0].strip() for writer in writers)
    assert all(writer.returncode == 0 for writer in writers)
    assert len(set(written)) == 6 and names(folder) == written
    messages = sorted(read(folder / name)["cases"][0]["message"] for name in written)
    assert messages == [f"writer {number}" for number in range(6)]
    assert not [p for p in folder.iterdir() if p.name.startswith(".transformers")], "no temporary left"


def test_the_lock_makes_a_second_writer_wait_instead_of_racing_past(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow write (a busy disk): the other writer must see its report, not decide before it lands."""
    target = tmp_path / "transformers-5.24.0.json"
    write = writing._atomic_write

    def slow_write(path: Path, document: Any) -> None:
        time.sleep(0.2)
        write(path, document)

    monkeypatch.setattr(writing, "_atomic_write", slow_write)
    documents = [full(started_at=EARLY, finished_at=LATE), full(started_at=MIDDLE, finished_at=LATER)]
    threads = [threading.Thread(target=contract.write_report, args=(target, d)) for d in documents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert names(tmp_path) == ["transformers-5.24.0.json", "transformers-5.24.0.run-2.json"]
    assert sorted(read(path)["finished_at"] for path in tmp_path.glob("*.json")) == [LATE, LATER]
