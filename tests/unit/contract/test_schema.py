"""The bundled JSON Schemas: the matrix schema agrees with the loader, the report schema with every
report pytest writes (and the contract's reader)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import pytest_tokcompat
from pytest_tokcompat import contract, matrix
from pytest_tokcompat.cli import main
from pytest_tokcompat.errors import MatrixError
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.matrix.schema import load_schema, schema_path
from tests.helpers import toys
from tests.helpers.paths import MATRIX_DIR
from tests.helpers.reportdata import read_valid_report

BUNDLED = MATRIX_DIR / "models.yaml"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(validator: jsonschema.Draft202012Validator, text: str) -> list[str]:
    return [error.message for error in validator.iter_errors(yaml.safe_load(text))]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_schema_ships_with_the_package() -> None:
    path = schema_path()
    assert path.name == "matrix.schema.json"
    assert path.is_file()
    assert path.parent == Path(pytest_tokcompat.__file__).parent
    assert json.loads(path.read_text(encoding="utf-8")) == load_schema()
    assert load_schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_bundled_matrix_is_valid(validator: jsonschema.Draft202012Validator) -> None:
    data = yaml.safe_load(BUNDLED.read_text(encoding="utf-8"))
    assert list(validator.iter_errors(data)) == []
    assert load_matrix(BUNDLED).cases


def test_schema_lists_exactly_the_case_keys_and_outcomes() -> None:
    schema = load_schema()
    assert set(schema["$defs"]["case"]["properties"]) == set(matrix.CASE_KEYS)
    assert set(schema["properties"]) == matrix.TOP_KEYS
    assert tuple(schema["$defs"]["outcome"]["enum"]) == matrix.OUTCOMES
    assert schema["$defs"]["case"]["properties"]["id"]["pattern"] == matrix.ID_PATTERN.pattern
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["case"]["additionalProperties"] is False


def _properties(node: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            yield f"{where}/properties/{name}", sub
        for key, value in node.items():
            yield from _properties(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _properties(value, f"{where}/{index}")


def test_every_property_has_a_description() -> None:
    schema = load_schema()
    found = list(_properties(schema))
    assert len(found) >= len(matrix.CASE_KEYS) + len(matrix.TOP_KEYS)
    undocumented = [where for where, sub in found if not sub.get("description")]
    assert undocumented == []
    assert schema["$defs"]["outcome"]["description"]
    for outcome in matrix.OUTCOMES:
        assert outcome in schema["$defs"]["outcome"]["description"]


VALID = {
    "minimal": "cases:\n  - id: a\n    repo: o/n\n    expect: native\n",
    "ranges": 'cases:\n  - id: a\n    repo: o/n\n    expect: {"<5.11": alias, ">=5.11": native}\n',
    "everything": textwrap.dedent(
        """\
        version: 1
        golden_dir: golden
        cases:
          - id: k.2_x
            repo: o/n
            revision: "abc"
            trust_remote_code: true
            expect: {"<5": auto_map, ">=5": native}
            texts: [hi]
            served_names: [k]
            note: text
        """
    ),
}

VALID["aliases and watch"] = textwrap.dedent(
    """\
    aliases:
      - model_type: deepseek_v32
        base_config: transformers.models.deepseek_v3.configuration_deepseek_v3.DeepseekV3Config
        upstream_issue: https://example.invalid/1
      - model_type: kimi_k2
        base_config: transformers.DeepseekV3Config
        base_model_type: deepseek_v3
        tokenizer_class: PreTrainedTokenizerFast
        upstream_issue: https://example.invalid/2
        native_since: "5.30.0"
        native_drift: ">=5.3,<5.4"
        reason: a shim
    watch: [glm_moe_dsa, qwen3_5]
    cases: [{id: x, repo: org/x, expect: native}]
    """
)

INVALID = {
    "unknown case key": "cases:\n  - id: a\n    repo: o/n\n    colour: x\n    expect: native\n",
    "unknown top key": "cases: []\nextra: 1\n",
    "no cases": "version: 1\n",
    "empty cases": "version: 1\ncases: []\n",
    "id with a trailing newline": 'cases:\n  - id: "a\\n"\n    repo: o/n\n    expect: native\n',
    "cases not a list": "cases: {id: a}\n",
    "version 2": "version: 2\ncases: []\n",
    "unknown outcome": "cases:\n  - id: a\n    repo: o/n\n    expect: nativ\n",
    "unknown outcome in a range": 'cases:\n  - id: a\n    repo: o/n\n    expect: {"<5": fine}\n',
    "empty expect map": "cases:\n  - id: a\n    repo: o/n\n    expect: {}\n",
    "no expect": "cases:\n  - id: a\n    repo: o/n\n",
    "no id": "cases:\n  - repo: o/n\n    expect: native\n",
    "bad id": "cases:\n  - id: -a b\n    repo: o/n\n    expect: native\n",
    "no repo nor snapshot": "cases:\n  - id: a\n    expect: native\n",
    "repo with two slashes": "cases:\n  - id: a\n    repo: a/b/c\n    expect: native\n",
    "trust not a bool": "cases:\n  - id: a\n    repo: o/n\n    trust_remote_code: 'yes'\n    expect: native\n",
    "texts not strings": "cases:\n  - id: a\n    repo: o/n\n    texts: [1]\n    expect: native\n",
    "revision a number": "cases:\n  - id: a\n    repo: o/n\n    revision: 1234\n    expect: native\n",
    "auto_map untrusted": "cases:\n  - id: a\n    repo: o/n\n    expect: auto_map\n",
    "auto_map in a range, untrusted": 'cases:\n  - id: a\n    repo: o/n\n    expect: {"<5": native, ">=5": auto_map}\n',
    "auto_map, trust false": "cases:\n  - id: a\n    repo: o/n\n    trust_remote_code: false\n    expect: auto_map\n",
    "case not a mapping": "cases:\n  - a\n",
    "not a mapping": "- cases\n",
    "alias without upstream_issue": "aliases:\n  - {model_type: x, base_config: a.B}\ncases: [{id: x, repo: org/x, expect: native}]\n",
    "alias with a bare class name": "aliases:\n  - {model_type: x, base_config: B, upstream_issue: u}\ncases: [{id: x, repo: org/x, expect: native}]\n",
    "alias with an unknown key": "aliases:\n  - {model_type: x, base_config: a.B, upstream_issue: u, y: 1}\ncases: [{id: x, repo: org/x, expect: native}]\n",
    "aliases not a list": "aliases: {model_type: x}\ncases: [{id: x, repo: org/x, expect: native}]\n",
    "watch not a list": "watch: kimi_k2\ncases: [{id: x, repo: org/x, expect: native}]\n",
    "watch with a bad model_type": "watch: ['kimi k2']\ncases: [{id: x, repo: org/x, expect: native}]\n",
    "watch twice": "watch: [a, a]\ncases: [{id: x, repo: org/x, expect: native}]\n",
}


@pytest.mark.parametrize("text", VALID.values(), ids=VALID.keys())
def test_valid_matrices_pass_both(
    validator: jsonschema.Draft202012Validator, tmp_path: Path, text: str
) -> None:
    assert schema_errors(validator, text) == []
    load_matrix(write(tmp_path, text))


@pytest.mark.parametrize("text", INVALID.values(), ids=INVALID.keys())
def test_invalid_matrices_fail_both(
    validator: jsonschema.Draft202012Validator, tmp_path: Path, text: str
) -> None:
    assert schema_errors(validator, text), "the schema accepts it"
    with pytest.raises(MatrixError):
        load_matrix(write(tmp_path, text))


# --- report.schema.json ----------------------------------------------------------------------


def test_report_schema_ships_beside_the_matrix_schema() -> None:
    path = contract.report_schema_path()
    assert path.name == "report.schema.json" and path.is_file()
    assert path.parent == schema_path().parent == Path(pytest_tokcompat.__file__).parent
    schema = contract.load_report_schema()
    assert json.loads(path.read_text(encoding="utf-8")) == schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_every_report_property_has_a_description() -> None:
    found = list(_properties(contract.load_report_schema()))
    assert len(found) > 60
    assert [where for where, sub in found if not sub.get("description")] == []


def test_the_wheel_ships_the_report_schema() -> None:
    from pytest_tokcompat.pytest_plugin import plugin  # the package root holds both schemas

    assert Path(plugin.__file__).resolve().parents[1] / "report.schema.json" == contract.report_schema_path()


def test_a_report_pytest_writes_is_valid_and_a_partial_run_never_replaces_it(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("first", "second"):
        toys.native_toy(pytester.path / name)
    matrix = pytester.path / "models.yaml"
    matrix.write_text(
        "cases:\n"
        "  - {id: first, snapshot: first, expect: native}\n"
        "  - {id: second, snapshot: second, expect: native}\n"
    )
    args = ["--tokcompat", f"--tokcompat-matrix={matrix}", "--tokcompat-report=reports/", "-p", "no:randomly"]
    pytester.runpytest(*args).assert_outcomes(passed=2, skipped=1)  # the registry alias has no case here
    [complete] = list((pytester.path / "reports").glob("*.json"))
    document = read_valid_report(complete)
    assert contract.read_report(complete) == document
    assert (document["complete"], document["exit_status"]) == (True, 0)
    alias = next(record for record in document["cases"] if record["kind"] == "alias")
    assert (alias["status"], alias["state"]) == ("not-checked", "not-checked") and "verdict" not in alias
    assert main(["report", str(complete)]) == 0
    capsys.readouterr()

    pytester.runpytest(*args, "-k", "first").assert_outcomes(passed=1, deselected=2)
    assert read_valid_report(complete) == document, "a partial run replaced a complete report"
    [partial] = [path for path in (pytester.path / "reports").glob("*.json") if path != complete]
    assert partial.name == complete.stem + ".run-2.json"
    rerun = read_valid_report(partial)
    assert rerun["complete"] is False
    assert {r["id"]: r["status"] for r in rerun["cases"]} == {
        "first": "passed",
        "second": "not-checked",
        "alias:deepseek_v32": "not-checked",
    }
    assert main(["report", str(complete), str(partial)]) == 3
    assert rerun["selection"] == {"partial": True, "reason": "1 of 3 matrix items selected (-k 'first')"}
    # The reporter marks the selection, so the grid names it rather than a run that did not finish.
    assert (
        f"{partial}: the run selected part of the matrix (1 of 3 matrix items selected (-k 'first')): "
        "run the whole matrix" in capsys.readouterr().out
    )
