"""Golden ids: where a checkpoint has no tokenizer.json, the ground truth recorded beside the matrix.

They are computed by an independent implementation of the checkpoint's own format, never by the
transformers tokenizer under judgement (which would make its drift the truth): sentencepiece for
``tokenizer.model``, tiktoken for tiktoken files, mistral-common for ``tekken.json``. Recording
adds only the ids that are missing and never writes into an installed package; replacing ids is a
separate, explicit command (``tokcompat golden --replace CASE``) that shows the diff.
"""

from __future__ import annotations

import json
import re
import site
import sysconfig
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.judge.parity import Truth, write_golden
from pytest_tokcompat.sources.snapshots import sha256_of

INSTALL_HINT = "pip install 'pytest-tokcompat[golden]'"
_TIKTOKEN_LINE = re.compile(rb"^[A-Za-z0-9+/=]+ \d+\s*$")


@dataclass
class Recording:
    """Ids and decoded texts from one implementation, and what it was (name, version, file, sha256)."""

    ids: dict[str, list[int]]
    decoded: dict[str, str]
    implementation: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recording:
        return cls(
            {str(t): [int(i) for i in v] for t, v in data["ids"].items()},
            {str(t): str(v) for t, v in data["decoded"].items()},
            {str(k): str(v) for k, v in data["implementation"].items()},
        )

    def describe(self) -> str:
        found = self.implementation
        return f"{found['name']} {found['version']} over {found['file']} (sha256 {found['sha256'][:12]}…)"


# ---- where golden ids may be written ---------------------------------------------------------------


def _installed_roots() -> list[Path]:
    roots: list[str] = []

    def user_site() -> list[str]:
        return [site.getusersitepackages()]

    getters: tuple[Callable[[], list[str]], ...] = (site.getsitepackages, user_site)
    for getter in getters:
        try:
            roots.extend(getter())
        except (AttributeError, TypeError):
            continue
    for key in ("purelib", "platlib"):
        try:
            roots.append(sysconfig.get_paths()[key])
        except KeyError:
            continue
    return [Path(root).resolve() for root in roots if root]


def write_refusal(path: Path) -> str | None:
    """Why golden ids must not be written to ``path`` (an installed package, the bundled matrix), or None."""
    from pytest_tokcompat.matrix.discovery import bundled_matrix

    target = Path(path).resolve()
    bundled = bundled_matrix().parent.resolve()
    protected = [bundled, *_installed_roots()]
    inside = any(target == root or root in target.parents for root in protected)
    inside = inside or any(part in ("site-packages", "dist-packages") for part in target.parts)
    if not inside:
        return None
    return (
        f"golden ids are not recorded into {path}: it belongs to the bundled matrix or an installed "
        f"package, which --tokcompat-record never changes; copy the matrix into your project ({bundled / 'models.yaml'} "
        "as matrix/models.yaml, with its golden/ folder beside it, and the snapshot folders it names) and record there"
    )


# ---- the independent implementations --------------------------------------------------------------


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def _added_tokens(folder: Path) -> dict[str, int]:
    """The checkpoint's added tokens (content to id) from tokenizer_config.json's added_tokens_decoder."""
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    decoder = config.get("added_tokens_decoder") if isinstance(config, dict) else None
    found: dict[str, int] = {}
    for key, token in (decoder or {}).items() if isinstance(decoder, dict) else []:
        if isinstance(token, dict) and isinstance(token.get("content"), str) and str(key).isdigit():
            found[token["content"]] = int(key)
    return found


def _split_on(text: str, specials: dict[str, int]) -> list[tuple[str, int | None]]:
    """The text cut at the added tokens (longest first), as AutoTokenizer cuts it before encoding."""
    if not specials:
        return [(text, None)]
    pattern = "|".join(re.escape(token) for token in sorted(specials, key=len, reverse=True))
    pieces: list[tuple[str, int | None]] = []
    for index, piece in enumerate(re.split(f"({pattern})", text)):
        if index % 2:
            pieces.append((piece, specials[piece]))
        elif piece:
            pieces.append((piece, None))
    return pieces


def _by_segments(
    texts: list[str], specials: dict[str, int], encode: Any, decode: Any
) -> tuple[dict[str, list[int]], dict[str, str]]:
    ids: dict[str, list[int]] = {}
    decoded: dict[str, str] = {}
    for text in texts:
        ids[text], parts = [], []
        for segment, special in _split_on(text, specials):
            if special is not None:
                ids[text].append(special)
                parts.append(segment)
            else:
                segment_ids = [int(i) for i in encode(segment)]
                ids[text].extend(segment_ids)
                parts.append(decode(segment_ids))
        decoded[text] = "".join(parts)
    return ids, decoded


def _is_tiktoken(path: Path) -> bool:
    with path.open("rb") as stream:
        head = stream.readline(4096)
    return bool(_TIKTOKEN_LINE.match(head.strip() + b"\n")) if head.strip() else False


def _implementation(name: str, distribution: str, path: Path, method: str) -> dict[str, str]:
    return {
        "name": name,
        "version": _version(distribution),
        "file": path.name,
        "sha256": sha256_of(path),
        "method": method,
    }


def _sentencepiece(folder: Path, path: Path, texts: list[str]) -> Recording | str:
    try:
        import sentencepiece
    except ImportError:
        return f"golden ids not recorded: {path.name} is read by sentencepiece, which is not installed; {INSTALL_HINT}"
    processor = sentencepiece.SentencePieceProcessor(model_file=str(path))
    specials = _added_tokens(folder)
    ids, decoded = _by_segments(texts, specials, processor.encode, processor.decode)
    method = "SentencePieceProcessor.encode per segment between the added tokens of tokenizer_config.json"
    return Recording(ids, decoded, _implementation("sentencepiece", "sentencepiece", path, method))


def _tiktoken(folder: Path, path: Path, texts: list[str]) -> Recording | str:
    try:
        import tiktoken
    except ImportError:
        return f"golden ids not recorded: {path.name} is read by tiktoken, which is not installed; {INSTALL_HINT}"
    from pytest_tokcompat.sources.tiktoken_bpe import load_ranks

    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    pattern = config.get("pat_str") if isinstance(config, dict) else None
    if not isinstance(pattern, str):
        return (
            f"golden ids not recorded: {path.name} holds tiktoken ranks but no split pattern (tiktoken's pat_str "
            'lives in the checkpoint\'s code); add "pat_str" to tokenizer_config.json, or record them with a '
            "script as matrix/tools/record_kimi_golden.py does"
        )
    specials = _added_tokens(folder)
    encoding = tiktoken.Encoding(
        f"tokcompat-{folder.name}", pat_str=pattern, mergeable_ranks=load_ranks(path), special_tokens=specials
    )
    ids = {text: encoding.encode(text, allowed_special="all") for text in texts}
    decoded = {text: encoding.decode(ids[text]) for text in texts}
    method = "tiktoken.Encoding(pat_str from tokenizer_config.json, added tokens as special tokens)"
    return Recording(ids, decoded, _implementation("tiktoken", "tiktoken", path, method))


def _tekken(folder: Path, path: Path, texts: list[str]) -> Recording | str:
    try:
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    except ImportError:
        return f"golden ids not recorded: {path.name} is read by mistral-common, which is not installed; {INSTALL_HINT}"
    tekkenizer = Tekkenizer.from_file(str(path))
    document = json.loads(path.read_text(encoding="utf-8"))
    specials = {
        str(token["token_str"]): int(token["rank"])
        for token in document.get("special_tokens") or []
        if isinstance(token, dict) and "token_str" in token and "rank" in token
    }
    specials.update(_added_tokens(folder))

    def encode(segment: str) -> list[int]:
        return list(tekkenizer.encode(segment, bos=False, eos=False))

    ids, decoded = _by_segments(texts, specials, encode, tekkenizer.decode)
    method = "Tekkenizer.encode(bos=False, eos=False) per segment between the special tokens"
    return Recording(ids, decoded, _implementation("mistral-common", "mistral-common", path, method))


def independent_ids(folder: Path, texts: list[str]) -> Recording | str:
    """Ids for ``texts`` from the implementation of the checkpoint's own format, or why there are none."""
    if (folder / "tekken.json").is_file():
        return _tekken(folder, folder / "tekken.json", texts)
    tiktoken_files = sorted(folder.glob("*.tiktoken"))
    for name in ("tokenizer.model", "tiktoken.model"):
        path = folder / name
        if path.is_file():
            return (
                _tiktoken(folder, path, texts) if _is_tiktoken(path) else _sentencepiece(folder, path, texts)
            )
    if tiktoken_files:
        return _tiktoken(folder, tiktoken_files[0], texts)
    return (
        "golden ids not recorded: the checkpoint has no file that an implementation independent of transformers "
        "reads whole (tokenizer.json, a sentencepiece tokenizer.model, a tiktoken file with its pattern, "
        "tekken.json); record them with a script, as matrix/tools/ does for the bundled cases"
    )


def with_recorded(
    truth: Truth | None, folder: Path, texts: list[str], recording: Recording, golden_path: Path | None
) -> Truth:
    """The truth once the recorded ids are added (existing ids stay as they are), probe kinds and the
    contract's expectations included."""
    from pytest_tokcompat.judge.parity import golden_truth

    ids = dict(truth.ids) if truth else {}
    decoded = dict(truth.decoded) if truth else {}
    for text in texts:
        if text not in ids and text in recording.ids:
            ids[text], decoded[text] = recording.ids[text], recording.decoded[text]
    name = golden_path.name if golden_path else "golden ids"
    source = f"golden ids in {name} (missing ones recorded now with {recording.describe()})"
    return golden_truth(folder, texts, source, ids, decoded)


def merge_golden(
    path: Path, case_id: str, recording: Recording, kinds: dict[str, str] | None = None
) -> list[str]:
    """Add the recorded ids of texts the file lacks; existing ids are never changed. The texts added.

    ``kinds`` (text to probe kind) marks the added texts that were derived from the checkpoint, so that
    the next run probes them again (``parity.golden_probes``)."""
    document: dict[str, Any] = {}
    if path.is_file():
        document = json.loads(path.read_text(encoding="utf-8"))
    ids: dict[str, list[int]] = dict(document.get("ids") or {})
    decoded: dict[str, str] = dict(document.get("decoded") or {})
    added = [text for text in recording.ids if text not in ids]
    if not added:
        return []
    for text in added:
        ids[text], decoded[text] = recording.ids[text], recording.decoded[text]
    implementation = document.get("implementation")
    source = document.get("source") or f"recorded with {recording.describe()}"
    if implementation is None:
        implementation = recording.implementation
    elif implementation != recording.implementation:
        document.setdefault("also_recorded_with", []).append(recording.implementation)
    extra = {
        k: v for k, v in document.items() if k not in ("case", "source", "implementation", "ids", "decoded")
    }
    derived = {text: kind for text, kind in (kinds or {}).items() if text in added}
    if derived:
        extra["kinds"] = {**(extra.get("kinds") or {}), **derived}
    write_golden(path, str(document.get("case") or case_id), ids, decoded, source, implementation, extra)
    return added


def golden_diff(old: dict[str, list[int]], new: dict[str, list[int]]) -> list[str]:
    """One line per text whose golden ids would change, be added or be removed."""
    lines: list[str] = []
    for text in new:
        if text not in old:
            lines.append(f"  added   {text!r}: {new[text]}")
        elif old[text] != new[text]:
            lines.append(f"  changed {text!r}:\n    was {old[text]}\n    now {new[text]}")
    lines.extend(f"  removed {text!r}: {old[text]}" for text in old if text not in new)
    return lines


def golden_command(case_id: str, matrix_path: Path | None, *, replace: bool) -> tuple[ExitCode, str]:
    """``tokcompat golden [--replace] CASE``: the diff between a case's golden ids and what the
    independent implementation gives now; with ``replace``, write those. (exit status, text)."""
    from pytest_tokcompat.errors import TokcompatError
    from pytest_tokcompat.judge.parity import golden_probes, read_golden
    from pytest_tokcompat.judge.probes import derive_probes, probe_texts
    from pytest_tokcompat.judge.static import special_tokens
    from pytest_tokcompat.matrix.discovery import bundled_matrix
    from pytest_tokcompat.matrix.loader import load_matrix
    from pytest_tokcompat.sources.resolve import resolve

    path = matrix_path or bundled_matrix()
    try:
        matrix = load_matrix(path)
        case = next((c for c in matrix.cases if c.id == case_id), None)
        if case is None:
            known = ", ".join(c.id for c in matrix.cases)
            return (
                ExitCode.BAD_INPUT,
                f"no case {case_id!r} in {path} (cases: {known}); pass --matrix FILE for another matrix",
            )
        folder = resolve(case).folder
        golden_path = case.golden_path
        assert golden_path is not None
        if (folder / "tokenizer.json").is_file():
            return (
                ExitCode.BAD_INPUT,
                f"case {case_id!r} has a tokenizer.json, read live as its ground truth: it needs no golden ids",
            )
        derived = derive_probes(folder, None) + golden_probes(golden_path)
        texts = probe_texts(case.texts, special_tokens(folder, None), derived)
        found = independent_ids(folder, texts)
        old = read_golden(golden_path)[0] if golden_path.is_file() else {}
    except TokcompatError as error:
        return ExitCode.BAD_INPUT, str(error)
    if isinstance(found, str):
        return ExitCode.BAD_INPUT, f"case {case_id!r}: {found}"
    lines = golden_diff(old, found.ids)
    header = f"golden ids of case {case_id!r} ({golden_path}) against {found.describe()}:"
    if not lines:
        return ExitCode.OK, f"{header}\n  no difference"
    body = "\n".join([header, *lines])
    if not replace:
        return (
            ExitCode.DIFFERS,
            f"{body}\n{len(lines)} differ; `tokcompat golden --replace {case_id}` writes them",
        )
    refusal = write_refusal(golden_path)
    if refusal is not None:
        return ExitCode.BAD_INPUT, refusal
    source = f"recorded with {found.describe()} (tokcompat golden --replace)"
    kinds = {text: texts.kinds[text] for text in found.ids if text in texts.derived}
    extra = {"kinds": kinds} if kinds else None
    write_golden(golden_path, case_id, found.ids, found.decoded, source, found.implementation, extra)
    return ExitCode.OK, f"{body}\nwritten to {golden_path}: review and commit it"
