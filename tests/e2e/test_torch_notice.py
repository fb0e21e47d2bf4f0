"""End to end: transformers' "PyTorch was not found" notice is dropped for check and load_tokenizer(); nothing else is.

The rest of this subject's tests, and the helpers these use, are in tests/unit/test_torch_notice.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers import toys


def test_check_and_load_tokenizer_print_no_pytorch_notice(tmp_path: Path) -> None:
    folder = toys.native_toy(tmp_path / "native")
    check = subprocess.run(
        [sys.executable, "-m", "pytest_tokcompat.cli", "check", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert check.returncode == 0, check.stderr
    assert "PyTorch was not found" not in check.stderr + check.stdout
    code = f"from pytest_tokcompat import load_tokenizer; _, verdict = load_tokenizer({str(folder)!r}); print(verdict)"
    load = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert load.stdout.strip() == "native", load.stderr
    assert "PyTorch was not found" not in load.stderr
    plain = subprocess.run(
        [sys.executable, "-c", "import transformers"], capture_output=True, text=True, check=False
    )
    assert "PyTorch was not found" in plain.stderr, "the control: this install prints the notice"
