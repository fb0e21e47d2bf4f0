"""Hub checkpoints through huggingface_hub: only the files tokenizer loading needs, never weights.

The real huggingface_hub calls are used, so HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE
and HF_TOKEN behave as users expect, and the cache is shared by runs and xdist
workers (huggingface_hub locks its own files). Where the hub cannot be reached
and the cache has no copy, the case is not checked, never passed. Remote code is
fetched only for entries that opt in, only the modules tokenizer loading imports,
and only at a commit sha, so the code that runs is the code someone reviewed.
"""

from __future__ import annotations

import json
import os
import re
from fnmatch import fnmatchcase
from pathlib import Path

from pytest_tokcompat.errors import NotReachable, NotRunnable, RepoNotFound
from pytest_tokcompat.sources.remote_code import relative_imports, remote_code_modules

TOKENIZER_PATTERNS = [
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "vocab.txt",
    "merges.txt",
    "tokenizer.model",
    "spiece.model",
    "sentencepiece.bpe.model",
    "*.tiktoken",
    "tiktoken.model",
    "chat_template.jinja",
    "chat_template.json",
    "additional_chat_templates/*.jinja",
]
"""What AutoTokenizer reads; no weights and no code (code is fetched by name, see remote_code_modules)."""

CHECKPOINT_MARKERS = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "tokenizer.model",
    "tiktoken.model",
)
"""A checkpoint holds at least one: a config, or (tokenizer-only) the files AutoTokenizer reads."""

COMMIT_SHA = re.compile(r"^[0-9a-f]{40}$")
_TRUE = {"1", "ON", "YES", "TRUE"}
_CODE_KEYS = ("AutoConfig", "AutoTokenizer")
"""The auto_map entries AutoTokenizer imports; modeling code is never needed for a tokenizer."""


def hub_cache_dir() -> Path:
    """The hub cache as huggingface_hub computes it, but from the environment at call time.

    huggingface_hub reads HF_HUB_CACHE/HF_HOME once, at import; reading them per call
    lets a process (and a test) point one run at another cache.
    """
    env = os.environ
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(key):
            return Path(os.path.expandvars(os.path.expanduser(env[key])))
    home = env.get("HF_HOME") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface"
    )
    return Path(os.path.expandvars(os.path.expanduser(home))) / "hub"


def hub_endpoint() -> str | None:
    """HF_ENDPOINT as set now (huggingface_hub reads it once, at import); None for its default."""
    return os.environ.get("HF_ENDPOINT") or None


def hub_offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) as set now, else as huggingface_hub read it at import."""
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        value = os.environ.get(key)
        if value:
            return value.upper() in _TRUE
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def is_commit_sha(revision: str | None) -> bool:
    return revision is not None and COMMIT_SHA.match(revision) is not None


def require_pinned(repo: str, revision: str | None) -> None:
    """Refuse remote code at a branch or tag: its code can change between review and run."""
    if is_commit_sha(revision):
        return
    what = (
        f"revision {revision!r} is a branch or tag" if revision else "no revision is pinned (default branch)"
    )
    raise NotRunnable(
        f"{repo}: trust_remote_code is refused: {what}, and the code there can change under us; "
        "pin the commit whose code you reviewed (40 hex characters): 'revision: <sha>' in the matrix "
        "entry, --revision SHA on the command line, or load_tokenizer(..., revision='<sha>'); if you "
        "already run this repo's code at that branch, keep doing so knowingly with "
        "load_tokenizer(..., allow_unpinned_remote_code=True) or --allow-unpinned-remote-code (the commit "
        "that ran is recorded)"
    )


def _fill_hint(repo: str, revision: str | None) -> str:
    pinned = f" --revision {revision}" if revision else ""
    return (
        f"run `tokcompat check {repo}{pinned}` once where the hub is reachable (it fetches only the "
        f"tokenizer files), or point HF_HUB_CACHE (or HF_HOME) at a cache that holds them; "
        f"the cache used was {hub_cache_dir()}"
    )


def cached_snapshot(repo: str, revision: str | None) -> Path | None:
    """The hub cache's folder of ``repo`` at ``revision`` (a commit, or a branch the cache has a ref for);
    None where the cache holds none. Only looks: nothing is fetched or validated."""
    storage = hub_cache_dir() / f"models--{repo.replace('/', '--')}"
    commit = revision if is_commit_sha(revision) else None
    if commit is None:
        try:
            commit = (storage / "refs" / (revision or "main")).read_text(encoding="utf-8").strip()
        except (OSError, ValueError):
            return None
    folder = storage / "snapshots" / commit
    return folder if commit and folder.is_dir() else None


def _cached_revisions(repo: str) -> str:
    """What the cache does hold for ``repo``, so a user sees a revision mismatch at once."""
    storage = hub_cache_dir() / f"models--{repo.replace('/', '--')}"
    refs = storage / "refs"
    names = (
        sorted(
            f"{p.relative_to(refs).as_posix()} -> {p.read_text().strip()[:12]}"
            for p in refs.rglob("*")
            if p.is_file()
        )
        if refs.is_dir()
        else []
    )
    snapshots = sorted(p.name[:12] for p in (storage / "snapshots").glob("*")) if storage.is_dir() else []
    if not names and not snapshots:
        return "the cache holds nothing of this repo"
    return f"the cache holds refs [{', '.join(names)}] and snapshots [{', '.join(snapshots)}]"


def _translate(error: Exception, repo: str, revision: str | None) -> Exception:
    """huggingface_hub's error as NotReachable/NotRunnable with what to do; other errors unchanged."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        IncompleteSnapshotError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    at = f"{repo}@{revision or 'main'}"
    if isinstance(error, GatedRepoError):
        token = (
            "HF_TOKEN is set but its account has no access"
            if os.environ.get("HF_TOKEN")
            else "HF_TOKEN is not set"
        )
        return NotReachable(
            f"{repo} is a gated repo and the hub refused access ({token}): accept the repo's terms on its "
            "hub page, then set HF_TOKEN to a token of that account (or `hf auth login`)"
        )
    if isinstance(error, RepositoryNotFoundError):
        return RepoNotFound(
            f"{repo} was not found on the hub, or is private: check the repo id, or set HF_TOKEN to a token "
            "with access"
        )
    if isinstance(error, RevisionNotFoundError):
        return NotReachable(f"{repo} has no revision {revision!r}: check the commit sha in the matrix entry")
    if isinstance(error, IncompleteSnapshotError):
        missing = re.search(r"\d+ file\(s\) are missing \(([^)]*(?:\([^)]*\))?[^)]*)\)", str(error))
        listed = f" (missing: {missing.group(1)})" if missing else ""
        return NotReachable(
            f"{at}: the cached snapshot is incomplete{listed} and the hub cannot be reached: {_fill_hint(repo, revision)}"
        )
    if isinstance(error, LocalEntryNotFoundError):
        return NotReachable(
            f"{at} is not in the hub cache and the hub cannot be reached ({_cached_revisions(repo)}): "
            f"{_fill_hint(repo, revision)}"
        )
    if isinstance(error, HFValidationError):
        return NotRunnable(f"{repo!r} is not a valid hub repo id ({error}); write it as owner/name")
    if isinstance(error, HfHubHTTPError):
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return NotReachable(f"{at}: the hub answered {first}; if the repo is private or gated, set HF_TOKEN")
    return error


def _download_code(repo: str, commit: str, folder: Path, cache_dir: Path, offline: bool) -> list[str]:
    """Fetch the named modules and the modules they import relatively, one file at a time."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    pending, fetched = remote_code_modules(folder, repo), []
    while pending:
        name = pending.pop()
        if name in fetched:
            continue
        try:
            path = Path(
                hf_hub_download(
                    repo,
                    name,
                    revision=commit,
                    cache_dir=cache_dir,
                    local_files_only=offline,
                    endpoint=hub_endpoint(),
                )
            )
        except LocalEntryNotFoundError:
            raise NotReachable(
                f"{repo}@{commit}: remote code file {name} is not in the hub cache and the hub cannot be "
                f"reached: {_fill_hint(repo, commit)}"
            ) from None
        except EntryNotFoundError:
            raise NotRunnable(
                f"{repo}@{commit}: auto_map names {name}, which the repo does not have"
            ) from None
        except Exception as error:
            translated = _translate(error, repo, commit)
            if translated is error:
                raise
            raise translated from None
        fetched.append(name)
        pending.extend(n for n in relative_imports(path) if n not in fetched)
    return sorted(fetched)


def resolve_repo(
    repo: str,
    revision: str | None,
    *,
    trust_remote_code: bool = False,
    allow_unpinned_remote_code: bool = False,
) -> Path:
    """The local snapshot folder of ``repo`` at ``revision`` (downloaded, or from the cache offline).

    Remote code comes only at a commit sha, unless the caller allows a branch explicitly
    (``allow_unpinned_remote_code``): the branch is then resolved to its commit once, and the
    files and the code are both fetched at that commit, which the folder's name records.
    """
    from huggingface_hub import snapshot_download

    if trust_remote_code and not allow_unpinned_remote_code:
        require_pinned(repo, revision)
    cache_dir, offline = hub_cache_dir(), hub_offline()
    try:
        folder = Path(
            snapshot_download(
                repo,
                revision=revision,
                allow_patterns=TOKENIZER_PATTERNS,
                cache_dir=cache_dir,
                local_files_only=offline,
                endpoint=hub_endpoint(),
            )
        )
    except Exception as error:
        translated = _translate(error, repo, revision)
        if translated is error:
            raise
        raise translated from None
    require_complete(repo, folder, cache_dir, offline)
    if not any((folder / name).is_file() for name in CHECKPOINT_MARKERS):
        # A tokenizer-only repo (no config.json) is judged; a repo with neither has nothing to judge.
        raise NotRunnable(
            f"{repo}@{folder.name}: the repo has neither config.json nor tokenizer files "
            f"({', '.join(CHECKPOINT_MARKERS[1:])}): pass the repo that holds the model's tokenizer"
        )
    if trust_remote_code:
        _download_code(repo, folder.name, folder, cache_dir, offline)
    return folder


LISTING_FILE = ".tokcompat-files.json"
"""Beside the files of a cached revision: which tokenizer files that revision has (from the hub's listing)."""


def tokenizer_files(names: list[str]) -> list[str]:
    """The names of a repo listing that tokenizer loading reads (what snapshot_download's allow_patterns select)."""
    return sorted(name for name in names if any(fnmatchcase(name, pattern) for pattern in TOKENIZER_PATTERNS))


def _read_listing(folder: Path) -> list[str] | None:
    try:
        data = json.loads((folder / LISTING_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, list) or not all(isinstance(name, str) for name in files):
        return None
    return list(files)


def _write_listing(folder: Path, repo: str, files: list[str]) -> None:
    document = {"repo": repo, "revision": folder.name, "files": files}
    temporary = folder / f"{LISTING_FILE}.{os.getpid()}.tmp"
    try:
        temporary.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        temporary.replace(folder / LISTING_FILE)
    except OSError:  # a read-only shared cache: the listing is asked for again next time
        temporary.unlink(missing_ok=True)


def _hub_tree_listing(repo: str, commit: str, cache_dir: Path) -> list[str] | None:
    """The listing huggingface_hub itself cached when it downloaded this revision (newer releases only)."""
    try:
        from huggingface_hub import get_cached_repo_tree
    except ImportError:
        return None
    try:
        return [entry.path for entry in get_cached_repo_tree(repo, revision=commit, cache_dir=cache_dir)]
    except Exception:  # no listing cached for this revision
        return None


def revision_tokenizer_files(repo: str, folder: Path, cache_dir: Path, offline: bool) -> list[str] | None:
    """Which tokenizer files the cached revision ``folder`` has on the hub; None where nothing says.

    Read from the listing kept beside the files, else from huggingface_hub's cached
    tree, else (online) asked of the hub with its public API, and then kept beside the
    files, so an offline run later can tell a complete cache from a partial one.
    """
    known = _read_listing(folder)
    if known is not None:
        return known
    names = _hub_tree_listing(repo, folder.name, cache_dir)
    if names is None and not offline:
        from huggingface_hub import HfApi

        try:
            names = HfApi(endpoint=hub_endpoint()).list_repo_files(repo, revision=folder.name)
        except Exception as error:
            translated = _translate(error, repo, folder.name)
            if translated is error and not _is_connection_error(error):
                raise
            return None
    if names is None:
        return None
    files = tokenizer_files(names)
    _write_listing(folder, repo, files)
    return files


def _is_connection_error(error: Exception) -> bool:
    return isinstance(error, (OSError, ConnectionError)) or type(error).__module__.startswith(
        ("httpx", "requests")
    )


def require_complete(repo: str, folder: Path, cache_dir: Path, offline: bool) -> None:
    """Refuse to judge a partly cached revision: a missing tokenizer_config.json can change every id."""
    commit = folder.name
    files = revision_tokenizer_files(repo, folder, cache_dir, offline)
    if files is None:
        held = sorted(p.name for p in folder.iterdir() if not p.name.startswith("."))
        raise NotReachable(
            f"{repo}@{commit}: the hub cache holds {', '.join(held) or 'nothing'} of this revision but not its "
            "file list (it was filled file by file, as `hf download REPO FILE...` does), so a missing "
            "tokenizer file cannot be told from an absent one, and the hub cannot be reached: "
            f"{_fill_hint(repo, commit)}"
        )
    missing = [name for name in files if not (folder / name).is_file()]
    if missing:
        raise NotReachable(
            f"{repo}@{commit}: the cached snapshot is incomplete: the revision has {len(files)} tokenizer "
            f"files and the cache lacks {', '.join(missing)}; run `hf download {repo} --revision {commit} "
            f"{' '.join(missing)}` where the hub is reachable, or {_fill_hint(repo, commit)}"
        )


def prefetch(
    entries: list[tuple[str, str | None, bool]], max_workers: int = 4
) -> dict[tuple[str, str | None], Path | Exception]:
    """Resolve many (repo, revision, trust_remote_code) at once, before the tests need them.

    Downloads are network-bound, so a few threads fill the shared cache in the time of
    the slowest one; the tests (and every xdist worker) then find their files cached.
    Failures are returned, not raised: each case reports its own.
    """
    from concurrent.futures import ThreadPoolExecutor

    unique = list(dict.fromkeys(entries))
    results: dict[tuple[str, str | None], Path | Exception] = {}
    if not unique:
        return results
    with ThreadPoolExecutor(max_workers=min(max_workers, len(unique))) as pool:
        futures = {
            (repo, revision): pool.submit(resolve_repo, repo, revision, trust_remote_code=trust)
            for repo, revision, trust in unique
        }
        for key, future in futures.items():
            try:
                results[key] = future.result()
            except Exception as error:  # reported by the case itself when it runs
                results[key] = error
    return results
