"""The verdict cache on disk: a client's second and later processes skip judging and pay only the load.

``load_tokenizer()`` judges a checkpoint in child processes, which takes seconds; a benchmark
client loads the same checkpoint in every worker process. A verdict is a function of the
checkpoint's files, the installed transformers and tokenizers (and the libraries they load
with), the judge's own code and probe set, and what the caller asked for (the remote-code
opt-in, the alias registry, the case's probe texts, golden ids and acknowledged drift), so it is
kept on disk under a key made of exactly those. The remedy it names is still loaded in the
caller's process and checked against the stored ground truth, so a client's monkeypatch still
shows. An entry is written to a temp file and renamed into place; one that cannot be read, or
that another format or key wrote, is ignored and rewritten, never trusted.

Where: the ``verdict_cache`` setting the front-end resolved (``pytest_tokcompat.settings``: the flag,
``$TOKCOMPAT_VERDICT_CACHE``, ``[tool.tokcompat]``, the ini key; ``off`` or ``0`` switches the cache off),
by default ``$TOKCOMPAT_CACHE/verdicts``, else ``$XDG_CACHE_HOME/pytest-tokcompat/verdicts``.

How big: every new transformers release or judge version makes new keys, so the old entries would
pile up for ever. After each write the cache is pruned to the ``verdict_cache_max_mb`` setting
(default 256 MB), least recently used first: a hit touches its entry.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_tokcompat.contract import judge_identity, probe_set_identity
from pytest_tokcompat.judge import cachefiles
from pytest_tokcompat.judge.diskcache import folder_digests, prune, versions_of
from pytest_tokcompat.judge.judgement import REMEDIES, Judgement, truth_from
from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.settings import VERDICT_CACHE, VERDICT_CACHE_MAX_MB, JudgeSettings
from pytest_tokcompat.sources.checkpoint import Checkpoint
from pytest_tokcompat.sources.names import load_name
from pytest_tokcompat.sources.snapshots import sha256_of

CACHE_ENV = VERDICT_CACHE.variable
MAX_MB_ENV = VERDICT_CACHE_MAX_MB.variable
DEFAULT_BYTES = JudgeSettings().verdict_cache_bytes
FORMAT = 1
"""The entry format; an entry of another format is ignored and rewritten."""
LIBRARIES = (
    "transformers",
    "tokenizers",
    "huggingface_hub",
    "sentencepiece",
    "tiktoken",
    "protobuf",
    "jinja2",
    "mistral_common",
)
"""What a tokenizer load can depend on: a change of any of them may change the verdict."""


def checkpoint_digests(checkpoint: Checkpoint) -> dict[str, str]:
    """sha256 of every file a tokenizer load may read, by relative path.

    An assembled snapshot was verified file by file by the resolver a moment ago: its
    digests are reused. Everything else (a hub snapshot, a local folder) is hashed here.
    """
    if checkpoint.file_digests is not None:
        return dict(checkpoint.file_digests)
    return folder_digests(checkpoint.folder)


@lru_cache(maxsize=1)
def _environment() -> dict[str, Any]:
    """The judge's identity and the libraries' versions: fixed for the life of a process."""
    return {
        "judge": judge_identity(),
        "probes": probe_set_identity(),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "versions": versions_of(LIBRARIES),
    }


def key_fields(
    checkpoint: Checkpoint, registry: dict[str, Alias], acknowledged: dict[str, str] | None
) -> dict[str, Any]:
    """Everything that decides the verdict: the files, the environment, the judge and the caller's asks."""
    case = checkpoint.case
    golden = checkpoint.golden_path
    return {
        "format": FORMAT,
        **_environment(),
        "files": checkpoint_digests(checkpoint),
        "trust_remote_code": checkpoint.trust_remote_code,
        "registry": {name: asdict(alias) for name, alias in sorted(registry.items())},
        "case": case.id if case is not None else None,
        "texts": list(checkpoint.texts),
        "golden": sha256_of(golden) if golden is not None and golden.is_file() else None,
        "acknowledged": dict(sorted((acknowledged or {}).items())),
        "loaded_as": load_name(checkpoint),
    }


def key_of(fields: dict[str, Any]) -> str:
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class Cached:
    """A verdict read from the cache: the judgement (without a tokenizer) and where it was kept."""

    judgement: Judgement
    path: Path


class VerdictCache:
    """Verdicts by key: ``<root>/<key[:2]>/<key>.json``, at most ``max_bytes`` of them."""

    def __init__(self, root: Path, max_bytes: int = DEFAULT_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Cached | None:
        """The verdict kept under ``key``; None where there is none or it cannot be trusted."""
        path = self.path(key)
        try:
            entry = json.loads(cachefiles.read(self.root, path).decode("utf-8"))
            if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
                return None
            judgement = Judgement.from_json(entry["judgement"])
            truth = truth_from(entry["truth"])
            texts = entry["probe_texts"]
            if (
                judgement.verdict not in REMEDIES
                or truth is None
                or not isinstance(texts, list)
                or not all(isinstance(text, str) for text in texts)
            ):
                return None
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None  # unreadable, corrupt or foreign: judged again and rewritten
        judgement.truth, judgement.probe_texts = truth, list(texts)
        cachefiles.touch(self.root, path)  # recently used: pruned last
        return Cached(judgement, path)

    def put(self, key: str, fields: dict[str, Any], judgement: Judgement) -> Path | None:
        """Keep a decisive verdict; None (nothing written) where it is not one or cannot be written."""
        if not storable(judgement):
            return None
        assert judgement.truth is not None
        entry = {
            "format": FORMAT,
            "key": key,
            "fields": fields,
            "judgement": judgement.to_json(),
            "truth": asdict(judgement.truth),
            "probe_texts": judgement.probe_texts,
        }
        path = self.path(key)
        try:
            data = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), default=str)
            cachefiles.write(self.root, path, data.encode("utf-8"))
        except OSError:
            return None  # a read-only or full cache costs the next process a judgement, nothing more
        self.prune(keep=path)
        return path

    def prune(self, keep: Path | None = None) -> list[Path]:
        """Remove the least recently used entries until the cache fits its size; ``keep`` stays."""
        return prune(self.root, self.max_bytes, keep)


def storable(judgement: Judgement) -> bool:
    """Only a decisive verdict with its ground truth: never one the judge's own limits left undecided,
    never a broken or not-checked one (the next process judges it again)."""
    return (
        judgement.verdict in REMEDIES
        and judgement.truth is not None
        and judgement.probe_texts is not None
        and not judgement.loaders
        and judgement.recorded is None
        and not any(attempt.undecided for attempt in judgement.attempts)
    )


def default_cache(settings: JudgeSettings) -> VerdictCache | None:
    """The cache the settings name (its folder and size), or None where they switch it off."""
    root = settings.verdict_cache
    return VerdictCache(root, settings.verdict_cache_bytes) if root is not None else None
