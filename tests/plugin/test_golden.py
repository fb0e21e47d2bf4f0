"""Golden ids: recorded only where missing, from an independent implementation, never into an installed package."""

from __future__ import annotations

import base64
import io
import json
import sys
from pathlib import Path

import pytest
import sentencepiece

from pytest_tokcompat import cli
from pytest_tokcompat.judge import golden
from pytest_tokcompat.judge.probes import derive_probes, probe_texts
from tests.helpers import toys
from tests.helpers.matrices import write_matrix

pytest_plugins = ["pytester"]


def spm_toy(folder: Path) -> Path:
    """A checkpoint with only a sentencepiece tokenizer.model (no tokenizer.json): golden ids are its truth."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(toys.CORPUS),
        model_writer=model,
        vocab_size=320,
        model_type="bpe",
        byte_fallback=True,
        character_coverage=1.0,
        minloglevel=2,
    )
    folder.mkdir(parents=True)
    (folder / "tokenizer.model").write_bytes(model.getvalue())
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer"}))
    return folder


def spm_ids(folder: Path, text: str) -> list[int]:
    processor = sentencepiece.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
    return [int(i) for i in processor.encode(text)]


def spm_matrix(root: Path) -> Path:
    return write_matrix(root, "  - {id: spm, snapshot: spm, expect: native}\n")


def record(pytester: pytest.Pytester, matrix: Path) -> pytest.RunResult:
    return pytester.runpytest(
        "--tokcompat", f"--tokcompat-matrix={matrix}", "--tokcompat-record", "-p", "no:randomly"
    )


def test_record_writes_only_missing_ids_from_sentencepiece_and_names_it(pytester: pytest.Pytester) -> None:
    root = pytester.path
    folder = spm_toy(root / "spm")
    golden_file = root / "golden" / "spm.json"
    golden_file.parent.mkdir()
    kept = {"Hello world": [7, 7, 7]}  # deliberately not sentencepiece's ids: recording must not touch them
    golden_file.write_text(json.dumps({"case": "spm", "source": "by hand", "ids": kept}))
    result = record(pytester, spm_matrix(root))
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*golden ids recorded to *spm.json*review and commit them*"])
    document = json.loads(golden_file.read_text())
    assert document["ids"]["Hello world"] == [7, 7, 7]
    assert document["source"] == "by hand"
    texts = probe_texts(
        (), (), derive_probes(folder)
    )  # the derived probes are recorded too, with their kinds
    assert set(document["ids"]) == set(texts)
    assert document["kinds"] == {text: texts.kinds[text] for text in texts.derived}
    assert document["kinds"] and set(document["kinds"].values()) >= {"digits", "whitespace"}
    assert document["ids"][texts[1]] == spm_ids(folder, texts[1])
    nine = next(text for text in texts.derived if text.isdigit() and len(text) == 9)
    assert document["ids"][nine] == spm_ids(folder, nine)
    implementation = document["implementation"]
    assert (implementation["name"], implementation["file"]) == ("sentencepiece", "tokenizer.model")
    assert implementation["version"] == sentencepiece.__version__


def test_record_never_writes_into_an_installed_package(pytester: pytest.Pytester) -> None:
    root = pytester.path / "venv" / "lib" / "python3" / "site-packages" / "somepkg"
    spm_toy(root / "spm")
    result = record(pytester, spm_matrix(root))
    result.assert_outcomes(failed=1, skipped=1)
    assert not (root / "golden").exists()
    result.stdout.fnmatch_lines(
        ["*not checked*golden ids are not recorded into*copy the matrix into your project*"]
    )


def test_a_missing_implementation_leaves_the_case_not_checked_with_the_install_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = spm_toy(tmp_path / "spm")
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # as if not installed
    found = golden.independent_ids(folder, ["Hello world"])
    assert isinstance(found, str)
    assert "sentencepiece, which is not installed" in found and "pytest-tokcompat[golden]" in found


def tiktoken_toy(folder: Path, pattern: str | None) -> Path:
    folder.mkdir(parents=True)
    ranks = [bytes([b]) for b in range(256)] + [b"he", b"ll", b"hell", b"hello"]
    lines = [f"{base64.b64encode(token).decode()} {rank}" for rank, token in enumerate(ranks)]
    (folder / "tiktoken.model").write_text("\n".join(lines) + "\n")
    config: dict[str, object] = {"added_tokens_decoder": {"260": {"content": "<|end|>", "special": True}}}
    if pattern is not None:
        config["pat_str"] = pattern
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


def test_tiktoken_files_are_recorded_with_tiktoken_and_their_own_pattern(tmp_path: Path) -> None:
    folder = tiktoken_toy(tmp_path / "tt", r"\w+|\s+|[^\w\s]+")
    found = golden.independent_ids(folder, ["hello hello<|end|>"])
    assert isinstance(found, golden.Recording)
    assert found.ids["hello hello<|end|>"] == [259, 32, 259, 260]
    assert found.implementation["name"] == "tiktoken"
    unpatterned = golden.independent_ids(tiktoken_toy(tmp_path / "no-pattern", None), ["hello"])
    assert isinstance(unpatterned, str) and "no split pattern" in unpatterned


def test_golden_replace_shows_the_diff_and_writes_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = spm_toy(tmp_path / "spm")
    matrix = spm_matrix(tmp_path)
    (tmp_path / "golden").mkdir()
    golden_file = tmp_path / "golden" / "spm.json"
    golden_file.write_text(json.dumps({"case": "spm", "source": "by hand", "ids": {"Hello world": [7]}}))
    assert cli.main(["golden", "spm", "--matrix", str(matrix)]) == 1
    shown = capsys.readouterr().out
    assert "changed 'Hello world':\n    was [7]\n    now " + str(spm_ids(folder, "Hello world")) in shown
    assert "--replace spm" in shown
    assert json.loads(golden_file.read_text())["ids"] == {"Hello world": [7]}
    assert cli.main(["golden", "spm", "--matrix", str(matrix), "--replace"]) == 0
    document = json.loads(golden_file.read_text())
    assert document["ids"]["Hello world"] == spm_ids(folder, "Hello world")
    assert document["implementation"]["name"] == "sentencepiece"
    assert cli.main(["golden", "spm", "--matrix", str(matrix)]) == 0
    assert "no difference" in capsys.readouterr().out


def test_tekken_without_mistral_common_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tekken.json").write_text(json.dumps({"config": {}, "vocab": [], "special_tokens": []}))
    for name in [m for m in sys.modules if m == "mistral_common" or m.startswith("mistral_common.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed (the bundled extra installs it)
    monkeypatch.setitem(sys.modules, "mistral_common", None)
    found = golden.independent_ids(tmp_path, ["Hello world"])
    assert isinstance(found, str)
    assert "mistral-common, which is not installed" in found and "pytest-tokcompat[golden]" in found
