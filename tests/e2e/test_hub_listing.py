# ruff: noqa: F811 (the fixtures tests/unit/sources/test_hub_listing.py defines, imported by name)
"""End to end: A partly cached hub revision is never judged as complete (issue 10): the file list decides.

The rest of this subject's tests, and the helpers these use, are in tests/unit/sources/test_hub_listing.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pytest_tokcompat.sources import hub
from tests.unit.sources.test_hub_listing import REPO, _Hub, cache_toy, local_hub  # noqa: F401 (fixtures)


def test_online_the_file_list_is_asked_of_the_hub_and_kept(
    local_hub: str, cache: Path, tmp_path: Path
) -> None:
    commit, snapshot = cache_toy(cache, tmp_path)
    _Hub.listing = [
        {"type": "file", "path": p.name, "size": p.stat().st_size, "oid": "0" * 40}
        for p in sorted(snapshot.iterdir())
    ] + [{"type": "file", "path": "model.safetensors", "size": 5_000_000_000, "oid": "1" * 40}]
    _Hub.seen = []
    env = {
        **os.environ,
        "HF_ENDPOINT": local_hub,
        "HF_HUB_OFFLINE": "0",
        "HF_HUB_CACHE": str(cache),
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "NO_PROXY": "127.0.0.1",
    }
    env.pop("HF_TOKEN", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_tokcompat.cli", "check", REPO, "--revision", commit, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verdict"] == "native"
    assert any(path.startswith(f"/api/models/{REPO}/tree/{commit}") for path in _Hub.seen)
    kept = json.loads((snapshot / hub.LISTING_FILE).read_text())
    assert kept["files"] == ["config.json", "tokenizer.json", "tokenizer_config.json"]
