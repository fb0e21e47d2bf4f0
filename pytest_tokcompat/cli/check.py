"""``tokcompat check``: judge one checkpoint under the installed transformers, and say why."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from pytest_tokcompat.cli.options import (
    MATRIX_DEFAULT,
    add_json,
    add_judge_settings,
    add_matrix,
    add_trust_remote_code,
    command_matrix,
)
from pytest_tokcompat.cli.output import say
from pytest_tokcompat.exitcodes import ExitCode

if TYPE_CHECKING:
    from pytest_tokcompat.judge.evaluation import Evaluation

EPILOG = (
    "exit status: 0 right ids and the whole contract holds (or every finding is acknowledged); 1 wrong ids "
    "for every remedy, or not what the matrix (or --expect) says; 2 bad input or unreadable files; 3 not "
    "checked; 4 right ids on ordinary text, with findings (each named with its consequence)"
)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = commands.add_parser(
        "check", help="judge one checkpoint under the installed transformers", epilog=EPILOG
    )
    check.add_argument(
        "path",
        help="a checkpoint folder (config.json optional), a served model name or case id (any case), "
        "MATRIX::CASE_ID, or a hub repo id (owner/name or a bare name such as gpt2), looked up in that order",
    )
    add_trust_remote_code(check, "allow the checkpoint's own code to run")
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
    add_json(check, "print the JSON record")
    add_matrix(check, f"the matrix to look names up in (default: {MATRIX_DEFAULT})")
    add_judge_settings(check)
    check.set_defaults(handler=run)


def run(args: argparse.Namespace) -> ExitCode:
    from pytest_tokcompat.torch_notice import drop_torch_notice

    drop_torch_notice()
    import transformers

    # transformers' warnings are kept with each attempt in the record; keep the terminal for the verdict.
    transformers.logging.disable_default_handler()
    try:
        return _judge_and_print(args)
    finally:
        transformers.logging.enable_default_handler()


def check_exit_status(evaluation: Evaluation) -> ExitCode:
    """0 clean, 1 broken or unexpected, 2 bad input (or unreadable files), 3 not checked, 4 findings."""
    from pytest_tokcompat.judge.evaluate import NOT_CHECKED
    from pytest_tokcompat.model import Verdict

    if evaluation.failure is not None:
        return ExitCode.BAD_INPUT
    if evaluation.status == NOT_CHECKED or evaluation.verdict == Verdict.NOT_CHECKED:
        return ExitCode.NOT_CHECKED
    if evaluation.verdict == Verdict.BROKEN or evaluation.alarms:
        return ExitCode.BROKEN
    if evaluation.judgement is not None and evaluation.judgement.findings:
        return ExitCode.FINDINGS
    return ExitCode.OK


def _judge_and_print(args: argparse.Namespace) -> ExitCode:
    from pytest_tokcompat.credentials import scrub_data
    from pytest_tokcompat.judge.child import containment
    from pytest_tokcompat.judge.describe import describe_attempts
    from pytest_tokcompat.judge.evaluate import evaluate
    from pytest_tokcompat.request import Request

    request = Request(
        args.path,
        matrix=command_matrix(args),
        revision=args.revision,
        trust_remote_code=args.trust_remote_code,
        allow_unpinned_remote_code=getattr(args, "allow_unpinned_remote_code", False),
        texts=tuple(args.text or ()),
        expect=args.expect,
        settings=args.settings.judge,
    )
    evaluation = evaluate(request)
    code = check_exit_status(evaluation)
    unpinned = evaluation.checkpoint.unpinned_branch if evaluation.checkpoint is not None else None
    if unpinned is not None and evaluation.checkpoint is not None:
        say(
            f"tokcompat check: warning: {evaluation.checkpoint.repo}: remote code ran from branch {unpinned!r}, "
            f"not a pinned commit; the commit that ran is {evaluation.checkpoint.revision}",
            file=sys.stderr,
        )
    record: dict[str, Any] = scrub_data(evaluation.to_json())
    if code in (ExitCode.BAD_INPUT, ExitCode.NOT_CHECKED) and evaluation.judgement is None:
        say(f"tokcompat check: {evaluation.message}", file=sys.stderr)
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
    say(f"{args.path}: {kind}, transformers {judgement.transformers_version}")
    if evaluation.checkpoint is not None and evaluation.checkpoint.case is not None:
        case = evaluation.checkpoint.case
        say(f"  case {case.id!r} ({case.location}), expected {evaluation.expected}")
    view = judgement.static
    say(
        f"  static view: registered natively={view.registered_natively}, auto_map={view.has_auto_map}, "
        f"alias={view.alias or '-'} -> predicts {view.predicted}"
    )
    say(f"  verdict: {judgement.verdict} ({judgement.parity.describe()})")
    if judgement.repairs:
        say(f"  repairs: {', '.join(judgement.repairs)} (load_tokenizer() applies them)")
    if view.predicted != judgement.verdict:
        say(f"  note: the static view predicts {view.predicted}, the measured verdict is {judgement.verdict}")
    for note in record.get("notes", []):
        say(f"  note: {note}")
    say(describe_attempts(judgement))
    say(f"  attempts contained by: {containment(args.settings.judge.isolation)}")
    for alarm in record["alarms"]:
        say(f"  ALARM [{alarm['kind']}] {alarm['message']}; {alarm['action']}")
    return code
