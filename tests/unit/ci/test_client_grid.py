"""`tokcompat grid --with REQ --loader SPEC`: a client package in every release's environment and its
loader's row in the grid. tox stands in as in test_gridrun.py (the real run is test_client_grid_e2e.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_tokcompat.ci import gridrun, releases
from tests.helpers.fakegrid import INDEX, FakeTox, grid, recorded
from tests.helpers.paths import DATA

CLIENT = DATA / "client_pkg"
LOADER = "cfg=tokcompat_selftest_client.loaders:config_only_alias"


def test_the_tox_config_installs_the_clients_and_passes_the_loaders(tmp_path: Path) -> None:
    found = releases.resolve_spec("5.10.4", index=INDEX, fetch=recorded)
    wheel = tmp_path / "pytest_tokcompat-0.1.0-py3-none-any.whl"
    text = gridrun.write_tox_ini(
        tmp_path,
        found,
        tmp_path / "m.yaml",
        wheel,
        "/usr/bin/python3",
        with_requirements=(str(CLIENT), "aiperf==0.13.0"),
        loaders=(LOADER, "repair=m:f:tokenizer"),
        loader_kwargs=('repair={"tokenizer_mode": "slow"}',),
    ).read_text()
    ini = (tmp_path / "pytest.ini").read_text()
    deps = text.split("deps =\n", 1)[1].split("\n\n", 1)[0].splitlines()
    deps = [line.strip() for line in deps if line.startswith("    ")]
    assert deps[0] == str(wheel), "the package under test first, then the extras it needs"
    assert deps[-3:] == ["transformers==5.10.4", str(CLIENT), "aiperf==0.13.0"], deps
    assert "--tokcompat-loader" not in text, "JSON braces on a tox command line would be substitutions"
    assert f"tokcompat_loaders =\n    {LOADER}\n    repair=m:f:tokenizer\n" in ini
    assert 'tokcompat_loader_kwargs =\n    repair={"tokenizer_mode": "slow"}\n' in ini
    import iniconfig

    parsed = iniconfig.IniConfig(tmp_path / "pytest.ini")["pytest"]
    assert parsed["tokcompat_loader_kwargs"].strip() == 'repair={"tokenizer_mode": "slow"}', (
        "as pytest reads it"
    )


def test_with_and_loader_reach_every_env_and_are_part_of_each_cells_key(
    project: Path,
    tox: FakeTox,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = tmp_path / "client"
    (client / "pkg").mkdir(parents=True)
    (client / "pkg" / "__init__.py").write_text("VERSION = 1\n")
    argv = ["--releases", "5.10.4,5.11.0", "--with", str(client), "--loader", LOADER]
    code, out, err = grid(argv, capsys)
    assert code == 0, out + err
    tox_ini = (project / "tokcompat-grid" / ".work" / "tox.ini").read_text()
    assert tox_ini.count(f"    {client.resolve()}\n") == 2, "in each release's deps"
    assert (
        f"tokcompat_loaders =\n    {LOADER}\n"
        in (project / "tokcompat-grid" / ".work" / "pytest.ini").read_text()
    )
    assert "cells: 6, reused 0, judged 6" in out

    tox.builds.clear()
    assert "cells: 6, reused 6, judged 0 (nothing changed)" in grid(argv, capsys)[1]
    assert tox.builds == [], "the same client: the envs are kept"

    (client / "pkg" / "__init__.py").write_text("VERSION = 2\n")  # the client changed: rebuild, re-judge
    recreated: list[tuple[tuple[str, ...], bool]] = []

    def recording(work: Path, envs: list[str], **options: object) -> gridrun.ToxRun:
        if options.get("notest") and envs:
            recreated.append((tuple(envs), bool(options.get("recreate"))))
        return tox(work, envs, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(gridrun, "run_tox", recording)
    out = grid(argv, capsys)[1]
    assert "cells: 6, reused 0, judged 6" in out
    assert recreated == [(("tf-5.10.4", "tf-5.11.0"), True)], "built anew, not updated in place"

    out = grid(["--releases", "5.10.4,5.11.0", "--with", str(client)], capsys)[1]
    assert "cells: 6, reused 0, judged 6" in out, "another --loader set: other cells"

    out = grid([*argv, "--loader-kwargs", '{"use_fast": true}'], capsys)[1]
    assert "cells: 6, reused 0, judged 6" in out, "other keyword arguments: other cells"
    assert 'cfg={"use_fast": true}' in (project / "tokcompat-grid" / ".work" / "pytest.ini").read_text()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["--with", "not a requirement!"],
            "--with 'not a requirement!' is neither a requirement nor an existing path",
        ),
        (["--with", ""], "give one requirement"),
        (["--loader", "no-colon"], "--loader 'no-colon' is not of the form"),
        (["--loader", "x=m:f", "--loader", "x=m:g"], "two loaders are named 'x'"),
        (["--loader", "x=m:f", "--loader-kwargs", "{not json"], "--loader-kwargs '{not json' is not JSON"),
        (["--loader", "x=m:f", "--loader-kwargs", "[1]"], "is a JSON list, not an object"),
        (["--loader", "x=m:f", "--loader-kwargs", 'y={"a": 1}'], "no loader is named 'y'"),
        (["--loader-kwargs", '{"a": 1}'], "no loader is given; name the loader"),
        (["--loader", "x=m:f", "--loader", "y=m:g", "--loader-kwargs", "{}"], "2 loaders are given"),
    ],
)
def test_bad_with_or_loader_is_bad_input(
    project: Path,
    tox: FakeTox,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    says: str,
) -> None:
    code, _, err = grid(["--releases", "5.11.0", *argv], capsys)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
    assert tox.builds == []


def test_the_cli_help_names_both_options(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_tokcompat.cli import main

    assert main(["grid", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--with REQ" in out and "--loader [NAME=]MODULE:CALLABLE[:ATTR]" in out


def test_a_bare_name_is_a_requirement_even_where_a_folder_of_that_name_exists(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mypkg").mkdir()
    assert gridrun.install_line("mypkg") == "mypkg" and gridrun.requirement_identity("mypkg") == "mypkg"
    assert gridrun.install_line("./mypkg") == str(tmp_path / "mypkg")
    assert gridrun.requirement_identity("./mypkg").startswith(f"{tmp_path / 'mypkg'}#")


@pytest.mark.parametrize("in_git", [True, False], ids=["git-work-tree", "plain-folder"])
def test_with_dot_hashes_the_package_sources_so_a_rerun_reuses_every_cell(
    project: Path,
    tox: FakeTox,
    capsys: pytest.CaptureFixture[str],
    in_git: bool,
) -> None:
    import subprocess

    (project / "client_pkg").mkdir()
    (project / "client_pkg" / "__init__.py").write_text("VERSION = 1\n")
    (project / "pyproject.toml").write_text("[project]\nname = 'client-pkg'\nversion = '1'\n")
    if in_git:
        subprocess.run(["git", "init", "-q", str(project)], check=True)
        (project / ".gitignore").write_text("*.log\n")
    else:
        (project / ".git").mkdir()  # a version-control folder that is no source
    argv = ["--releases", "5.10.4,5.11.0", "--with", ".", "--loader", LOADER]
    assert "cells: 6, reused 0, judged 6" in grid(argv, capsys)[1]
    assert (project / "tokcompat-grid" / "grid.md").is_file(), "the output folder is inside the package"
    (project / ".git" / "index-ish").write_text("changed by git\n")
    (project / "client_pkg" / "__pycache__").mkdir()
    (project / "client_pkg" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (project / "run.log").write_text("ignored by .gitignore\n" if in_git else "")
    if not in_git:
        (project / "run.log").unlink()
    out = grid(argv, capsys)[1]
    assert "cells: 6, reused 6, judged 0 (nothing changed)" in out, out
    # the control: an edit of the package's own source is seen
    (project / "client_pkg" / "__init__.py").write_text("VERSION = 2\n")
    assert "cells: 6, reused 0, judged 6" in grid(argv, capsys)[1]


UV_CONFLICT = {
    "plain": (
        "tf-5.10.4: install_deps> uv pip install ...\n"
        "  x No solution found when resolving dependencies:\n"
        "error: No solution found when resolving dependencies\n"
        "  cause: Because vllm==0.33.0 depends on tokenizers>=0.23.2 and transformers==5.10.4 depends on "
        "tokenizers>=0.22.0,<=0.23.0, we can conclude that transformers==5.10.4 and vllm==0.33.0 are incompatible.\n"
        "         And because you require transformers==5.10.4 and vllm==0.33.0, we can conclude that your "
        "requirements are unsatisfiable.\n"
        "tf-5.10.4: exit 1 (0.41 seconds)\n"
    ),
    "terminal": (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because vllm==0.33.0 depends on tokenizers>=0.23.2 and transformers==5.10.4 depends on "
        "tokenizers>=0.22.0,<=0.23.0, we can conclude that transformers==5.10.4 and vllm==0.33.0 are incompatible.\n"
        "      And because you require transformers==5.10.4 and vllm==0.33.0, we can conclude that your "
        "requirements are unsatisfiable.\n"
        "\n"
    ),
}


@pytest.mark.parametrize("form", sorted(UV_CONFLICT))
def test_a_with_requirement_that_conflicts_with_a_release_is_reported_as_that(
    project: Path,
    tox: FakeTox,
    capsys: pytest.CaptureFixture[str],
    form: str,
) -> None:
    tox.fail_build.add("tf-5.10.4")
    tox.build_output["tf-5.10.4"] = UV_CONFLICT[form]
    code, out, _ = grid(["--releases", "5.10.4,5.11.0", "--with", "vllm==0.33.0"], capsys)
    assert code == 3, out
    said = (
        "the environment for transformers==5.10.4 cannot be built: the requirements conflict (the resolver: "
        "Because vllm==0.33.0 depends on tokenizers>=0.23.2 and transformers==5.10.4 depends on "
        "tokenizers>=0.22.0,<=0.23.0, we can conclude that transformers==5.10.4 and vllm==0.33.0 are "
        "incompatible. And because you require transformers==5.10.4 and vllm==0.33.0, we can conclude that "
        "your requirements are unsatisfiable.); drop or relax the --with requirement"
    )
    assert f"transformers 5.10.4: 0 reused, 0 judged; {said}" in out
    assert "incomplete grid" in out and said in out.split("incomplete grid", 1)[1]
    assert "pytest exit status" not in out and "interrupted" not in out
    # the control: a build that fails for another reason says only that it could not be built
    tox.build_output["tf-5.10.4"] = "tf-5.10.4: exit 2 (disk full)\n"
    code, out, _ = grid(["--releases", "5.10.4,5.11.0", "--with", "vllm==0.33.0"], capsys)
    assert code == 3 and "could not be built (tox exit 1)" in out and "conflict" not in out
