"""The done-when of issue 13, for real: a client's loaders judged through `tokcompat grid` in real tox-uv
environments of two transformers releases, beside the tool's own verdict.

The client is the self-tests' own package (tests/data/client_pkg), installed into each release's
environment by `--with`; its pytest plugin declares two loaders through the pytest_tokcompat_loaders hook
(a config-only alias, and the same with a post-load repair) and `--loader` adds a third from the command
line. On 5.5.4 the tool's verdict is `alias` and the config-only alias drifts; on 5.24.0 the verdict is
`native` and it keeps parity; the grid renders both. Slow (two environments; uv's cache makes a repeat
cheap), so marked e2e.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_grid_e2e import environment, tokcompat

from pytest_tokcompat.matrix.loader import bundled_dir

pytestmark = pytest.mark.e2e
CLIENT = Path(__file__).parent / "data" / "client_pkg"


def client_project(root: Path) -> Path:
    """A client's repository: its matrix holds the DeepSeek-V3.2-Exp snapshot."""
    folder = root / "matrix"
    (folder / "snapshots").mkdir(parents=True)
    shutil.copytree(
        bundled_dir() / "snapshots" / "deepseek-v3.2-exp", folder / "snapshots" / "deepseek-v3.2-exp"
    )
    (folder / "models.yaml").write_text(
        "version: 1\ncases:\n"
        "  - id: deepseek-v3.2-exp\n    snapshot: snapshots/deepseek-v3.2-exp\n    expect:\n"
        '      "<5.3": native\n      ">=5.3,<5.11": alias\n      ">=5.11": native\n',
        encoding="utf-8",
    )
    return root


def test_a_config_only_alias_drifts_where_the_verdict_is_alias_and_keeps_parity_where_native(
    tmp_path: Path,
) -> None:
    repo = client_project(tmp_path / "client-repo")
    env = environment(tmp_path) | {"TOKCOMPAT_SELFTEST_CLIENT": "1"}
    argv = ["grid", "--releases", "5.5.4,5.24.0", "--with", str(CLIENT)]
    argv += ["--loader", "cli=tokcompat_selftest_client.loaders:config_only_alias"]
    done = tokcompat(argv, repo, env)
    assert done.returncode == 0, done.stdout + done.stderr
    grid = json.loads((repo / "tokcompat-grid" / "grid.json").read_text())
    rows = grid["loaders"]
    statuses = {
        name: tuple(
            rows[f"deepseek-v3.2-exp / loader:{name}"][release]["status"] for release in ("5.5.4", "5.24.0")
        )
        for name in ("cfg", "repair", "cli")
    }
    # the hook's two loaders (from the package --with installed) and --loader's
    assert statuses == {"cfg": ("drift", "ok"), "repair": ("ok", "ok"), "cli": ("drift", "ok")}
    drift = rows["deepseek-v3.2-exp / loader:cfg"]["5.5.4"]["text"]
    assert drift.startswith("drift — ") and "first: 'Hello world' [42, 6629, 10030] vs [19923, 2058]" in drift
    reports = {
        path.name: json.loads(path.read_text())
        for path in (repo / "tokcompat-grid" / "reports").glob("*.json")
    }
    verdicts = {
        name: next(r["verdict"] for r in report["cases"] if r["id"] == "deepseek-v3.2-exp")
        for name, report in reports.items()
    }
    assert verdicts == {
        "transformers-5.5.4.json": "alias",
        "transformers-5.24.0.json": "native",
    }
    out = done.stdout
    assert "| deepseek-v3.2-exp | alias | native Δ |" in out
    row = next(line for line in out.splitlines() if line.startswith("| deepseek-v3.2-exp / loader:cfg |"))
    cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
    assert cells[1] == drift and cells[2].startswith("parity (")
    row = next(line for line in out.splitlines() if line.startswith("| deepseek-v3.2-exp / loader:repair |"))
    cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
    assert cells[1].startswith("parity (") and cells[2].startswith("parity (")
    assert "loader:cfg" in (repo / "tokcompat-grid" / "grid.html").read_text()
