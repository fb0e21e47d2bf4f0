"""Fuzzing the matrix loader: whatever the input, a Matrix or a located MatrixError, nothing else.

No input may construct an object from a YAML tag: a canary tag names a function of this module
that records its call, and every example checks that it was never called.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_tokcompat.errors import MatrixError
from pytest_tokcompat.matrix.cases import OUTCOMES, Matrix
from pytest_tokcompat.matrix.entries import CASE_KEYS
from pytest_tokcompat.matrix.loader import TOP_KEYS, load_matrix, parse_matrix

CANARY_CALLS: list[object] = []


def canary(*args: object) -> str:
    """Would run if a YAML tag were ever constructed."""
    CANARY_CALLS.append(args)
    return "constructed"


CANARY_TAG = f"!!python/object/apply:{__name__}.canary"
FAST = settings(suppress_health_check=[HealthCheck.too_slow])
"""Examples per test from the profile (tests/conftest.py): a few on a developer's run, the full count in CI."""
PATH = Path("fuzz") / "models.yaml"
LINE_BREAKS = ("\r\n", "\n", "\r", "\x85", "\u2028", "\u2029")


def line_count(text: str) -> int:
    """An upper bound of the lines YAML sees (it also breaks lines at \\r, NEL, LS and PS)."""
    return sum(text.count(b) for b in LINE_BREAKS) + 1


def check(text: str, path: Path = PATH) -> Matrix | MatrixError:
    """The property: a Matrix, or a MatrixError whose every problem is located in ``path``."""
    try:
        result: Matrix | MatrixError = parse_matrix(text, path)
    except MatrixError as error:
        result = error
        assert error.problems
        for problem in error.problems:
            assert problem.path == path
            assert isinstance(problem.line, int)
            assert 1 <= problem.line <= line_count(text), problem
            assert problem.what and problem.fix
            assert problem.case is None or isinstance(problem.case, str)
            str(problem)
    else:
        assert isinstance(result, Matrix)
        for case in result:
            assert case.expectations
            assert all(e.outcome in OUTCOMES for e in case.expectations)
    assert CANARY_CALLS == [], "a YAML tag constructed an object"
    return result


def test_the_canary_is_live() -> None:
    """Without the loader's guard the canary tag does run: so its silence below means something."""
    try:
        assert yaml.unsafe_load(f"{CANARY_TAG} [1]") == "constructed"
        assert CANARY_CALLS == [(1,)]
    finally:
        CANARY_CALLS.clear()


# --- arbitrary text -------------------------------------------------------------------------------


UTF8_TEXT = st.text(st.characters(exclude_categories=("Cs",)))
"""Any text a UTF-8 file can hold: every code point but the surrogates. The same set as st.text()'s
utf-8 codec, without the pass over all of Unicode that hypothesis makes for a codec in every process."""


@FAST
@given(UTF8_TEXT)
def test_arbitrary_text(text: str) -> None:
    check(text)


@FAST
@given(st.text(alphabet=st.sampled_from(list("{}[]:,-?!&*|>'\"#%@`\t\n\r \\ax1~.<=")), max_size=80))
def test_yaml_punctuation_soup(text: str) -> None:
    check(text)


# --- arbitrary YAML from structured strategies ----------------------------------------------------

TAGS = [
    CANARY_TAG,
    "!!python/object/apply:os.system",
    "!!python/name:os.system",
    "!!python/object/new:builtins.dict",
    "!!binary",
    "!!set",
    "!!omap",
    "!!int",
    "!!float",
    "!!bool",
    "!!null",
    "!!str",
    "!!map",
    "!!seq",
    "!!timestamp",
    "!custom",
    "!<tag:example.com,2000:x>",
]
ANCHORS = ["a", "b", "c"]
SCALARS = [
    *OUTCOMES,
    "nativ",
    "1",
    "2",
    "1.5",
    "-0",
    "0x1f",
    "0o7",
    ".nan",
    ".inf",
    "true",
    "no",
    "~",
    "null",
    "''",
    '""',
    '"\\0"',
    '"\\t"',
    "2001-01-01",
    "2001-12-14t21:59:43.10-05:00",
    '">=5.11"',
    '"<5.11"',
    '"*"',
    '"==5.*"',
    '">=5.0,<5.11"',
    '"~=5"',
    "o/n",
    "a/b/c",
    "snapshots/x",
    "/",
    "..",
    "id",
    "cases",
    "<<",
    "|\n  block\n",
    "9" * 30,
]
KEYS = [*CASE_KEYS, *TOP_KEYS, "<<", "? x", "1", "true", "~", '">=5"', '"<5"', "extra"]


def decorate(value: str, tag: str | None, anchor: str | None) -> str:
    prefix = ""
    if anchor:
        prefix += f"&{anchor} "
    if tag:
        prefix += f"{tag} "
    return prefix + value


@st.composite
def scalar(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return f"*{draw(st.sampled_from(ANCHORS))}"
    if kind == 1:
        return (
            draw(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8))
            .join('""')
            .replace("\\", "\\\\")
        )
    value = draw(st.sampled_from(SCALARS))
    tag = draw(st.none() | st.sampled_from(TAGS))
    anchor = draw(st.none() | st.sampled_from(ANCHORS))
    return decorate(value, tag, anchor)


def flow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    items = st.lists(children, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]")
    pairs = st.lists(st.tuples(st.sampled_from(KEYS), children), max_size=4).map(
        lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"
    )
    tagged = st.tuples(st.sampled_from(TAGS), st.sampled_from(ANCHORS), items | pairs).map(
        lambda t: f"{t[0]} &{t[1]} {t[2]}"
    )
    return items | pairs | tagged


FLOW_VALUES = st.recursive(scalar(), flow, max_leaves=12)


@st.composite
def case_block(draw: st.DrawFn) -> str:
    keys = draw(
        st.lists(
            st.sampled_from([*CASE_KEYS, "expect", "expect", "colour"]),
            min_size=0,
            max_size=8,
        )
    )
    lines = []
    for key in keys:
        if key == "expect" and draw(st.booleans()):
            ranges = draw(
                st.lists(st.sampled_from(['"<5.11"', '">=5.11"', '"*"', "5.0", '">=5"']), max_size=3)
            )
            body = "".join(f"\n      {r}: {draw(st.sampled_from([*OUTCOMES, 'x']))}" for r in ranges)
            lines.append(f"expect:{body or ' {}'}")
        elif key == "id":
            lines.append(f"id: {draw(st.sampled_from(['a', 'b', 'a', '-x', '[a]', 'c.d_e']))}")
        elif key == "repo":
            lines.append(f"repo: {draw(st.sampled_from(['o/n', 'o', 'o/n/m', '1']))}")
        else:
            lines.append(f"{key}: {draw(FLOW_VALUES)}")
    anchor = draw(st.none() | st.sampled_from(ANCHORS))
    head = f"  - &{anchor}\n    " if anchor else "  - "
    return head + "\n    ".join(lines) if lines else f"  - {draw(FLOW_VALUES)}"


@st.composite
def matrix_text(draw: st.DrawFn) -> str:
    parts = []
    for key in draw(st.lists(st.sampled_from([*TOP_KEYS, "cases", "extra", "version"]), max_size=5)):
        if key == "cases" and draw(st.booleans()):
            cases = draw(st.lists(case_block(), max_size=4))
            parts.append("cases:\n" + "\n".join(cases) if cases else "cases: []")
        else:
            parts.append(f"{key}: {draw(FLOW_VALUES)}")
    text = "\n".join(parts) + "\n"
    # Tabs, stray documents and odd line breaks, spliced in at random places.
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        text = (
            text[:at]
            + draw(st.sampled_from(["\t", "\n---\n", "\r\n", "\n...\n", "  ", "\u2028", "%YAML 1.1\n"]))
            + text[at:]
        )
    return text


@FAST
@given(matrix_text())
def test_structured_yaml(text: str) -> None:
    check(text)


@settings(max_examples=max(5, settings.default.max_examples // 5))  # deep inputs are slow: a fifth
@given(
    st.integers(1, 2000),
    st.sampled_from(["[", "{a: ", "- ", "!!seq [", f"{CANARY_TAG} ["]),
    st.booleans(),
)
def test_deep_nesting(depth: int, opener: str, close: bool) -> None:
    closer = {"[": "]", "{a: ": "}", "- ": "", "!!seq [": "]", f"{CANARY_TAG} [": "]"}[opener]
    if opener == "- ":
        text = "".join(" " * i + "- \n" for i in range(min(depth, 300)))
    else:
        text = "cases: " + opener * depth + "x" + (closer * depth if close else "")
    check(text)


@FAST
@given(st.lists(st.sampled_from(list(TOP_KEYS) + list(CASE_KEYS)), min_size=1, max_size=6))
def test_duplicate_keys_are_reported_on_their_line(keys: list[str]) -> None:
    text = "".join(f"{key}: 1\n" for key in [*keys, *keys])
    result = check(text)
    assert isinstance(result, MatrixError)
    duplicates = {p.line for p in result.problems if p.what.startswith("duplicate key")}
    lines = [*keys, *keys]
    assert duplicates == {i + 1 for i, key in enumerate(lines) if key in lines[:i]}


@FAST
@given(
    st.sampled_from(TAGS[:4]),
    st.sampled_from(["[]", "[1]", "{}", "x", '["echo"]']),
    st.sampled_from([k for k in KEYS if k not in ("id", "repo", "expect")]),
)
def test_code_tags_never_construct(tag: str, argument: str, key: str) -> None:
    text = f"cases:\n  - id: a\n    repo: o/n\n    {key}: {tag} {argument}\n    expect: native\n"
    result = check(text)
    assert isinstance(result, MatrixError)
    # Reported on its line: as a refused tag, or (for a key such as 'true') as a bad key, not read further.
    assert any(p.line == 4 and ("YAML tag" in p.what or "key" in p.what) for p in result.problems)


# --- random bytes through load_matrix -------------------------------------------------------------


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300) | matrix_text().map(lambda t: t.encode("utf-8") + b"\xff\xfe"))
def test_random_bytes_through_a_file(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "models.yaml"
    path.write_bytes(data)
    try:
        result = load_matrix(path)
    except MatrixError as error:
        for problem in error.problems:
            assert problem.path == path
            assert (
                1
                <= problem.line
                <= data.count(b"\n")
                + data.count(b"\r")
                + data.count(b"\xc2\x85")
                + data.count(b"\xe2\x80\xa8")
                + data.count(b"\xe2\x80\xa9")
                + 1
            )
    else:
        assert isinstance(result, Matrix)
    assert CANARY_CALLS == []


# --- resource exhaustion --------------------------------------------------------------------------


def billion_laughs(where: str) -> str:
    levels = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for index, name in enumerate("bcdefghi"):
        previous = "abcdefghi"[index]
        levels.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]")
    if where == "case":
        return (
            "x:\n"
            + "\n".join(f"  {line}" for line in levels)
            + "\ncases:\n  - id: a\n    repo: o/n\n    texts: *i\n    expect: native\n"
        )
    return "\n".join(levels) + "\ncases: []\n"


@pytest.mark.parametrize("where", ["top", "case"])
def test_billion_laughs_is_refused_by_the_node_limit(tmp_path: Path, where: str) -> None:
    path = tmp_path / "models.yaml"
    path.write_text(billion_laughs(where), encoding="utf-8")
    with pytest.raises(MatrixError) as caught:
        load_matrix(path)  # without the node limit this would expand 10**9 strings: no timing needed
    assert any("YAML nodes" in p.what for p in caught.value.problems), caught.value
    assert all(p.line >= 1 for p in caught.value.problems)
