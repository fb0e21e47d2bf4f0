"""End to end: Bisecting releases: the build bound, monotone and non-monotone histories, refusals, the CLI, the uv builder.

The rest of this subject's tests, and the helpers these use, are in tests/unit/ci/test_bisect.py.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_tokcompat.ci import bisect
from pytest_tokcompat.ci.bisect import Target, UvVerdict
from pytest_tokcompat.errors import BuildError
from tests.unit.ci.test_bisect import REAL_CHILD_UV


@pytest.mark.skipif(sys.platform == "win32", reason="the fake uv is a POSIX script")
def test_the_child_check_judges_a_case_with_its_golden_ids(tmp_path: Path, cache: Path) -> None:
    """bisect's child is the real `tokcompat check` (in this environment): qwen3-0.6b is judged with its
    golden ids, so its verdict is native, not not-checked."""
    from pytest_tokcompat.matrix.discovery import bundled_matrix

    uv = tmp_path / "uv"
    uv.write_text(REAL_CHILD_UV.format(python=sys.executable))
    uv.chmod(uv.stat().st_mode | stat.S_IXUSR)
    target = bisect.resolve_target("qwen3-0.6b", bundled_matrix())
    judge = UvVerdict(target, tmp_path / "envs", uv=str(uv), requirement="unused")
    assert judge(Version("5.24.0")) == "native"
    assert target.argument == f"{bundled_matrix()}::qwen3-0.6b"
    absent = UvVerdict(Target("absent", "owner/absent"), tmp_path / "envs", uv=str(uv), requirement="unused")
    with pytest.raises(
        BuildError,
        match=r"could not judge under transformers 5\.0\.0 \(not checked\): .*not in the hub cache",
    ):
        absent(Version("5.0.0"))
