"""End to end: The README and the documentation site: short where they must be, generated where they say so, and every command they show exists with the options it is shown with.

The rest of this subject's tests, and the helpers these use, are in tests/project/test_docs.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers.paths import REPO
from tests.project.test_docs import DOCS, build_site


def test_the_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = build_site(REPO, site)
    assert result.returncode == 0, result.stderr[-4000:]
    cli_page = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "tokcompat grid --help" in cli_page and "--shard" in cli_page, "the generated CLI reference"
    assert "tokcompat-reference:" not in cli_page, "every marker expanded"


def test_a_broken_link_or_a_page_left_out_of_the_nav_fails_the_strict_build(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(DOCS, project / "docs")
    for name in ("mkdocs.yml", "action.yml", ".github/workflows/tokcompat-grid.yml"):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / name, project / name)
    assert build_site(project, tmp_path / "control").returncode == 0, "the control: the copy builds"
    index = project / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + "\n[gone](no-such-page.md)\n", encoding="utf-8")
    (project / "docs" / "stray.md").write_text("# Stray\n", encoding="utf-8")
    result = build_site(project, tmp_path / "broken")
    assert result.returncode != 0
    assert "no-such-page.md" in result.stderr and "stray.md" in result.stderr, result.stderr[-4000:]
