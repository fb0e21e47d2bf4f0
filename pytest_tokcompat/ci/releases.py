"""The transformers releases on the package index, oldest first.

The index is the one pip and uv would use: $UV_INDEX_URL, $UV_DEFAULT_INDEX or
$PIP_INDEX_URL, else pip's own configuration (``pip config list``, where pip is
installed), else the public index both pip and uv default to (no pip needed). The project page is read through the simple repository API,
as JSON (PEP 691) when the index offers it and as HTML (PEP 503) otherwise; a
file counts only when it is not yanked (PEP 592), and a release only when one of
its files counts. Pre-releases (and dev releases) are kept only when asked for.

All network access goes through :func:`fetch_page`, which tests replace.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from pytest_tokcompat import environment
from pytest_tokcompat.errors import ReleaseError

PROJECT = "transformers"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
INDEX_ENV_VARS = ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "PIP_INDEX_URL")
PIP_CONFIG_KEYS = (":env:.index-url", "install.index-url", "global.index-url")
DEFAULT_INDEX = "https://pypi.org/simple"
"""The index pip and uv use when none is configured (pip's ``PyPI.simple_url``, uv's default)."""
TIMEOUT = 30.0


@dataclass(frozen=True)
class Page:
    """One answer of the index: its content type and body."""

    url: str
    content_type: str
    body: bytes


Fetch = Callable[[str], Page]


@dataclass(frozen=True)
class IndexFile:
    filename: str
    yanked: bool


def redact(url: str) -> str:
    """``url`` without any password, fit for a message."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None and parts.username is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, f"***@{host}", parts.path, parts.query, parts.fragment))


def pip_config_values() -> dict[str, str]:
    """``pip config list`` as a mapping; empty when pip is not there (a uv-made environment) or fails."""
    if importlib.util.find_spec("pip") is None:
        return {}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    if done.returncode != 0:
        return {}
    values: dict[str, str] = {}
    for line in done.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip().strip("'\"")
    return values


def default_index() -> str:
    """The index pip and uv fall back to when nothing is configured; needs neither installed."""
    return DEFAULT_INDEX


def index_url(
    environ: Mapping[str, str] | None = None,
    pip_config: Callable[[], Mapping[str, str]] | None = None,
) -> str:
    """The index pip or uv would use: the environment, then pip's configuration, then the default."""
    environ = os.environ if environ is None else environ
    for name in INDEX_ENV_VARS:
        value = environ.get(name, "").strip()
        if value:
            return value.split()[0]
    config = (pip_config or pip_config_values)()
    for key in PIP_CONFIG_KEYS:
        value = config.get(key, "").strip()
        if value:
            return value.split()[0]
    return default_index()


def project_url(index: str, project: str = PROJECT) -> str:
    return f"{index.rstrip('/')}/{canonicalize_name(project)}/"


def fetch_page(url: str) -> Page:
    """GET ``url`` asking for the JSON simple API first; the one function that touches the network."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "file":
        path = Path(urllib.request.url2pathname(parts.path))
        if path.is_dir():
            path = path / "index.html"
        try:
            return Page(url, "text/html", path.read_bytes())
        except OSError as error:
            raise ReleaseError(f"{url}: cannot read it ({error.strerror})") from None
    headers = {"Accept": ACCEPT, "User-Agent": "pytest-tokcompat"}
    if parts.username is not None or parts.password is not None:
        user = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        url = urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return Page(response.geturl(), response.headers.get("Content-Type", ""), response.read())
    except urllib.error.HTTPError as error:
        raise ReleaseError(f"{redact(url)}: the index answered HTTP {error.code}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise ReleaseError(f"{redact(url)}: cannot reach the index ({reason})") from None


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.files: list[IndexFile] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag != "a" or self._open is None:
            return
        attrs, self._open = self._open, None
        name = "".join(self._text).strip()
        if not name:
            href = attrs.get("href") or ""
            name = urllib.parse.unquote(urllib.parse.urlsplit(href).path.rsplit("/", 1)[-1])
        self.files.append(IndexFile(name, "data-yanked" in attrs))


def parse_page(page: Page) -> list[IndexFile]:
    """The files listed on a project page, JSON or HTML by its content type."""
    content_type = page.content_type.split(";")[0].strip().lower()
    if content_type == JSON_TYPE or content_type.endswith("+json") or content_type == "application/json":
        try:
            document = json.loads(page.body.decode("utf-8"))
            files = document["files"]
            return [
                IndexFile(str(entry["filename"]), entry.get("yanked", False) not in (False, None))
                for entry in files
            ]
        except (ValueError, KeyError, TypeError) as error:
            raise ReleaseError(f"{redact(page.url)}: not a simple API JSON page ({error})") from None
    parser = _Anchors()
    parser.feed(page.body.decode("utf-8", errors="replace"))
    parser.close()
    return parser.files


def file_version(filename: str, project: str = PROJECT) -> Version | None:
    """The release a distribution file belongs to, or None for another project's or an odd file."""
    try:
        if filename.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(filename)
        elif filename.endswith((".tar.gz", ".zip")):
            name, version = parse_sdist_filename(filename)
        else:
            return None
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return version if name == canonicalize_name(project) else None


def select_versions(
    files: Iterable[IndexFile],
    *,
    project: str = PROJECT,
    pre: bool = False,
    since: Version | None = None,
) -> list[Version]:
    found: set[Version] = set()
    for item in files:
        if item.yanked:
            continue
        version = file_version(item.filename, project)
        if version is None or (version.is_prerelease and not pre):
            continue
        if since is not None and version < since:
            continue
        found.add(version)
    return sorted(found)


def discover_releases(
    *,
    project: str = PROJECT,
    pre: bool = False,
    since: str | Version | None = None,
    index: str | None = None,
    fetch: Fetch | None = None,
) -> list[Version]:
    """The releases of ``project`` on the configured index, oldest first."""
    floor = None
    if since is not None:
        try:
            floor = since if isinstance(since, Version) else Version(since)
        except InvalidVersion:
            raise ReleaseError(f"--since {since!r} is not a version") from None
    url = project_url(index or index_url(), project)
    page = (fetch or fetch_page)(url)
    return select_versions(parse_page(page), project=project, pre=pre, since=floor)


# The release set of a grid: `tokcompat grid --releases SPEC`.

UPSTREAM_ENV = "TOKCOMPAT_UPSTREAM"
DEFAULT_UPSTREAM = "git+https://github.com/huggingface/transformers"
SPEC_WORDS = ("minors", "latest", "pre", "main")
_OPERATORS = ("==", "!=", "<=", ">=", "~=", "<", ">", "===")


@dataclass(frozen=True)
class GridRelease:
    """One column of the grid: what to install for it, and whether its result may be reused."""

    label: str
    """The version as written (``5.10.4``), or ``main``."""
    requirement: str
    """The requirement tox installs: ``transformers==5.10.4`` or ``transformers @ git+...@main``."""
    version: Version | None
    """None for ``main``: known only once it is built."""
    immutable: bool
    """A published version never changes; ``main`` does, so its cells are never reused."""
    why: str


def last_patch_per_minor(versions: Iterable[Version], floor: Version | None = None) -> list[Version]:
    """The newest final release of every ``major.minor`` at or above ``floor``'s minor, oldest first."""
    newest: dict[tuple[int, int], Version] = {}
    for version in versions:
        if version.is_prerelease or version.is_devrelease:
            continue
        if floor is not None and (version.major, version.minor) < (floor.major, floor.minor):
            continue
        key = (version.major, version.minor)
        if key not in newest or version > newest[key]:
            newest[key] = version
    return [newest[key] for key in sorted(newest)]


def spec_items(spec: str) -> list[str]:
    """SPEC split into items: commas, spaces or ';' separate them, but the clauses of one range
    (``>=5.3,<5.11``) stay together: a clause that starts with an operator joins a preceding range."""
    items: list[str] = []
    for chunk in spec.replace(";", " ").split():
        for part in (p.strip() for p in chunk.split(",")):
            if not part:
                continue
            if part.startswith(_OPERATORS) and items and items[-1].startswith(_OPERATORS):
                items[-1] = f"{items[-1]},{part}"
            else:
                items.append(part)
    return items


def upstream_requirement(upstream: str | None = None, project: str = PROJECT) -> str:
    """The requirement for ``main``: a git URL (its ``main`` branch unless it names a ref), a local git
    checkout (its ``main`` branch), a local source folder, a wheel file, or any URL pip takes."""
    given = (upstream or environment.read(UPSTREAM_ENV) or DEFAULT_UPSTREAM).strip()
    local = Path(given).expanduser()
    if local.exists():
        local = local.resolve()
        if local.is_dir() and (local / ".git").exists():
            return f"{project} @ git+{local.as_uri()}@main"
        return f"{project} @ {local.as_uri()}"
    if given.startswith("git+"):
        path = urllib.parse.urlsplit(given[4:]).path
        has_ref = "@" in path.rsplit("/", 1)[-1]
        return f"{project} @ {given}" if has_ref else f"{project} @ {given}@main"
    if "://" in given:
        return f"{project} @ {given}"
    raise ReleaseError(
        f"upstream {given!r} is neither a local path nor a URL; pass a git URL "
        f"(git+https://.../transformers), a local git checkout or a wheel with --upstream or ${UPSTREAM_ENV}"
    )


def resolve_spec(
    spec: str,
    *,
    floor: Version | None = None,
    upstream: str | None = None,
    index: str | None = None,
    fetch: Fetch | None = None,
    project: str = PROJECT,
) -> list[GridRelease]:
    """The releases SPEC names, oldest first, ``main`` last; each version once.

    SPEC: explicit versions (``5.10.4``), PEP 440 ranges (``>=5.3,<5.11``: every final
    release in it), ``minors`` (the last patch of every minor from ``floor``),
    ``latest`` (the newest final release), ``pre`` (the newest release counting
    pre-releases: a pre-release while one is ahead of the latest, else the latest) and
    ``main`` (the upstream source's main branch, built fresh).
    """
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    items = spec_items(spec)
    if not items:
        raise ReleaseError("--releases is empty; name versions, ranges, or minors, latest, pre, main")
    published: list[Version] | None = None

    def index_versions() -> list[Version]:
        nonlocal published
        if published is None:
            url = project_url(index or index_url(), project)
            published = select_versions(parse_page((fetch or fetch_page)(url)), project=project, pre=True)
        return published

    chosen: dict[Version, tuple[str, str]] = {}
    wants_main = False
    for item in items:
        word = item.lower()
        if word == "main":
            wants_main = True
        elif word == "minors":
            for version in last_patch_per_minor(index_versions(), floor):
                chosen.setdefault(version, (str(version), "minors"))
        elif word == "latest":
            finals = [v for v in index_versions() if not v.is_prerelease]
            if not finals:
                raise ReleaseError(f"latest: the index lists no final release of {project}")
            chosen.setdefault(finals[-1], (str(finals[-1]), "latest"))
        elif word == "pre":
            if not index_versions():
                raise ReleaseError(f"pre: the index lists no release of {project}")
            newest = index_versions()[-1]
            chosen.setdefault(newest, (str(newest), "pre"))
        elif item.startswith(_OPERATORS):
            try:
                specifier = SpecifierSet(item)
            except InvalidSpecifier:
                raise ReleaseError(f"--releases: {item!r} is not a PEP 440 range") from None
            found = [v for v in index_versions() if not v.is_prerelease and v in specifier]
            if not found:
                raise ReleaseError(f"--releases: no final release of {project} on the index is in {item!r}")
            for version in found:
                chosen.setdefault(version, (str(version), f"range {item}"))
        else:
            try:
                version = Version(item)
            except InvalidVersion:
                raise ReleaseError(
                    f"--releases: {item!r} is neither a version, a range, nor one of {', '.join(SPEC_WORDS)}"
                ) from None
            chosen[version] = (str(version), "explicit")
    explicit = [v for v, (_, why) in chosen.items() if why == "explicit"]
    if explicit:
        try:
            known = set(index_versions())
        except ReleaseError:
            known = None  # the index cannot be read: let the build say whether the version exists
        missing = [str(v) for v in explicit if known is not None and v not in known]
        if missing:
            raise ReleaseError(
                f"--releases: transformers {', '.join(missing)} is not on the package index "
                "(see `tokcompat releases --pre`)"
            )
    releases = [
        GridRelease(label, f"{project}=={version}", version, True, why)
        for version, (label, why) in sorted(chosen.items())
    ]
    if wants_main:
        releases.append(GridRelease("main", upstream_requirement(upstream, project), None, False, "main"))
    if not releases:
        floor_text = f" from {floor}" if floor is not None else ""
        raise ReleaseError(
            f"--releases {spec!r} names no release{floor_text}; a grid of nothing checks nothing"
        )
    return releases
