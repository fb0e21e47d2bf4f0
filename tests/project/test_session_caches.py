"""The suite writes only under tmp dirs: every cache a run would fill points into the session's own
folder, in this process and in every subprocess, and a write into the user's caches is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import SessionDirs

WHERE = """
import json
from huggingface_hub import constants
from pytest_tokcompat.ci.bisect import default_cache
from pytest_tokcompat.sources.hub import hub_cache_dir
from pytest_tokcompat.sources.snapshots import cache_root, user_cache_home

print(json.dumps({
    "snapshots": str(cache_root()),
    "tokcompat cache home": str(user_cache_home()),
    "bisect environments": str(default_cache()),
    "hub cache": str(hub_cache_dir()),
    "huggingface_hub's hub cache": constants.HF_HUB_CACHE,
    "huggingface_hub's token path": constants.HF_TOKEN_PATH,
    "huggingface_hub's home (transformers' remote code modules beneath)": constants.HF_HOME,
}))
"""


def caches_seen_by(command: list[str]) -> dict[str, str]:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def assert_inside_the_session(found: dict[str, str], dirs: SessionDirs) -> None:
    assert dirs.users_caches, "the guard watches no folder"
    for what, path in found.items():
        resolved = Path(path).resolve()
        assert resolved.is_relative_to(dirs.root.resolve()), f"{what}: {path} is outside the session dir"
        for users in dirs.users_caches:
            assert not resolved.is_relative_to(Path(users).resolve()), f"{what}: {path} is the user's"


def test_every_cache_points_into_the_session_dir(session_dirs: SessionDirs) -> None:
    namespace: dict[str, object] = {}
    printed: list[str] = []
    namespace["print"] = printed.append
    exec(
        WHERE, namespace
    )  # the same probe as the subprocess below, in this process (an xdist worker under -n 2)
    from hypothesis.configuration import storage_directory
    from transformers.utils import hub as transformers_hub

    found = json.loads(printed[0])
    found["transformers' remote code modules"] = transformers_hub.HF_MODULES_CACHE
    found["hypothesis's storage"] = str(storage_directory("unicode_data", intent_to_write=False).path)
    assert_inside_the_session(found, session_dirs)
    assert Path(os.environ["TOKCOMPAT_CACHE"]) == session_dirs.snapshots


def test_subprocesses_inherit_the_session_caches(session_dirs: SessionDirs) -> None:
    # pytester's runpytest_subprocess and xdist's workers start the same way: with this environment.
    assert_inside_the_session(caches_seen_by([sys.executable, "-c", WHERE]), session_dirs)


def test_a_write_into_the_users_cache_is_refused_and_recorded(
    session_dirs: SessionDirs, users_cache_writes: list[str]
) -> None:
    target = Path(session_dirs.users_caches[0]) / "pytest-tokcompat" / "snapshots" / "tokcompat-guard-probe"
    before = len(users_cache_writes)
    try:
        with pytest.raises(PermissionError, match="must not write into the user's cache"):
            target.write_text("written by a test")
        with pytest.raises(PermissionError, match="must not write into the user's cache"):
            os.mkdir(target.parent / "tokcompat-guard-probe-dir")
        recorded = users_cache_writes[before:]
        assert recorded == [f"open {target}", f"os.mkdir {target.parent / 'tokcompat-guard-probe-dir'}"]
        assert not target.exists()
    finally:
        del users_cache_writes[before:]  # this test's refused writes were on purpose
