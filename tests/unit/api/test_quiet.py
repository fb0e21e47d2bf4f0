"""Quiet on success: what a failed attempt prints, warns or logs stays in its record, off the caller's streams;
where every remedy fails, the error carries it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

import pytest_tokcompat.matrix.aliases as aliases
from pytest_tokcompat.api import load_tokenizer
from pytest_tokcompat.errors import TokenizerBroken
from tests.helpers import toys

NOISY_CODE = """
import logging
import sys
import warnings

print("NOISE-STDOUT of the failing attempt")
print("NOISE-STDERR of the failing attempt", file=sys.stderr)
warnings.warn("NOISE-WARNING of the failing attempt")
logging.getLogger("transformers.noisy").warning("NOISE-LOG of the failing attempt")
raise RuntimeError("this checkpoint's own code fails")
"""
NOISE = ("NOISE-STDOUT", "NOISE-STDERR", "NOISE-WARNING", "NOISE-LOG")


def noisy_toy(folder: Path) -> Path:
    """An unknown model_type whose own config code is noisy and fails: native and auto_map fail, the alias loads."""
    folder.mkdir(parents=True)
    config = {
        "model_type": toys.TOY_ALIAS_TYPE,
        "auto_map": {"AutoConfig": "configuration_noisy.NoisyConfig"},
    }
    (folder / "config.json").write_text(json.dumps(config))
    auto_map = {"AutoTokenizer": [None, "tokenization_noisy.NoisyTokenizerFast"]}
    (folder / "tokenizer_config.json").write_text(json.dumps({"auto_map": auto_map}))
    (folder / "tokenizer.json").write_text(json.dumps(toys.tokenizer_document()))
    for module in ("configuration_noisy.py", "tokenization_noisy.py"):
        (folder / module).write_text(textwrap.dedent(NOISY_CODE))
    return folder


@pytest.fixture
def toy(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> Path:
    folder = noisy_toy(tmp_path / "noisy")
    capfd.readouterr()  # what building the toy printed
    return folder


def toy_alias() -> aliases.Alias:
    return aliases.Alias(
        model_type=toys.TOY_ALIAS_TYPE,
        base_config="transformers.models.gpt2.configuration_gpt2.GPT2Config",
        base_model_type="gpt2",
        upstream_issue="https://example.invalid/toy",
    )


def test_a_failed_attempts_output_stays_in_its_record_when_a_later_remedy_succeeds(
    toy: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(aliases.REGISTRY, toys.TOY_ALIAS_TYPE, toy_alias())
    result = load_tokenizer(toy, trust_remote_code=True, cache=False)
    out, err = capfd.readouterr()
    assert [(a.remedy, a.status) for a in result.judgement.attempts] == [
        ("native", "load-error"),
        ("auto_map", "load-error"),
        ("alias", "ok"),
    ]
    for noise in NOISE:
        assert noise not in out and noise not in err, f"{noise} reached the caller's streams"
    failed = result.judgement.attempt("auto_map")
    assert failed is not None and "this checkpoint's own code fails" in (failed.detail or "")
    assert "NOISE-STDOUT" in (failed.stdout or "") and "NOISE-STDERR" in (failed.stderr or "")
    said = " ".join(failed.warnings)
    assert "NOISE-WARNING" in said and "NOISE-LOG" in said
    recorded = next(a for a in result.record["attempts"] if a["remedy"] == "auto_map")
    assert "NOISE-STDERR" in recorded["stderr"] and any("NOISE-LOG" in w for w in recorded["warnings"])


def test_where_every_remedy_fails_the_error_carries_what_they_said(
    toy: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (toy / "tokenizer.json").unlink()  # nothing for the backend override to load as it is
    with pytest.raises(TokenizerBroken) as caught:
        load_tokenizer(toy, trust_remote_code=True, cache=False)  # no alias for its model_type
    out, err = capfd.readouterr()
    message = str(caught.value)
    assert "what the auto_map attempt said:" in message
    for noise in NOISE:
        assert noise in message
        assert noise not in out and noise not in err
