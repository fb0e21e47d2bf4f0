"""The truth cache on disk: a checkpoint's probes and ground truth, computed once per tokenizers version.

Reading the reference tokenizer.json, deriving the probes from it and computing the ground truth
(ids, decodes, the default call, the reference chat renderings) is a third of a release's run, and
none of it depends on transformers: it is a function of the checkpoint's files, the ``tokenizers``
and ``jinja2`` libraries, the Python's Unicode tables and the judge's own code. So it is kept on
disk under a key made of exactly those, and every grid environment, rerun and ``pytest --tokcompat``
run on one machine that shares them reads it instead of computing it again.

An entry is one file: a header line (format, key, size and sha256 of the body) and the body. It is
written to a temp file and renamed into place by the judging process (never by an attempt's child);
on read, an entry whose header is not its key's, whose body is cut short or whose hash differs is
discarded with a one-line note in the log, and the truth is computed again. What the cache
promises, and what it cannot against code running as the user: docs/explanation/isolation.md.

Where, and how large: the ``truth_cache`` and ``truth_cache_max_mb`` settings the front-end resolved
(``pytest_tokcompat.settings``: the flag, ``$TOKCOMPAT_TRUTH_CACHE``, ``[tool.tokcompat]``, the ini key;
by default ``$TOKCOMPAT_CACHE/truth``, else ``$XDG_CACHE_HOME/pytest-tokcompat/truth``, 256 MB), least
recently used first.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import sys
import unicodedata
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_tokcompat.contract import judge_identity
from pytest_tokcompat.judge import diskcache
from pytest_tokcompat.judge.parity import Truth
from pytest_tokcompat.settings import TRUTH_CACHE, TRUTH_CACHE_MAX_MB, JudgeSettings
from pytest_tokcompat.sources.snapshots import sha256_of

CACHE_ENV = TRUTH_CACHE.variable
MAX_MB_ENV = TRUTH_CACHE_MAX_MB.variable
DEFAULT_BYTES = JudgeSettings().truth_cache_bytes
FORMAT = 1
"""The entry's layout; an entry of another format is discarded and rewritten."""
TRUTH_VERSION = 1
"""The meaning of the truth: raise it where the truth code computes something else for the same files."""
LIBRARIES = ("tokenizers", "jinja2")
"""What computes the truth: the reference tokenizer and the reference chat renderings (never transformers)."""
RESOURCE_LIMIT = "hit a resource limit"
"""What the truth says where its computation hit the process's limits: such a truth is not kept."""

log = logging.getLogger("pytest_tokcompat.truth")


@lru_cache(maxsize=1)
def truth_environment() -> dict[str, Any]:
    """The judge's identity and what computes the truth: fixed for the life of a process."""
    return {
        "truth": TRUTH_VERSION,
        "judge": judge_identity(),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "unicode": unicodedata.unidata_version,  # the probes' script classes
        "versions": diskcache.versions_of(LIBRARIES),
    }


def key_fields(
    folder: Path, extra_texts: list[str], golden_path: Path | None, digests: dict[str, str] | None = None
) -> dict[str, Any]:
    """Everything the probes and the ground truth are computed from (``digests``: the folder's files,
    hashed already by the judge's fingerprint of them)."""
    golden = golden_path if golden_path is not None and golden_path.is_file() else None
    return {
        "format": FORMAT,
        **truth_environment(),
        "files": diskcache.folder_digests(folder) if digests is None else digests,
        "texts": list(extra_texts),
        "golden": sha256_of(golden) if golden is not None else None,
    }


def key_of(fields: dict[str, Any]) -> str:
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class CachedTruth:
    """The probe texts and ground truth of a checkpoint, as the first attempt's child computed them."""

    texts: list[str]
    truth: Truth


def storable(truth: Truth | None, truth_error: str | None) -> bool:
    """Only a truth computed in full: none that failed, none cut short by a resource limit."""
    if truth is None or truth_error is not None:
        return False
    limited = truth.contract is not None and any(
        RESOURCE_LIMIT in str(reason) for reason in truth.contract.not_checked.values()
    )
    return not limited


class TruthCache:
    """Truths by key: ``<root>/<key[:2]>/<key>.truth``, at most ``max_bytes`` of them."""

    def __init__(self, root: Path, max_size: int = DEFAULT_BYTES) -> None:
        self.root = root
        self.max_bytes = max_size

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.truth"

    def get(self, key: str) -> CachedTruth | None:
        """The truth kept under ``key``; None where there is none or it fails verification (then noted)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None  # not computed yet (or pruned a moment ago)
        try:
            found = _verified(data, key)
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as error:
            log.warning(
                "tokcompat: truth cache entry %s discarded (%s); the truth is computed again", path, error
            )
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: pruned last
        return found

    def put(self, key: str, fields: dict[str, Any], texts: list[str], truth: Truth) -> Path | None:
        """Keep the truth (without the entry's acknowledged drift, which is the caller's); None: not written."""
        kept = asdict(truth)
        kept["acknowledged"] = {}
        body = json.dumps(
            {"fields": fields, "texts": list(texts), "truth": kept},
            ensure_ascii=False,
            separators=(",", ":"),
            default=str,
        ).encode("utf-8")
        header = {"format": FORMAT, "key": key, "size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
        path = self.path(key)
        try:
            diskcache.write_atomically(path, json.dumps(header).encode("utf-8") + b"\n" + body)
        except OSError:
            return None  # a read-only or full cache costs the next run the computation, nothing more
        diskcache.prune(self.root, self.max_bytes, keep=path, pattern="*/*.truth")
        return path


def _verified(data: bytes, key: str) -> CachedTruth:
    """The entry in ``data`` if it is whole and ``key``'s; ValueError (or a type error) says why not."""
    head, newline, body = data.partition(b"\n")
    if not newline:
        raise ValueError("no header line")
    header = json.loads(head)
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(
            f"format {header.get('format') if isinstance(header, dict) else None!r}, not {FORMAT}"
        )
    if header.get("key") != key:
        raise ValueError("it holds another key's truth")
    if header.get("size") != len(body):
        raise ValueError(f"its body has {len(body)} bytes of {header.get('size')} (cut short)")
    if header.get("sha256") != hashlib.sha256(body).hexdigest():
        raise ValueError("its body does not match its sha256")
    entry = json.loads(body)
    truth, texts = Truth.from_json(entry["truth"]), entry["texts"]
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        raise ValueError("its body holds no probe texts")
    return CachedTruth(texts, truth)


def default_cache(settings: JudgeSettings) -> TruthCache | None:
    """The cache the settings name (its folder and size), or None where they switch it off."""
    root = settings.truth_cache
    return TruthCache(root, settings.truth_cache_bytes) if root is not None else None


@dataclass
class Lookup:
    """One checkpoint's place in the cache, and what was there when the judgement began."""

    cache: TruthCache
    key: str
    fields: dict[str, Any]
    hit: CachedTruth | None

    def keep(self, texts: list[str] | None, truth: Truth | None, truth_error: str | None) -> Path | None:
        """Keep what the judgement computed, where it missed and the truth is whole."""
        if self.hit is not None or texts is None or truth is None or not storable(truth, truth_error):
            return None
        return self.cache.put(self.key, self.fields, texts, truth)


def lookup(
    folder: Path,
    extra_texts: list[str],
    golden_path: Path | None,
    settings: JudgeSettings,
    digests: dict[str, str] | None = None,
) -> Lookup | None:
    """The truth cache's entry for the checkpoint in ``folder``; None where the settings switch the cache
    off or the files cannot be hashed. ``digests``: the files' hashes where the caller has them already."""
    cache = default_cache(settings)
    if cache is None:
        return None
    try:
        fields = key_fields(folder, extra_texts, golden_path, digests)
    except OSError:
        return None
    key = key_of(fields)
    return Lookup(cache, key, fields, cache.get(key))
