# ruff: noqa: F811 (the fixtures tests/unit/ci/test_html_page.py defines, imported by name)
"""End to end: The HTML grid (`tokcompat report --format html`): a self-contained page a person reads at a glance, checked as HTML and rendered in a headless browser (Debian's chromium).

The rest of this subject's tests, and the helpers these use, are in tests/unit/ci/test_html_page.py.
"""

from __future__ import annotations

from pathlib import Path

from pytest_tokcompat.ci.grid import Grid
from pytest_tokcompat.ci.page import COLOURS, MARKS
from pytest_tokcompat.ci.render import render_html
from tests.unit.ci.test_html_page import RELEASES, Page, _cells, _chromium, _png_size, grid  # noqa: F401 (fixtures)


def test_the_page_renders_in_a_headless_browser(grid: Grid, tmp_path: Path) -> None:
    page_path = tmp_path / "grid.html"
    page_path.write_text(render_html(grid), encoding="utf-8")
    screenshot = tmp_path / "grid.png"
    _chromium(tmp_path, f"--screenshot={screenshot}", page_path.as_uri())
    data = screenshot.read_bytes()
    assert _png_size(data) == (1400, 1000)
    # a blank page of this size compresses to a few KB; the grid, legend and alarms make it far larger
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><title>blank</title>", encoding="utf-8")
    blank_shot = tmp_path / "blank.png"
    _chromium(tmp_path, f"--screenshot={blank_shot}", blank.as_uri())
    assert len(data) > 5 * len(blank_shot.read_bytes()), (len(data), len(blank_shot.read_bytes()))
    # the DOM as the browser built it: the legend and every cell are there
    dom = Page(_chromium(tmp_path, "--dump-dom", page_path.as_uri()).stdout)
    legend = {attrs["data-legend"] for attrs in dom.having("data-legend")}
    assert legend >= set(MARKS) | set(COLOURS)
    assert set(_cells(dom)) == {(row, release) for row in grid.rows for release in RELEASES}
    assert "Upstream registry events" in dom.text and "Alarms (2)" in dom.text


def test_an_open_cell_shows_its_details_in_the_browser(grid: Grid, tmp_path: Path) -> None:
    """Clicking a cell opens its disclosure: rendered open, the details take room on the screenshot."""
    closed_page = render_html(grid)
    target = 'data-case="deepseek-v3.2-exp" data-release="5.10.4"'
    assert closed_page.count(target) == 1
    start = closed_page.index(target)
    opened_page = closed_page[:start] + closed_page[start:].replace("<details>", "<details open>", 1)
    shots = []
    for name, text in (("closed", closed_page), ("open", opened_page)):
        path = tmp_path / f"{name}.html"
        path.write_text(text, encoding="utf-8")
        shot = tmp_path / f"{name}.png"
        _chromium(tmp_path, f"--screenshot={shot}", path.as_uri())
        shots.append(shot.read_bytes())
    assert shots[0] != shots[1]
    dom = Page(_chromium(tmp_path, "--dump-dom", (tmp_path / "open.html").as_uri()).stdout)
    assert [tag for tag, attrs in dom.tags if "open" in attrs] == ["details"]
