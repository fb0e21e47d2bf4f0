"""`tokcompat grid` with tox stood in at one function, :func:`gridrun.run_tox`: the fake, its project, its index.

The fake "builds" an env by laying out its site-packages (the files the parent reads) and "judges" by
writing the child's report for exactly the cells the selection file names; everything else is the real
code. Shared by the grid's unit tests (tests/unit/ci/conftest.py makes `index`, `project` and `tox`
their fixtures) and the end-to-end ones that need a project.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from packaging.version import Version

from pytest_tokcompat.ci import gridrun, releases
from pytest_tokcompat.ci.releases import Page
from pytest_tokcompat.ci.toxrun import ToxRun
from pytest_tokcompat.cli import main
from pytest_tokcompat.contract import alias_record, case_record
from pytest_tokcompat.matrix.discovery import bundled_dir
from pytest_tokcompat.matrix.loader import load_matrix
from tests.helpers.paths import SIMPLE_INDEX

INDEX = "https://index.invalid/simple"
BUNDLED = bundled_dir()

# What the fake child judges: the verdict of a case under a transformers version.
VERDICTS: dict[str, Callable[[Version], str]] = {
    "deepseek-v3.2-exp": lambda v: "native" if v >= Version("5.11") or v < Version("5.3") else "alias",
    "qwen3-0.6b": lambda v: "native",
}
ALIAS_STATE: Callable[[Version], str] = lambda v: "obsolete" if v >= Version("5.11") else "needed"  # noqa: E731


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in releases.INDEX_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_INDEX_URL", INDEX)
    monkeypatch.setattr(
        releases, "fetch_page", lambda url: Page(url, releases.JSON_TYPE, SIMPLE_INDEX.read_bytes())
    )


def user_matrix(root: Path, qwen_expect: str = "native") -> Path:
    """A project holding only its matrix: two snapshot entries copied from the bundled ones."""
    folder = root / "matrix"
    (folder / "snapshots").mkdir(parents=True)
    for name in ("deepseek-v3.2-exp", "qwen3-0.6b"):
        shutil.copytree(BUNDLED / "snapshots" / name, folder / "snapshots" / name)
    (folder / "golden").mkdir()
    shutil.copy(BUNDLED / "golden" / "qwen3-0.6b.json", folder / "golden")
    path = folder / "models.yaml"
    path.write_text(
        "version: 1\ncases:\n"
        "  - id: deepseek-v3.2-exp\n    snapshot: snapshots/deepseek-v3.2-exp\n    expect:\n"
        '      "<5.3": native\n      ">=5.3,<5.11": alias\n      ">=5.11": native\n'
        f"  - id: qwen3-0.6b\n    snapshot: snapshots/qwen3-0.6b\n    expect: {qwen_expect}\n",
        encoding="utf-8",
    )
    return path


class FakeTox:
    """run_tox's stand-in: builds envs as files, judges the selected cells as the child would report."""

    def __init__(self, main_version: str = "5.12.0.dev0", commit: str = "ab" * 20) -> None:
        self.builds: list[str] = []
        self.judged: list[tuple[str, tuple[str, ...], bool]] = []
        self.fail_build: set[str] = set()
        self.build_output: dict[str, str] = {}
        """What a failing build prints into the log, per env (tox-uv's resolver output)."""
        self.crash: set[str] = set()
        self.main_version = main_version
        self.commit = commit
        self.seconds: dict[str, float] = {}
        """case id -> the seconds its progress line says it took (none: the line has no seconds)."""
        self.order: list[list[str]] = []
        """The environments of each judging call, in the order given."""
        self.hostile: dict[str, int] = {}
        """env -> how many of its judging runs drop a .pth into it (as remote code could)."""

    def version_of(self, env: str) -> str:
        label = env.removeprefix("tf-")
        return self.main_version if label == "main" else label

    def __call__(
        self,
        work: Path,
        envs: list[str],
        *,
        jobs: int,
        notest: bool,
        recreate: bool,
        log: Path,
        tick: Callable[[], None] | None = None,
    ) -> ToxRun:
        results: dict[str, int | None] = {}
        if not notest:
            self.order.append(list(envs))
        for env in envs:
            if notest:
                results[env] = self.build(work / ".tox" / env, env)
                if env in self.build_output:
                    with log.open("a", encoding="utf-8") as stream:
                        stream.write(self.build_output[env])
            else:
                results[env] = self.judge(work, env)
            if tick is not None:
                tick()
        return ToxRun(max(results.values(), default=0) or 0, results)

    def build(self, folder: Path, env: str) -> int:
        self.builds.append(env)
        if env in self.fail_build:
            return 1
        site = folder / "lib" / "python3.11" / "site-packages"
        versions = {
            "transformers": self.version_of(env),
            "tokenizers": "0.22.2",
            "huggingface_hub": "1.33.0",
            "pytest_tokcompat": "0.1.0",
        }
        for name, version in versions.items():
            info = site / f"{name}-{version}.dist-info"
            info.mkdir(parents=True, exist_ok=True)
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        if env == "tf-main":
            info = site / f"transformers-{self.main_version}.dist-info"
            (info / "direct_url.json").write_text(json.dumps({"vcs_info": {"commit_id": self.commit}}))
        (folder / "pyvenv.cfg").write_text("version_info = 3.11.7\n")
        module = site / "transformers" / "__init__.py"
        module.parent.mkdir(exist_ok=True)
        module.write_text(f"__version__ = {self.version_of(env)!r}\n")
        info = site / f"transformers-{self.version_of(env)}.dist-info"
        digest = base64.urlsafe_b64encode(hashlib.sha256(module.read_bytes()).digest()).rstrip(b"=").decode()
        (info / "RECORD").write_text(f"transformers/__init__.py,sha256={digest},{module.stat().st_size}\n")
        return 0

    def _seconds(self, record_id: str) -> dict[str, float]:
        return {"seconds": self.seconds[record_id]} if record_id in self.seconds else {}

    def judge(self, work: Path, env: str) -> int:
        selection = json.loads((work / "select" / f"{env}.json").read_text())
        self.judged.append((env, tuple(selection["cases"]), selection["extras"]))
        if env in self.crash:
            return 3
        if self.hostile.get(env):
            self.hostile[env] -= 1
            site = work / ".tox" / env / "lib" / "python3.11" / "site-packages"
            (site / "zz_hostile.pth").write_text("import os; os.environ['TOKCOMPAT_POISONED'] = '1'\n")
        version = Version(self.version_of(env))
        tox_ini = (work / "tox.ini").read_text()
        matrix = load_matrix(
            tox_ini.split('--tokcompat-matrix "', 1)[1].split('"', 1)[0],
            missing_expect="--tokcompat-measure" in tox_ini,
        )
        records = []
        for case in matrix.cases:
            if case.id not in selection["cases"]:
                records.append({"kind": "case", "id": case.id, "status": "not-checked", "verdict": None})
                continue
            verdict, expected = VERDICTS[case.id](version), case.expected_for(str(version))
            alarms = (
                []
                if verdict == expected
                else [
                    {
                        "kind": "unexpected-verdict",
                        "subject": case.id,
                        "transformers_version": str(version),
                        "message": f"expected {expected}, got {verdict}",
                        "action": "fix the matrix",
                    }
                ]
            )
            records.append(
                case_record(
                    case.id,
                    "passed" if verdict == expected else "failed",
                    "stand-in tox",
                    expected=expected,
                    verdict=verdict,
                    alarms=alarms,
                )
            )
        state = ALIAS_STATE(version) if selection["extras"] else None
        records.append(
            alias_record("deepseek_v32", "passed" if state else "not-checked", state, "stand-in tox")
        )
        document = {"schema_version": 1, "transformers_version": str(version), "cases": records, "alarms": []}
        (work / "raw" / f"{env}.json").write_text(json.dumps(document))
        judged = [r for r in records if r.get("status") != "not-checked"]
        progress = [json.dumps({"total": len(judged)})] + [
            json.dumps({"item": f"m.yaml::{r['id']}", "outcome": "passed"} | self._seconds(r["id"]))
            for r in judged
        ]
        (work / "progress" / f"{env}.jsonl").write_text("".join(line + "\n" for line in progress))
        return 1 if any(r["status"] == "failed" for r in records) else 0


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index: None) -> Path:
    root = tmp_path / "project"
    user_matrix(root)
    monkeypatch.chdir(root)
    monkeypatch.setenv("TOKCOMPAT_GRID_CACHE", str(tmp_path / "cache"))
    return root


@pytest.fixture
def tox(monkeypatch: pytest.MonkeyPatch) -> FakeTox:
    fake = FakeTox()
    monkeypatch.setattr(gridrun, "run_tox", fake)
    return fake


def grid(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["grid", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def recorded(url: str) -> Page:
    return Page(url, releases.JSON_TYPE, SIMPLE_INDEX.read_bytes())
