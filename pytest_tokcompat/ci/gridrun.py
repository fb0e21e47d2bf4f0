"""``tokcompat grid``: a matrix under a set of transformers releases, in one command.

One tox environment per release (tox with tox-uv), from a configuration generated
into the work folder, so the user writes no tox.ini and a project's own tox.ini is
never read or touched. Each environment gets this very package (a wheel of its own
files, see :mod:`pytest_tokcompat.ci.install`) and one transformers, and runs
``pytest --tokcompat`` on the matrix in an empty folder. The parent never judges
anything itself: it plans, drives tox, and reads the reports the children write.

A *cell* is one case under one release; the rest a release judges (the alias
lifecycles) is that release's *extras* cell. Cells are reused from a cache when
nothing that determines them changed: the checkpoint's files (a snapshot folder's
files and manifest; a hub repo at a commit sha), the entry's own YAML and the
matrix settings, the golden ids, the installed transformers, tokenizers and
huggingface_hub, the judge (this package's version and a hash of its sources), and
the probe corpus. ``main`` is never reused. ``--shard I/N`` takes the I-th of N
shares of the cells of near-equal measured cost (:mod:`pytest_tokcompat.ci.schedule`;
each run records what its cells cost, and a sharded run reads but never writes those
costs, so shards run one after another split alike), whole releases where the
balance allows, so a shard builds few environments; ``tokcompat report`` merges the
shards' reports into one grid.

Whatever the cells say, the per-release reports and the merged grid (Markdown,
HTML, JSON) are written and the grid is printed. Exit status: 0 every cell as
expected and no alarm, 1 an unexpected verdict or an alarm, 2 bad input, 3 an
incomplete grid (:meth:`pytest_tokcompat.ci.grid.Grid.exit_status`, shared with ``tokcompat report``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from pytest_tokcompat import environment
from pytest_tokcompat.ci import grid as grid_module
from pytest_tokcompat.ci import schedule
from pytest_tokcompat.ci.cellcheck import records_problem
from pytest_tokcompat.ci.envcheck import Integrity
from pytest_tokcompat.ci.gridlog import rotate_log
from pytest_tokcompat.ci.gridprogress import PROGRESS_ENV, make_progress
from pytest_tokcompat.ci.install import (
    LINK_MODE,
    PACKAGE_DIR,
    TRUTH_CACHE_VAR,
    cache_home,
    extra_requirements,
    own_wheel,
    truth_cache,
)
from pytest_tokcompat.ci.releases import UPSTREAM_ENV, GridRelease, resolve_spec
from pytest_tokcompat.contract import (
    OUTPUT_GITIGNORE,
    SCHEMA_VERSION,
    judge_identity,
    make_output_folder,
    not_checked_record,
    probe_set_identity,
    write_json_atomic,
)
from pytest_tokcompat.credentials import credential_values, scrub
from pytest_tokcompat.errors import BuildError, MatrixError, ReleaseError, ReportError, TokcompatError
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.inert import config_problem, terminal
from pytest_tokcompat.matrix.loader import Case, Matrix, load_matrix
from pytest_tokcompat.matrix.settings import CONFIG_VAR, NO_CONFIG, resolve_settings

EXTRAS = "@extras"
DEFAULT_SPEC = "minors,pre"
DEFAULT_OUTPUT = "tokcompat-grid"
MIN_FLOOR = Version("4.45")
LIBRARIES = ("transformers", "tokenizers", "huggingface_hub", "pytest-tokcompat")
NOT_CHECKED = "not-checked"
SETTINGS_IGNORED = {"cases", "floor"}
"""Top-level matrix keys that do not change any cell (every other one, golden_dir, ... may)."""
PASS_ENV = [
    "HF_*", "HUGGINGFACE_*", "TOKCOMPAT_*", "XDG_CACHE_HOME", "UV_*", "PIP_*", "SSL_CERT_*",
    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
    "http_proxy", "https_proxy", "no_proxy", "GIT_*",
]  # fmt: skip
OFFLINE_LINE = "    HF_HUB_OFFLINE = 1\n"
SET_BY_TOOL_LINE = "    TOKCOMPAT_SET_BY_TOOL = HF_HUB_OFFLINE\n"
"""Names what the grid set for its own runs (not where the user's environment is offline already): a client
loader is called without it (judge.ladder.SET_BY_TOOL), so a loader with an offline branch of its own
(aiperf's) runs the branch its users run."""
Out = Callable[[str], None]


class BadInput(TokcompatError):
    """Input ``tokcompat grid`` cannot run with: exit 2, the message says what to fix."""


# Planning: the matrix's floor, the cells, the shards.


def matrix_floor(matrix: Matrix, raw: dict[str, Any]) -> Version:
    """The matrix's ``floor:``; else the oldest release its expectations cover: the lowest lower bound of
    its ranges, or 4.45 (the oldest transformers tokcompat supports) where a range has none (``<5.3``, or one
    outcome for every release)."""
    if isinstance(raw.get("floor"), str):
        return Version(raw["floor"])
    bounds: list[Version] = []
    for case in matrix.cases:
        for expectation in case.expectations:
            lower = _lower_bound(expectation.range.text)
            if lower is None:
                return MIN_FLOOR
            bounds.append(lower)
    return max(MIN_FLOOR, min(bounds)) if bounds else MIN_FLOOR


def _lower_bound(text: str) -> Version | None:
    try:
        specifiers = SpecifierSet("" if text.strip() in ("", "*") else text)
    except InvalidSpecifier:
        return None
    found: list[Version] = []
    for spec in specifiers:
        if spec.operator in (">=", ">", "==", "~=", "==="):
            try:
                found.append(Version(spec.version.removesuffix(".*")))
            except InvalidVersion:
                continue
    return max(found) if found else None


def check_with(requirements: tuple[str, ...]) -> None:
    """``--with REQ``: a requirement (``pkg``, ``pkg==1.2``, ``pkg @ URL``) or an existing local path."""
    from packaging.requirements import InvalidRequirement, Requirement

    for text in requirements:
        if not text.strip() or "\n" in text:
            raise BadInput(
                f"--with {text!r}: give one requirement, e.g. --with 'mypkg==1.2' or --with ./mypkg"
            )
        if local_path(text) is not None:
            continue
        try:
            Requirement(text)
        except InvalidRequirement as error:
            why = str(error).strip().splitlines()[0] if str(error).strip() else "invalid"
            raise BadInput(
                f"--with {text!r} is neither a requirement nor an existing path ({why}); "
                "e.g. --with 'mypkg==1.2', --with 'mypkg @ git+https://…', --with ./path/to/mypkg"
            ) from None


TOX_SPECIAL = {
    "{": "tox reads as a substitution ({env:NAME} would put a variable, a token, into an install URL)",
    "}": "tox reads as the end of a substitution",
    '"': "would end the quoted argument of the run's command",
}
"""Characters tox gives a meaning to in the lines the grid writes (deps and the quoted command)."""


def check_configuration_text(options: GridOptions, output: Path) -> None:
    """Every argument written into the generated tox.ini or pytest.ini is one line of plain text: a line
    break in ``--upstream`` would otherwise start a section of its own there."""
    given = [
        ("--upstream", options.upstream),
        (f"${UPSTREAM_ENV}", None if options.upstream else environment.read(UPSTREAM_ENV)),
        ("--releases", options.releases),
        *(("--with", text) for text in options.with_requirements),
        *(("--loader", text) for text in options.loaders),
        ("--matrix", str(options.matrix.resolve()) if options.matrix else None),
        ("--output", str(output)),
        ("the Python running tokcompat", sys.executable),
    ]
    for option, value in given:
        if value is None:
            continue
        problem = config_problem(option, value)
        special = next((char for char in TOX_SPECIAL if char in value), None)
        if problem is None and special is not None:
            problem = (
                f"{option} {value!r}: holds {special!r}, which {TOX_SPECIAL[special]} in the generated tox.ini; "
                "give the value without it"
            )
        if problem:
            raise BadInput(problem)


def check_loaders(specs: tuple[str, ...], kwargs: tuple[str, ...] = ()) -> list[str]:
    """``--loader SPEC`` (the form --tokcompat-loader takes, one name each) and ``--loader-kwargs
    [NAME=]JSON``: the kwargs as each run gets them, ``NAME={...}`` on one line each."""
    from pytest_tokcompat.matrix.clients import check_unique, parse_kwargs_option, parse_loader_option

    try:
        loaders = [parse_loader_option(spec) for spec in specs]
    except ValueError as error:
        raise BadInput(str(error).replace("--tokcompat-loader", "--loader")) from None
    problem = check_unique(loaders)
    if problem:
        raise BadInput(problem.replace("on the command line", "in --loader"))
    lines: list[str] = []
    for text in kwargs:
        try:
            name, given = parse_kwargs_option(text, [loader.name for loader in loaders], "--loader-kwargs")
        except ValueError as error:
            raise BadInput(str(error)) from None
        lines.append(f"{name}={json.dumps(given, sort_keys=True, ensure_ascii=True)}")
    return lines


def local_path(text: str) -> Path | None:
    """The local file or folder a ``--with`` value names, written as a path (``.``, ``./pkg``, ``a/b``,
    ``~/x``, ``/abs``, ``x.whl``); None for a requirement (``pkg`` stays a name even where a folder of that
    name exists, as for pip and uv)."""
    looks_like_path = text.startswith((".", "~")) or os.sep in text or "/" in text or text.endswith(".whl")
    path = Path(text).expanduser()
    return path if looks_like_path and path.exists() else None


def install_line(text: str) -> str:
    """The deps line of a ``--with`` requirement: a local path made absolute (tox runs elsewhere)."""
    path = local_path(text)
    return str(path.resolve()) if path is not None else text


def requirement_identity(text: str, outputs: tuple[Path, ...] = ()) -> str:
    """What a ``--with`` requirement installs, as a string: a local path with a hash of the sources it is
    built from (so an edit rebuilds the environments and re-judges their cells; ``outputs``, the grid's own
    folders, never count), anything else as written."""
    path = local_path(text)
    if path is not None and path.is_dir():
        return f"{path.resolve()}#{package_hash(path, outputs)[:16]}"
    if path is not None and path.is_file():
        return f"{path.resolve()}#{_sha(path.read_bytes())[:16]}"
    return text


def parse_shard(text: str | None) -> tuple[int, int]:
    if text is None:
        return 1, 1
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise BadInput(f"--shard {text!r}: write I/N with 1 <= I <= N, e.g. --shard 2/4")
    return int(match.group(1)), int(match.group(2))


def plan_cells(releases: list[GridRelease], case_ids: list[str]) -> list[tuple[str, str]]:
    """Every cell, release by release (oldest first, ``main`` last), the extras cell first in each."""
    return [(release.label, cell) for release in releases for cell in [EXTRAS, *sorted(case_ids)]]


def shard_of(
    cells: list[tuple[str, str]], index: int, count: int, costs: schedule.Costs | None = None
) -> list[tuple[str, str]]:
    """The ``index``-th (1-based) of ``count`` shards of ``cells`` of near-equal cost (the recorded
    ``costs``, else estimates: :func:`pytest_tokcompat.ci.schedule.split`): deterministic, disjoint,
    together all of them, and each spans few releases (few environments to build)."""
    known = costs or {}
    cost = {cell: schedule.estimate(known, *cell) for cell in cells}
    return schedule.split(cells, count, cost)[index - 1]


# What determines a cell: its key.


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def folder_hash(folder: Path) -> str:
    """Every file of a folder (names and contents), the snapshot manifest included."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(
                path.relative_to(folder).as_posix().encode() + b"\0" + _sha(path.read_bytes()).encode()
            )
    return digest.hexdigest()


NOT_SOURCES = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".venv", "venv", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".hypothesis", "build", "dist", "node_modules", DEFAULT_OUTPUT}
)  # fmt: skip
"""Folder names that are never a package's sources (even where a repository's .gitignore leaves them out)."""


def package_files(folder: Path, outputs: tuple[Path, ...] = ()) -> list[Path]:
    """The files a local package is built from: what git tracks or would track (``git ls-files --cached
    --others --exclude-standard``: the repository's .gitignore applies) in a git work tree, else every file;
    never version-control folders, caches, build outputs, ``*.egg-info`` or anything inside ``outputs``."""
    root = folder.resolve()
    skipped = [output.resolve() for output in outputs]
    listed: list[Path] | None = None
    command = [
        "git",
        "-C",
        str(root),
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
        "--",
        ".",
    ]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(command, capture_output=True, check=False, timeout=60)
        if done.returncode == 0:
            names = done.stdout.decode("utf-8", "surrogateescape").split("\0")
            listed = [root / name for name in names if name]
    return sorted(
        path
        for path in (root.rglob("*") if listed is None else listed)
        if path.is_file()
        and not any(
            part in NOT_SOURCES or part.endswith(".egg-info") for part in path.relative_to(root).parts
        )
        and not any(path == out or out in path.parents for out in skipped)
    )


def package_hash(folder: Path, outputs: tuple[Path, ...] = ()) -> str:
    """A local package's sources (:func:`package_files`), names and contents."""
    digest = hashlib.sha256()
    root = folder.resolve()
    for path in package_files(root, outputs):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + _sha(path.read_bytes()).encode())
    return digest.hexdigest()


def judge_version() -> str:
    """This package's version and a hash of every source that judges (all but the CI tools)."""
    return judge_identity(PACKAGE_DIR)


def probe_set() -> str:
    return probe_set_identity(PACKAGE_DIR)


class Keys:
    """Cell keys for one matrix: the part that does not depend on the environment, computed once."""

    def __init__(self, matrix: Matrix, raw: dict[str, Any], clients: dict[str, Any] | None = None) -> None:
        self.clients = clients or {}
        """``--with`` requirements and ``--loader`` specs: they change what a cell holds."""
        self.judge = judge_version()
        self.probes = probe_set()
        self.settings = {k: v for k, v in raw.items() if k not in SETTINGS_IGNORED}
        listed = raw.get("cases")
        entries: list[Any] = listed if isinstance(listed, list) else []
        by_id = {str(e.get("id")): e for e in entries if isinstance(e, dict)}
        self.static: dict[str, dict[str, Any] | None] = {
            case.id: self._static(case, by_id.get(case.id)) for case in matrix.cases
        }

    @staticmethod
    def _static(case: Case, entry: dict[str, Any] | None) -> dict[str, Any] | None:
        """What determines a case apart from the environment, or None when it cannot be known unrun."""
        if entry is None:
            return None
        if case.snapshot is not None:
            if not case.snapshot.is_dir():
                return None
            checkpoint = {"snapshot": folder_hash(case.snapshot)}
        elif case.repo and case.revision and re.fullmatch(r"[0-9a-f]{40}", case.revision):
            checkpoint = {"hub": f"{case.repo}@{case.revision}"}
        else:
            return None  # a hub repo at a branch or tag: its files may change under the same name
        golden = case.golden_path
        return {
            "entry": entry,
            "checkpoint": checkpoint,
            "golden": _sha(golden.read_bytes()) if golden is not None and golden.is_file() else None,
        }

    def fields(self, cell: str, versions: dict[str, str | None]) -> dict[str, Any] | None:
        common = {
            "settings": self.settings,
            "versions": {name: versions.get(name) for name in ("python", *LIBRARIES[:3])},
            "judge": self.judge,
            "probes": self.probes,
            **({"clients": self.clients} if self.clients else {}),
        }
        if cell != EXTRAS:
            static = self.static.get(cell)
            return None if static is None else {"cell": "case", **static, **common}
        if any(static is None for static in self.static.values()):
            return None
        return {"cell": "extras", "cases": self.static, **common}

    def key(self, cell: str, versions: dict[str, str | None]) -> str | None:
        found = self.fields(cell, versions)
        return None if found is None else _sha(_canonical(found).encode())


class CellCache:
    """Content-addressed results: ``<root>/<key[:2]>/<key>.json`` holding the records of one cell.

    A file is taken only when it fits its cell (:mod:`pytest_tokcompat.ci.cellcheck`); one that does not is
    deleted, and why is kept in ``discarded`` for the run to say."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.discarded: list[str] = []

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(
        self, key: str, fields: dict[str, Any], check: Callable[[Any], str | None]
    ) -> list[dict[str, Any]] | None:
        """The records kept under ``key``, if the file names that key, was made from ``fields`` (the cell's
        case, release versions, matrix and judge) and ``check`` finds nothing wrong with its records."""
        path = self._path(key)
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(document, dict):
            why: str | None = "it is not a cell file"
        elif document.get("key") != key:
            why = "it names another key"
        elif _canonical(document.get("fields")) != _canonical(fields):
            why = "it was made from other inputs than its key says"
        else:
            why = check(document.get("records"))
        if why is None:
            return list(document["records"])
        self.discarded.append(f"{path}: {why}")
        path.unlink(missing_ok=True)
        return None

    def registry(self, key: str) -> dict[str, Any] | None:
        """The upstream watch kept with an extras cell (its release's ``registry``), if it has one."""
        try:
            document = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        found = document.get("registry") if isinstance(document, dict) else None
        return found if isinstance(found, dict) and document.get("key") == key else None

    def put(
        self,
        key: str,
        records: list[dict[str, Any]],
        fields: dict[str, Any] | None,
        registry: dict[str, Any] | None = None,
    ) -> None:
        document: dict[str, Any] = {"key": key, "fields": fields, "records": records}
        if registry is not None:
            document["registry"] = registry
        write_json_atomic(self._path(key), document)


# The environments: a generated tox configuration.


def env_name(release: GridRelease) -> str:
    return f"tf-{release.label}"


def _ini_list(values: list[str]) -> str:
    return "".join(f"\n    {value}" for value in values)


def env_deps(wheel: Path, release: GridRelease, with_requirements: tuple[str, ...] = ()) -> list[str]:
    """What one environment installs: this package's wheel and its run extras (the plugin and the bundled
    data: the wheel's own requirements are the client library's), the release and the ``--with`` packages.
    The extras follow from the wheel's metadata, so an env recorded with the same wheel has the same ones."""
    return [str(wheel), *extra_requirements(), release.requirement, *with_requirements]


def _scrub_log(log: Path) -> None:
    """The log with the values of credential variables masked (the environments' runs print into it)."""
    secrets = credential_values()
    if not secrets:
        return
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = log.read_text(encoding="utf-8")
        cleaned = scrub(text, secrets)
        if cleaned != text:
            log.write_text(cleaned, encoding="utf-8")


def users_offline() -> bool:
    """The user's own environment keeps the hub offline (as huggingface_hub reads HF_HUB_OFFLINE): then
    the grid did not set it, and a client loader runs offline as the client would there."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def write_tox_ini(
    work: Path,
    releases: list[GridRelease],
    matrix: Path,
    wheel: Path,
    python: str,
    offline: bool = False,
    with_requirements: tuple[str, ...] = (),
    loaders: tuple[str, ...] = (),
    loader_kwargs: tuple[str, ...] = (),
    measure: bool = False,
) -> Path:
    """The tox configuration of this run: one env per release; rewritten every run. ``offline``: every case
    is a local snapshot, so the runs never need the Hugging Face Hub and are kept off it (a client's loader
    is called without that setting, see ``SET_BY_TOOL_LINE``). ``with_requirements`` go into every env beside
    transformers (a client whose loader is judged); ``loaders`` and their ``NAME=JSON`` ``loader_kwargs``
    into the runs' pytest.ini (tox would read the braces of JSON on a command line as substitutions);
    ``measure`` (``--update-expectations``) makes each run measure (``--tokcompat-measure``)."""
    measure_option = " --tokcompat-measure" if measure else ""
    sections = [
        "# Generated by `tokcompat grid` for one run and rewritten by the next: do not edit.\n"
        "# The project's own tox.ini is neither read nor changed.\n"
        "[tox]\n"
        f"env_list ={_ini_list([env_name(r) for r in releases])}\n"
        "skip_missing_interpreters = false\n\n"
        "[testenv]\n"
        "runner = uv-venv-runner\n"
        "package = skip\n"
        f"base_python = {python}\n"
        f"pass_env ={_ini_list(PASS_ENV)}\n"
        "set_env =\n"
        f"    UV_LINK_MODE = {LINK_MODE}\n"
        f"    {TRUTH_CACHE_VAR} = {truth_cache()}\n"
        f"    TOKCOMPAT_GRID_SELECT = {work / 'select'}{os.sep}{{env_name}}.json\n"
        f"    {CONFIG_VAR} = {NO_CONFIG}\n"  # the run's options are all on its command line
        f"    {PROGRESS_ENV} = {work / 'progress'}{os.sep}{{env_name}}.jsonl\n"
        f"{OFFLINE_LINE + ('' if users_offline() else SET_BY_TOOL_LINE) if offline else ''}"
        "change_dir = {env_tmp_dir}\n"
        "commands =\n"
        f'    python -m pytest -c "{work / "pytest.ini"}" --rootdir "{work}" --tokcompat '
        "-p pytest_tokcompat.ci.gridselect -p pytest_tokcompat.ci.gridprogress -p no:randomly "
        f"-p xdist -n {{env:{schedule.WORKERS_VAR}:0}} "
        f'-p no:cacheprovider -q --tokcompat-matrix "{matrix}" '
        f'--tokcompat-report "{work / "raw"}{os.sep}{{env_name}}.json"{measure_option}\n'
    ]
    for release in releases:
        sections.append(
            f"\n[testenv:{env_name(release)}]\n"
            f"description = the matrix under {release.requirement} ({release.why})\n"
            f"deps ={_ini_list(env_deps(wheel, release, with_requirements))}\n"
        )
    settings = "".join(
        f"{key} ={_ini_list(list(values))}\n"
        for key, values in (("tokcompat_loaders", loaders), ("tokcompat_loader_kwargs", loader_kwargs))
        if values
    )
    (work / "pytest.ini").write_text(PYTEST_BOUNDARY + settings, encoding="utf-8")
    path = work / "tox.ini"
    path.write_text("".join(sections), encoding="utf-8")
    return path


PYTEST_BOUNDARY = (
    "# Generated by `tokcompat grid`: do not edit.\n"
    "# The configuration of each environment's run (-c, --rootdir): the work folder may lie inside a\n"
    "# project, whose own pytest configuration (its addopts and plugins, its conftest.py) stays out.\n"
    "[pytest]\n"
)
"""Named with ``-c`` and ``--rootdir``: otherwise pytest takes the enclosing project's configuration, found
from the run's folder or from the matrix path among its arguments, for the grid's runs; addopts that name
plugins the environments do not have, or a conftest.py that imports the project, break every cell."""


def _site_packages(env: Path) -> Path | None:
    found = sorted(env.glob("lib/python*/site-packages")) + sorted(env.glob("Lib/site-packages"))
    return found[0] if found else None


def _dist_info(site: Path, name: str) -> Path | None:
    normalized = re.sub(r"[-_.]+", "_", name).lower()
    for candidate in site.glob("*.dist-info"):
        stem = candidate.name[: -len(".dist-info")].rsplit("-", 1)[0]
        if re.sub(r"[-_.]+", "_", stem).lower() == normalized:
            return candidate
    return None


def env_versions(env: Path) -> dict[str, str | None] | None:
    """The versions installed in a built env, read from its files (no process started); None if unbuilt."""
    site = _site_packages(env)
    if site is None:
        return None
    versions: dict[str, str | None] = {"python": None}
    config = env / "pyvenv.cfg"
    if config.is_file():
        for line in config.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("version_info", "version"):
                versions["python"] = value.strip()
    for name in LIBRARIES:
        info = _dist_info(site, name)
        versions[name] = None
        if info is not None and (info / "METADATA").is_file():
            for line in (info / "METADATA").read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("Version:"):
                    versions[name] = line.split(":", 1)[1].strip()
                    break
    if versions["transformers"] is None:
        return None
    info = _dist_info(site, "transformers")
    direct = info / "direct_url.json" if info else None
    if direct is not None and direct.is_file():
        try:
            commit = json.loads(direct.read_text(encoding="utf-8")).get("vcs_info", {}).get("commit_id")
        except ValueError:
            commit = None
        if commit:
            versions["commit"] = str(commit)
    return versions


NO_SOLUTION = "No solution found when resolving dependencies"
_PREFIX = re.compile(r"^(?:[\w.+-]+: )?")  # tox's "ENV: " before a line of its output


def _read_from(log: Path, start: int) -> str:
    try:
        with log.open("rb") as stream:
            stream.seek(start)
            return stream.read().decode("utf-8", "replace")
    except OSError:
        return ""


def resolver_conflicts(text: str) -> list[str]:
    """uv's explanations of why requirements cannot be resolved (``Because … unsatisfiable.``), one per
    failed resolution, each on one line, from what a build printed (plain or terminal form)."""
    found: list[str] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if NO_SOLUTION not in line:
            continue
        parts: list[str] = []
        for following in lines[index + 1 :]:
            body = _PREFIX.sub("", following, count=1)
            if not body[:1].isspace() or not body.strip():
                break
            parts.append(body.strip().removeprefix("cause:").removeprefix("╰─▶").strip())
        if parts:
            found.append(" ".join(parts))
    return found


def conflict_of(conflicts: list[str], requirement: str, failed: int) -> str | None:
    """The explanation that names ``requirement``; the only one where one build ran."""
    named = [text for text in conflicts if requirement in text]
    if named:
        return named[0]
    return conflicts[0] if len(conflicts) == 1 and failed == 1 else None


@dataclass
class ToxRun:
    code: int
    results: dict[str, int | None] = field(default_factory=dict)
    """Exit code per env (None: tox did not get to it)."""


TICK_SECONDS = 1.0


def run_tox(
    work: Path,
    envs: list[str],
    *,
    jobs: int,
    notest: bool,
    recreate: bool,
    log: Path,
    tick: Callable[[], None] | None = None,
) -> ToxRun:
    """One tox invocation over ``envs``, its output appended to ``log``; ``tick`` is called about every
    :data:`TICK_SECONDS` while it runs (the progress lines)."""
    if not envs:
        return ToxRun(0)
    result_json = work / "tox-result.json"
    result_json.unlink(missing_ok=True)
    command = [sys.executable, "-m", "tox"]
    command += (
        ["run-parallel", "-p", str(jobs), "--parallel-no-spinner"] if len(envs) > 1 and jobs > 1 else ["run"]
    )
    command += ["-c", str(work / "tox.ini"), "--root", str(work), "--workdir", str(work / ".tox")]
    command += ["-e", ",".join(envs), "--result-json", str(result_json)]
    if notest:
        command.append("--notest")
    if recreate:
        command.append("-r")
    # An outer tox env (a project's own, running `tokcompat grid`) must not steer this one: tox reads TOX_*
    # variables as its options; PYTHONPATH would shadow the package installed in each env.
    environment = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("TOX_")
    }
    environment.setdefault("PYTHONIOENCODING", "utf-8")
    environment["UV_LINK_MODE"] = LINK_MODE  # and set_env, for every install tox-uv runs in the env
    environment[schedule.WORKERS_VAR] = str(schedule.workers(len(envs), jobs))
    rotate_log(log)
    with log.open("a", encoding="utf-8") as stream:
        stream.write(f"\n$ {' '.join(command)}\n")
        stream.flush()
        process = subprocess.Popen(command, stdout=stream, stderr=subprocess.STDOUT, env=environment)
        try:
            while True:
                try:
                    returncode = process.wait(timeout=TICK_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    if tick is not None:
                        tick()
        except BaseException:  # Ctrl-C or a failing tick: tox does not outlive the grid
            process.kill()
            process.wait()
            raise
    _scrub_log(log)
    results: dict[str, int | None] = dict.fromkeys(envs)
    try:
        document = json.loads(result_json.read_text(encoding="utf-8"))
        for name, data in document.get("testenvs", {}).items():
            if name in results:
                result = data.get("result") or {}
                code = result.get("exit_code")
                results[name] = int(code) if code is not None else (0 if result.get("success") else None)
    except (OSError, ValueError):
        pass
    return ToxRun(returncode, results)


# The run.


@dataclass
class GridOptions:
    matrix: Path | None = None
    releases: str | None = None
    output: Path = Path(DEFAULT_OUTPUT)
    jobs: int | None = None
    shard: str | None = None
    upstream: str | None = None
    with_requirements: tuple[str, ...] = ()
    """``--with REQ``: installed into every release's environment beside transformers (a client package)."""
    loaders: tuple[str, ...] = ()
    """``--loader SPEC``: each release's run judges it (its pytest.ini's ``tokcompat_loaders``)."""
    loader_kwargs: tuple[str, ...] = ()
    """``--loader-kwargs [NAME=]JSON``: the keyword arguments a loader is called with."""
    update_expectations: bool = False
    """``--update-expectations``: the runs measure (``--tokcompat-measure``), the end writes the matrix."""
    allow_weaker: bool = False


@dataclass
class ReleaseRun:
    release: GridRelease
    cells: list[str]
    versions: dict[str, str | None] | None = None
    error: str | None = None
    reused: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    to_judge: list[str] = field(default_factory=list)
    keys: dict[str, str | None] = field(default_factory=dict)
    fresh: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    report: Path | None = None
    version_clash: bool = False
    registry: dict[str, Any] | None = None
    """The upstream watch of this release (the report's ``registry``): judged with the extras cell, or
    reused with it."""
    rebuilt: str | None = None
    """Why the environment was rebuilt and every cell judged again (it had changed since its install)."""
    costs: dict[str, float] = field(default_factory=dict)
    """Seconds each cell judged in this run took (its items' setup and call)."""

    @property
    def env(self) -> str:
        return env_name(self.release)


def _stub(record_id: str, message: str) -> dict[str, Any]:
    return not_checked_record(record_id, message)


def _extras_stubs(message: str, matrix: Matrix | None = None) -> list[dict[str, Any]]:
    """The alias items a release would have judged: the built-in aliases and the matrix's own."""
    from pytest_tokcompat.matrix.aliases import effective_registry

    registry = effective_registry(matrix.aliases if matrix is not None else ())
    return [_stub(f"alias:{model_type}", message) for model_type in registry]


class GridRun:
    """One ``tokcompat grid`` invocation."""

    def __init__(self, options: GridOptions, out: Out = print, err: Out | None = None) -> None:
        self.options = options
        to_err = err or (lambda line: print(line, file=sys.stderr, flush=True))
        # Printed lines carry case ids, messages and paths: control characters shown escaped.
        self.out: Out = lambda text: out(terminal(scrub(text), newlines=True))
        self.err: Out = lambda text: to_err(terminal(scrub(text), newlines=True))
        self.output = options.output.resolve()
        self.work = self.output / ".work"
        self.jobs = options.jobs or schedule.cores()
        self.costs_file = cache_home() / "grid" / "costs.json"
        self.costs: schedule.Costs = {}
        """What each cell cost when last judged (release label -> cell -> seconds)."""
        self.shard = (1, 1)
        self.matrix: Matrix | None = None
        self.loader_kwargs: list[str] = []
        """``--loader-kwargs`` as each run gets them: ``NAME=JSON`` on one line each."""
        self.path: Path | None = None
        """The matrix file this run judges (and, with --update-expectations, writes)."""
        self.progress = make_progress(self.work / "progress", self.err)
        self.with_identities: list[str] = []
        """The ``--with`` requirements as installed (local paths with a hash of their files)."""
        self.integrity = Integrity(self.work, self.work / ".tox")

    # -- planning --

    def load(self) -> tuple[Path, Matrix, dict[str, Any]]:
        path = self.options.matrix.resolve() if self.options.matrix else resolve_settings().matrix
        try:
            matrix = load_matrix(path, missing_expect=self.options.update_expectations)
        except MatrixError as error:
            lines = "\n".join(f"  {problem}" for problem in error.problems)
            raise BadInput(f"the matrix has {len(error.problems)} problem(s):\n{lines}") from None
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return path, matrix, raw if isinstance(raw, dict) else {}

    def hub_is_unreachable(self) -> bool:
        """A hub entry and a hub that takes no connection: the runs go offline and say so (no retries)."""
        from pytest_tokcompat.ci.hubprobe import hub_unreachable

        if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
            return False  # already offline: passed to the runs as it is
        why = hub_unreachable()
        if why is not None:
            self.err(
                f"tokcompat grid: the hub cannot be reached ({why}): the runs are offline (HF_HUB_OFFLINE=1); "
                "hub entries not in the hub cache are not checked, each with its fix"
            )
        return why is not None

    def check_tools(self) -> None:
        missing = [name for name in ("tox", "tox_uv") if importlib.util.find_spec(name) is None]
        if missing:
            raise BadInput(
                f"{' and '.join(missing)} not installed: install the grid extra, "
                "pip install 'pytest-tokcompat[grid]' (or '.[grid]' from a checkout)"
            )

    def run(self, plan_only: bool = False) -> int:
        try:
            self.shard = parse_shard(self.options.shard)
            check_configuration_text(self.options, self.output)
            check_with(self.options.with_requirements)
            self.loader_kwargs = check_loaders(self.options.loaders, self.options.loader_kwargs)
            self.check_tools()
            path, matrix, raw = self.load()
            self.matrix, self.path = matrix, path
            spec = self.options.releases or DEFAULT_SPEC
            try:
                releases = resolve_spec(spec, floor=matrix_floor(matrix, raw), upstream=self.options.upstream)
            except ReleaseError as error:
                raise BadInput(str(error)) from None
        except BadInput as error:
            self.err(f"tokcompat grid: {error}")
            return ExitCode.BAD_INPUT
        case_ids = [case.id for case in matrix.cases]
        every = plan_cells(releases, case_ids)
        if plan_only:
            labels = [release.label for release in releases]
            self.out(json.dumps({"releases": ",".join(labels), "labels": labels, "cells": len(every)}))
            return ExitCode.OK
        self.costs = schedule.load_costs(self.costs_file)
        mine = shard_of(every, *self.shard, self.costs)
        runs = [
            ReleaseRun(release, [cell for label, cell in mine if label == release.label])
            for release in releases
        ]
        runs = [run for run in runs if run.cells]
        shard_text = (
            f" (shard {self.shard[0]}/{self.shard[1]}: {len(mine)} of {len(every)} cells)"
            if self.shard[1] > 1
            else ""
        )
        self.err(
            f"tokcompat grid: {len(matrix.cases)} cases of {path} under {len(releases)} releases "
            f"({', '.join(r.label for r in releases)}){shard_text}"
        )
        try:
            wheel = own_wheel()
        except BuildError as error:
            self.err(f"tokcompat grid: {error}")
            return ExitCode.BAD_INPUT
        self.prepare_dirs()
        offline = all(case.snapshot is not None for case in matrix.cases) or self.hub_is_unreachable()
        with_requirements = tuple(
            requirement_identity(r, (self.output, cache_home())) for r in self.options.with_requirements
        )
        installs = tuple(install_line(r) for r in self.options.with_requirements)
        write_tox_ini(
            self.work,
            [run.release for run in runs],
            path,
            wheel,
            sys.executable,
            offline,
            installs,
            self.options.loaders,
            tuple(self.loader_kwargs),
            self.options.update_expectations,
        )
        clients = {"with": list(with_requirements), "loaders": list(self.options.loaders)}
        if self.loader_kwargs:
            clients["loader_kwargs"] = list(self.loader_kwargs)
        keys = Keys(matrix, raw, clients if with_requirements or self.options.loaders else None)
        self.with_identities = list(with_requirements)
        cache = CellCache(cache_home() / "grid" / "cells")
        self.build(runs, wheel)
        self.verify_built(runs, wheel)
        for run in runs:
            if run.versions is not None:
                self.plan_reuse(run, keys, cache)
        for why in cache.discarded:
            self.err(f"discarded a cell file that does not fit its cell, judged again: {why}")
        self.judge_watched(runs, case_ids)
        self.verify_judged(runs, wheel, case_ids)
        for run in runs:
            if run.versions is not None:
                self.store(run, keys, cache)
        if (
            self.shard[1] == 1
        ):  # a shard leaves the costs its siblings split by as they were (reports hold its own)
            schedule.record_costs(
                self.costs_file, {run.release.label: run.costs for run in runs if run.costs}
            )
        plan = {"releases": [r.label for r in releases], "cells": len(every)}
        released = {(run.versions or {}).get("transformers") for run in runs if run.release.immutable}
        for run in runs:
            run.version_clash = (
                not run.release.immutable and (run.versions or {}).get("transformers") in released
            )
        for run in runs:
            self.write_report(run, path, case_ids, plan)
        return self.finish(runs, plan)

    def prepare_dirs(self) -> None:
        make_output_folder(self.output)
        if not (self.output / ".gitignore").exists() and (self.output / ".work").is_dir():
            # an output folder of an earlier version (before the .gitignore): still the grid's own
            (self.output / ".gitignore").write_text(OUTPUT_GITIGNORE, encoding="utf-8")
        for sub in ("select", "raw", "logs"):
            (self.work / sub).mkdir(parents=True, exist_ok=True)
        reports = self.output / "reports"
        reports.mkdir(parents=True, exist_ok=True)
        index, count = self.shard
        pattern = f"transformers-*.shard-{index}-of-{count}.json" if count > 1 else "transformers-*.json"
        for stale in reports.glob(pattern):
            stale.unlink()
        for stale in (self.work / "raw").glob("*.json"):
            stale.unlink()

    # -- environments --

    def build(self, runs: list[ReleaseRun], wheel: Path) -> None:
        """Build (or keep) every env; an immutable release's env is kept while its deps are unchanged."""
        record_path = self.work / "envs.json"
        try:
            built: dict[str, Any] = json.loads(record_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            built = {}
        log = self.work / "logs" / "build.log"
        keep: list[ReleaseRun] = []
        fresh: list[ReleaseRun] = []
        moving: list[ReleaseRun] = []
        with_ids = self.with_identities
        for run in runs:
            deps = [str(wheel), run.release.requirement, *with_ids]
            current = env_versions(self.work / ".tox" / run.env)
            recorded = built.get(run.env)
            if run.release.immutable and recorded == deps and current is not None:
                run.versions = current
                keep.append(run)
            elif run.release.immutable and not (isinstance(recorded, list) and recorded[2:] != with_ids):
                fresh.append(run)
            else:  # a moving release, or other --with packages than the env holds: build it anew
                moving.append(run)
        if fresh or moving:
            self.err(
                f"building {len(fresh) + len(moving)} environment(s) with tox-uv "
                f"({', '.join(r.release.label for r in fresh + moving)}); log: {log}"
            )
        start = log.stat().st_size if log.is_file() else 0
        self.progress.building(
            [r.env for r in fresh + moving], lambda env: env_versions(self.work / ".tox" / env) is not None
        )
        done = run_tox(
            self.work,
            [r.env for r in fresh],
            jobs=self.jobs,
            notest=True,
            recreate=False,
            log=log,
            tick=self.progress.tick,
        )
        done_moving = run_tox(
            self.work,
            [r.env for r in moving],
            jobs=self.jobs,
            notest=True,
            recreate=True,
            log=log,
            tick=self.progress.tick,
        )
        conflicts = resolver_conflicts(_read_from(log, start))
        self.progress.tick()
        for run in fresh + moving:
            results = done.results if run in fresh else done_moving.results
            run.versions = env_versions(self.work / ".tox" / run.env)
            if results.get(run.env) not in (0, None) or run.versions is None:
                run.versions = None
                conflict = conflict_of(conflicts, run.release.requirement, len(fresh) + len(moving))
                run.error = (
                    f"the environment for {run.release.requirement} cannot be built: the requirements "
                    f"conflict (the resolver: {conflict}); drop or relax the --with requirement for this "
                    f"release, or leave the release out; see {log}"
                    if conflict and with_ids
                    else f"the environment for {run.release.requirement} could not be built "
                    f"(tox exit {results.get(run.env)}); see {log}"
                )
                built.pop(run.env, None)
            else:
                built[run.env] = [str(wheel), run.release.requirement, *with_ids]
                self.integrity.built(run.env)
        write_json_atomic(record_path, built)

    def rebuild(self, runs: list[ReleaseRun], wheel: Path) -> None:
        """Throw the envs of ``runs`` away and build them anew (nothing of the old one is kept)."""
        for run in runs:
            self.integrity.forget(run.env)
            shutil.rmtree(self.work / ".tox" / run.env, ignore_errors=True)
            run.versions = None
        self.build(runs, wheel)

    def verify_built(self, runs: list[ReleaseRun], wheel: Path) -> None:
        """An env kept from an earlier run is trusted only as its install left it (:mod:`.envcheck`);
        otherwise it is rebuilt and none of its cached cells is reused."""
        changed: list[ReleaseRun] = []
        for run in runs:
            why = self.integrity.check(run.env) if run.versions is not None else None
            if why is not None:
                run.rebuilt = (
                    f"the environment is not as its install left it ({why}): rebuilt, every cell judged again"
                )
                self.err(f"tokcompat grid: {run.env}: {run.rebuilt}")
                changed.append(run)
        if changed:
            self.rebuild(changed, wheel)

    def verify_judged(self, runs: list[ReleaseRun], wheel: Path, case_ids: list[str]) -> None:
        """An env in which opted-in code ran is checked before its cells count: if the run changed it, the
        env is rebuilt and its cells judged once more; if that run changes it too, they are not checked."""
        changed = {run.env: self.integrity.check(run.env) for run in runs if run.versions and run.to_judge}
        exposed = [run for run in runs if changed.get(run.env) is not None]
        if not exposed:
            return
        for run in exposed:
            why = changed[run.env]
            run.rebuilt = (
                f"the environment changed while its cells were judged ({why}): rebuilt, judged again"
            )
            self.err(f"tokcompat grid: {run.env}: {run.rebuilt}")
            run.fresh, run.error, run.registry = {}, None, None
        self.rebuild(exposed, wheel)
        self.judge_watched(exposed, case_ids)
        for run in exposed:
            why = self.integrity.check(run.env) if run.versions is not None else None
            if why is not None:
                run.fresh, run.registry = {}, None
                run.error = (
                    f"the environment changed again while its cells were judged ({why}): not checked; "
                    "a case that opts in to remote code writes into its environment"
                )
                self.integrity.forget(run.env)  # the next run builds it anew

    def judge_watched(self, runs: list[ReleaseRun], case_ids: list[str]) -> None:
        """:meth:`judge`, each env that is to run opted-in code noted as such first: a case with
        ``trust_remote_code: true``, or the extras cell of a matrix that has one (it judges their aliases)."""
        trusting = {case.id for case in (self.matrix.cases if self.matrix else []) if case.trust_remote_code}
        for run in runs:
            if run.versions is not None and any(
                cell in trusting or (cell == EXTRAS and trusting) for cell in run.to_judge
            ):
                self.integrity.exposed(run.env)
        self.judge(runs, case_ids)

    def plan_reuse(self, run: ReleaseRun, keys: Keys, cache: CellCache) -> None:
        assert run.versions is not None
        if run.rebuilt is not None:
            run.to_judge = list(run.cells)
            run.keys = {
                cell: keys.key(cell, run.versions) if run.release.immutable else None for cell in run.cells
            }
            return
        case_ids = list(keys.static)
        alias_ids = [stub["id"] for stub in _extras_stubs("", self.matrix)]
        for cell in run.cells:
            key = keys.key(cell, run.versions) if run.release.immutable else None
            run.keys[cell] = key
            fields = keys.fields(cell, run.versions) if key else None

            def check(records: Any, cell: str = cell) -> str | None:
                return records_problem(records, cell, case_ids, alias_ids, EXTRAS)

            records = cache.get(key, fields, check) if key and fields is not None else None
            if records is None:
                run.to_judge.append(cell)
            else:
                run.reused[cell] = records
                if cell == EXTRAS and key is not None:
                    run.registry = cache.registry(key)

    def judge(self, runs: list[ReleaseRun], case_ids: list[str]) -> None:
        busy = [run for run in runs if run.versions is not None and run.to_judge]
        if not busy:
            return
        log = self.work / "logs" / "judge.log"
        cells = sum(len(run.to_judge) for run in busy)
        self.err(f"judging {cells} cell(s) in {len(busy)} environment(s); log: {log}")
        for run in busy:
            selection = {
                "cases": [cell for cell in run.to_judge if cell != EXTRAS],
                "matrix_cases": case_ids,
                "extras": EXTRAS in run.to_judge,
            }
            write_json_atomic(self.work / "select" / f"{run.env}.json", selection)
        self.progress.judging({run.env: len(run.to_judge) for run in busy})
        cost = {
            run.env: sum(schedule.estimate(self.costs, run.release.label, cell) for cell in run.to_judge)
            for run in busy
        }
        try:
            done = run_tox(
                self.work,
                schedule.longest_first([run.env for run in busy], cost),
                jobs=self.jobs,
                notest=False,
                recreate=False,
                log=log,
                tick=self.progress.tick,
            )
        finally:
            self.progress.close()
        for run in busy:
            with contextlib.suppress(OSError):
                lines = self.progress.file(run.env).read_text(encoding="utf-8").splitlines()
                measured = schedule.cell_costs(lines, case_ids, EXTRAS)
                run.costs = {cell: seconds for cell, seconds in measured.items() if cell in run.to_judge}
            raw_path = self.work / "raw" / f"{run.env}.json"
            code = done.results.get(run.env)
            try:
                document = json.loads(raw_path.read_text(encoding="utf-8"))
                records = [r for r in document.get("cases", []) if isinstance(r, dict) and "id" in r]
                if EXTRAS in run.to_judge and isinstance(document.get("registry"), dict):
                    run.registry = document["registry"]
            except (OSError, ValueError):
                records = []
                run.error = (
                    f"the run under {run.release.requirement} wrote no report (exit {code}); see {log}"
                )
            if run.error is None and code not in (0, 1, 5):
                run.error = f"the run under {run.release.requirement} did not finish (exit {code}); see {log}"
            by_id = {record["id"]: record for record in records}
            for cell in run.to_judge:
                if cell == EXTRAS:
                    run.fresh[cell] = [r for r in records if r["id"] not in set(case_ids)]
                elif cell in by_id:
                    run.fresh[cell] = [by_id[cell]]

    def store(self, run: ReleaseRun, keys: Keys, cache: CellCache) -> None:
        """Keep what this run judged for next time: checked cases; the extras of a run that checked all
        its cases (a not-checked case may be passing trouble, such as the hub being down)."""
        assert run.versions is not None
        clean = run.error is None and all(
            record.get("status") != NOT_CHECKED
            for cell, records in run.fresh.items()
            if cell != EXTRAS
            for record in records
        )
        for cell, records in run.fresh.items():
            key = run.keys.get(cell)
            if key is None or not records:
                continue
            if cell == EXTRAS:
                if clean:
                    cache.put(key, records, keys.fields(cell, run.versions), run.registry)
            elif records[0].get("status") != NOT_CHECKED:
                cache.put(key, records, keys.fields(cell, run.versions))

    # -- reports and the grid --

    def records_of(self, run: ReleaseRun, case_ids: list[str]) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        why = run.error or "no result"
        for cell in run.cells:
            if cell in run.reused:
                records.extend(run.reused[cell])
            elif cell in run.fresh:
                records.extend(run.fresh[cell])
            else:
                records.extend(_extras_stubs(why, self.matrix) if cell == EXTRAS else [_stub(cell, why)])
        return records

    def write_report(self, run: ReleaseRun, matrix: Path, case_ids: list[str], plan: dict[str, Any]) -> None:
        versions = dict(run.versions or {})
        version = versions.get("transformers") or (str(run.release.version) if run.release.version else None)
        if version is None:
            return  # main that could not be built: no version to file it under; the summary says so
        if run.version_clash:
            version = f"{version}+main"  # a stand-in upstream at a released version: its own column
        records = self.records_of(run, case_ids)
        index, count = self.shard
        document = {
            "schema_version": SCHEMA_VERSION,
            "versions": {name: versions.get(name) for name in ("python", *LIBRARIES)},
            "transformers_version": version,
            "matrix": str(matrix),
            "cases": sorted(records, key=lambda r: (r.get("kind", "case"), r.get("id", ""))),
            "alarms": [alarm for record in records for alarm in record.get("alarms", [])],
            "exit_status": 1 if any(r.get("status") == "failed" for r in records) else 0,
            "complete": run.error is None,
            "grid_run": {
                "release": run.release.label,
                "requirement": run.release.requirement,
                "commit": versions.get("commit"),
                "shard": f"{index}/{count}",
                "plan": plan,
                "cells": len(run.cells),
                "judged": sorted(run.fresh),
                "reused": sorted(run.reused),
                "costs": {
                    cell: round(seconds, 3)
                    for cell in run.cells
                    for seconds in [run.costs.get(cell, self.costs.get(run.release.label, {}).get(cell))]
                    if seconds is not None
                },
                "error": run.error,
                **({"rebuilt": run.rebuilt} if run.rebuilt else {}),
            },
        }
        if run.registry is not None:
            document["registry"] = run.registry
        suffix = f".shard-{index}-of-{count}" if count > 1 else ""
        run.report = self.output / "reports" / f"transformers-{version}{suffix}.json"
        write_json_atomic(run.report, document)

    def finish(self, runs: list[ReleaseRun], plan: dict[str, Any]) -> int:
        reports = [run.report for run in runs if run.report is not None]
        grid: grid_module.Grid | None = None
        if reports:
            try:
                grid = grid_module.merge(grid_module.load_reports(reports))
            except ReportError as error:
                self.err(f"tokcompat grid: cannot merge the reports: {error}")
        if grid is None:
            grid = grid_module.Grid([], {})
        for run in runs:
            if run.report is None:
                grid.releases.append(run.release.label)
                grid.incomplete.append(f"no report for transformers {run.release.label}: {run.error}")
        for form, name in (("markdown", "grid.md"), ("html", "grid.html"), ("json", "grid.json")):
            (self.output / name).write_text(grid_module.render(grid, form), encoding="utf-8")
        self.out(grid_module.render(grid, "markdown").rstrip("\n"))
        self.out("")
        for line in self.summary(runs):
            self.out(line)
        status = self.exit_status(grid, runs)
        if self.options.update_expectations and self.path is not None:
            from pytest_tokcompat.ci.gridexpect import record_expectations

            measured = [
                (str(run.versions["transformers"]), record)
                for run in runs
                if run.release.immutable and run.versions and run.versions.get("transformers")
                for record in self.records_of(run, [])
            ]
            status = record_expectations(
                self.path, grid, measured, allow_weaker=self.options.allow_weaker, out=self.out
            )
        self.out(f"grid: {self.output / 'grid.md'} (also .html, .json); reports: {self.output / 'reports'}")
        return status

    def summary(self, runs: list[ReleaseRun]) -> list[str]:
        judged = sum(len(run.fresh) for run in runs)
        reused = sum(len(run.reused) for run in runs)
        total = sum(len(run.cells) for run in runs)
        lines = [
            f"cells: {total}, reused {reused}, judged {judged}"
            + (" (nothing changed)" if total and reused == total else "")
        ]
        for run in runs:
            version = (run.versions or {}).get("transformers")
            label = (
                run.release.label
                if version in (None, run.release.label)
                else f"{run.release.label} = {version}"
            )
            commit = (run.versions or {}).get("commit")
            extra = f" at {commit[:12]}" if commit else ""
            state = "".join(f"; {note}" for note in (run.rebuilt, run.error) if note)
            lines.append(
                f"  transformers {label}{extra}: {len(run.reused)} reused, {len(run.fresh)} judged{state}"
            )
        return lines

    def exit_status(self, grid: grid_module.Grid, runs: list[ReleaseRun]) -> int:
        """The shared rule (:meth:`Grid.exit_status`): a shard's grid lacks the other shards' cells, so it
        is incomplete (3) unless it has alarms (1), as a report of part of the matrix is; the merge of every
        shard's reports (``tokcompat report``) is what can be complete."""
        if grid.incomplete:
            more = f" (and {len(grid.incomplete) - 10} more)" if len(grid.incomplete) > 10 else ""
            self.out(f"incomplete grid: {'; '.join(grid.incomplete[:10])}{more}")
        if self.shard[1] > 1:
            index, count = self.shard
            self.out(
                f"shard {index}/{count}: this grid holds only this shard's cells (exit 3 unless an alarm); "
                "merge every shard's reports with tokcompat report for the whole grid"
            )
        return grid.exit_status()


def run_command(options: GridOptions, out: Out = print, plan_only: bool = False) -> int:
    """The ``tokcompat grid`` command; ``plan_only`` prints the plan (for the workflow's shards) and stops."""
    return GridRun(options, out).run(plan_only=plan_only)
