"""The README and the documentation site: short where they must be, generated where they say so, and
every command they show exists with the options it is shown with."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import io
import re
import shlex
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
import tomllib
import yaml

from pytest_tokcompat import cli
from pytest_tokcompat.errors import MatrixError
from pytest_tokcompat.matrix.loader import load_matrix
from tests.helpers.paths import REPO
from tests.project.test_workflows import actionlint

DOCS = REPO / "docs"
PAGES = sorted(path for path in DOCS.rglob("*.md") if "hooks" not in path.relative_to(DOCS).parts)
SHELL_FENCES = {"bash", "console", "sh", "shell"}
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```$", re.MULTILINE | re.DOTALL)
OPERATORS = {"&&", "||", ";", "|"}


def reference_hook() -> ModuleType:
    """docs/hooks/reference.py, the MkDocs hook, imported as a module of its own."""
    spec = importlib.util.spec_from_file_location("tokcompat_docs_reference", DOCS / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {shlex.join(self.argv)}"


def shell_lines(block: str, fence: str) -> Iterator[tuple[int, str]]:
    """(offset, line) of each command line of a block: continuations joined, console prompts only."""
    pending: list[str] = []
    start = 0
    for offset, raw in enumerate(block.splitlines()):
        line = raw
        if fence == "console":
            if not pending and not line.startswith("$ "):
                continue
            line = line.removeprefix("$ ")
        if not pending:
            start = offset
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        pending.append(line)
        yield start, " ".join(pending)
        pending = []


def split_commands(line: str) -> list[list[str]]:
    """The simple commands of one shell line (split at && || ; |), comments dropped, env assignments too."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="&|;")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    for token in lexer:
        if token in OPERATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    simple = []
    for words in commands:
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            words = words[1:]
        if words:
            simple.append(words)
    return simple


def commands_of(text: str, page: str) -> list[Command]:
    found = []
    for match in FENCE.finditer(text):
        fence = match.group(1)
        if fence not in SHELL_FENCES:
            continue
        first = text.count("\n", 0, match.start(2)) + 1
        for offset, line in shell_lines(match.group(2), fence):
            found += [Command(page, first + offset, tuple(words)) for words in split_commands(line)]
    return found


def fenced_blocks(kind: str) -> list[tuple[str, int, str]]:
    """(page, first line, body) of every fenced block of that kind in README.md and docs/."""
    found = []
    for path in [REPO / "README.md", *PAGES]:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group(1) == kind:
                line = text.count("\n", 0, match.start(2)) + 1
                found.append((str(path.relative_to(REPO)), line, match.group(2)))
    return found


def shown_commands() -> list[Command]:
    found = commands_of((REPO / "README.md").read_text(encoding="utf-8"), "README.md")
    for path in PAGES:
        found += commands_of(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    return found


# --- checking one command -----------------------------------------------------------------------


def _argparse_problem(parse: Callable[[], object]) -> str | None:
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            parse()
    except SystemExit as exit_:
        return errors.getvalue().strip().splitlines()[-1] if exit_.code else None
    return None


def check_tokcompat(args: list[str], pytester: pytest.Pytester) -> str | None:
    return _argparse_problem(lambda: cli.build_parser().parse_args(args))


def check_pytest(args: list[str], pytester: pytest.Pytester) -> str | None:
    """pytest's own parser with every installed plugin (xdist's -n, this plugin's options)."""
    try:
        config = pytester.parseconfig(*args)
    except pytest.UsageError as error:
        return " ".join(str(error).split())
    config._ensure_unconfigure()
    return None


def _extras() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return set(project["optional-dependencies"])


PIP_OPTIONS = {"-e", "--editable", "-q", "--quiet", "-U", "--upgrade"}


def check_pip(args: list[str], pytester: pytest.Pytester) -> str | None:
    if args[:1] != ["install"]:
        return f"only `pip install` is known to the docs test, not {args[:1]}"
    for word in args[1:]:
        if word.startswith("-"):
            if word not in PIP_OPTIONS:
                return f"pip install option {word!r} is not one the docs test knows ({sorted(PIP_OPTIONS)})"
            continue
        extras = re.match(r"^(?:\.|pytest-tokcompat)\[([^\]]*)\]", word)
        if extras is None:
            return f"{word!r} does not install this project (`.[EXTRAS]` or `pytest-tokcompat[EXTRAS] @ URL`)"
        unknown = {extra.strip() for extra in extras.group(1).split(",")} - _extras()
        if unknown:
            return f"{word!r} names extras pyproject.toml does not define: {', '.join(sorted(unknown))}"
    return None


def check_mkdocs(args: list[str], pytester: pytest.Pytester) -> str | None:
    import click
    from mkdocs.__main__ import cli as mkdocs_cli

    command = mkdocs_cli.commands.get(args[0]) if args else None
    if command is None:
        return f"mkdocs has no command {args[:1]}"
    try:
        command.make_context(args[0], list(args[1:]))
    except click.ClickException as error:
        return error.format_message()
    return None


def check_python(args: list[str], pytester: pytest.Pytester) -> str | None:
    if args[:2] == ["-m", "pytest"]:
        return check_pytest(args[2:], pytester)
    if args and args[0].endswith(".py"):
        return None if (REPO / args[0]).is_file() else f"{args[0]} is no file of this repository"
    return f"`python {shlex.join(args)}`: only `python -m pytest` and `python SCRIPT.py` are known"


def check_tool(program: str, subcommands: int = 0) -> Callable[[list[str], pytest.Pytester], str | None]:
    """A developer tool of the test extra: installed beside this Python, each option in its --help."""

    def check(args: list[str], pytester: pytest.Pytester) -> str | None:
        binary = Path(sys.executable).with_name(program)
        if not binary.is_file():
            return f"{program} is not installed beside {sys.executable} (the test extra)"
        words = [word for word in args[:subcommands] if not word.startswith("-")]
        help_text = subprocess.run(
            [str(binary), *words, "--help"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
        unknown = [word.split("=")[0] for word in args if word.startswith("-")]
        missing = [option for option in unknown if option not in help_text]
        return f"`{program} {' '.join(words)} --help` shows no {missing}" if missing else None

    return check


CHECKERS: dict[str, Callable[[list[str], pytest.Pytester], str | None]] = {
    "tokcompat": check_tokcompat,
    "pytest": check_pytest,
    "pip": check_pip,
    "mkdocs": check_mkdocs,
    "python": check_python,
    "ruff": check_tool("ruff", subcommands=1),
    "lint-imports": check_tool("lint-imports"),
    "mypy": check_tool("mypy"),
}


def problem_of(command: Command, pytester: pytest.Pytester) -> str | None:
    program, *args = command.argv
    checker = CHECKERS.get(program)
    if checker is None:
        return f"no test knows the program {program!r}: add a checker to tests/project/test_docs.py"
    return checker(args, pytester)


# --- the tests ------------------------------------------------------------------------------------

COMMANDS = shown_commands()


def test_the_docs_show_commands_and_this_test_sees_them() -> None:
    # the control: the extraction finds the Quickstart's commands, so an empty result cannot pass
    shown = {(command.page, shlex.join(command.argv)) for command in COMMANDS}
    assert ("README.md", "tokcompat grid") in shown
    assert ("README.md", "python -m pytest -n 2 -m e2e") in shown
    assert {command.argv[0] for command in COMMANDS} >= {"tokcompat", "pytest", "pip", "python"}
    assert len({command.page for command in COMMANDS}) >= 8, "most pages show commands"


@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_every_shown_command_exists_with_its_options(command: Command, pytester: pytest.Pytester) -> None:
    problem = problem_of(command, pytester)
    assert problem is None, f"{command}\n  {problem}"


BAD_PAGE = """
```bash
tokcompat grid --releases 5.5.4 --no-such-option
pytest --tokcompat --tokcompat-nope
pip install ".[no-such-extra]"
mkdocs build --no-such-flag
python benchmarks/no_such_benchmark.py
frobnicate --now
ruff check . --no-such-ruff-flag
```

```console
$ tokcompat chek qwen3-0.6b
```
"""


def test_a_page_with_bad_commands_fails_on_each(pytester: pytest.Pytester) -> None:
    commands = commands_of(BAD_PAGE, "bad.md")
    assert [command.argv[0] for command in commands] == [
        "tokcompat", "pytest", "pip", "mkdocs", "python", "frobnicate", "ruff", "tokcompat"
    ]  # fmt: skip
    problems = [problem_of(command, pytester) for command in commands]
    assert all(problems), list(zip(commands, problems, strict=True))
    assert "--no-such-option" in str(problems[0]) and "--tokcompat-nope" in str(problems[1])
    assert "no-such-extra" in str(problems[2]) and "frobnicate" in str(problems[5])
    # the same commands spelt right pass: the checkers see what they look for
    good = commands_of(BAD_PAGE.replace(" --no-such-option", "").replace("-nope", ""), "good.md")
    assert problem_of(good[0], pytester) is None and problem_of(good[1], pytester) is None
    assert problem_of(Command("good.md", 1, ("ruff", "check", ".")), pytester) is None


def test_shell_lines_join_continuations_and_split_chains() -> None:
    text = '```bash\nFOO=1 tokcompat grid \\\n    --with .  # a comment\npip install ".[grid]" && tokcompat grid\n```\n'
    assert [shlex.join(command.argv) for command in commands_of(text, "p.md")] == [
        "tokcompat grid --with .",
        "pip install '.[grid]'",
        "tokcompat grid",
    ]
    assert [command.line for command in commands_of(text, "p.md")] == [2, 4, 4]


def test_the_readme_is_short_and_its_links_resolve() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = readme.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the details belong in docs/"
    long = [number for number, line in enumerate(lines, 1) if len(line) > 300]
    assert not long, f"README.md lines over 300 characters: {long}"
    links = re.findall(r"\]\(((?!https?:)[^)#]+)(?:#[^)]*)?\)", readme)
    assert "docs/tutorial.md" in links, "the control: the README links the tutorial"
    missing = [link for link in links if not (REPO / link).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_home_page_shows_the_readme_quickstart_verbatim() -> None:
    def quickstart(text: str) -> str:
        return text.split("## Quickstart", 1)[1].split("```bash", 1)[1].split("```", 1)[0]

    readme = quickstart((REPO / "README.md").read_text(encoding="utf-8"))
    assert "tokcompat grid" in readme
    assert quickstart((DOCS / "index.md").read_text(encoding="utf-8")) == readme


def test_every_page_is_in_the_navigation() -> None:
    import yaml

    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = set(re.findall(r"[\w/.-]+\.md", str(config["nav"])))
    pages = {str(path.relative_to(DOCS)) for path in PAGES}
    assert "tutorial.md" in listed
    assert pages == listed, f"not in nav: {sorted(pages - listed)}; in nav, no page: {sorted(listed - pages)}"


# --- the Python examples ----------------------------------------------------------------------------


def python_problems(block: str) -> list[str]:
    """A Python example compiles, and every name it imports from this package exists there."""
    try:
        tree = ast.parse(block)
    except SyntaxError as error:
        return [f"line {error.lineno}: {error.msg}"]
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pytest_tokcompat"):
            module = importlib.import_module(str(node.module))
            problems += [f"{node.module} has no {a.name}" for a in node.names if not hasattr(module, a.name)]
    return problems


PYTHON_EXAMPLES = fenced_blocks("python")


@pytest.mark.parametrize("example", PYTHON_EXAMPLES, ids=lambda example: f"{example[0]}:{example[1]}")
def test_every_python_example_compiles_and_imports_what_exists(example: tuple[str, int, str]) -> None:
    page, line, block = example
    assert python_problems(block) == [], f"{page}:{line}"


def test_a_bad_python_example_is_caught() -> None:
    assert any("import" not in p for p in python_problems("def f(:\n")), "a syntax error"
    assert python_problems("from pytest_tokcompat import load_tokenizr\n") == [
        "pytest_tokcompat has no load_tokenizr"
    ]
    assert python_problems("from pytest_tokcompat import load_tokenizer\n") == [], "the control"
    assert len(PYTHON_EXAMPLES) >= 3, "the control: the how-to pages show Python"


# --- the YAML examples ------------------------------------------------------------------------------

CASE_KEYS = {"expect", "acknowledge", "texts", "served_names", "trust_remote_code", "revision"}


def matrix_problems(block: str, folder: Path) -> list[str]:
    """What the real matrix loader says of an example: a whole matrix, or a case's keys inside one case.
    The snapshot folders an example names are created with a config.json (it shows the format, not files)."""
    data = yaml.safe_load(block)
    if not {"cases"} <= set(data):
        case = {"id": "example", "repo": "owner/name", "expect": "native", **data}
        block = yaml.safe_dump({"version": 1, "cases": [case]})
        data = yaml.safe_load(block)
    for case in data["cases"]:
        if isinstance(case, dict) and isinstance(case.get("snapshot"), str):
            (folder / case["snapshot"]).mkdir(parents=True, exist_ok=True)
            (folder / case["snapshot"] / "config.json").write_text("{}", encoding="utf-8")
    path = folder / "models.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(block, encoding="utf-8")
    try:
        load_matrix(path)
    except MatrixError as error:
        return [str(problem) for problem in error.problems]
    return []


def is_matrix_example(block: str) -> bool:
    data = yaml.safe_load(block)
    return isinstance(data, dict) and ("cases" in data or bool(set(data) & CASE_KEYS))


MATRIX_EXAMPLES = [example for example in fenced_blocks("yaml") if is_matrix_example(example[2])]
WORKFLOW_EXAMPLES = [example for example in fenced_blocks("yaml") if not is_matrix_example(example[2])]


def test_the_docs_show_matrix_and_workflow_examples() -> None:
    # the control: both kinds are found, and every YAML block is one of them
    pages = {page for page, _line, _block in MATRIX_EXAMPLES}
    assert {"docs/reference/matrix.md", "docs/tutorial.md", "docs/how-to/declare-an-alias.md"} <= pages
    assert "README.md" in {page for page, _line, _block in WORKFLOW_EXAMPLES}


@pytest.mark.parametrize("example", MATRIX_EXAMPLES, ids=lambda example: f"{example[0]}:{example[1]}")
def test_every_matrix_example_loads(example: tuple[str, int, str], tmp_path: Path) -> None:
    page, line, block = example
    assert matrix_problems(block, tmp_path) == [], f"{page}:{line}: the matrix example does not load"


def test_a_bad_matrix_example_is_refused(tmp_path: Path) -> None:
    assert matrix_problems('    expect:\n      "<5.3": nativ\n', tmp_path / "a"), "an unknown outcome"
    assert matrix_problems(
        "version: 1\ncases:\n  - id: x\n    snapshot: s\n    expect: native\n    colour: 1\n", tmp_path / "b"
    )
    assert matrix_problems('    expect:\n      "<5.3": native\n', tmp_path / "c") == [], "the control"


def workflow_folder(blocks: list[str], folder: Path) -> list[Path]:
    """The examples as workflows of a repository that holds this project's reusable workflow and action
    at the paths the examples name, so actionlint checks every input they pass against the real ones."""
    (folder / ".git").mkdir(parents=True)  # actionlint finds the repository's own workflows from its root
    workflows = folder / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "tokcompat-grid.yml").write_bytes(
        (REPO / ".github/workflows/tokcompat-grid.yml").read_bytes()
    )
    (folder / "action.yml").write_bytes((REPO / "action.yml").read_bytes())
    written = []
    for number, block in enumerate(blocks):
        text = block.replace(
            "OWNER/pytest-tokcompat/.github/workflows/tokcompat-grid.yml@REF",
            "./.github/workflows/tokcompat-grid.yml",
        )
        text = text.replace("OWNER/pytest-tokcompat@REF", "./")
        if "jobs" not in yaml.safe_load(text):  # a job's steps: put them into a job of their own
            text = "on: push\njobs:\n  example:\n    runs-on: ubuntu-latest\n" + text
        written.append(workflows / f"example-{number}.yml")
        written[-1].write_text(text, encoding="utf-8")
    return written


def lint_examples(paths: list[Path], folder: Path) -> subprocess.CompletedProcess[str]:
    command = [actionlint(), "-no-color", *map(str, paths)]
    return subprocess.run(command, capture_output=True, text=True, cwd=folder, timeout=120, check=False)


def test_every_workflow_example_passes_actionlint_against_the_real_inputs(tmp_path: Path) -> None:
    assert len(WORKFLOW_EXAMPLES) >= 3, "the control: README, tutorial and nightly show workflows"
    paths = workflow_folder([block for _page, _line, block in WORKFLOW_EXAMPLES], tmp_path)
    result = lint_examples(paths, tmp_path)
    where = {
        str(path): f"{page}:{line}"
        for path, (page, line, _block) in zip(paths, WORKFLOW_EXAMPLES, strict=True)
    }
    assert result.returncode == 0, (where, result.stdout)


def test_a_workflow_example_with_an_input_the_workflow_lacks_fails(tmp_path: Path) -> None:
    block = next(block for page, _line, block in WORKFLOW_EXAMPLES if page == "README.md")
    assert "      matrix: ci/tokenizers.yaml\n" in block
    bad = block.replace(
        "      matrix: ci/tokenizers.yaml\n", "      matrix: ci/tokenizers.yaml\n      no-such-input: x\n"
    )
    paths = workflow_folder([bad], tmp_path)
    result = lint_examples(paths, tmp_path)
    assert result.returncode != 0 and "no-such-input" in result.stdout, result.stdout


# --- the generated reference ---------------------------------------------------------------------


def test_the_cli_reference_is_generated_from_the_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = reference_hook()
    text = hook.cli_reference()
    parser = cli.build_parser()
    for name, sub in hook._subcommands(parser).items():
        assert f"## `tokcompat {name}`" in text
        for action in sub._actions:
            for option in action.option_strings:
                assert option in text, f"tokcompat {name} {option}"
    # control: an option added to the parser appears without any page being edited
    build = cli.build_parser

    def with_extra_option() -> object:
        built = build()
        hook._subcommands(built)["grid"].add_argument("--a-new-option", help="added by the test")
        return built

    monkeypatch.setattr(cli, "build_parser", with_extra_option)
    assert "--a-new-option" in hook.cli_reference() and "--a-new-option" not in text


def test_the_pytest_reference_lists_every_option_ini_key_and_hook() -> None:
    hook = reference_hook()
    recorder = hook.recorded_options()
    options = hook.pytest_reference()
    assert "--tokcompat-load-timeout" in options and "tokcompat_matrix" in options  # control
    for names, _attrs in recorder.options:
        assert all(f"`{name}`" in options for name in names), names
    for name, _help, _attrs in recorder.inis:
        assert f"`{name}`" in options, name
    assert "default 300)" in options, "each limit's help names its default"

    from pytest_tokcompat.pytest_plugin import hooks

    hooks_text = hook.hooks_reference()
    specs = [name for name in vars(hooks) if name.startswith("pytest_tokcompat_")]
    assert specs, "the control: the hook module has specifications"
    for name in specs:
        assert f"### `{name}`" in hooks_text
        doc = (getattr(hooks, name).__doc__ or "").strip().splitlines()[0]
        assert doc in hooks_text


def test_the_schema_references_cover_every_definition() -> None:
    from pytest_tokcompat.contract import load_report_schema
    from pytest_tokcompat.matrix.schema import load_schema

    hook = reference_hook()
    for schema, prefix in ((load_schema(), "matrix"), (load_report_schema(), "report")):
        text = hook.schema_reference(schema, prefix)
        for name in schema["$defs"]:
            assert f"{{#{prefix}-{name.replace('_', '-')}}}" in text, name
        for field in schema["properties"]:
            assert f"| `{field}` |" in text, field
        for target in re.findall(r"\]\(#([\w-]+)\)", text):
            assert f"{{#{target}}}" in text, f"a link to #{target} has no heading"


def test_every_page_expands_and_an_unknown_marker_fails_naming_the_page() -> None:
    hook = reference_hook()
    markers = 0
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        markers += len(hook.MARKER.findall(text))
        assert not hook.MARKER.search(hook.expand(text, path.name)), path
    assert markers == len(hook.GENERATORS), "every generator is used on some page"
    with pytest.raises(ValueError, match=r"bad\.md: unknown reference marker 'clii'"):
        hook.expand("<!-- tokcompat-reference: clii -->\n", "bad.md")


def test_every_environment_variable_of_the_code_is_documented() -> None:
    used = set()
    for path in (REPO / "pytest_tokcompat").rglob("*.py"):
        used |= set(re.findall(r"\bTOKCOMPAT_[A-Z][A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8")))
    assert "TOKCOMPAT_MAX_MEMORY_MB" in used, "the control: the scan finds the variables"
    page = reference_hook().expand((DOCS / "reference" / "environment.md").read_text(encoding="utf-8"))
    missing = sorted(name for name in used if f"`{name}`" not in page)
    assert not missing, f"docs/reference/environment.md does not document {missing}"


def build_site(project: Path, site: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    return subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=300, check=False)


# --- the public API ----------------------------------------------------------------------------------


def test_every_public_name_resolves_and_is_documented_on_the_api_page() -> None:
    import pytest_tokcompat

    hook = reference_hook()
    page = (DOCS / "reference" / "api.md").read_text(encoding="utf-8")
    assert "<!-- tokcompat-reference: public-api -->" in page, "the page is generated from __all__"
    text = hook.expand(page, "api.md")
    assert len(pytest_tokcompat.__all__) > 10, "the control: __all__ lists the API"
    for name in pytest_tokcompat.__all__:
        value = getattr(pytest_tokcompat, name)  # resolves: the lazy import finds it
        assert f"### `{name}`" in text, f"docs/reference/api.md does not document {name}"
        doc = (getattr(value, "__doc__", None) or "").strip() if name != "__version__" else str(value)
        assert doc.splitlines()[0] in text, f"the page does not show the docstring of {name}"


def test_a_public_name_without_a_docstring_fails_the_build() -> None:
    hook = reference_hook()

    class Documented:
        """A documented class."""

    class Undocumented(Documented):
        pass

    package = types.ModuleType("fake_package")
    package.__all__ = ["Documented", "Undocumented"]  # type: ignore[attr-defined]
    package.Documented, package.Undocumented = Documented, Undocumented  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"fake_package\.Undocumented is in __all__ but has no docstring"):
        hook.api_reference(package)
    package.__all__ = ["Documented"]  # type: ignore[attr-defined]
    assert "A documented class." in hook.api_reference(package)


def test_listing_the_public_api_imports_neither_transformers_nor_the_judge() -> None:
    code = (
        "import sys, pytest_tokcompat as t; print(t.__all__); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('transformers', 'tokenizers') "
        "or m.startswith(('pytest_tokcompat.judge', 'pytest_tokcompat.api'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    listed, imported = result.stdout.splitlines()
    assert "'load_tokenizer'" in listed and "'LoadedTokenizer'" in listed
    assert imported == "[]", imported
    control = subprocess.run(
        [sys.executable, "-c", code.replace("print(t.__all__)", "t.load_tokenizer")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "pytest_tokcompat.api" in control.stdout, "the control: using a name imports its module"
