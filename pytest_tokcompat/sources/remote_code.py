"""Remote code a checkpoint's auto_map names: which modules, fetched one by one, never from another repo.

Only the modules tokenizer loading imports are fetched, and only at a commit sha, so the code
that runs is the code someone reviewed.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from pytest_tokcompat.errors import NotRunnable


def _config_auto_maps(folder: Path) -> list[Any]:
    found: list[Any] = []
    for name, key in (("config.json", "AutoConfig"), ("tokenizer_config.json", "AutoTokenizer")):
        path = folder / name
        try:  # a FIFO or device would block here: the judge refuses such files, with a reason
            if not stat.S_ISREG(path.stat().st_mode):
                continue
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        auto_map = data.get("auto_map") if isinstance(data, dict) else None
        if isinstance(auto_map, dict):
            found.append(auto_map.get(key))
        elif isinstance(auto_map, list) and key == "AutoTokenizer":
            found.append(auto_map)
    return found


def _auto_map_refs(folder: Path) -> list[str]:
    return [
        ref
        for value in _config_auto_maps(folder)
        for ref in (value if isinstance(value, list) else [value])
        if isinstance(ref, str)
    ]


def refuse_cross_repo_code(folder: Path, where: str) -> None:
    """Refuse remote code that auto_map fetches from another repo (``other/repo--module.Class``).

    transformers fetches such code from that repo's default branch: nobody pinned it,
    and it can change between review and run, whether the checkpoint itself came from
    the hub or from a local folder. A local copy of the module, named in the folder's
    own auto_map, is pinned with the folder.
    """
    for ref in _auto_map_refs(folder):
        if "--" in ref:
            other, _, local = ref.partition("--")
            raise NotRunnable(
                f"{where}: trust_remote_code is refused: auto_map names code in another repo ({ref!r}), "
                f"which transformers would fetch from {other}'s default branch, unpinned; review that code at "
                f"a commit and copy the module into the checkpoint folder, naming it there ({local!r})"
            )


def remote_code_modules(folder: Path, repo: str) -> list[str]:
    """The .py files AutoTokenizer imports: those auto_map names for AutoConfig and AutoTokenizer.

    A reference into another repo (``other/repo--module.Class``) is refused: its code
    would be fetched at that repo's default branch, which nobody pinned.
    """
    refuse_cross_repo_code(folder, repo)
    return sorted({ref.rsplit(".", 1)[0].replace(".", "/") + ".py" for ref in _auto_map_refs(folder)})


def relative_imports(path: Path) -> list[str]:
    from transformers.dynamic_module_utils import get_relative_imports

    return [name.replace(".", "/") + ".py" for name in get_relative_imports(str(path))]
