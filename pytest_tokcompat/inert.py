"""Text from the outside stays text: on the terminal, in Markdown, in configuration.

A checkpoint chooses its special tokens, its model_type and the messages its code
raises; a matrix chooses its case ids; a command line chooses its arguments. Each of
them reaches a text the tool publishes, and there it must not become structure: an
escape sequence that rewrites the terminal, an ``@mention`` or ``#123`` that notifies
or links on GitHub, an HTML tag or a link in a job summary, a newline that starts a new
section of a generated ``tox.ini``. The functions here make such a string inert for
one destination; the writers call them on every string they do not write themselves.

Imports nothing of the package: every layer may use it.
"""

from __future__ import annotations

import re
import unicodedata

_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional controls (format characters): they reorder what a reader sees around them."""
ZERO_WIDTH = "&#8203;"
"""Between ``@`` or ``#`` and what follows: GitHub links no mention or reference, a reader sees none."""
_BACKTICKS = re.compile(r"`+")
_REFERENCE = re.compile(r"(@|#|\bGH-)(?=[\w-])", re.IGNORECASE)
_MARKDOWN = re.compile(r"([\\`*|]|\](?=[(\[]))")
"""Escaped with a backslash: emphasis, code spans, table cell breaks, and the ``](`` or ``][`` of a link or
an image (without it a ``[`` starts none; GitHub links only defined references). ``~`` stays: the grid's
drift mark, and a strikethrough is no structure."""
_BLOCK_MARKER = re.compile(r"^(?:[-+=>#]|\d+(?=[.)](?:\s|$)))")
"""What can make a line a heading, list item, rule or quote when it starts the text: ``# x``, ``- x``,
``---``, ``1. x``; escaped wherever it starts the text, a marker or not."""
_INDENT = re.compile(r"^[ \t]+")
"""Leading blanks, which can make the text an indented code block: written as entities."""
_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def _is_control(char: str) -> bool:
    return unicodedata.category(char) in ("Cc", "Zl", "Zp") or char in _BIDI


def _shown(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal(text: str, *, newlines: bool = False) -> str:
    """``text`` with every control character shown escaped (ESC as ``\\x1b``), never interpreted by a
    terminal; ``newlines`` keeps line breaks (a message of several lines), escaping the rest."""
    if newlines:
        return "\n".join(terminal(line) for line in text.split("\n"))
    return "".join(_shown(char) if _is_control(char) else char for char in text)


def config_problem(option: str, value: str) -> str | None:
    """Why ``value`` of ``option`` cannot go into a generated configuration file (a control character or a
    line break would start a new line, section or command there), as one line; None when it can."""
    found = next((char for char in value if _is_control(char)), None)
    if found is None:
        return None
    return (
        f"{option} '{terminal(value)}': holds the control character {_shown(found)} (a line break or the like "
        "would write into the generated tox.ini); give the value on one line without control characters"
    )


def _html(text: str) -> str:
    """No tag, autolink or entity (``&#64;`` would be an ``@``): ``&`` and ``<`` as entities."""
    return text.replace("&", "&amp;").replace("<", "&lt;")


def _escaped_marker(marker: str) -> str:
    """A list or heading marker at the start, written so it is no marker: ``\\-``, ``1\\.``."""
    return marker + "\\" if marker.isdigit() else "\\" + marker


def markdown_text(text: str) -> str:
    """``text`` as literal prose in Markdown (GitHub's): no emphasis, link, image, HTML tag, table cell break,
    code span, mention or issue reference; control characters shown escaped, so it stays on its line."""
    text = _MARKDOWN.sub(r"\\\1", plain_title(text))  # the zero-width spaces first, then the escapes
    text = _BLOCK_MARKER.sub(lambda match: _escaped_marker(match.group(0)), _UNDERSCORE.sub(r"\\_", text))
    text = _html(text).replace("\u200b", ZERO_WIDTH)
    return _INDENT.sub(lambda match: "".join(f"&#{ord(blank)};" for blank in match.group(0)), text)


def markdown_code(text: str, *, table: bool = False) -> str:
    """``text`` as one inline code span: its fence one backtick longer than any run inside it (padded where
    the text starts or ends with a backtick), control characters shown escaped. Inside a code span GitHub
    renders no HTML, mention or reference. ``table``: within a table row, where ``|`` ends the cell even
    inside a code span unless written ``\\|``."""
    body = terminal(text)
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(body)), default=0) + 1)
    if body.startswith(("`", " ")) or body.endswith(("`", " ")) or not body:
        body = f" {body} "
    if table:
        body = body.replace("|", "\\|")
    return f"{fence}{body}{fence}"


def plain_title(text: str) -> str:
    """``text`` for a plain-text title (a GitHub issue's): one line, control characters shown escaped, and
    no mention or reference (a zero-width space after ``@`` and ``#``)."""
    return _REFERENCE.sub(lambda match: match.group(1) + "\u200b", terminal(text))
