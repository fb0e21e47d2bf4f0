"""Credentials never reach a checkpoint's code, and never leave a run in text.

A checkpoint's remote code runs in the judge's children. Those children, and the fork
server they are forked from, get an environment without credential variables (the parent
resolves and fetches everything they read), so code that prints ``HF_TOKEN`` finds nothing
to print. Where a credential still reaches a text (a value read some other way, a parent's
own message), every text the run publishes is scrubbed of the values of the credential
variables present in this process, as CI systems mask secrets: reports, job summaries,
pages, issue bodies, the terminal and logs.

Imports nothing of the package: every layer may use it.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_tokcompat import environment

EXTRA_NAMES_ENV = "TOKCOMPAT_CREDENTIAL_VARS"
"""Further variable names to treat as credentials, comma-separated (``DEPLOY_SEED,ROBOT_CODE``)."""
MASK = "***"
MIN_SECRET_LENGTH = 6
"""Shorter values are not masked: ``HF_HUB_DISABLE_IMPLICIT_TOKEN=1`` must not mask every digit 1."""

_CREDENTIAL_WORD = re.compile(
    r"(?:^|_)(?:TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH|API_?KEY|ACCESS_KEY|PRIVATE_KEY|SIGNING_KEY)(?:_|$)"
)
_CREDENTIAL_SUFFIX = re.compile(r"(?:^|_)(?:KEY|PAT|PASS)$")
"""``OPENAI_KEY``, ``GH_PAT``, ``REGISTRY_PASS``: a key, personal access token or password by its last word."""
_NOT_A_VALUE = re.compile(r"_(?:PATH|FILE|DIR|DIRECTORY)$")
"""A variable that names where a credential lives (``HF_TOKEN_PATH``) holds a path, not the secret."""
CI_COMMAND_FILES = frozenset(
    {
        "GITHUB_ENV",
        "GITHUB_OUTPUT",
        "GITHUB_PATH",
        "GITHUB_STATE",
        "GITHUB_STEP_SUMMARY",
        "BUILDKITE_ENV_FILE",
        "BASH_ENV",
        "DRONE_OUTPUT",
    }
)
"""Files a CI job's later steps read as commands (GitHub Actions and its clones, Buildkite, CircleCI's
``BASH_ENV``, Drone): withheld from a checkpoint's code like credentials, but not masked (paths, no secret)."""


def _extra_names(environ: Mapping[str, str]) -> frozenset[str]:
    raw = environment.read(EXTRA_NAMES_ENV, environ) or ""
    return frozenset(name.strip().upper() for name in raw.split(",") if name.strip())


def is_credential_name(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """True for ``HF_TOKEN``, ``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``OPENAI_API_KEY`` and the like."""
    upper = name.upper()
    if upper in _extra_names(os.environ if environ is None else environ):
        return True
    named = _CREDENTIAL_WORD.search(upper) or _CREDENTIAL_SUFFIX.search(upper)
    return bool(named) and not _NOT_A_VALUE.search(upper)


def is_withheld_name(name: str, environ: Mapping[str, str] | None = None) -> bool:
    """True for what a checkpoint's code never gets: a credential or a CI job's command file."""
    return name.upper() in CI_COMMAND_FILES or is_credential_name(name, environ)


def without_credentials(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` less every credential variable and CI command file, and with the hub's token file
    out of reach.

    ``HF_TOKEN_PATH`` points at an empty file, so huggingface_hub in the child finds no stored
    token either; the children load from local files and the hub cache, offline.
    """
    kept = {name: value for name, value in environ.items() if not is_withheld_name(name, environ)}
    kept["HF_TOKEN_PATH"] = os.devnull
    return kept


_WITHHELD_LOCK = threading.Lock()
_withheld_depth = 0
_withheld_saved: dict[str, str | None] = {}
_TOKEN_PATH_CONSTANTS = ("HF_TOKEN_PATH", "HF_STORED_TOKENS_PATH")
"""huggingface_hub reads the token file through these, computed at its import, not from the variable."""


@contextmanager
def withheld() -> Iterator[None]:
    """This process without credentials while a checkpoint's code runs in it (the reload the fixtures
    and ``load_tokenizer()`` do): credential variables and CI command files out of ``os.environ``,
    ``HF_TOKEN_PATH`` and huggingface_hub's token paths at ``os.devnull``; all restored on exit.

    ``os.environ`` is the process's: other threads see it withheld meanwhile. Nested and concurrent
    uses share one withholding (the first in saves, the last out restores). Not hidden: the process's
    initial environment in ``/proc/self/environ``, and whatever code loaded here does later.
    """
    global _withheld_depth
    with _WITHHELD_LOCK:
        if _withheld_depth == 0:
            _withhold()
        _withheld_depth += 1
    try:
        yield
    finally:
        with _WITHHELD_LOCK:
            _withheld_depth -= 1
            if _withheld_depth == 0:
                _restore()


def _withhold() -> None:
    names = [name for name in os.environ if is_withheld_name(name)]
    _withheld_saved.clear()
    _withheld_saved.update({name: os.environ[name] for name in names})
    _withheld_saved["HF_TOKEN_PATH"] = os.environ.get("HF_TOKEN_PATH")
    for name in names:
        del os.environ[name]
    os.environ["HF_TOKEN_PATH"] = os.devnull
    constants = sys.modules.get("huggingface_hub.constants")
    for name in _TOKEN_PATH_CONSTANTS if constants is not None else ():
        if hasattr(constants, name):
            _withheld_saved[f"huggingface_hub.constants.{name}"] = getattr(constants, name)
            setattr(constants, name, os.devnull)


def _restore() -> None:
    constants = sys.modules.get("huggingface_hub.constants")
    for key, value in _withheld_saved.items():
        if key.startswith("huggingface_hub.constants."):
            if constants is not None:
                setattr(constants, key.rsplit(".", 1)[1], value)
        elif value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    _withheld_saved.clear()


def hf_home(environ: Mapping[str, str]) -> Path:
    """Hugging Face's home folder as huggingface_hub derives it from ``environ``."""
    home = environ.get("HF_HOME") or os.path.join(
        environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface"
    )
    return Path(os.path.expanduser(home))


def _token_file(environ: Mapping[str, str]) -> Path:
    explicit = environ.get("HF_TOKEN_PATH")
    return Path(os.path.expanduser(explicit)) if explicit else hf_home(environ) / "token"


def token_files(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The files huggingface_hub keeps the user's tokens in (``token`` and ``stored_tokens``), where they
    exist: an attempt's mount namespace shows them empty, as masking cannot catch a token re-encoded."""
    environ = os.environ if environ is None else environ
    home = hf_home(environ)
    found = dict.fromkeys([_token_file(environ), home / "token", home / "stored_tokens"])
    return [path for path in found if path.is_file()]


def credential_values(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The secrets to mask: credential variables' values and the hub's stored token, longest first."""
    environ = os.environ if environ is None else environ
    return _values(
        tuple(sorted((k, v) for k, v in environ.items() if is_credential_name(k, environ))),
        str(_token_file(environ)),
    )


@lru_cache(maxsize=8)
def _values(items: tuple[tuple[str, str], ...], token_file: str) -> tuple[str, ...]:
    found = {value.strip() for _, value in items}
    try:
        stored = Path(token_file).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError, ValueError):
        stored = ""
    found.add(stored)
    return tuple(sorted((v for v in found if len(v) >= MIN_SECRET_LENGTH), key=len, reverse=True))


def scrub(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text`` with every secret value replaced by ``***``."""
    for secret in credential_values() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def scrub_cut(text: str, secrets: Iterable[str] | None = None) -> str:
    """``text``, the end of a longer one cut at its start, scrubbed, with the end of a secret that the
    cut split masked too: a cut secret no longer equals its value. An end shorter than
    MIN_SECRET_LENGTH - 1 characters stays (it tells next to nothing; masking it would mask chance text)."""
    found = tuple(credential_values() if secrets is None else secrets)
    for secret in found:
        for start in range(1, len(secret) - MIN_SECRET_LENGTH + 2):
            if text.startswith(secret[start:]):
                text = MASK + text[len(secret) - start :]
                break
    return scrub(text, found)


def scrub_data(value: Any, secrets: Iterable[str] | None = None) -> Any:
    """Every string inside ``value`` (dicts, lists, tuples; keys too) scrubbed; other values as they are."""
    found = tuple(credential_values() if secrets is None else secrets)
    if not found:
        return value
    return _scrub_in(value, found)


def _scrub_in(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {_scrub_in(k, secrets): _scrub_in(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_in(item, secrets) for item in value]
    if isinstance(value, tuple):
        return tuple(_scrub_in(item, secrets) for item in value)
    return value
