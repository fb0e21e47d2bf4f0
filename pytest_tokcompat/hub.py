"""Hub checkpoints through huggingface_hub: only the files tokenizer loading needs, never weights.

The real huggingface_hub calls are used, so HF_HOME, HF_HUB_CACHE, HF_HUB_OFFLINE
and HF_TOKEN behave as users expect; where the hub cannot be reached and the
cache has no copy, the case is not checked, never passed.
"""

from __future__ import annotations

from pathlib import Path

from pytest_tokcompat.runner import NotReachable

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
    "*.tiktoken",
    "tiktoken.model",
    "chat_template.jinja",
    "chat_template.json",
]


def resolve_repo(repo: str, revision: str | None, *, trust_remote_code: bool = False) -> Path:
    """The local snapshot folder of ``repo`` at ``revision`` (downloaded, or from the cache offline)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    patterns = TOKENIZER_PATTERNS + (["*.py"] if trust_remote_code else [])
    try:
        return Path(snapshot_download(repo, revision=revision, allow_patterns=patterns))
    except GatedRepoError as error:
        raise NotReachable(f"{repo} is gated: set HF_TOKEN to a token with access ({error})") from None
    except RepositoryNotFoundError:
        raise NotReachable(
            f"{repo} does not exist on the hub, or is private: check the id, or set HF_TOKEN"
        ) from None
    except RevisionNotFoundError:
        raise NotReachable(f"{repo} has no revision {revision!r}: check the commit sha") from None
    except LocalEntryNotFoundError:
        raise NotReachable(
            f"{repo}@{revision or 'main'} is not in the local cache and the hub cannot be reached: "
            "fill the cache (huggingface-cli download) or run online"
        ) from None


def resolve_name(name: str, revision: str | None = None, *, trust_remote_code: bool = False) -> Path:
    """A hub repo id, or a served model name listed in the bundled matrix, to a local folder."""
    if "/" in name:
        return resolve_repo(name, revision, trust_remote_code=trust_remote_code)
    raise NotReachable(
        f"{name!r} is neither a folder nor a hub repo id (owner/name); pass the tokenizer's repo, "
        "e.g. --tokenizer deepseek-ai/DeepSeek-V3.2-Exp"
    )
