"""``tokcompat resolve``: what a name stands for (folder, matrix case, hub repo), with nothing fetched."""

from __future__ import annotations

import argparse
import json
import sys

from pytest_tokcompat.cli.options import MATRIX_DEFAULT, add_json, add_matrix, command_matrix
from pytest_tokcompat.exitcodes import ExitCode


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    resolve = commands.add_parser(
        "resolve", help="what a name stands for: folder, matrix case, hub repo (nothing fetched)"
    )
    resolve.add_argument(
        "name",
        help="a folder, a served model name, a case id, MATRIX::CASE_ID or a hub repo id (gpt2, owner/name)",
    )
    add_json(
        resolve,
        "print {name, matched_by, case_id, source, folder, repo, revision, cached_revision, fallback, "
        "stand_in, trust_remote_code, served_names, notes, error}",
    )
    add_matrix(resolve, f"the matrix YAML (default: {MATRIX_DEFAULT})")
    resolve.set_defaults(handler=run)


def run(args: argparse.Namespace) -> ExitCode:
    from pytest_tokcompat.sources.resolve import describe, describe_json

    if args.json:
        code, document = describe_json(args.name, command_matrix(args))
        print(json.dumps(document, indent=2, ensure_ascii=False))
        if code:
            print(f"tokcompat resolve: {document['error']}", file=sys.stderr)
        return code
    code, text = describe(args.name, command_matrix(args))
    print(text, file=sys.stdout if code == ExitCode.OK else sys.stderr)
    return code
