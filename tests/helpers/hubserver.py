"""A local Hugging Face Hub: the part of the Hub's HTTP API that huggingface_hub's downloads use.

huggingface_hub reads HF_ENDPOINT and HF_HUB_OFFLINE once, when it is imported, so the online
tests run the real calls in a subprocess whose environment points at this server (see
``resolve_online``); nothing of huggingface_hub is patched. The server answers:

- ``GET /api/models/{repo}`` (``owner/name`` or a bare ``name``, as ``gpt2``) and ``/api/models/{repo}/revision/{rev}``: the model info (``sha``,
  ``siblings``), as ``HfApi.repo_info`` reads it;
- ``GET /api/models/{repo}/tree/{rev}``: the recursive listing (``oid``, ``size``, ``lfs``);
- ``HEAD``/``GET /{repo}/resolve/{rev}/{path}``: the file, with the headers ``hf_hub_download``
  requires (``X-Repo-Commit``, ``ETag`` -- the git blob id -- or, for LFS files,
  ``X-Linked-Etag``/``X-Linked-Size`` with the sha256);
- the Hub's errors as huggingface_hub tells them apart (``X-Error-Code``: ``RepoNotFound``,
  ``RevisionNotFound``, ``EntryNotFound``, ``GatedRepo``);

and records every request (method, path, whether and which token was sent).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

LFS_THRESHOLD = 1_000_000
"""Files at least this large are served as LFS files, as hubcache.add_repo lists them."""


def git_blob_id(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class HubRepo:
    """One model repo at one commit, reachable by that commit and by its refs."""

    repo_id: str
    files: dict[str, bytes]
    commit: str
    refs: tuple[str, ...] = ("main",)
    granted: frozenset[str] | None = None
    """Tokens with access; None: a public repo, otherwise a gated one."""

    def commit_of(self, revision: str) -> str | None:
        return self.commit if revision == self.commit or revision in self.refs else None

    def tree_entry(self, path: str) -> dict[str, Any]:
        content = self.files[path]
        entry: dict[str, Any] = {
            "type": "file",
            "oid": git_blob_id(content),
            "size": len(content),
            "path": path,
        }
        if len(content) >= LFS_THRESHOLD:
            entry["lfs"] = {
                "oid": hashlib.sha256(content).hexdigest(),
                "size": len(content),
                "pointerSize": 134,
            }
        return entry


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    token: str | None


@dataclass
class LocalHub:
    """The served repos, and the requests the server answered."""

    url: str = ""
    repos: dict[str, HubRepo] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)

    def add(
        self,
        repo_id: str,
        files: dict[str, bytes],
        *,
        refs: tuple[str, ...] = ("main",),
        granted: frozenset[str] | None = None,
        commit: str | None = None,
    ) -> str:
        """Serve ``files`` as ``repo_id`` at a commit (returned)."""
        digest = hashlib.sha1(b"local hub " + repo_id.encode())
        for name in sorted(files):
            digest.update(name.encode() + hashlib.sha256(files[name]).digest())
        repo = HubRepo(repo_id, dict(files), commit or digest.hexdigest(), refs, granted)
        self.repos[repo_id] = repo
        return repo.commit

    def paths_fetched(self, repo_id: str) -> set[str]:
        """The files of ``repo_id`` whose content was downloaded (GET on resolve)."""
        prefix = f"/{repo_id}/resolve/"
        return {
            r.path[len(prefix) :].split("/", 1)[1]
            for r in self.requests
            if r.method == "GET" and r.path.startswith(prefix)
        }

    def asked_about(self, repo_id: str) -> list[Request]:
        return [r for r in self.requests if f"/{repo_id}/" in r.path or r.path.endswith(f"/{repo_id}")]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the Hub; every answer carries Content-Length
    hub: LocalHub

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def _send(
        self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, send_body: bool = True
    ) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def _error(self, status: int, code: str | None, message: str, commit: str | None = None) -> None:
        headers = {"Content-Type": "application/json", "X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        if commit:
            headers["X-Repo-Commit"] = commit
        self._send(status, json.dumps({"error": message}).encode(), headers, self.command != "HEAD")

    def _json(self, document: object) -> None:
        self._send(200, json.dumps(document).encode(), {"Content-Type": "application/json"})

    def _answer(self, send_body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        authorization = self.headers.get("authorization")
        token = authorization.removeprefix("Bearer ") if authorization else None
        self.hub.requests.append(Request(self.command, path, token))
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 3:
            # owner/name, or a bare name (gpt2) whose next segment is a route word, not a name
            bare = len(parts) == 3 or parts[3] in ("revision", "tree")
            width = 1 if bare and "/".join(parts[2:4]) not in self.hub.repos else 2
            self._api("/".join(parts[2 : 2 + width]), parts[2 + width :], token)
        elif len(parts) >= 4 and parts[1] == "resolve":
            self._resolve(parts[0], parts[2], "/".join(parts[3:]), token, send_body)
        elif len(parts) >= 5 and parts[2] == "resolve":
            self._resolve(parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]), token, send_body)
        else:
            self._error(404, None, f"no route {path}")

    def _repo(self, repo_id: str, token: str | None) -> HubRepo | None:
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound", f"Repository {repo_id} not found")
            return None
        if repo.granted is not None and token not in repo.granted:
            self._error(
                401 if token is None else 403, "GatedRepo", f"Access to model {repo_id} is restricted."
            )
            return None
        return repo

    def _commit(self, repo: HubRepo, revision: str) -> str | None:
        commit = repo.commit_of(revision)
        if commit is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return commit

    def _api(self, repo_id: str, rest: list[str], token: str | None) -> None:
        repo = self._repo(repo_id, token)
        if repo is None:
            return
        if not rest or (rest[0] == "revision" and len(rest) == 2):
            commit = self._commit(repo, rest[1] if rest else "main")
            if commit:
                self._json(
                    {
                        "id": repo_id,
                        "modelId": repo_id,
                        "sha": commit,
                        "private": False,
                        "gated": False if repo.granted is None else "manual",
                        "siblings": [{"rfilename": name} for name in sorted(repo.files)],
                    }
                )
        elif rest[:1] == ["tree"] and len(rest) >= 2:
            commit = self._commit(repo, rest[1])
            if commit:
                self._json([repo.tree_entry(name) for name in sorted(repo.files)])
        else:
            self._error(404, None, f"no route /api/models/{repo_id}/{'/'.join(rest)}")

    def _resolve(self, repo_id: str, revision: str, name: str, token: str | None, send_body: bool) -> None:
        repo = self._repo(repo_id, token)
        commit = self._commit(repo, revision) if repo else None
        if repo is None or commit is None:
            return
        if name not in repo.files:
            self._error(404, "EntryNotFound", f"{name} does not exist on {revision}", commit)
            return
        content = repo.files[name]
        headers = {"X-Repo-Commit": commit, "Content-Type": "application/octet-stream"}
        if len(content) >= LFS_THRESHOLD:
            headers["X-Linked-Etag"] = f'"{hashlib.sha256(content).hexdigest()}"'
            headers["X-Linked-Size"] = str(len(content))
        headers["ETag"] = f'"{git_blob_id(content)}"'
        self._send(200, content, headers, send_body)


@contextmanager
def serving() -> Iterator[LocalHub]:
    """A LocalHub on a free port of 127.0.0.1, for the duration of the block."""
    hub = LocalHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"hub": hub}))
    server.daemon_threads = True
    hub.url = f"http://127.0.0.1:{server.server_port}"
    with running(server):
        yield hub


@contextmanager
def running(server: HTTPServer) -> Iterator[HTTPServer]:
    """Serve from a thread for the block. It polls for shutdown every 50 ms: at serve_forever's
    default half second, every test that used a server waited that long in its teardown."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def unreachable_endpoint() -> str:
    """A local URL where nothing listens: the hub is down (connection refused, at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def resolve_online(
    endpoint: str, cache: Path, steps: list[dict[str, Any]], timeout: float = 120
) -> list[dict[str, Any]]:
    """Run ``sources.hub.resolve_repo`` for each step in a fresh process that is online at ``endpoint``.

    A step: ``{"repo", "revision"?, "trust_remote_code"?, "token"?}``; its result: ``{"folder",
    "files"}`` or ``{"error", "message"}``. ``token`` sets HF_TOKEN for that step only.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT=endpoint, HF_HUB_OFFLINE="0", HF_HUB_CACHE=str(cache), HF_HUB_ETAG_TIMEOUT="30")
    done = subprocess.run(
        [sys.executable, __file__, json.dumps(steps)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.splitlines()[-1]))


def _run_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from pytest_tokcompat.sources import hub

    results: list[dict[str, Any]] = []
    for step in steps:
        os.environ.pop("HF_TOKEN", None)
        if step.get("token"):
            os.environ["HF_TOKEN"] = step["token"]
        try:
            folder = hub.resolve_repo(
                step["repo"], step.get("revision"), trust_remote_code=step.get("trust_remote_code", False)
            )
        except Exception as error:
            results.append({"error": type(error).__name__, "message": str(error)})
        else:
            files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
            results.append({"folder": str(folder), "files": files})
    return results


if __name__ == "__main__":
    print(json.dumps(_run_steps(json.loads(sys.argv[1]))))
