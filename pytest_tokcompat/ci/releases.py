"""The transformers releases on the package index, oldest first.

The index is the one pip and uv would use: $UV_INDEX_URL, $UV_DEFAULT_INDEX or
$PIP_INDEX_URL, else pip's own configuration (``pip config list``), else pip's
default public index. The project page is read through the simple repository API,
as JSON (PEP 691) when the index offers it and as HTML (PEP 503) otherwise; a
file counts only when it is not yanked (PEP 592), and a release only when one of
its files counts. Pre-releases (and dev releases) are kept only when asked for.

All network access goes through :func:`fetch_page`, which tests replace.
"""

from __future__ import annotations

import base64
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

from pytest_tokcompat.errors import ReleaseError

PROJECT = "transformers"
JSON_TYPE = "application/vnd.pypi.simple.v1+json"
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
INDEX_ENV_VARS = ("UV_INDEX_URL", "UV_DEFAULT_INDEX", "PIP_INDEX_URL")
PIP_CONFIG_KEYS = (":env:.index-url", "install.index-url", "global.index-url")
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
    """``pip config list`` as a mapping; empty when pip is not there or fails."""
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
    """pip's default public index, taken from pip itself so that no host is written here."""
    try:
        from pip._internal.models.index import PyPI  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ReleaseError(
            "no package index configured and pip is not installed to name its default; "
            "set UV_DEFAULT_INDEX or PIP_INDEX_URL"
        ) from None
    return str(PyPI.simple_url)


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
