"""The controller's reporter: gathers the records from the test reports, writes the JSON report, sums up.

Registered only in the process that owns the session (never on an xdist worker),
as pytest's junitxml does, so the report is written once. The report path is
checked before any test runs. A run that selects part of the matrix (-k, -m,
--deselect, node ids, --collect-only, -x stopping it) says so in the report
(``selection.partial``). The document is built by ``contract.report_document`` and
written by ``contract.write_report``, whose rule decides the file: a partial or
incomplete report never replaces a complete one (it goes beside it as
``<name>.run-N.json``), and two runs at once never lose each other's report.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat.contract import (
    library_versions,
    make_output_folder,
    not_checked_record,
    report_document,
    utc_timestamp,
    write_report,
)
from pytest_tokcompat.pytest_plugin.keys import REPORT_ATTRIBUTE
from pytest_tokcompat.pytest_plugin.session import TokcompatRun, run_settings

PATH_RULE = (
    "a path ending in .json is that file, any other path a folder that gets transformers-<version>.json"
)


def report_target(config: pytest.Config) -> Path | None:
    """--tokcompat-report (else $TOKCOMPAT_REPORT, [tool.tokcompat] report), checked now: an unwritable
    path is a usage error before any test runs."""
    path = run_settings(config).report
    if path is None:
        return None
    if path.suffix.lower() == ".json":
        folder, file = path.parent, path
    else:
        folder, file = path, path / f"transformers-{library_versions()['transformers']}.json"

    def refuse(why: str) -> pytest.UsageError:
        return pytest.UsageError(
            f"tokcompat: cannot write the report to {file}: {why}; pass --tokcompat-report a path "
            f"in a writable folder ({PATH_RULE})"
        )

    try:
        make_output_folder(folder)
    except OSError as error:
        raise refuse(f"cannot create the folder {folder} ({error.strerror or error})") from None
    if file.is_dir():
        raise refuse("it is a folder; name a file ending in .json, or give the folder without .json")
    try:
        handle, probe = tempfile.mkstemp(prefix=".tokcompat-probe-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise refuse(f"the folder {folder} is not writable ({error.strerror or error})") from None
    return file


def _selection_options(config: pytest.Config) -> str:
    """The options by which a user selects part of a run, as given."""
    given = []
    option = config.option
    if getattr(option, "keyword", ""):
        given.append(f"-k {option.keyword!r}")
    if getattr(option, "markexpr", ""):
        given.append(f"-m {option.markexpr!r}")
    if getattr(option, "deselect", None):
        given.append("--deselect")
    if getattr(option, "lf", False) or getattr(option, "last_failed", False):
        given.append("--lf")
    if getattr(option, "stepwise", False):
        given.append("--sw")
    if any("::" in argument for argument in config.args):
        given.append("node ids on the command line")
    return ", ".join(given) or "paths or options on the command line"


def _stop_reason(session: pytest.Session) -> str | None:
    """Why the run stopped before its end by the user's own option (-x, --maxfail, --sw), if it did."""
    dsession = session.config.pluginmanager.getplugin("dsession")
    for value in (session.shouldfail, session.shouldstop, getattr(dsession, "shouldstop", None)):
        if isinstance(value, str) and value and "interrupt" not in value:
            return value
    return None


class TokcompatReporter:
    """Records by id from ``report.tokcompat``; the report file and the terminal summary at the end."""

    def __init__(self, run: TokcompatRun, target: Path | None) -> None:
        self.run = run
        self.target = target
        self.started_at = utc_timestamp()
        """Lets ``write_report`` tell a run that overlapped this one from an earlier one."""
        self.records: dict[str, dict[str, Any]] = {}
        self.selected: set[str] | None = None
        """Matrix items collected and not deselected; None until collection says (or if it never does)."""
        self.lost: dict[str, str] = {}
        """Items that reported a failure without a record (a worker that died running them): why."""
        self.written: Path | None = None
        self.selection: dict[str, Any] = {"partial": False}
        self.watch_problem: str | None = None
        """Why the upstream watch is not in the report, where its registries could not be read."""
        self.update_lines: list[str] = []
        """What --tokcompat-update-expectations wrote (the diff) or refused, for the terminal summary."""

    # --- what was selected -------------------------------------------------------------------------

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        ids = (self.run.record_id_of(item.nodeid) for item in session.items)
        self.selected = {record_id for record_id in ids if record_id is not None}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist the workers collect; each reports the same ids after its own deselection."""
        found = (self.run.record_id_of(nodeid) for nodeid in ids)
        self.selected = {record_id for record_id in found if record_id is not None}

    # --- the records -------------------------------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, REPORT_ATTRIBUTE, None)
        if isinstance(record, dict) and "id" in record:
            self.records[str(record["id"])] = record
            return
        record_id = self.run.record_id_of(report.nodeid)
        if record_id is not None and report.failed and record_id not in self.records:
            # The exception's own message, else the last line (xdist: "worker 'gw0' crashed while running ...").
            crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None)
            lines = [line for line in report.longreprtext.splitlines() if line.strip()]
            self.lost[record_id] = str(crash or (lines[-1] if lines else "failed"))[:300]

    def _missing(self, wanted: list[str], exit_status: int) -> list[dict[str, Any]]:
        """Items without a record: not checked, never passed, with why."""
        missing: list[dict[str, Any]] = []
        for record_id in wanted:
            if record_id in self.records:
                continue
            if self.selected is not None and record_id not in self.selected:
                why = f"not selected in this run ({_selection_options(self.run.config)})"
            elif record_id in self.lost:
                why = f"did not finish: {self.lost[record_id]}"
            else:
                why = f"did not run in this session (pytest exit status {exit_status})"
            missing.append(not_checked_record(record_id, why))
        return missing

    def _partial_reason(self, session: pytest.Session, wanted: list[str]) -> str | None:
        reasons = []
        if self.run.config.option.collectonly:
            reasons.append("--collect-only: nothing ran")
        if self.selected is not None and len(self.selected) < len(wanted):
            reasons.append(
                f"{len(self.selected)} of {len(wanted)} matrix items selected "
                f"({_selection_options(self.run.config)})"
            )
        stopped = _stop_reason(session)
        selected = self.selected if self.selected is not None else set(wanted)
        not_run = [record_id for record_id in selected if record_id not in self.records]
        if stopped and not_run:
            reasons.append(f"stopped early ({stopped}): {len(not_run)} selected items did not run")
        return "; ".join(reasons) or None

    def upstream_watch(self) -> dict[str, Any] | None:
        """The report's ``registry``: what this transformers' registries say about the model_types of the
        matrix's cases (as judged), of the run's aliases and of the matrix's ``watch:`` list.

        Read in a child process; None (and a line in the summary) where they cannot be read: the run's
        report is never lost to it.
        """
        from pytest_tokcompat.judge.upstream import WatchUnreadable, read_upstream

        cases = [r for r in self.records.values() if r.get("kind") == "case"]
        try:
            return read_upstream(
                [r.get("model_type") for r in cases],
                self.run.registry,
                self.run.matrix.watch,
                checkpoints={r["repo"]: r.get("model_type") for r in cases if isinstance(r.get("repo"), str)},
                isolation=self.run.settings.isolation,
            )
        except WatchUnreadable as error:  # a transformers whose registries look like nothing known
            self.watch_problem = str(error)
            return None

    def update_expectations(self, session: pytest.Session) -> None:
        """--tokcompat-update-expectations: the measured outcomes and findings into the matrix; the run then exits as the
        next one will (its failures that the update answers do not count), or 1 for a refused weakening."""
        from pytest_tokcompat.matrix.expectations import (
            ExpectationsError,
            describe,
            measured_findings,
            measured_outcomes,
            update_matrix,
        )

        version = str(library_versions()["transformers"])
        records = [(version, record) for record in self.records.values()]
        try:
            update = update_matrix(
                self.run.path,
                measured_outcomes(records),
                findings=measured_findings(records),
                allow_weaker=bool(self.run.config.getoption("tokcompat_allow_weaker")),
            )
        except ExpectationsError as error:
            self.update_lines = [f"tokcompat: {error}"]
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        self.update_lines = describe(update, "--tokcompat-allow-weaker")
        answered = [
            r for r in self.records.values() if r.get("status") == "failed" and r.get("id") in update.changed
        ]
        if update.refused:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif session.exitstatus == pytest.ExitCode.TESTS_FAILED and session.testsfailed == len(answered):
            session.exitstatus = pytest.ExitCode.OK

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.run.update_expectations:
            self.update_expectations(session)
        if self.target is None:
            return
        exit_status = int(session.exitstatus)
        wanted = self.run.wanted_ids()
        missing = self._missing(wanted, exit_status)
        reason = self._partial_reason(session, wanted)
        self.selection = {"partial": True, "reason": reason} if reason is not None else {"partial": False}
        document = report_document(
            list(self.records.values()) + missing,
            str(self.run.path),
            exit_status=exit_status,
            complete=not missing,
            selection=self.selection,
            started_at=self.started_at,
            registry=self.upstream_watch(),
        )
        self.written = write_report(self.target, document)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from pytest_tokcompat.ci.summary import summary_lines
        from pytest_tokcompat.credentials import scrub
        from pytest_tokcompat.inert import terminal

        terminalreporter.section("tokcompat")
        for line in summary_lines(list(self.records.values())):
            terminalreporter.write_line(terminal(scrub(line), newlines=True))
        if self.watch_problem is not None:
            problem = terminal(scrub(self.watch_problem))
            terminalreporter.write_line(f"upstream watch not recorded in the report: {problem}")
        for line in self.update_lines:
            terminalreporter.write_line(terminal(scrub(line), newlines=True))
        if self.written is None or self.target is None:
            return
        terminalreporter.write_line(f"report written to {self.written}")
        if self.selection["partial"]:
            terminalreporter.write_line(f"  partial run: {self.selection['reason']}")
        if self.written != self.target:
            terminalreporter.write_line(
                f"  (kept the report already at {self.target}: another run's, or a complete one)"
            )
