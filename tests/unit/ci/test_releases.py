"""Release discovery: index configuration, the JSON simple API, the HTML fallback, yanked files, the CLI."""

from __future__ import annotations

import base64
import importlib.util
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_tokcompat.ci import releases
from pytest_tokcompat.ci.releases import Page
from pytest_tokcompat.cli import main
from pytest_tokcompat.errors import ReleaseError
from tests.helpers import hubserver
from tests.helpers.paths import SIMPLE_INDEX

INDEX = "https://index.invalid/simple"
FINAL = ["4.44.2", "4.45.2", "4.57.6", "5.0.0", "5.1.0", "5.10.4", "5.11.0"]


def recorded(url: str) -> Page:
    assert url == f"{INDEX}/transformers/"
    return Page(url, releases.JSON_TYPE, SIMPLE_INDEX.read_bytes())


def strings(versions: list[Version]) -> list[str]:
    return [str(v) for v in versions]


def test_final_releases_oldest_first_without_yanked() -> None:
    found = releases.discover_releases(index=INDEX, fetch=recorded)
    assert strings(found) == FINAL
    assert found == sorted(found)


def test_a_release_counts_while_one_of_its_files_is_not_yanked() -> None:
    found = strings(releases.discover_releases(index=INDEX, fetch=recorded))
    assert "5.10.4" in found  # only its wheel is yanked
    assert "5.10.3" not in found and "4.46.0" not in found  # every file yanked


def test_pre_releases_only_when_asked() -> None:
    found = strings(releases.discover_releases(index=INDEX, fetch=recorded, pre=True))
    assert found == [
        "4.44.2", "4.45.2", "4.57.6", "5.0.0rc1", "5.0.0", "5.1.0", "5.10.4", "5.11.0",
        "5.12.0.dev0", "5.12.0rc1",
    ]  # fmt: skip


def test_since_keeps_that_release_and_later_ones() -> None:
    found = releases.discover_releases(index=INDEX, fetch=recorded, since="5.0")
    assert strings(found) == ["5.0.0", "5.1.0", "5.10.4", "5.11.0"]


def test_since_must_be_a_version() -> None:
    with pytest.raises(ReleaseError, match="not a version"):
        releases.discover_releases(index=INDEX, fetch=recorded, since="latest")


def test_html_fallback_reads_anchors_and_data_yanked() -> None:
    body = b"""<!DOCTYPE html><html><body><h1>Links for transformers</h1>
<a href="../../p/transformers-5.0.0-py3-none-any.whl#sha256=00" data-requires-python="&gt;=3.10">transformers-5.0.0-py3-none-any.whl</a>
<a href="../../p/transformers-5.1.0.tar.gz#sha256=11" data-yanked="">transformers-5.1.0.tar.gz</a>
<a href="../../p/transformers-5.2.0.tar.gz#sha256=22" data-yanked="bad metadata">transformers-5.2.0.tar.gz</a>
<a href="../../p/transformers-5.3.0rc0.tar.gz#sha256=33">transformers-5.3.0rc0.tar.gz</a>
<a href="../../p/transformers-5.3.0.tar.gz#sha256=44"></a>
<a href="../../p/tokenizers-9.0.0.tar.gz#sha256=55">tokenizers-9.0.0.tar.gz</a>
<a href="../../p/transformers-5.4.0.tar.gz.metadata">transformers-5.4.0.tar.gz.metadata</a>
</body></html>"""
    page = Page(f"{INDEX}/transformers/", "text/html; charset=utf-8", body)
    assert strings(releases.discover_releases(index=INDEX, fetch=lambda url: page)) == ["5.0.0", "5.3.0"]
    found = releases.discover_releases(index=INDEX, fetch=lambda url: page, pre=True)
    assert strings(found) == ["5.0.0", "5.3.0rc0", "5.3.0"]


def test_a_damaged_json_page_is_an_error() -> None:
    page = Page(INDEX, releases.JSON_TYPE, b'{"meta": {}}')
    with pytest.raises(ReleaseError, match="not a simple API JSON page"):
        releases.discover_releases(index=INDEX, fetch=lambda url: page)


@pytest.mark.parametrize(
    ("environ", "config", "expected"),
    [
        (
            {"UV_INDEX_URL": "https://a.invalid/s", "UV_DEFAULT_INDEX": "https://b.invalid/s"},
            {},
            "https://a.invalid/s",
        ),
        (
            {"UV_DEFAULT_INDEX": "https://b.invalid/s", "PIP_INDEX_URL": "https://c.invalid/s"},
            {},
            "https://b.invalid/s",
        ),
        (
            {"PIP_INDEX_URL": "https://c.invalid/s"},
            {"global.index-url": "https://d.invalid/s"},
            "https://c.invalid/s",
        ),
        (
            {},
            {"global.index-url": "https://d.invalid/s", "install.index-url": "https://e.invalid/s"},
            "https://e.invalid/s",
        ),
        (
            {},
            {"global.index-url": "https://d.invalid/s", "global.extra-index-url": "x"},
            "https://d.invalid/s",
        ),
        ({"UV_INDEX_URL": "  "}, {"global.index-url": "https://d.invalid/s"}, "https://d.invalid/s"),
    ],
)
def test_index_from_environment_then_pip_config(
    environ: dict[str, str], config: dict[str, str], expected: str
) -> None:
    assert releases.index_url(environ, lambda: config) == expected


def test_default_index_is_the_one_pip_and_uv_use() -> None:
    assert releases.index_url({}, dict) == releases.DEFAULT_INDEX
    if importlib.util.find_spec("pip") is not None:  # where pip is installed, it agrees
        from pip._internal.models.index import PyPI

        assert PyPI.simple_url == releases.DEFAULT_INDEX


def test_pip_config_values_reads_pip_config_list(monkeypatch: pytest.MonkeyPatch) -> None:
    class Done:
        returncode = 0
        stdout = "global.index-url='https://d.invalid/simple'\n:env:.timeout='60'\nnot a setting\n"

    monkeypatch.setattr(releases.subprocess, "run", lambda *args, **kwargs: Done())
    monkeypatch.setattr(releases.importlib.util, "find_spec", lambda name, *args: object())
    assert releases.pip_config_values() == {
        "global.index-url": "https://d.invalid/simple",
        ":env:.timeout": "60",
    }


class _Index(BaseHTTPRequestHandler):
    seen: list[dict[str, str]]

    def do_GET(self) -> None:
        self.seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
        if self.path != "/simple/transformers/":
            self.send_error(404)
            return
        body = SIMPLE_INDEX.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", releases.JSON_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def local_index() -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []
    handler = type("Handler", (_Index,), {"seen": seen})
    with hubserver.running(HTTPServer(("127.0.0.1", 0), handler)) as server:
        yield f"http://127.0.0.1:{server.server_port}", seen


def test_fetch_page_asks_for_json_and_sends_credentials(
    local_index: tuple[str, list[dict[str, str]]],
) -> None:
    base, seen = local_index
    index = base.replace("http://", "http://user:s%40cret@") + "/simple"
    found = releases.discover_releases(index=index)
    assert strings(found) == FINAL
    assert seen[0]["path"] == "/simple/transformers/"
    assert seen[0]["accept"].startswith(releases.JSON_TYPE)
    assert seen[0]["authorization"] == "Basic " + base64.b64encode(b"user:s@cret").decode()


def test_fetch_errors_hide_the_password(local_index: tuple[str, list[dict[str, str]]]) -> None:
    base, _ = local_index
    index = base.replace("http://", "http://user:hunter2@") + "/elsewhere"
    with pytest.raises(ReleaseError, match="HTTP 404") as caught:
        releases.discover_releases(index=index)
    assert "hunter2" not in str(caught.value)


def test_file_index(tmp_path: Path) -> None:
    page = tmp_path / "simple" / "transformers"
    page.mkdir(parents=True)
    (page / "index.html").write_text(
        '<a href="../../f/transformers-5.5.4-py3-none-any.whl">transformers-5.5.4-py3-none-any.whl</a>'
    )
    found = releases.discover_releases(index=(tmp_path / "simple").as_uri())
    assert strings(found) == ["5.5.4"]


@pytest.fixture
def recorded_index(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in releases.INDEX_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_INDEX_URL", INDEX)
    monkeypatch.setattr(releases, "fetch_page", recorded)


@pytest.mark.usefixtures("recorded_index")
def test_cli_prints_one_release_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["releases", "--since", "5.1"]) == 0
    assert capsys.readouterr().out.splitlines() == ["5.1.0", "5.10.4", "5.11.0"]
    assert main(["releases", "--pre", "--since", "5.11"]) == 0
    assert capsys.readouterr().out.splitlines() == ["5.11.0", "5.12.0.dev0", "5.12.0rc1"]


@pytest.mark.usefixtures("recorded_index")
def test_cli_refuses_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["releases", "--since", "someday"]) == 2
    assert "not a version" in capsys.readouterr().err
    assert main(["releases", "--since", "99"]) == 2
    assert "no release" in capsys.readouterr().err


def test_cli_reports_an_unreachable_index(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unreachable(url: str) -> Page:
        raise ReleaseError(f"{url}: cannot reach the index (refused)")

    monkeypatch.setattr(releases, "fetch_page", unreachable)
    monkeypatch.setenv("UV_INDEX_URL", INDEX)
    assert main(["releases"]) == 2
    assert "cannot reach the index" in capsys.readouterr().err


def test_fixture_is_a_pep691_page() -> None:
    document = json.loads(SIMPLE_INDEX.read_text())
    assert document["meta"]["api-version"].startswith("1.")
    assert {"filename", "url", "hashes", "yanked"} <= set(document["files"][0])
