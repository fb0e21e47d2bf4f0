"""A partly cached hub revision is never judged as complete (issue 10): the file list decides.

The hub cache is a real huggingface_hub layout (tests/helpers/hubcache.py), offline; the one
online test runs `tokcompat check` in a child process against a local HTTP server
through HF_ENDPOINT, so nothing reaches the network.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from pytest_tokcompat.cli import main
from pytest_tokcompat.judge.evaluate import NOT_CHECKED, PASSED, evaluate
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.request import Request
from pytest_tokcompat.sources import hub
from tests.helpers import hubcache, hubserver, toys

pytest_plugins = ["pytester"]
REPO = "toy/partial"


def cache_toy(cache: Path, tmp_path: Path, *, keep: tuple[str, ...] | None = None) -> tuple[str, Path]:
    """The native toy cached as REPO, as ``hf download REPO FILE...`` leaves it: no file list at all.

    ``keep`` limits the cached files (the others exist in the repo but were not downloaded).
    """
    folder = toys.native_toy(tmp_path / "toy")
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    omit = tuple(name for name in files if keep is not None and name not in keep)
    commit = hubcache.add_repo(cache, REPO, files, omit=omit, listed={})
    (cache / "models--toy--partial" / "trees" / f"{commit}.json").unlink()  # hf_hub_download keeps no tree
    return commit, cache / "models--toy--partial" / "snapshots" / commit


def test_a_revision_cached_file_by_file_is_not_checked_and_says_how_to_complete_it(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    commit, snapshot = cache_toy(cache, tmp_path, keep=("config.json", "tokenizer.json"))
    assert main(["check", REPO, "--json"]) == 3
    record = json.loads(capsys.readouterr().out)
    assert (record["status"], record["verdict"]) == ("not-checked", None)
    assert (
        f"{REPO}@{commit}: the hub cache holds config.json, tokenizer.json of this revision"
        in record["message"]
    )
    assert "but not its file list" in record["message"] and f"tokcompat check {REPO}" in record["message"]
    assert not (snapshot / hub.LISTING_FILE).exists()  # offline, nothing learnt


def test_a_kept_file_list_names_the_missing_files_and_the_command_that_fetches_them(
    cache: Path, tmp_path: Path
) -> None:
    commit, snapshot = cache_toy(cache, tmp_path, keep=("config.json", "tokenizer.json"))
    listing = {
        "repo": REPO,
        "revision": commit,
        "files": ["config.json", "tokenizer.json", "tokenizer_config.json"],
    }
    (snapshot / hub.LISTING_FILE).write_text(json.dumps(listing))
    matrix = tmp_path / "models.yaml"
    matrix.write_text(
        f"version: 1\ncases:\n  - {{id: partial, repo: {REPO}, revision: '{commit}', expect: native}}\n"
    )
    outcome = evaluate(Request(load_matrix(matrix).cases[0]))
    assert outcome.status == NOT_CHECKED and outcome.judgement is None
    assert "the revision has 3 tokenizer files and the cache lacks tokenizer_config.json" in outcome.message
    assert f"run `hf download {REPO} --revision {commit} tokenizer_config.json`" in outcome.message


def test_require_hub_fails_a_partly_cached_case(
    pytester: pytest.Pytester, cache: Path, tmp_path: Path
) -> None:
    cache_toy(cache, tmp_path, keep=("config.json", "tokenizer.json"))
    matrix = pytester.path / "models.yaml"
    matrix.write_text(f"version: 1\ncases:\n  - {{id: partial, repo: {REPO}, expect: native}}\n")
    result = pytester.runpytest(
        "--tokcompat", f"--tokcompat-matrix={matrix}", "--tokcompat-require-hub", "-p", "no:randomly"
    )
    result.assert_outcomes(failed=1, skipped=1)  # the case fails; the alias item has no case of its type
    result.stdout.fnmatch_lines(["*case 'partial' not checked*but not its file list*"])


def test_a_complete_revision_is_judged_and_its_file_list_kept_beside_the_files(
    cache: Path, tmp_path: Path
) -> None:
    folder = toys.native_toy(tmp_path / "toy")
    commit = hubcache.add_repo(cache, REPO, {p.name: p.read_bytes() for p in folder.iterdir()})
    snapshot = cache / "models--toy--partial" / "snapshots" / commit
    matrix = tmp_path / "models.yaml"
    matrix.write_text(f"version: 1\ncases:\n  - {{id: full, repo: {REPO}, expect: native}}\n")
    case = load_matrix(matrix).cases[0]
    assert (
        evaluate(Request(case)).status == PASSED
    )  # huggingface_hub's cached tree listing says what the revision has
    kept = json.loads((snapshot / hub.LISTING_FILE).read_text())
    assert kept == {
        "repo": REPO,
        "revision": commit,
        "files": ["config.json", "tokenizer.json", "tokenizer_config.json"],
    }
    (cache / "models--toy--partial" / "trees" / f"{commit}.json").unlink()
    assert evaluate(Request(case)).status == PASSED  # the kept list is enough


# ---- online: the file list is asked of the hub (a local server) and kept -----------------------------------


class _Hub(BaseHTTPRequestHandler):
    """The one hub endpoint a cached revision needs: its file list; everything else is 404."""

    listing: ClassVar[list[dict[str, object]]] = []
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.path)
        if self.path.startswith(f"/api/models/{REPO}/tree/"):
            body = json.dumps(self.listing).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        else:
            body = b'{"error": "not found"}'
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_HEAD = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def local_hub() -> Iterator[str]:
    with hubserver.running(ThreadingHTTPServer(("127.0.0.1", 0), _Hub)) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}"
