"""Self-test settings: every cache in one session tmp dir, the hub unreachable, hypothesis profiles,
and checks that no test leaves transformers' registries changed or writes into the user's caches.

The environment is set here, at the first import of this file, before huggingface_hub and
transformers read it (both read their cache folders once, at import). The process that sets it
owns the session dir; xdist workers and every subprocess of a test (pytester's included) inherit
it, so they share one snapshot cache, assembled once, and the owner removes it when it exits.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.metadata
import os
import pkgutil
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

SESSION_VAR = "TOKCOMPAT_TESTS_SESSION_DIR"
USER_CACHES_VAR = "TOKCOMPAT_TESTS_USER_CACHES"
_HF_OVERRIDES = (
    "HF_HUB_CACHE",
    "HUGGINGFACE_HUB_CACHE",
    "HF_XET_CACHE",
    "HF_ASSETS_CACHE",
    "HF_MODULES_CACHE",
    "TRANSFORMERS_CACHE",
    "HF_TOKEN_PATH",
    "HF_STORED_TOKENS_PATH",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_ENDPOINT",
    "HF_OIDC_RESOURCE",
)
"""Unset for the session, so every Hugging Face folder derives from the session's HF_HOME and no
user token or endpoint reaches a test."""


def _users_cache_roots() -> list[str]:
    """The user's own cache folders, as the environment names them before the session redirects it."""
    roots = [os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")]
    roots += [os.environ[k] for k in ("HF_HOME", "HF_HUB_CACHE", "TOKCOMPAT_CACHE") if os.environ.get(k)]
    found = {os.path.abspath(os.path.expanduser(root)) for root in roots}
    temp = os.path.abspath(tempfile.gettempdir())
    # A cache folder that holds the temp dir (a cache at /tmp itself) cannot be guarded without
    # refusing pytest's own tmp_path; such a setup keeps its caches in tmp anyway.
    return sorted(root for root in found if not (temp == root or temp.startswith(root + os.sep)))


@dataclass(frozen=True)
class SessionDirs:
    """Where this test session keeps what a user's run would keep in the user's caches."""

    root: Path
    snapshots: Path
    xdg_cache: Path
    hf_home: Path
    users_caches: tuple[str, ...]


def _session_dirs() -> tuple[SessionDirs, bool]:
    inherited = os.environ.get(SESSION_VAR)
    if inherited and Path(inherited).is_dir():
        root, owner = Path(inherited), False
        users_caches = tuple(filter(None, os.environ.get(USER_CACHES_VAR, "").split(os.pathsep)))
    else:
        root, owner = Path(tempfile.mkdtemp(prefix="tokcompat-tests-")), True
        users_caches = tuple(_users_cache_roots())
    dirs = SessionDirs(root, root / "snapshots", root / "xdg-cache", root / "hf-home", users_caches)
    if owner:
        atexit.register(shutil.rmtree, root, ignore_errors=True)  # after pytest and its workers are done
        for key in _HF_OVERRIDES:
            os.environ.pop(key, None)
        # The caller's own settings (a grid cache, a verdict cache, an isolation mode, limits...) never
        # steer the suite: each test sets what it needs.
        for key in [
            k for k in os.environ if k.startswith("TOKCOMPAT_") and not k.startswith("TOKCOMPAT_TESTS_")
        ]:
            os.environ.pop(key, None)
        os.environ.update(
            {
                SESSION_VAR: str(root),
                USER_CACHES_VAR: os.pathsep.join(users_caches),
                "TOKCOMPAT_CACHE": str(dirs.snapshots),
                "XDG_CACHE_HOME": str(dirs.xdg_cache),
                "HF_HOME": str(dirs.hf_home),
                "HYPOTHESIS_STORAGE_DIRECTORY": str(root / "hypothesis"),  # not .hypothesis/ in the checkout
                "HF_HUB_OFFLINE": "1",
                "HF_HUB_DISABLE_TELEMETRY": "1",
            }
        )
    return dirs, owner


SESSION, SESSION_OWNER = _session_dirs()
if SESSION_OWNER and "huggingface_hub" in sys.modules:  # it has read the user's HF_HOME already
    raise RuntimeError("huggingface_hub was imported before tests/conftest.py set the session's HF_HOME")


def _import_the_engine_once() -> None:
    """Import what the tests' runs use, once, in every process that runs tests.

    pytester's in-process runs drop the modules a run imported; Rust extension modules (tokenizers,
    tiktoken) cannot be imported twice in one process, so they are imported here, before any test.
    The judge's fork server belongs to the module that started it; imported here, pytester's
    in-process runs share one server instead of each starting (and importing transformers in) another.
    """
    import tiktoken  # noqa: F401
    import tokenizers  # noqa: F401
    import transformers
    from transformers import AutoTokenizer  # noqa: F401
    from transformers.models.auto import tokenization_auto  # noqa: F401

    import pytest_tokcompat

    transformers.logging.set_verbosity_error()
    # pytester's runs import (and assertion-rewrite, as a plugin's package) the plugin's work modules
    # and every installed plugin, which this run does not load (addopts: --disable-plugin-autoload).
    # Imported once here, no run imports them again.
    for module in pkgutil.walk_packages(pytest_tokcompat.__path__, "pytest_tokcompat."):
        importlib.import_module(module.name)
    for entry_point in importlib.metadata.entry_points(group="pytest11"):
        importlib.import_module(entry_point.module)


@pytest.hookimpl(trylast=True)  # after xdist's, which registers "dsession" in its controller only
def pytest_configure(config: pytest.Config) -> None:
    # An xdist controller runs no test: it skips these imports (two seconds before any worker starts).
    if not config.pluginmanager.has_plugin("dsession"):
        _import_the_engine_once()


# A developer's run explores a little; CI (HYPOTHESIS_PROFILE=ci, set by .ci/run) the full count.
# No example database: a failure prints its example and a @reproduce_failure blob; what else
# hypothesis stores goes to the session dir, not to a .hypothesis folder in the checkout.
settings.register_profile("dev", max_examples=25, deadline=None, database=None, print_blob=True)
settings.register_profile("ci", max_examples=300, deadline=None, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
set_hypothesis_home_dir(os.environ["HYPOTHESIS_STORAGE_DIRECTORY"])  # its unicode tables, too


# ---- nothing written into the user's caches -----------------------------------------------------

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PATH_ARGS = {
    "os.mkdir": (0,),
    "os.rename": (0, 1),
    "os.link": (0, 1),
    "os.symlink": (1,),
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.truncate": (0,),
    "os.chmod": (0,),
    "os.utime": (0,),
    "shutil.rmtree": (0,),
}
WRITES_INTO_USERS_CACHES: list[str] = []
"""Every write this process attempted under the user's cache folders (each one was refused)."""


def _written_paths(event: str, args: tuple[object, ...]) -> tuple[object, ...]:
    if event == "open":
        path, mode, flags = args
        if isinstance(mode, str):  # open(): the mode; os.open(): the flags
            writes = any(c in "wax+" for c in mode)
        else:
            writes = isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
        return (path,) if writes else ()
    return tuple(args[i] for i in _PATH_ARGS[event] if i < len(args))


def _refuse_writes_into_users_caches(event: str, args: tuple[object, ...]) -> None:
    """An audit hook: a write under the user's caches is recorded and refused before it happens."""
    if event != "open" and event not in _PATH_ARGS:
        return
    for path in _written_paths(event, args):
        if not isinstance(path, (str, bytes, os.PathLike)):
            continue
        where = os.path.abspath(os.fsdecode(os.fspath(path)))
        if any(where == root or where.startswith(root + os.sep) for root in SESSION.users_caches):
            WRITES_INTO_USERS_CACHES.append(f"{event} {where}")
            raise PermissionError(f"tests must not write into the user's cache: {event} {where}")


sys.addaudithook(_refuse_writes_into_users_caches)


@pytest.fixture(scope="session")
def session_dirs() -> SessionDirs:
    """The session's cache folders (snapshots, XDG cache, HF_HOME) and the user's, which are never written."""
    return SESSION


@pytest.fixture
def users_cache_writes() -> list[str]:
    """The writes under the user's caches that this process attempted (and the guard refused)."""
    return WRITES_INTO_USERS_CACHES


@pytest.fixture(autouse=True)
def _nothing_written_into_users_caches() -> Iterator[None]:
    before = len(WRITES_INTO_USERS_CACHES)
    yield
    attempted = WRITES_INTO_USERS_CACHES[before:]
    assert not attempted, "the test tried to write into the user's cache:\n" + "\n".join(attempted)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if WRITES_INTO_USERS_CACHES:
        print("\nwrites into the user's cache were attempted:", *WRITES_INTO_USERS_CACHES, sep="\n  ")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# ---- shared fixtures ----------------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache of this test's own, offline."""
    root = tmp_path / "hf-cache"
    root.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


@pytest.fixture(autouse=True)
def _no_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's $TOKCOMPAT_MATRIX, ..., $TOKCOMPAT_CONFIG never steer a test (each sets its own)."""
    from pytest_tokcompat.matrix.settings import CONFIG_VAR, ENV_VARS

    for name in (CONFIG_VAR, *ENV_VARS.values()):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _verdict_cache_of_its_own(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test its own verdict cache on disk: one test's verdict never answers another's load."""
    monkeypatch.setenv("TOKCOMPAT_VERDICT_CACHE", str(tmp_path_factory.mktemp("verdicts")))


@pytest.fixture(autouse=True)
def _truth_cache_of_its_own(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test its own truth cache on disk: a truth one test computed (or broke) never answers another's."""
    monkeypatch.setenv("TOKCOMPAT_TRUTH_CACHE", str(tmp_path_factory.mktemp("truth")))


@pytest.fixture(autouse=True)
def _transformers_registries_unchanged() -> Iterator[None]:
    if "transformers" not in sys.modules:
        yield
        return
    from pytest_tokcompat.judge.isolation import registry_fingerprint

    before = registry_fingerprint()
    yield
    assert registry_fingerprint() == before, "the test left transformers' registries changed"
