"""Outside text stays text: rendered by a real Markdown parser, printed, or written into configuration.

The Markdown helpers are checked by rendering what they write with markdown-it (CommonMark):
whatever the text, it comes back as the same characters and as no structure at all. GitHub
adds mentions, references and bare links on top of CommonMark; those are checked as strings.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from pytest_tokcompat.ci.grid import Grid, GridAlarm
from pytest_tokcompat.ci.issues_text import alarm_body, alarm_title
from pytest_tokcompat.ci.markdown import render_markdown
from pytest_tokcompat.ci.summary import summary_lines
from pytest_tokcompat.cli import main
from pytest_tokcompat.contract import case_record
from pytest_tokcompat.inert import config_problem, markdown_code, markdown_text, plain_title, terminal
from tests.helpers import toys
from tests.unit.ci.test_issues_text import grid_alarm

FAST = settings(suppress_health_check=[HealthCheck.too_slow])
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
MARKDOWNISH = st.text(alphabet=st.sampled_from(list("`*_[]()!<>&#@|\\-+=.1 \t\n\x1bax:/~")), max_size=40)
HOSTILE = "x`y @octocat #123 GH-7 <img src=x onerror=alert(1)> [link](https://e.invalid) \x1b[2J\nnext"
PARSER = MarkdownIt("commonmark")


def shown(text: str) -> str:
    """What a reader should see of ``text``: its control characters escaped, a zero-width space after each
    ``@``, ``#`` or ``GH-`` that starts a word (so no mention or reference), and nothing else changed."""
    return re.sub(r"(@|#|\bGH-)(?=[\w-])", "\\1\u200b", terminal(text), flags=re.IGNORECASE)


def inline_html(markdown: str) -> str:
    return PARSER.renderInline(markdown)


@FAST
@given(st.one_of(TEXT, MARKDOWNISH))
def test_markdown_text_renders_as_the_same_characters_and_no_structure(text: str) -> None:
    rendered = inline_html(markdown_text(text))
    assert "<" not in rendered.replace("&lt;", ""), f"a tag: {rendered!r}"
    assert html.unescape(rendered) == shown(text)
    block = PARSER.render(f"- {markdown_text(text)}")
    assert re.findall(r"<(\w+)", block) == ["ul", "li"], f"more than one list item: {block!r}"


@FAST
@given(st.one_of(TEXT, MARKDOWNISH).filter(lambda text: text.strip(" ") != ""))
def test_markdown_code_is_one_code_span_of_exactly_the_text(text: str) -> None:
    rendered = inline_html(markdown_code(text))
    match = re.fullmatch(r"<code>(.*)</code>", rendered, re.DOTALL)
    assert match, f"not one code span: {rendered!r}"
    assert html.unescape(match.group(1)) == terminal(text).replace("\n", " ")


def test_the_control_plain_text_is_left_as_it_is() -> None:
    for text in (
        "deepseek-v3.2-exp",
        "alias:deepseek_v32",
        "native ✗~ [default_call] (expected alias)",
        "5.11.0",
    ):
        assert markdown_text(text) == text
    assert markdown_code("deepseek_v32") == "`deepseek_v32`"
    assert markdown_text(">=5.11") == "\\>=5.11" and markdown_text("a >=5.11") == "a >=5.11", (
        "a quote at the start"
    )
    assert plain_title("tokcompat: qwen3 verdict differs") == "tokcompat: qwen3 verdict differs"
    assert terminal("native | match") == "native | match"


def test_mentions_references_and_tags_are_neutral_where_github_would_link_them() -> None:
    text = markdown_text(HOSTILE)
    assert "@octocat" not in text and "#123" not in text and "GH-7" not in text and "<img" not in text
    assert "@&#8203;octocat" in text and "#&#8203;123" in text and "&lt;img" in text
    assert "\n" not in text and "\x1b" not in text and "\\\\x1b" in text
    assert markdown_code("a``b") == "```a``b```" and markdown_code("`x") == "`` `x ``"
    assert markdown_code("a|b", table=True) == "`a\\|b`"
    assert "\u200b" in plain_title("@octocat") and "\n" not in plain_title("a\nb")


def test_terminal_text_shows_escapes_instead_of_running_them() -> None:
    assert terminal("\x1b[31mred\x1b[0m\r\x07") == "\\x1b[31mred\\x1b[0m\\x0d\\x07"
    assert terminal("a\u202eb\u2028c\x85") == "a\\u202eb\\u2028c\\x85", "bidi controls and line separators"
    assert terminal("two\nlines\x1b", newlines=True) == "two\nlines\\x1b"


def hostile_grid(subject: str, message: str) -> Grid:
    alarm = GridAlarm("unexpected-verdict", subject, "5.11.0", ["5.11.0"], message, "fix the matrix")
    return Grid(["5.11.0"], {}, [alarm])


def test_the_grids_markdown_keeps_a_checkpoints_strings_inert() -> None:
    control = render_markdown(hostile_grid("qwen3", "expected native, got alias"))
    assert "- **unexpected-verdict** `qwen3`, first in transformers 5.11.0" in control
    assert ": expected native, got alias. What to do: fix the matrix." in control
    text = render_markdown(hostile_grid("`@octocat`<b>", HOSTILE))
    line = next(line for line in text.splitlines() if line.startswith("- **unexpected-verdict**"))
    assert "`` `@octocat`<b> ``" in line, "the subject in a code span past its backticks"
    assert "@octocat" not in line.split("``")[2] and "\x1b" not in text and "<img" not in text
    assert len([li for li in text.splitlines() if li.startswith("- ")]) == 1, "the newline started nothing"
    rendered = PARSER.render(text)
    assert "<img" not in rendered and "<a " not in rendered and "<b>" not in rendered


def test_issue_titles_and_bodies_keep_a_checkpoints_strings_inert() -> None:
    control = grid_alarm(subject="deepseek_v32")
    assert alarm_title(control) == "tokcompat: deepseek_v32 alias obsolete"
    assert "**obsolete-alias** for `deepseek_v32`, raised by" in alarm_body(control)
    hostile = GridAlarm(
        "obsolete-alias", "@octocat --> #9", "5.11.0", ["5.11.0"], HOSTILE, "see #12 <b>x</b>"
    )
    title, body = alarm_title(hostile), alarm_body(hostile)
    assert "@octocat" not in title and "#9" not in title and title.startswith("tokcompat: @\u200boctocat")
    comment = body.splitlines()[0]
    assert comment.startswith("<!-- tokcompat-key: ") and comment.count("-->") == 1, comment
    prose = body.replace("`@octocat --> #9`", "")
    assert "@octocat" not in prose and "#12" not in prose and "#123" not in prose and "<b>" not in prose


def test_the_terminal_summary_shows_a_checkpoints_escapes() -> None:
    record = case_record("qwen", "passed", "ok", expected="native", verdict="native")
    assert any(line.startswith("qwen ") for line in summary_lines([record | {"model_type": "qwen3"}]))
    lines = summary_lines([record | {"model_type": "\x1b]0;owned\x07qwen3\x1b[2J"}])
    assert not any("\x1b" in line or "\x07" in line for line in lines)
    assert any("\\x1b]0;owned\\x07qwen3\\x1b[2J" in line for line in lines)


@pytest.mark.parametrize("char", ["\n", "\r", "\x1b", "\x00", "\u2028", "\x85"])
def test_configuration_text_refuses_control_characters(char: str) -> None:
    problem = config_problem("--upstream", f"https://e.invalid/t.git{char}[testenv:x]")
    assert (
        problem is not None
        and "\n" not in problem
        and problem.startswith("--upstream 'https://e.invalid/t.git\\")
    )
    assert "control character" in problem and "one line" in problem
    assert config_problem("--upstream", "https://e.invalid/t.git@main") is None, "the control"


def test_tokcompat_check_prints_a_checkpoints_escapes_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model_type holding an ANSI sequence (clear the screen, set the window title)."""
    folder = toys.native_toy(tmp_path / "plain")
    main(["check", str(folder)])
    assert "model_type gpt2, transformers" in capsys.readouterr().out, "the control: the model_type is shown"
    hostile = toys.native_toy(tmp_path / "hostile")
    config = json.loads((hostile / "config.json").read_text())
    (hostile / "config.json").write_text(json.dumps(config | {"model_type": "gpt2\x1b[2J\x1b]0;owned\x07"}))
    main(["check", str(hostile)])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "model_type gpt2\\x1b[2J\\x1b]0;owned\\x07" in out


def test_the_html_page_escapes_a_checkpoints_strings() -> None:
    from pytest_tokcompat.ci.page import render_page

    assert "<b>qwen3</b>" in render_page(hostile_grid("qwen3", "expected native")), "the control"
    page = render_page(hostile_grid("<script>alert(1)</script>", "<img src=x onerror=alert(1)> @octocat"))
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_issue_text_prints_an_incomplete_grids_reasons_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A not-checked case's reason is the text its attempt raised: a checkpoint's code chooses it."""
    from tests.helpers.reportdata import case, not_checked, report, write

    def reasons(why: str) -> str:
        records = [case("c", "5.11.0", "native"), not_checked("d", why)]
        path = write(tmp_path, f"{len(why)}.json", report("5.11.0", records))
        assert main(["issue-text", str(path)]) == 3
        return capsys.readouterr().out

    assert "- transformers 5.11.0: not checked: d (hub offline)" in reasons("hub offline"), "the control"
    out = reasons("hub offline\x1b[2J\x1b]0;owned\x07")
    assert "\x1b" not in out and "\x07" not in out and "hub offline\\x1b[2J\\x1b]0;owned\\x07" in out
