"""The merged grid in the form asked for (JSON, HTML or Markdown), credentials masked.

The one place that knows every rendering, so the model and each rendering stay unaware of the others.
"""

from __future__ import annotations

import json

from pytest_tokcompat.ci.grid import Grid
from pytest_tokcompat.ci.markdown import render_markdown
from pytest_tokcompat.ci.page import render_page
from pytest_tokcompat.credentials import scrub


def render(grid: Grid, form: str) -> str:
    """The grid as JSON, HTML or Markdown (a job summary, the terminal), credentials masked."""
    if form == "json":
        return scrub(json.dumps(grid.to_json(), indent=2, ensure_ascii=False) + "\n")
    if form == "html":
        return scrub(render_html(grid))
    return scrub(render_markdown(grid))


def render_html(grid: Grid) -> str:
    """The page a person reads at a glance (:mod:`pytest_tokcompat.ci.page`)."""
    return render_page(grid)
