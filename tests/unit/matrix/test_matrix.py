"""Unit tests of the matrix loader: every problem located by file, line and case, all at once."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_tokcompat.errors import MatrixError
from pytest_tokcompat.matrix.cases import OUTCOMES, Case, Expectation, Matrix, Problem
from pytest_tokcompat.matrix.entries import CASE_KEYS
from pytest_tokcompat.matrix.loader import MAX_MATRIX_BYTES, MAX_PROBLEMS, load_matrix, parse_matrix
from pytest_tokcompat.matrix.versions import matching_ranges, overlapping_pairs, parse_range
from pytest_tokcompat.matrix.yamlnodes import MAX_NODES
from tests.helpers.paths import MATRIX_DIR

ONE_CASE = "cases:\n  - {id: a, repo: o/n, expect: native}\n"


def write(tmp_path: Path, text: str, name: str = "models.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def make_snapshot(tmp_path: Path, name: str, config: bool = True) -> Path:
    folder = tmp_path / "snapshots" / name
    folder.mkdir(parents=True)
    if config:
        (folder / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
    return folder


def problems_of(path: Path) -> list[Problem]:
    with pytest.raises(MatrixError) as caught:
        load_matrix(path)
    problems = caught.value.problems
    assert problems, "a MatrixError must carry at least one problem"
    for problem in problems:
        assert problem.path == path
        assert problem.line >= 1
        assert str(problem).startswith(f"{path}:{problem.line}: ")
    return problems


def only_problem(path: Path) -> Problem:
    problems = problems_of(path)
    assert len(problems) == 1, "\n".join(map(str, problems))
    return problems[0]


def case_with(expectations: dict[str, str], trust: bool = False) -> Case:
    return Case(
        id="c",
        source=Path("m.yaml"),
        line=3,
        expectations=tuple(Expectation(parse_range(r), o) for r, o in expectations.items()),
        repo="o/n",
        trust_remote_code=trust,
    )


# --- a valid matrix -------------------------------------------------------------------------------


def test_valid_matrix_reads_every_field(tmp_path: Path) -> None:
    folder = make_snapshot(tmp_path, "kimi")
    path = write(
        tmp_path,
        """
        # a comment
        version: 1
        golden_dir: goldens
        cases:
          - id: deepseek-v3.2-exp
            repo: deepseek-ai/DeepSeek-V3.2-Exp
            revision: "0123abc"
            expect:
              "<5.11": alias
              ">=5.11": native
          - id: kimi_k2.instruct
            snapshot: snapshots/kimi
            trust_remote_code: true
            expect: auto_map
            texts: ["héllo", "世界"]
            served_names: [kimi]
            note: stand-in vocabulary
          - id: old
            repo: a/b
            expect: {"*": broken}
        """,
    )
    matrix = load_matrix(path)
    assert isinstance(matrix, Matrix)
    assert matrix.path == path
    assert [c.id for c in matrix] == ["deepseek-v3.2-exp", "kimi_k2.instruct", "old"]
    first = matrix.by_id("deepseek-v3.2-exp")
    assert first.line == 5
    assert first.location == f"{path}:5"
    assert first.repo == "deepseek-ai/DeepSeek-V3.2-Exp"
    assert first.revision == "0123abc"
    assert first.snapshot is None
    assert first.trust_remote_code is False
    assert first.golden_path == tmp_path / "goldens" / "deepseek-v3.2-exp.json"
    assert [(e.range.text, e.outcome) for e in first.expectations] == [
        ("<5.11", "alias"),
        (">=5.11", "native"),
    ]
    kimi = matrix.by_id("kimi_k2.instruct")
    assert kimi.line == 11
    assert kimi.snapshot == folder.resolve()
    assert kimi.trust_remote_code is True
    assert kimi.texts == ("héllo", "世界")
    assert kimi.served_names == ("kimi",)
    assert kimi.note == "stand-in vocabulary"
    assert kimi.expected_for("4.45.0") == "auto_map"
    assert matrix.by_id("old").expected_for("3.0") == "broken"
    assert kimi.to_json()["expect"] == {"*": "auto_map"}
    with pytest.raises(KeyError):
        matrix.by_id("missing")


def test_defaults_and_snapshot_with_sources_file_only(tmp_path: Path) -> None:
    folder = make_snapshot(tmp_path, "glm", config=False)
    (folder / "tokcompat-sources.json").write_text("{}", encoding="utf-8")
    path = write(tmp_path, "cases:\n  - id: glm\n    snapshot: snapshots/glm\n    expect: native\n")
    (case,) = load_matrix(path).cases
    assert case.golden_path == tmp_path / "golden" / "glm.json"
    assert case.texts == () and case.served_names == () and case.note is None


def test_an_empty_matrix_is_refused_as_a_run_that_checks_nothing(tmp_path: Path) -> None:
    problem = only_problem(write(tmp_path, "version: 1\ncases: []\n"))
    assert problem.line == 2 and "a run of this matrix would check nothing" in problem.what
    assert "add at least one case" in problem.fix


def test_every_load_sees_the_file_and_its_snapshot_folders_as_they_are_now(tmp_path: Path) -> None:
    """Loads of one text share its YAML composition; nothing else of an earlier load may linger."""
    snapshot = tmp_path / "snap"
    snapshot.mkdir()
    (snapshot / "config.json").write_text("{}")
    matrix = tmp_path / "models.yaml"
    text = "cases:\n  - {id: a, snapshot: snap, expect: native}\n"
    matrix.write_text(text)
    assert [case.id for case in load_matrix(matrix)] == ["a"]
    (snapshot / "config.json").unlink()
    snapshot.rmdir()
    with pytest.raises(MatrixError, match=r"snapshot folder .*snap does not exist"):
        load_matrix(matrix)
    snapshot.mkdir()
    (snapshot / "config.json").write_text("{}")
    matrix.write_text(text.replace("id: a", "id: b"))  # the same size, at once
    assert [case.id for case in load_matrix(matrix)] == ["b"]
    assert load_matrix(matrix).cases is not load_matrix(matrix).cases, "each load its own Matrix"


def test_parse_matrix_uses_the_given_path_for_locations(tmp_path: Path) -> None:
    where = tmp_path / "elsewhere.yaml"
    with pytest.raises(MatrixError) as caught:
        parse_matrix("cases:\n  - id: a\n    repo: o/n\n    expect: nope\n", where)
    (problem,) = caught.value.problems
    assert (problem.path, problem.line, problem.case) == (where, 4, "a")


def test_bundled_matrix_loads() -> None:
    matrix = load_matrix(MATRIX_DIR / "models.yaml")
    assert matrix.cases
    for case in matrix:
        assert case.expectations


# --- each problem kind, located -------------------------------------------------------------------


def test_unknown_case_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        cases:
          - id: a
            repo: o/n
            trust_remote_cod: true
            expect: native
        """,
    )
    problem = only_problem(path)
    assert (problem.line, problem.case) == (4, "a")
    assert "unknown key 'trust_remote_cod'" in problem.what
    assert "trust_remote_code" in problem.fix


def test_unknown_top_level_key(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\ncase:\n  - id: a\n" + ONE_CASE)
    problem = only_problem(path)
    assert (problem.line, problem.case) == (2, None)
    assert "unknown top-level key 'case'" in problem.what


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ("id: [a]", "'id' must be a name"),
        ("id: 'has space'", "'id' must be a name"),
        ("repo: a/b/c", "'repo' must be a hub id"),
        ("repo: 'has space'", "'repo' must be a hub id"),
        ("repo: 42", "'repo' must be a hub id"),
        ("revision: 1234567", "'revision' must be a string"),
        ("trust_remote_code: 'yes'", "'trust_remote_code' must be true or false"),
        ("texts: hello", "'texts' must be a list of strings"),
        ("texts: [1, 2]", "'texts' must be a list of strings"),
        ("served_names: {a: b}", "'served_names' must be a list of strings"),
        ("note: [x]", "'note' must be text"),
        ("snapshot: 3", "'snapshot' must be a folder path"),
        ("expect: 3", "'expect' must be an outcome or a map of ranges"),
        ("expect: {}", "'expect' must be an outcome or a map of ranges"),
        ("expect: [native]", "'expect' must be an outcome or a map of ranges"),
    ],
)
def test_wrong_types(tmp_path: Path, line: str, what: str) -> None:
    key = line.split(":")[0]
    base = {"id": "id: c", "repo": "repo: o/n", "expect": "expect: native"}
    base[key] = line
    body = "\n".join(f"    {entry}" for entry in base.values())
    path = write(tmp_path, f"version: 1\ncases:\n  # the case\n  - {body.strip()}\n")
    problem = only_problem(path)
    expected_line = 4 + list(base).index(key)
    assert problem.line == expected_line, str(problem)
    assert problem.case == {"id: [a]": None, "id: 'has space'": "has space"}.get(line, "c")
    assert what in problem.what


def test_case_not_a_mapping_and_cases_not_a_list(tmp_path: Path) -> None:
    problem = only_problem(write(tmp_path, "cases:\n  - just-a-string\n"))
    assert (problem.line, problem.case) == (2, None)
    assert "a case must be a mapping" in problem.what
    problem = only_problem(write(tmp_path, "cases: {id: a}\n", "b.yaml"))
    assert problem.line == 1 and "'cases' must be a list" in problem.what


def test_missing_cases_id_expect_and_source(tmp_path: Path) -> None:
    assert "no 'cases' list" in only_problem(write(tmp_path, "version: 1\n")).what
    problems = problems_of(write(tmp_path, "cases:\n  - note: hi\n", "b.yaml"))
    whats = " | ".join(p.what for p in problems)
    assert "'id' must be a name" in whats
    assert "neither 'repo' nor 'snapshot' is given" in whats
    assert "no 'expect'" in whats
    assert {p.line for p in problems} == {2}


def test_bad_version_and_golden_dir(tmp_path: Path) -> None:
    problems = problems_of(write(tmp_path, "version: 2\ngolden_dir: [x]\n" + ONE_CASE))
    assert [(p.line, p.what) for p in problems] == [
        (1, "matrix version 2 is not supported"),
        (2, "'golden_dir' must be a folder name"),
    ]


def test_unknown_outcome(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        cases:
          - id: a
            repo: o/n
            expect:
              "<5": native
              ">=5": nativ
        """,
    )
    problem = only_problem(path)
    assert (problem.line, problem.case) == (6, "a")
    assert problem.what == "unknown outcome 'nativ'"
    assert all(outcome in problem.fix for outcome in OUTCOMES)


def test_duplicate_ids(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        cases:
          - id: a
            repo: o/n
            expect: native
          - id: b
            repo: o/n
            expect: native
          - id: a
            repo: o/m
            expect: alias
        """,
    )
    problem = only_problem(path)
    assert (problem.line, problem.case) == (8, "a")
    assert "duplicate id (first at line 2)" in problem.what


def test_duplicate_yaml_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        cases:
          - id: a
            repo: o/n
            expect: native
            expect: alias
        """,
    )
    problem = only_problem(path)
    assert (problem.line, problem.case) == (5, "a")
    assert problem.what == "duplicate key 'expect'"


def test_duplicate_range_key_is_reported_once(tmp_path: Path) -> None:
    path = write(tmp_path, 'cases:\n  - id: a\n    repo: o/n\n    expect: {">=5": native, ">=5": alias}\n')
    problem = only_problem(path)
    assert (problem.line, problem.what) == (4, "duplicate key '>=5'")


def test_duplicate_top_level_key(tmp_path: Path) -> None:
    problem = only_problem(write(tmp_path, "version: 1\n" + ONE_CASE + "version: 1\n"))
    assert (problem.line, problem.case, problem.what) == (4, None, "duplicate key 'version'")


@pytest.mark.parametrize("spec", ["5.0", ">=five", "=>5.0", "~=5", ">=5.0;<6", "latest"])
def test_bad_specifier(tmp_path: Path, spec: str) -> None:
    path = write(tmp_path, f'cases:\n  - id: a\n    repo: o/n\n    expect:\n      "{spec}": native\n')
    problem = only_problem(path)
    assert (problem.line, problem.case) == (5, "a")
    assert problem.what.startswith("bad version range:")


@pytest.mark.parametrize("key", ["5", "5.0", "5.10"])
def test_unquoted_number_as_range_is_reported_not_dropped(tmp_path: Path, key: str) -> None:
    path = write(tmp_path, f"cases:\n  - id: a\n    repo: o/n\n    expect:\n      {key}: native\n")
    problem = only_problem(path)
    assert (problem.line, problem.case) == (5, "a")
    assert problem.what.startswith("bad version range:")


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("<5.11", ">=5.10"),
        (">=5.0", ">=5.2,<6"),
        ("*", ">=1"),
        ("==5.1.*", ">5.1.0,<5.2"),
        (">5.0", "<5.0.1"),
    ],
)
def test_overlapping_ranges(tmp_path: Path, first: str, second: str) -> None:
    path = write(
        tmp_path,
        f"""
        cases:
          - id: a
            repo: o/n
            expect:
              "{first}": native
              "{second}": alias
        """,
    )
    problem = only_problem(path)
    assert (problem.line, problem.case) == (5, "a"), "reported where the ranges start"
    assert f"ranges {first!r} and {second!r} overlap" in problem.what


def test_adjacent_ranges_do_not_overlap(tmp_path: Path) -> None:
    ranges = [parse_range(t) for t in ("<5.0", ">=5.0,<5.11", ">=5.11,!=5.12.0", "==5.12.0")]
    assert overlapping_pairs(ranges) == []


def test_missing_snapshot_folder(tmp_path: Path) -> None:
    path = write(tmp_path, "cases:\n  - id: a\n    snapshot: snapshots/nowhere\n    expect: native\n")
    problem = only_problem(path)
    assert (problem.line, problem.case) == (3, "a")
    assert "snapshots/nowhere does not exist" in problem.what
    assert "relative to the matrix file" in problem.fix


def test_snapshot_folder_without_config(tmp_path: Path) -> None:
    make_snapshot(tmp_path, "empty", config=False)
    path = write(
        tmp_path, "cases:\n  - id: a\n    repo: o/n\n    snapshot: snapshots/empty\n    expect: native\n"
    )
    problem = only_problem(path)
    assert (problem.line, problem.case) == (4, "a")
    assert "has no config.json and no tokenizer files" in problem.what


@pytest.mark.parametrize("snapshot", ['"a\\0b"', "a" * 5000])
def test_unusable_snapshot_path_is_a_problem_not_a_crash(tmp_path: Path, snapshot: str) -> None:
    path = write(tmp_path, f"cases:\n  - id: a\n    snapshot: {snapshot}\n    expect: native\n")
    problem = only_problem(path)
    assert (problem.line, problem.case) == (3, "a")
    assert "snapshot" in problem.what


@pytest.mark.parametrize(
    ("expect", "line"),
    [("expect: auto_map", 4), ('expect:\n      "<5": native\n      ">=5": auto_map', 6)],
)
def test_auto_map_without_trust_remote_code(tmp_path: Path, expect: str, line: int) -> None:
    path = write(tmp_path, f"cases:\n  - id: a\n    repo: o/n\n    {expect}\n")
    problem = only_problem(path)
    assert (problem.line, problem.case) == (line, "a")
    assert "expects auto_map but 'trust_remote_code' is not true" in problem.what
    trusted = write(
        tmp_path, f"cases:\n  - id: a\n    repo: o/n\n    trust_remote_code: true\n    {expect}\n", "t.yaml"
    )
    assert load_matrix(trusted).by_id("a").trust_remote_code is True


# --- YAML-level problems --------------------------------------------------------------------------

_CANARY: list[str] = []


def _canary(*args: object) -> None:  # pragma: no cover - must never run
    _CANARY.append(repr(args))


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ("!!python/object/apply:os.system ['echo pwned > pwned.txt']", 4),
        (f"!!python/object/apply:{__name__}._canary [x]", 4),
        ("!!python/name:os.system", 4),
        (f"!!python/object/new:{__name__}.Problem {{}}", 4),
        ("!!binary aGVsbG8=", 4),
        ("!!set {a, b}", 4),
        ("!custom thing", 4),
        ("\n      - !!python/object/apply:os.getcwd []", 5),
    ],
)
def test_yaml_tags_are_refused_and_never_construct(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, line: int
) -> None:
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path, f"cases:\n  - id: a\n    repo: o/n\n    note: {value}\n    expect: native\n")
    problems = problems_of(path)
    tagged = [p for p in problems if "YAML tag" in p.what]
    assert len(tagged) == 1, "\n".join(map(str, problems))
    assert (tagged[0].line, tagged[0].case) == (line, "a")
    assert "is not allowed" in tagged[0].what
    assert not (tmp_path / "pwned.txt").exists()
    assert _CANARY == []


def test_tag_that_does_not_fit_its_value(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "version: !!int one\ncases:\n  - id: a\n    repo: o/n\n    note: !!float x\n    expect: native\n",
    )
    problems = problems_of(path)
    assert ("'one' is not a valid int", 1) in [(p.what, p.line) for p in problems]
    assert ("'x' is not a valid float", 5, "a") in [(p.what, p.line, p.case) for p in problems]


def test_merge_keys_are_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        base: &base {repo: o/n}
        cases:
          - <<: *base
            id: a
            expect: native
        """,
    )
    problems = problems_of(path)
    assert any(p.line == 3 and p.case == "a" and "merge" in p.what for p in problems)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_bytes(b"version: 1\ncases:\n  - id: caf\xe9\n")
    problem = only_problem(path)
    assert (problem.line, problem.case) == (3, None)
    assert problem.what == "the file is not UTF-8"


@pytest.mark.parametrize("text", ["", "   \n", "# only a comment\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(text, encoding="utf-8")
    problem = only_problem(path)
    assert problem.line == 1
    assert problem.what == "expected one YAML document, found 0"


def test_several_documents(tmp_path: Path) -> None:
    path = write(tmp_path, "cases: []\n---\ncases: []\n")
    problem = only_problem(path)
    assert (problem.line, problem.what) == (1, "expected one YAML document, found 2")


@pytest.mark.parametrize(("text", "line"), [("- a\n- b\n", 1), ("just text\n", 1), ("\n\n42\n", 3)])
def test_not_a_mapping(tmp_path: Path, text: str, line: int) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(text, encoding="utf-8")
    problem = only_problem(path)
    assert problem.line == line
    assert "the matrix must be a mapping" in problem.what


def test_invalid_yaml_syntax(tmp_path: Path) -> None:
    path = write(tmp_path, "cases:\n  - id: a\n    repo: [unclosed\n")
    problem = only_problem(path)
    assert problem.what.startswith("not valid YAML")
    assert problem.line == 4  # where the parser meets the end of the file, still inside the [


def test_unreadable_path(tmp_path: Path) -> None:
    problem = only_problem(tmp_path / "missing.yaml")
    assert problem.line == 1 and "cannot read the matrix" in problem.what


def test_recursive_alias_is_a_problem(tmp_path: Path) -> None:
    problem = only_problem(write(tmp_path, "cases: &a [*a]\n"))
    assert problem.line == 1


def test_too_many_nodes(tmp_path: Path) -> None:
    items = ", ".join(["x"] * 1000)
    lines = ["a: &a [" + items + "]"] + [f"l{i}: [*a, *a]" for i in range(MAX_NODES // 2000 + 1)]
    path = write(tmp_path, "\n".join(lines) + "\ncases: []\n")
    problems = problems_of(path)
    assert any(f"more than {MAX_NODES} YAML nodes" in p.what for p in problems)


@pytest.mark.parametrize("bad_id", ["qwen\\n", "qwen\\r\\n", "\\nqwen", "qw\\ten"])
def test_an_id_must_match_whole_a_trailing_newline_is_refused(tmp_path: Path, bad_id: str) -> None:
    # A YAML double-quoted scalar: the escapes become the real characters in the id.
    path = write(tmp_path, f'cases:\n  - id: "{bad_id}"\n    repo: o/n\n    expect: native\n')
    problem = only_problem(path)
    assert problem.line == 2 and "'id' must be a name of letters" in problem.what


def test_a_matrix_file_over_the_size_cap_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "models.yaml"
    path.write_bytes(b"- a\n" * (5 * MAX_MATRIX_BYTES // 4))  # 5 MB of tiny nodes
    problem = only_problem(path)
    assert problem.line == 1
    assert "the matrix file is 5.0 MB, over the 1 MB limit" in problem.what
    assert "split it into several matrix files" in problem.fix


def test_parse_matrix_applies_the_size_cap_too(tmp_path: Path) -> None:
    with pytest.raises(MatrixError, match="over the 1 MB limit"):
        parse_matrix("#" * (MAX_MATRIX_BYTES + 1), tmp_path / "m.yaml")


def test_a_flood_of_tiny_nodes_is_stopped_while_composing_at_its_line(tmp_path: Path) -> None:
    count = MAX_NODES + MAX_NODES // 4  # under the size cap: only the node count can stop it
    path = write(tmp_path, "cases:\n" + "- a\n" * count)
    assert path.stat().st_size < MAX_MATRIX_BYTES
    problem = only_problem(path)
    assert problem.what == f"more than {MAX_NODES} YAML nodes"
    # Located where the count passed the cap, not at the end of the file: composing stopped there. The
    # mapping, its key and the list are the first three nodes; item n is on line n + 1.
    assert problem.line == MAX_NODES - 1
    assert "split the matrix into several files" in problem.fix


def test_the_node_count_holds_without_libyaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from pytest_tokcompat.matrix import yamlnodes

    monkeypatch.setattr(yaml, "__with_libyaml__", False)  # the pure-Python composer counts on its own
    monkeypatch.setattr(yamlnodes, "MAX_NODES", 1000)  # ~50 µs a node there: keep the test short
    path = write(tmp_path, "cases:\n" + "- a\n" * 1200)
    problem = only_problem(path)
    assert (problem.line, problem.what) == (999, "more than 1000 YAML nodes")


def test_thousands_of_problems_are_listed_up_to_a_cap(tmp_path: Path) -> None:
    path = write(tmp_path, "cases:\n" + "  - a\n" * (MAX_PROBLEMS + 50))
    problems = problems_of(path)
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1].what == "and 50 more problems"
    assert all(p.what == "a case must be a mapping" for p in problems[:-1])


# --- several problems at once ---------------------------------------------------------------------


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        version: 1
        extra: 1
        cases:
          - id: a
            repo: o/n
            colour: blue
            expect: nativ
          - id: b
            snapshot: snapshots/missing
            expect: {"<5": native, ">=4": alias}
          - id: a
            repo: o/n
            expect: native
          - id: c
            repo: o/n
            expect: auto_map
            note: !!python/object/apply:os.system [echo]
        """,
    )
    problems = problems_of(path)
    located = [(p.line, p.case) for p in problems]
    assert located == sorted(located, key=lambda pair: pair[0]), "problems are sorted by line"
    assert len(problems) == len(set(problems)), "no problem is reported twice"
    summary = {(p.line, p.case, p.what.split(" (")[0].split(":")[0]) for p in problems}
    assert summary == {
        (2, None, "unknown top-level key 'extra'"),
        (6, "a", "unknown key 'colour'"),
        (7, "a", "unknown outcome 'nativ'"),
        (
            9,
            "b",
            "snapshot folder " + str((tmp_path / "snapshots" / "missing").resolve()) + " does not exist",
        ),
        (10, "b", "ranges '<5' and '>=4' overlap"),
        (16, "c", "expects auto_map but 'trust_remote_code' is not true"),
        (17, "c", "YAML tag 'tag"),
    }
    # The second 'a' is valid on its own: it is not reported as a duplicate of the broken first one.
    message = str(MatrixError(problems))
    assert message.count("\n") == len(problems) - 1
    assert f"{path}:7: case 'a': unknown outcome 'nativ'; use one of" in message


def test_case_keys_and_outcomes_are_documented() -> None:
    assert set(CASE_KEYS) == {
        "id",
        "repo",
        "snapshot",
        "revision",
        "expect",
        "trust_remote_code",
        "texts",
        "served_names",
        "note",
        "acknowledge",
    }
    assert all(CASE_KEYS.values())
    assert OUTCOMES == ("native", "auto_map", "alias", "backend", "broken")


# --- Case.expected_for ----------------------------------------------------------------------------


def test_expected_for_single_outcome_covers_everything() -> None:
    case = case_with({"": "native"})
    for version in ("0.1", "4.45.0", "5.30.0.dev0", "5.11.0rc1", "99.0+local"):
        assert case.expected_for(version) == "native"


@pytest.mark.parametrize(
    ("version", "outcome"),
    [
        ("4.45.0", "alias"),
        ("5.10.99", "alias"),
        ("5.10.0.post1", "alias"),
        ("5.11", "native"),
        ("5.11.0", "native"),
        ("5.12.3", "native"),
        # A pre-release or dev build of 5.11 is not '<5.11' (PEP 440) nor '>=5.11' as itself;
        # it is judged as the release it leads to.
        ("5.11.0rc1", "native"),
        ("5.11.0.dev0", "native"),
        ("5.30.0.dev0", "native"),
        ("5.10.1rc1", "alias"),
        ("5.11.0+cu121", "native"),
    ],
)
def test_expected_for_ranges(version: str, outcome: str) -> None:
    case = case_with({"<5.11": "alias", ">=5.11": "native"})
    assert case.expected_for(version) == outcome


def test_pre_release_matches_as_itself_first() -> None:
    case = case_with({"<5.11": "alias", "==5.11.0rc1": "broken", ">=5.11": "native"})
    assert case.expected_for("5.11.0rc1") == "broken"
    assert case.expected_for("5.11.0rc2") == "native"  # no range admits it as itself: judged as 5.11.0
    assert case.expected_for("5.11.0b1") == "native"
    assert case.expected_for("5.11.0") == "native"


def test_expected_for_gap_is_an_error() -> None:
    case = case_with({"<5.0": "native", ">=5.11": "alias"})
    for version in ("5.0.0", "5.10.2", "5.5.0rc1"):
        with pytest.raises(ValueError, match=rf"no expectation for transformers {version}") as caught:
            case.expected_for(version)
        assert "'<5.0', '>=5.11'" in str(caught.value)
        assert "case 'c' at m.yaml:3" in str(caught.value)
    assert case.expected_for("5.11.0.dev0") == "alias"


def test_expected_for_dev_build_beyond_every_range_is_an_error() -> None:
    case = case_with({">=5.0,<5.30": "native"})
    assert case.expected_for("5.29.9") == "native"
    with pytest.raises(ValueError, match=r"no expectation for transformers 5\.30\.0\.dev0"):
        case.expected_for("5.30.0.dev0")


def test_expected_for_overlap_built_by_hand_is_an_error() -> None:
    case = case_with({">=5": "native", ">=5.1": "alias"})
    with pytest.raises(ValueError, match="overlap"):
        case.expected_for("5.2")
    assert case.expected_for("5.0.5") == "native"


def test_expected_for_rejects_a_non_version() -> None:
    with pytest.raises(ValueError, match="not a PEP 440 version"):
        case_with({"": "native"}).expected_for("latest")


def test_matching_ranges_accepts_a_version_object() -> None:
    ranges = [parse_range("<5.11"), parse_range(">=5.11")]
    assert [r.text for r in matching_ranges(ranges, Version("5.11.0rc1"))] == [">=5.11"]


def test_an_empty_tagged_number_is_a_located_problem(tmp_path: Path) -> None:
    # Found by the fuzzer: PyYAML's int constructor raises IndexError on an empty scalar.
    path = write(tmp_path, "version: !!int ''\ncases: []\n")
    with pytest.raises(MatrixError) as caught:
        load_matrix(path)
    assert any(p.line == 1 and "'' is not a valid int" in p.what for p in caught.value.problems)
