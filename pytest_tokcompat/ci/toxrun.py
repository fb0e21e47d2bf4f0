"""Running tox and reading what it built: the installed versions, resolver conflicts, a masked log.

The grid's only contact with tox and its children's environments, so the rest of the run is plain data.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pytest_tokcompat.ci import schedule
from pytest_tokcompat.ci.gridlog import rotate_log
from pytest_tokcompat.ci.install import LINK_MODE
from pytest_tokcompat.credentials import credential_values, scrub

LIBRARIES = ("transformers", "tokenizers", "huggingface_hub", "pytest-tokcompat")


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


def read_from(log: Path, start: int) -> str:
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
