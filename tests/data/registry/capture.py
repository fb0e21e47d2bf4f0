"""Capture the upstream watch (a report's ``registry``) under the installed transformers, as test data.

The files beside this script were written by it, one per release, each in a throwaway
virtualenv with that release and this package installed:

    uv venv /tmp/tf && uv pip install --python /tmp/tf/bin/python transformers==5.11.0 -e .
    /tmp/tf/bin/python tests/data/registry/capture.py > tests/data/registry/transformers-5.11.0.json

It tracks the bundled matrix's model_types (as the bundled grid's reports do), the
built-in alias registry, and a watch list of two model_types.
"""

from __future__ import annotations

import json
import sys

from pytest_tokcompat.judge.upstream import registry_view
from pytest_tokcompat.matrix.aliases import REGISTRY

CASES = {
    "deepseek-ai/DeepSeek-V3": "deepseek_v3",
    "deepseek-ai/DeepSeek-V3.2-Exp": "deepseek_v32",
    "zai-org/GLM-5": "glm_moe_dsa",
    "moonshotai/Kimi-K2-Instruct": "kimi_k2",
    "Qwen/Qwen3-0.6B": "qwen3",
}
WATCH = ("kimi_k2", "deepseek_v4")

if __name__ == "__main__":
    view = registry_view(CASES.values(), REGISTRY, WATCH, checkpoints=CASES)
    json.dump(view, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
