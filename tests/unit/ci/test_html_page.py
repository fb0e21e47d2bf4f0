"""The HTML grid (`tokcompat report --format html`): a self-contained page a person reads at a glance,
checked as HTML and rendered in a headless browser (Debian's chromium)."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_tokcompat.ci.grid import Grid, load_reports, merge
from pytest_tokcompat.ci.page import COLOURS, MARKS
from pytest_tokcompat.ci.render import render_html
from pytest_tokcompat.cli import main
from tests.helpers.paths import DATA
from tests.helpers.reportdata import alias_record, case, not_checked, report, write

CAPTURED = DATA / "registry"
ISSUE = "https://github.com/huggingface/transformers/issues/41251"
RELEASES = ["5.10.4", "5.11.0"]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
]


class Page(HTMLParser):
    """Every start tag with its attributes, and the text, of a page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.texts: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {name: value or "" for name, value in attrs}))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    @property
    def text(self) -> str:
        return " ".join(" ".join(self.texts).split())

    def having(self, attribute: str) -> list[dict[str, str]]:
        return [attrs for _, attrs in self.tags if attribute in attrs]


def _shim_registry(release: str) -> dict[str, Any]:
    registry = json.loads((CAPTURED / f"transformers-{release}.json").read_text())
    registry["aliases"]["deepseek_v32"] = {
        **registry["aliases"]["deepseek_v32"],
        "base_model_type": None,
        "tokenizer_class": None,
        "native_since": None,
        "upstream_issue": ISSUE,
        "declared_in": "models.yaml:3",
    }
    return registry


def _reports(tmp_path: Path) -> list[Path]:
    """Two releases: a drift with its dimension and probe, a change, an unexpected verdict, an error,
    a not-checked cell, a missing one, an alias row and a registry-change alarm with its upstream link."""
    paths = []
    for release in RELEASES:
        v32 = case(
            "deepseek-v3.2-exp", release, "alias" if release == "5.10.4" else "native", "alias", drift=True
        )
        for attempt in v32["attempts"]:
            if attempt["status"] == "drift":
                attempt["parity"] = {
                    "status": "mismatch",
                    "checked": 23,
                    "text": "Hello world",
                    "dimension": "ids",
                    "kind": "ascii",
                }
        kimi = case("kimi-k2-instruct", release, "broken", model_type="kimi_k2")
        kimi["attempts"][0] |= {
            "status": "load-error",
            "detail": "ValueError: Couldn't instantiate the backend",
        }
        records = [
            v32,
            alias_record("deepseek_v32", release, state="needed" if release == "5.10.4" else "obsolete"),
        ]
        records.append(
            kimi if release == "5.10.4" else not_checked("kimi-k2-instruct", "hub files not cached")
        )
        if release == "5.10.4":
            records.append(case("qwen3-0.6b", release, "native", model_type="qwen3"))
        document = report(release, records)
        document["registry"] = _shim_registry(release)
        paths.append(write(tmp_path, f"transformers-{release}.json", document))
    return paths


@pytest.fixture
def grid(tmp_path: Path) -> Grid:
    return merge(load_reports(_reports(tmp_path)))


def _cells(page: Page) -> dict[tuple[str, str], dict[str, str]]:
    return {(attrs["data-case"], attrs["data-release"]): attrs for attrs in page.having("data-release")}


def test_the_page_says_everything_at_a_glance(grid: Grid) -> None:
    text = render_html(grid)
    page = Page(text)
    assert "<title>tokcompat: tokenizer verdicts by transformers release</title>" in text
    assert (
        "transformers 5.10.4 – 5.11.0 (2 releases) · tokenizers 0.22.2 · pytest-tokcompat 0.1.0 (this page: "
        in page.text
    )
    assert "generated 20" in page.text and "reports finished 2026-11-29 to 2026-11-29" in page.text
    # a legend entry for every mark and every colour the cells use
    legend = {attrs["data-legend"] for attrs in page.having("data-legend")}
    assert legend >= set(MARKS) | set(COLOURS)
    assert {cell.verdict for cells in grid.rows.values() for cell in cells.values()} <= legend
    # every cell, each with its details
    cells = _cells(page)
    assert set(cells) == {(row, release) for row in grid.rows for release in RELEASES}
    assert cells[("qwen3-0.6b", "5.11.0")]["title"] == "no record for this release"
    drifting = cells[("deepseek-v3.2-exp", "5.10.4")]["title"]
    assert "remedy: alias" in drifting
    assert "drift: native gives wrong ids; dimension ids; probe 'Hello world' (ascii)" in drifting
    assert (
        "error: native: ValueError: Couldn't instantiate the backend"
        in cells[("kimi-k2-instruct", "5.10.4")]["title"]
    )
    assert "why: hub files not cached" in cells[("kimi-k2-instruct", "5.11.0")]["title"]
    assert "expected: alias" in cells[("deepseek-v3.2-exp", "5.11.0")]["title"]
    assert "unexpected" in cells[("deepseek-v3.2-exp", "5.11.0")]["class"]
    assert len([tag for tag, _ in page.tags if tag == "details"]) == len(cells) - 1  # all but the missing one
    # the alarms and events, linked to their upstream issue
    alarms = {attrs["data-alarm"] for attrs in page.having("data-alarm")}
    assert alarms == {"unexpected-verdict:deepseek-v3.2-exp", "registry-change:deepseek_v32"}
    assert ISSUE in [attrs["href"] for tag, attrs in page.tags if tag == "a"]
    assert "5.11.0: deepseek_v32 registered natively (DeepseekV32Config) alarm" in page.text
    # self-contained: nothing is fetched
    for needle in ("<script", "<link", "<img", "<iframe", "src=", "@import", "url("):
        assert needle not in text


def test_tokcompat_report_writes_the_page(tmp_path: Path) -> None:
    paths = _reports(tmp_path)
    target = tmp_path / "out" / "grid.html"
    assert main(["report", *map(str, paths), "--format", "html", "--output", str(target)]) == 1
    assert Page(target.read_text(encoding="utf-8")).having("data-legend")


def test_tokcompat_report_writes_the_html_beside_the_markdown_and_json(tmp_path: Path) -> None:
    paths = _reports(tmp_path)
    target = tmp_path / "out" / "grid.md"
    assert main(["report", *map(str, paths), "--output", str(target)]) == 1
    assert target.read_text(encoding="utf-8").startswith("## tokcompat: tokenizer verdicts")
    page = Page((tmp_path / "out" / "grid.html").read_text(encoding="utf-8"))
    assert set(_cells(page)) == {
        (row, release) for row in merge(load_reports(paths)).rows for release in RELEASES
    }
    assert json.loads((tmp_path / "out" / "grid.json").read_text(encoding="utf-8"))["releases"] == RELEASES


def test_a_sibling_that_is_an_input_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = _reports(tmp_path)
    before = paths[0].read_bytes()
    target = paths[0].with_suffix(".md")  # its .json sibling is the input report itself
    assert main(["report", *map(str, paths), "--output", str(target)]) == 1
    assert paths[0].read_bytes() == before
    assert target.is_file() and target.with_suffix(".html").is_file()
    assert (
        f"json not written beside {target.name}: --output {paths[0]} is the input report"
        in capsys.readouterr().err
    )


def test_loader_rows_and_drift_dimensions_are_on_the_page(grid: Grid) -> None:
    grid.loaders = {
        "deepseek-v3.2-exp / loader:cfg": {"5.10.4": {"status": "drift", "text": "drift — 21/22 texts"}}
    }
    cell = grid.rows["deepseek-v3.2-exp"]["5.10.4"]
    cell.dimensions = "ids, ack: decode"
    page = Page(render_html(grid))
    cells = _cells(page)
    assert cells[("deepseek-v3.2-exp / loader:cfg", "5.10.4")]["title"] == "drift — 21/22 texts"
    assert cells[("deepseek-v3.2-exp / loader:cfg", "5.11.0")]["title"] == "no record for this release"
    assert "dimensions: ids, ack: decode" in cells[("deepseek-v3.2-exp", "5.10.4")]["title"]
    legend = {attrs["data-legend"] for attrs in page.having("data-legend")}
    assert {"[dimension]", "[ack: …]", "loader:ok", "loader:drift", "loader:other"} <= legend


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def _chromium(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail(
            "the HTML grid is checked in Debian's chromium: apt-get install -y chromium (as .ci/run does)"
        )
    profile = tmp_path / "chromium-profile"
    return subprocess.run(
        [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *arguments],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )


def test_every_release_column_scrolls_into_view_beside_a_sticky_case_column(grid: Grid) -> None:
    text = render_html(grid)
    page = Page(text)
    order = [tag for tag, attrs in page.tags if attrs.get("id") in ("grid-scroll", "grid")]
    assert order == ["div", "table"], "the grid sits in its own scroll box, so no release column is cut off"
    style = text.split("<style>", 1)[1].split("</style>", 1)[0]
    assert ".scroll{overflow:auto;" in style
    assert "#grid tr>th:first-child{position:sticky;left:0;" in style


def test_alias_obsolete_is_coloured_apart_from_native(grid: Grid) -> None:
    cells = _cells(Page(render_html(grid)))
    obsolete = cells[("alias:deepseek_v32", "5.11.0")]
    native = cells[("qwen3-0.6b", "5.10.4")]
    assert (obsolete["data-verdict"], native["data-verdict"]) == ("obsolete", "native")
    assert obsolete["style"] != native["style"]
    assert COLOURS["obsolete"][0] != COLOURS["native"][0]
