"""``tokcompat``: judge one checkpoint, or merge the grid's reports, from the shell.

Exit status of ``check``: 0 when the verdict is not broken, 1 when it is broken or
differs from the expectation, 2 on bad input, 3 when it could not be checked here
(an uncached hub id offline, no ground truth for its ids, files the judge cannot read).
Exit status of ``report``, ``grid`` and ``issue-text``: 0 when the grid is complete and
has no alarm, 1 when it has alarms or unexpected verdicts, 2 on bad input, 3 when the
grid is incomplete (a run that did not finish or selected part of the matrix, a
not-checked case, a release without a record for a case) and has no alarm. Other
commands: 0 fine, 1 alarms, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_tokcompat.credentials import scrub_data

if TYPE_CHECKING:
    from pytest_tokcompat.judge.evaluate import Evaluation
    from pytest_tokcompat.matrix.settings import Settings

EXIT_OK, EXIT_BROKEN, EXIT_BAD_INPUT, EXIT_NOT_CHECKED = 0, 1, 2, 3
EXIT_FINDINGS = 4
"""``tokcompat check``: right ids on ordinary text, and findings (the default call, special tokens,
decode, chat template or special-text ids drift) that no matrix entry acknowledges."""
CHECK_EXIT_HELP = (
    "exit status: 0 right ids and the whole contract holds (or every finding is acknowledged); 1 wrong ids "
    "for every remedy, or not what the matrix (or --expect) says; 2 bad input or unreadable files; 3 not "
    "checked; 4 right ids on ordinary text, with findings (each named with its consequence)"
)
EXIT_INCOMPLETE = 3
"""A grid (or report set) that is incomplete and has no alarm: the same 3 as check's not checked."""
GRID_EXIT_HELP = (
    "exit status: 0 complete and no alarm; 1 alarms or unexpected verdicts (even when also incomplete); "
    "2 bad input (a report that is not a valid report, --output equal to an input or not writable); "
    "3 incomplete: a report of a run that did not finish or selected part of the matrix, a case not "
    "checked, or a release without a record for a case"
)


SETTINGS_FLAGS = {"matrix": "matrix", "output": "output", "releases": "releases", "loaders": "loader"}
"""The settings keys (:mod:`pytest_tokcompat.matrix.settings`) and the ``args`` attribute of each one's flag."""


def command_settings(args: argparse.Namespace) -> Settings:
    """The command's settings, built once: its flags, then the environment, [tool.tokcompat], the defaults."""
    from pytest_tokcompat.matrix.settings import resolve_settings

    flags = {key: getattr(args, attribute, None) for key, attribute in SETTINGS_FLAGS.items()}
    return resolve_settings(flags=flags)


def command_matrix(args: argparse.Namespace) -> Path:
    """The matrix a command looks names up in: --matrix, $TOKCOMPAT_MATRIX, [tool.tokcompat] matrix, the
    project's matrix/models.yaml or ci/tokenizers.yaml, else the bundled one."""
    settings: Settings = args.settings
    return settings.matrix


def _check(args: argparse.Namespace) -> int:
    from pytest_tokcompat.torch_notice import drop_torch_notice

    drop_torch_notice()
    import transformers

    # transformers' warnings are kept with each attempt in the record; keep the terminal for the verdict.
    transformers.logging.disable_default_handler()
    try:
        return _judge_and_print(args)
    finally:
        transformers.logging.enable_default_handler()


def check_exit_status(evaluation: Evaluation) -> int:
    """0 clean, 1 broken or unexpected, 2 bad input (or unreadable files), 3 not checked, 4 findings."""
    from pytest_tokcompat.judge.evaluate import NOT_CHECKED
    from pytest_tokcompat.model import Verdict

    if evaluation.failure is not None:
        return EXIT_BAD_INPUT
    if evaluation.status == NOT_CHECKED or evaluation.verdict == Verdict.NOT_CHECKED:
        return EXIT_NOT_CHECKED
    if evaluation.verdict == Verdict.BROKEN or evaluation.alarms:
        return EXIT_BROKEN
    if evaluation.judgement is not None and evaluation.judgement.findings:
        return EXIT_FINDINGS
    return EXIT_OK


def _say(text: str, file: Any = None) -> None:
    """One line (or several) of ``check``'s text output: credentials masked, control characters (a
    checkpoint's special tokens, model_type or messages may hold ANSI escapes) shown escaped."""
    from pytest_tokcompat.credentials import scrub
    from pytest_tokcompat.inert import terminal

    print(terminal(scrub(text), newlines=True), file=file or sys.stdout)


def _judge_and_print(args: argparse.Namespace) -> int:
    from pytest_tokcompat.judge.evaluate import describe_attempts, evaluate

    evaluation = evaluate(
        args.path,
        matrix=command_matrix(args),
        revision=args.revision,
        trust_remote_code=args.trust_remote_code,
        texts=args.text or (),
        expect=args.expect,
        allow_unpinned_remote_code=getattr(args, "allow_unpinned_remote_code", False),
    )
    code = check_exit_status(evaluation)
    unpinned = evaluation.checkpoint.unpinned_branch if evaluation.checkpoint is not None else None
    if unpinned is not None and evaluation.checkpoint is not None:
        _say(
            f"tokcompat check: warning: {evaluation.checkpoint.repo}: remote code ran from branch {unpinned!r}, "
            f"not a pinned commit; the commit that ran is {evaluation.checkpoint.revision}",
            file=sys.stderr,
        )
    record: dict[str, Any] = scrub_data(evaluation.to_json())
    if code in (EXIT_BAD_INPUT, EXIT_NOT_CHECKED) and evaluation.judgement is None:
        _say(f"tokcompat check: {evaluation.message}", file=sys.stderr)
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
        return code
    judgement = evaluation.judgement
    if judgement is None:
        return code
    kind = (
        f"model_type {judgement.model_type}"
        if judgement.static.has_config
        else "no config.json (tokenizer-only: judged by its tokenizer files alone)"
    )
    _say(f"{args.path}: {kind}, transformers {judgement.transformers_version}")
    if evaluation.checkpoint is not None and evaluation.checkpoint.case is not None:
        case = evaluation.checkpoint.case
        _say(f"  case {case.id!r} ({case.location}), expected {evaluation.expected}")
    view = judgement.static
    _say(
        f"  static view: registered natively={view.registered_natively}, auto_map={view.has_auto_map}, "
        f"alias={view.alias or '-'} -> predicts {view.predicted}"
    )
    _say(f"  verdict: {judgement.verdict} ({judgement.parity.describe()})")
    if judgement.repairs:
        _say(f"  repairs: {', '.join(judgement.repairs)} (load_tokenizer() applies them)")
    if view.predicted != judgement.verdict:
        _say(
            f"  note: the static view predicts {view.predicted}, the measured verdict is {judgement.verdict}"
        )
    for note in record.get("notes", []):
        _say(f"  note: {note}")
    _say(describe_attempts(judgement))
    for alarm in record["alarms"]:
        _say(f"  ALARM [{alarm['kind']}] {alarm['message']}; {alarm['action']}")
    return code


def _output_target(given: str, inputs: list[str]) -> Path:
    """--output FILE: never one of the inputs, never a folder; missing parent folders are created."""
    from pytest_tokcompat.errors import ReportError as GridError

    target = Path(given)
    if target.is_dir():
        raise GridError(f"--output {given} is a folder; name a file in it (e.g. {target / 'grid.md'})")
    for source in inputs:
        path = Path(source)
        same = path.resolve() == target.resolve()
        if not same and path.exists() and target.exists():
            same = path.samefile(target)
        if same:
            raise GridError(
                f"--output {given} is the input report {source}; write the grid elsewhere "
                "(an input is never overwritten)"
            )
    return target


REPORT_FORMS = {"markdown": ".md", "html": ".html", "json": ".json"}


def _write_beside(target: Path, chosen: str, grid: Any, inputs: list[str]) -> list[str]:
    """With --output FILE, the grid's other forms go beside it (grid.md -> grid.html, grid.json), as
    ``tokcompat grid`` writes them; a name that is one of the inputs is left alone and said so."""
    from pytest_tokcompat.ci.grid import render
    from pytest_tokcompat.errors import ReportError as GridError

    lines: list[str] = []
    for form, suffix in REPORT_FORMS.items():
        if form == chosen:
            continue
        sibling = target.with_suffix(suffix)
        if sibling == target:
            continue
        try:
            _output_target(str(sibling), inputs)
        except GridError as error:
            lines.append(f"{form} not written beside {target.name}: {error}")
            continue
        _write_output(sibling, render(grid, form))
        lines.append(f"also wrote {sibling}")
    return lines


def _write_output(target: Path, text: str) -> None:
    import os
    import tempfile

    from pytest_tokcompat.errors import ReportError as GridError

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise GridError(f"--output {target}: cannot write it ({error.strerror or error})") from None


def report_inputs(args: argparse.Namespace) -> list[str]:
    """The reports named, else the JSON reports in [tool.tokcompat] report (or $TOKCOMPAT_REPORT)."""
    from pytest_tokcompat.errors import ReportError

    if args.reports:
        return list(args.reports)
    settings: Settings = args.settings
    folder = settings.report
    if folder is None:
        raise ReportError(
            "no reports given: name the JSON reports (tokcompat report reports/*.json), or set "
            'report = "reports" in [tool.tokcompat] of pyproject.toml'
        )
    found = [folder] if folder.suffix == ".json" and folder.is_file() else sorted(folder.glob("*.json"))
    if not found:
        raise ReportError(f"{folder} (report, {settings.origin.get('report')}) holds no JSON report")
    return [str(path) for path in found]


def _report(args: argparse.Namespace) -> int:
    from pytest_tokcompat.ci.grid import load_reports, merge, render
    from pytest_tokcompat.errors import ReportError as GridError

    beside: list[str] = []
    try:
        args.reports = report_inputs(args)
        target = _output_target(args.output, args.reports) if args.output else None
        grid = merge(load_reports([Path(p) for p in args.reports]))
        text = render(grid, args.format)
        if target is not None:
            _write_output(target, text)
            beside = _write_beside(target, args.format, grid, args.reports)
    except GridError as error:
        _say(f"tokcompat report: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for line in beside:
        print(f"tokcompat report: {line}", file=sys.stderr)
    if target is None:
        sys.stdout.write(text)
    if not grid.complete:
        print(
            f"tokcompat report: the grid is incomplete ({len(grid.incomplete)} reason(s), listed at its top)",
            file=sys.stderr,
        )
    return grid.exit_status()


def _grid(args: argparse.Namespace) -> int:
    from pytest_tokcompat.ci.gridrun import GridOptions, run_command

    settings: Settings = args.settings
    options = GridOptions(
        matrix=settings.matrix,
        releases=settings.releases,
        output=settings.output,
        jobs=args.jobs,
        shard=args.shard,
        upstream=args.upstream,
        with_requirements=tuple(args.with_requirements or ()),
        loaders=settings.loaders,
        loader_kwargs=tuple(args.loader_kwargs or ()),
        update_expectations=args.update_expectations,
        allow_weaker=args.allow_weaker,
    )
    return run_command(options, out=lambda line: print(line, flush=True), plan_only=args.plan)


def _releases(args: argparse.Namespace) -> int:
    from pytest_tokcompat.ci.releases import discover_releases
    from pytest_tokcompat.errors import ReleaseError

    try:
        found = discover_releases(pre=args.pre, since=args.since)
    except ReleaseError as error:
        print(f"tokcompat releases: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not found:
        print("tokcompat releases: no release of transformers matches", file=sys.stderr)
        return EXIT_BAD_INPUT
    for version in found:
        print(version)
    return EXIT_OK


def _bisect(args: argparse.Namespace) -> int:
    from pytest_tokcompat.ci.bisect import run
    from pytest_tokcompat.errors import BisectError

    try:
        results = run(
            args.target,
            matrix=command_matrix(args),
            start=args.start,
            end=args.end,
            pre=args.pre,
            cache=Path(args.cache) if args.cache else None,
            trust_remote_code=args.trust_remote_code,
            out=lambda line: print(line, flush=True),
        )
    except BisectError as error:
        print(f"tokcompat bisect: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for result in results:
        print(result.line())
    return EXIT_OK


def _issue_text(args: argparse.Namespace) -> int:
    from pytest_tokcompat.ci.grid import load_reports, merge
    from pytest_tokcompat.ci.issues_text import issue_texts, issues_document
    from pytest_tokcompat.errors import ReportError as GridError

    try:
        grid = merge(load_reports([Path(p) for p in args.reports]))
    except GridError as error:
        _say(f"tokcompat issue-text: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(issues_document(grid), indent=2, ensure_ascii=False))
    else:
        if not grid.complete:
            print("The grid is incomplete: close no issue on it. Why:")
            _say("".join(f"- {reason}\n" for reason in grid.incomplete))
        for text in issue_texts(grid.alarms):
            print(f"# {text.title}\n\n{text.body}")
    return EXIT_OK if grid.complete else EXIT_INCOMPLETE


def _issues_sync(args: argparse.Namespace) -> int:
    from pytest_tokcompat.ci.issues_sync import run

    return run(
        [Path(p) for p in args.reports],
        incomplete=args.incomplete,
        gh=args.gh,
        out=lambda line: print(line, flush=True),
    )


def _resolve(args: argparse.Namespace) -> int:
    from pytest_tokcompat.sources.resolve import describe, describe_json

    if args.json:
        code, document = describe_json(args.name, command_matrix(args))
        print(json.dumps(document, indent=2, ensure_ascii=False))
        if code:
            print(f"tokcompat resolve: {document['error']}", file=sys.stderr)
        return code
    code, text = describe(args.name, command_matrix(args))
    print(text, file=sys.stdout if code == 0 else sys.stderr)
    return code


def _golden(args: argparse.Namespace) -> int:
    """Compare (and with --replace, rewrite) a case's golden ids with its independent implementation's."""
    from pytest_tokcompat.judge.golden import golden_command

    code, text = golden_command(args.case, Path(args.matrix) if args.matrix else None, replace=args.replace)
    print(text, file=sys.stderr if code == EXIT_BAD_INPUT else sys.stdout)
    return code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tokcompat", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check", help="judge one checkpoint under the installed transformers", epilog=CHECK_EXIT_HELP
    )
    check.add_argument(
        "path",
        help="a checkpoint folder (config.json optional), a served model name or case id (any case), "
        "MATRIX::CASE_ID, or a hub repo id (owner/name or a bare name such as gpt2), looked up in that order",
    )
    check.add_argument(
        "--trust-remote-code", action="store_true", help="allow the checkpoint's own code to run"
    )
    check.add_argument("--revision", default=None, help="hub revision (a commit sha)")
    check.add_argument(
        "--allow-unpinned-remote-code",
        action="store_true",
        help="with --trust-remote-code: run a hub repo's code at a branch (main, or --revision BRANCH) "
        "instead of refusing; the commit that ran is recorded and a warning printed",
    )
    check.add_argument(
        "--expect", choices=("native", "auto_map", "alias", "broken"), help="raise an alarm unless"
    )
    check.add_argument("--text", action="append", help="an extra probe text (repeatable)")
    check.add_argument("--json", action="store_true", help="print the JSON record")
    check.add_argument(
        "--matrix",
        default=None,
        metavar="FILE",
        help="the matrix to look names up in (default: [tool.tokcompat] matrix, else the project's "
        "matrix/models.yaml or ci/tokenizers.yaml, else the bundled one)",
    )
    check.set_defaults(handler=_check)
    resolve = commands.add_parser(
        "resolve", help="what a name stands for: folder, matrix case, hub repo (nothing fetched)"
    )
    resolve.add_argument(
        "name",
        help="a folder, a served model name, a case id, MATRIX::CASE_ID or a hub repo id (gpt2, owner/name)",
    )
    resolve.add_argument(
        "--json",
        action="store_true",
        help="print {name, matched_by, case_id, source, folder, repo, revision, cached_revision, fallback, "
        "stand_in, trust_remote_code, served_names, notes, error}",
    )
    resolve.add_argument(
        "--matrix",
        default=None,
        metavar="FILE",
        help="the matrix YAML (default: [tool.tokcompat] matrix, else the project's matrix/models.yaml or "
        "ci/tokenizers.yaml, else the bundled one)",
    )
    resolve.set_defaults(handler=_resolve)
    report = commands.add_parser(
        "report", help="merge per-release JSON reports into one grid", epilog=GRID_EXIT_HELP
    )
    report.add_argument(
        "reports",
        nargs="*",
        help="JSON reports written by --tokcompat-report (default: those in [tool.tokcompat] report)",
    )
    report.add_argument("--format", choices=("markdown", "json", "html"), default="markdown")
    report.add_argument(
        "--output",
        default=None,
        metavar="FILE",
        help="write to FILE instead of standard output, and the grid's other forms beside it (grid.md, "
        "grid.html, grid.json); missing folders are created; never an input",
    )
    report.set_defaults(handler=_report)
    grid = commands.add_parser(
        "grid", help="run the matrix under a set of transformers releases (tox-uv) and print the grid"
    )
    grid.add_argument(
        "--matrix",
        default=None,
        metavar="FILE",
        help="the matrix YAML (default: [tool.tokcompat], as pytest)",
    )
    grid.add_argument(
        "--releases",
        default=None,
        metavar="SPEC",
        help="versions, ranges (>=5.3,<5.11), minors, latest, pre, main; comma-separated "
        "(default: [tool.tokcompat] releases, else minors,pre)",
    )
    grid.add_argument(
        "--output",
        default=None,
        metavar="DIR",
        help="reports, grid and work folder (default: [tool.tokcompat] output, else tokcompat-grid)",
    )
    grid.add_argument(
        "--jobs", type=int, default=None, metavar="N", help="environments at once (default: cores)"
    )
    grid.add_argument("--shard", default=None, metavar="I/N", help="run the I-th of N shares of the cells")
    grid.add_argument(
        "--upstream",
        default=None,
        metavar="URL_OR_PATH",
        help="transformers source for 'main': a git URL, a local git checkout or a wheel "
        "(default: $TOKCOMPAT_UPSTREAM, else the upstream repository)",
    )
    grid.add_argument(
        "--with",
        dest="with_requirements",
        action="append",
        metavar="REQ",
        help="also install REQ (a client package: a requirement or a local path) into every release's "
        "environment, so its loader can be judged there (repeatable)",
    )
    grid.add_argument(
        "--loader",
        action="append",
        metavar="[NAME=]MODULE:CALLABLE[:ATTR]",
        help="judge a client's own loader in every release: a row 'CASE / loader:NAME' in the grid; wrong "
        "ids or a loader that cannot be called is an alarm (repeatable; each run gets it as tokcompat_loaders)",
    )
    grid.add_argument(
        "--loader-kwargs",
        action="append",
        metavar="[NAME=]JSON",
        help="keyword arguments the loader is called with, a JSON object, e.g. "
        '\'{"tokenizer_mode": "deepseek_v32"}\' (repeatable; NAME= picks one of several loaders)',
    )
    grid.add_argument(
        "--plan", action="store_true", help="print the resolved releases and cell count as JSON, run nothing"
    )
    grid.add_argument(
        "--update-expectations",
        action="store_true",
        help="write the measured outcome ranges into the matrix's expect (comments and order kept; entries "
        "without expect are judged and get one) and print the diff; exit as the next run will",
    )
    grid.add_argument(
        "--allow-weaker",
        action="store_true",
        help="with --update-expectations: also write a clean remedy that became broken (refused otherwise, exit 1)",
    )
    grid.set_defaults(handler=_grid)
    releases = commands.add_parser("releases", help="list the transformers releases on the package index")
    releases.add_argument("--since", default=None, metavar="VERSION", help="only this release and later ones")
    releases.add_argument("--pre", action="store_true", help="include pre-releases")
    releases.set_defaults(handler=_releases)
    bisect = commands.add_parser("bisect", help="find the first transformers release where a verdict changes")
    bisect.add_argument("target", metavar="CASE_OR_PATH", help="a matrix case id or a checkpoint folder")
    bisect.add_argument(
        "--matrix",
        default=None,
        metavar="FILE",
        help="the matrix YAML that holds CASE (default: [tool.tokcompat] matrix, as check)",
    )
    bisect.add_argument("--from", dest="start", default=None, metavar="V", help="the release to compare with")
    bisect.add_argument("--to", dest="end", default=None, metavar="V", help="the last release to search")
    bisect.add_argument("--pre", action="store_true", help="include pre-releases in the range")
    bisect.add_argument("--cache", default=None, metavar="DIR", help="where the throwaway environments go")
    bisect.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="allow the checkpoint's own code to run in each check",
    )
    bisect.set_defaults(handler=_bisect)
    issue_text = commands.add_parser(
        "issue-text",
        help="one issue title and body per alarm of the grid",
        epilog="exit status: 0 complete, 2 bad input, 3 incomplete (the texts are printed either way; "
        "never close an issue on an incomplete grid)",
    )
    issue_text.add_argument("reports", nargs="+", help="JSON reports written by --tokcompat-report")
    issue_text.add_argument(
        "--json",
        action="store_true",
        help='print {"complete": bool, "incomplete": [why], "issues": [{key, title, body}]}',
    )
    issue_text.set_defaults(handler=_issue_text)
    golden = commands.add_parser(
        "golden",
        help="diff a case's golden ids against its independent implementation; --replace writes them",
    )
    golden.add_argument("case", help="a matrix case id")
    golden.add_argument(
        "--matrix", default=None, metavar="FILE", help="the matrix YAML (default: the bundled one)"
    )
    golden.add_argument(
        "--replace", action="store_true", help="write the new golden ids (after showing the diff)"
    )
    golden.set_defaults(handler=_golden)
    issues_sync = commands.add_parser(
        "issues-sync", help="keep one GitHub issue per alarm (gh CLI): open, update, close when gone"
    )
    issues_sync.add_argument("reports", nargs="+", help="the per-release JSON reports of the grid")
    issues_sync.add_argument(
        "--incomplete", action="store_true", help="the grid is known to be incomplete: close no issue"
    )
    issues_sync.add_argument(
        "--gh", default="gh", metavar="PATH", help="the GitHub CLI (default: gh on PATH)"
    )
    issues_sync.set_defaults(handler=_issues_sync)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0) and EXIT_BAD_INPUT
    from pytest_tokcompat.errors import ConfigError

    try:
        args.settings = command_settings(args)
    except ConfigError as error:
        print(f"tokcompat {args.command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return int(args.handler(args))
