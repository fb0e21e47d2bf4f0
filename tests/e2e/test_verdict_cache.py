# ruff: noqa: F811 (the fixtures tests/unit/judge/test_verdict_cache.py defines, imported by name)
"""End to end: The verdict cache on disk: a second process skips judging, and an entry is never trusted blindly.

The rest of this subject's tests, and the helpers these use, are in tests/unit/judge/test_verdict_cache.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pytest_tokcompat.judge.parity import reference_tokenizer
from tests.helpers import toys
from tests.unit.judge.test_verdict_cache import LOAD, entries, verdicts  # noqa: F401 (fixtures)


def test_a_second_process_takes_the_verdict_from_the_cache(tmp_path: Path, verdicts: Path) -> None:
    folder = toys.native_toy(tmp_path / "native")
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", LOAD, str(folder)],
            capture_output=True,
            text=True,
            check=False,
            env=dict(os.environ),
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert (first["from_cache"], first["cache"]["state"]) == (False, "stored")
    assert (second["from_cache"], second["cache"]["state"]) == (True, "hit")
    assert second["cache"]["path"] == first["cache"]["path"] == str(entries(verdicts)[0])
    assert first["verdict"] == second["verdict"] == "native"
    assert first["ids"] == second["ids"] == reference_tokenizer(folder).encode("hello world").ids
