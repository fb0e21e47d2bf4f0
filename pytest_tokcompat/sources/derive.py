"""Files a snapshot derives from the ones it ships: BPE vocabularies, tokenizer.json, zip members.

A bundled snapshot ships the smallest faithful data (a tiktoken file, a packaged zip) and the
manifest says how the files transformers reads are made from it; this module makes them.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

from pytest_tokcompat.errors import SnapshotError
from pytest_tokcompat.sources.members import inside, member_name

ZIP_MEMBER_MAX_BYTES = 512 * 1024 * 1024
"""The largest member a ``zip-member`` derivation extracts: a wrong or hostile zip cannot fill the disk."""
DERIVATION_KINDS = ("bpe-vocab", "bpe-merges", "tokenizer-json", "zip-member", "added-tokens")


def derive(derived: dict[str, Any], staging: Path, manifest: Path) -> None:
    from pytest_tokcompat.sources import tiktoken_bpe

    ranks_cache: dict[str, dict[bytes, int]] = {}
    bpe_cache: dict[str, tuple[dict[str, int], list[tuple[str, str]]]] = {}
    for name, spec in derived.items():
        written = inside(staging, name, manifest, "derived file")
        if not isinstance(spec, dict):
            raise SnapshotError(f"{manifest}: derived {name!r} must be an object")
        kind, origin = spec.get("kind"), spec.get("from")
        if kind not in DERIVATION_KINDS:
            raise SnapshotError(
                f"{manifest}: derived {name!r} has unknown kind {kind!r}; use one of {', '.join(DERIVATION_KINDS)}"
            )
        if not isinstance(origin, str) or not inside(staging, origin, manifest, "'from'").is_file():
            raise SnapshotError(
                f"{manifest}: derived {name!r} needs 'from' naming one of the snapshot's files"
            )
        source = staging / origin
        if kind == "zip-member":
            _extract_zip_member(name, spec, source, written, manifest)
            continue
        if kind == "added-tokens":
            _complete_added_tokens(name, spec, source, written, staging, manifest)
            continue
        ranks = ranks_cache.get(origin)
        if ranks is None:
            ranks = ranks_cache[origin] = tiktoken_bpe.load_ranks(source)
        if kind in ("bpe-vocab", "bpe-merges") and origin not in bpe_cache:
            bpe_cache[origin] = tiktoken_bpe.bpe_vocab_and_merges(ranks)
        if kind == "bpe-vocab":
            written.write_text(tiktoken_bpe.vocab_text(bpe_cache[origin][0]), encoding="utf-8")
        elif kind == "bpe-merges":
            written.write_text(tiktoken_bpe.merges_text(bpe_cache[origin][1]), encoding="utf-8")
        elif kind == "tokenizer-json":
            added_from = inside(
                staging,
                spec.get("added_tokens_from", "tokenizer_config.json"),
                manifest,
                "'added_tokens_from'",
            )
            pattern = spec.get("pattern")
            if not isinstance(pattern, str):
                raise SnapshotError(f"{manifest}: derived {name!r} needs a 'pattern' string")
            document = tiktoken_bpe.build_tokenizer_json(ranks, pattern, _added_tokens(added_from))
            _apply_tokenizer_json_options(name, spec, document, manifest)
            written.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        else:
            raise SnapshotError(f"{manifest}: derived {name!r} has unknown kind {kind!r}")


def _apply_tokenizer_json_options(
    name: str, spec: dict[str, Any], document: dict[str, Any], manifest: Path
) -> None:
    """What a hub tokenizer.json sets beyond the vocabulary: ``ignore_merges`` and its ``post_processor``.

    Llama 3's tokenizer.json, for one, looks a whole pre-token up before merging (as tiktoken does)
    and adds BOS in a TemplateProcessing post-processor; a derived file must say the same.
    """
    if "ignore_merges" in spec:
        if not isinstance(spec["ignore_merges"], bool):
            raise SnapshotError(f"{manifest}: derived {name!r}: 'ignore_merges' must be true or false")
        document["model"]["ignore_merges"] = spec["ignore_merges"]
    if "post_processor" in spec:
        if not isinstance(spec["post_processor"], dict):
            raise SnapshotError(
                f"{manifest}: derived {name!r}: 'post_processor' must be a tokenizers post-processor object"
            )
        document["post_processor"] = spec["post_processor"]


def _extract_zip_member(name: str, spec: dict[str, Any], source: Path, written: Path, manifest: Path) -> None:
    """Write one member of a zip in the snapshot (itself hash-pinned) to ``written``, verified by sha256.

    Some packages ship a tokenizer.json zipped. The member is named by a plain file name, as every
    name in a manifest is; it is streamed with a size cap and checked before the snapshot is complete.
    """
    what = f"derived {name!r}"
    member = member_name(spec.get("member"), manifest, f"{what}: zip member")
    expected = spec.get("sha256")
    if not isinstance(expected, str) or len(expected) != 64:
        raise SnapshotError(f"{manifest}: {what} needs 'sha256', the sha256 of member {member!r}")
    digest, size = hashlib.sha256(), 0
    try:
        with zipfile.ZipFile(source) as archive:
            try:
                info = archive.getinfo(member)
            except KeyError:
                held = ", ".join(sorted(archive.namelist())[:5]) or "nothing"
                raise SnapshotError(
                    f"{manifest}: {what}: {source.name} has no member {member!r} (it holds: {held}); "
                    "fix 'member'"
                ) from None
            if info.is_dir() or info.file_size > ZIP_MEMBER_MAX_BYTES:
                raise SnapshotError(
                    f"{manifest}: {what}: member {member!r} of {source.name} is a folder or over "
                    f"{ZIP_MEMBER_MAX_BYTES // (1024 * 1024)} MB; refused"
                )
            with archive.open(info) as stream, written.open("wb") as output:
                for block in iter(lambda: stream.read(1 << 20), b""):
                    size += len(block)
                    if size > ZIP_MEMBER_MAX_BYTES:
                        raise SnapshotError(
                            f"{manifest}: {what}: member {member!r} of {source.name} inflates past "
                            f"{ZIP_MEMBER_MAX_BYTES // (1024 * 1024)} MB; refused"
                        )
                    digest.update(block)
                    output.write(block)
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise SnapshotError(
            f"{manifest}: {what}: {source.name} is not a readable zip ({error}); reinstall its package"
        ) from None
    actual = digest.hexdigest()
    if actual != expected:
        raise SnapshotError(
            f"{manifest}: {what}: member {member!r} of {source.name} has sha256 {actual}, expected {expected}; "
            "the zip is not the pinned one: reinstall its package"
        )


def _complete_added_tokens(
    name: str, spec: dict[str, Any], source: Path, written: Path, staging: Path, manifest: Path
) -> None:
    """A tokenizer.json with the added tokens that tokenizer_config.json declares and it lacks, appended.

    A package may ship a tokenizer.json older than the tokenizer_config.json beside it (Qwen3.5's lacks
    the seven audio/TTS tokens its config declares); transformers adds them from ``added_tokens_decoder``,
    so the ground truth must know them too. Only ids the file does not hold are added; a content that
    the file holds under another id is refused.
    """
    what = f"derived {name!r}"
    try:
        document = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise SnapshotError(f"{manifest}: {what}: {source.name} is no tokenizer.json ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("added_tokens", []), list):
        raise SnapshotError(f"{manifest}: {what}: {source.name} has no added_tokens list")
    config = inside(
        staging, spec.get("added_tokens_from", "tokenizer_config.json"), manifest, "'added_tokens_from'"
    )
    present = document.setdefault("added_tokens", [])
    held_ids = {int(token["id"]) for token in present}
    held = {str(token["content"]): int(token["id"]) for token in present}
    vocab = document.get("model", {}).get("vocab")
    vocab_ids = set(vocab.values()) if isinstance(vocab, dict) else set()
    for token in _added_tokens(config):
        if token["id"] in held_ids:
            continue
        if token["content"] in held or token["id"] in vocab_ids:
            raise SnapshotError(
                f"{manifest}: {what}: {token['content']!r} (id {token['id']}) clashes with a token "
                f"{source.name} holds; the two files are not of one tokenizer"
            )
        present.append(token)
    present.sort(key=lambda token: int(token["id"]))
    written.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")


def _added_tokens(tokenizer_config: Path) -> list[dict[str, Any]]:
    data = json.loads(tokenizer_config.read_text(encoding="utf-8"))
    decoder = data.get("added_tokens_decoder", {})
    tokens = []
    for token_id, token in sorted(decoder.items(), key=lambda item: int(item[0])):
        tokens.append(
            {
                "id": int(token_id),
                "content": token["content"],
                "single_word": token.get("single_word", False),
                "lstrip": token.get("lstrip", False),
                "rstrip": token.get("rstrip", False),
                "normalized": token.get("normalized", False),
                "special": token.get("special", True),
            }
        )
    return tokens
