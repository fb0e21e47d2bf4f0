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
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from pytest_tokcompat.ci import schedule
from pytest_tokcompat.ci.cellcache import CellCache, Keys, plan_reuse, store
from pytest_tokcompat.ci.envcheck import Integrity
from pytest_tokcompat.ci.gridinput import (
    DEFAULT_SPEC,
    BadInput,
    GridOptions,
    check_configuration_text,
    check_loaders,
    check_with,
    install_line,
    matrix_floor,
    requirement_identity,
)
from pytest_tokcompat.ci.gridinput import (
    MIN_FLOOR as MIN_FLOOR,  # the floor's own tests read it here
)
from pytest_tokcompat.ci.gridprogress import make_progress
from pytest_tokcompat.ci.gridreport import GridReporter, Out
from pytest_tokcompat.ci.install import cache_home, own_wheel
from pytest_tokcompat.ci.releaserun import ReleaseRun
from pytest_tokcompat.ci.releases import resolve_spec
from pytest_tokcompat.ci.shards import EXTRAS, parse_shard, plan_cells, shard_of
from pytest_tokcompat.ci.toxini import (
    OFFLINE_LINE as OFFLINE_LINE,  # the offline tests read it here
)
from pytest_tokcompat.ci.toxini import write_tox_ini
from pytest_tokcompat.ci.toxrun import (
    ToxRun as ToxRun,  # a fake run_tox returns one
)
from pytest_tokcompat.ci.toxrun import conflict_of, env_versions, read_from, resolver_conflicts, run_tox
from pytest_tokcompat.contract import OUTPUT_GITIGNORE, make_output_folder, write_json_atomic
from pytest_tokcompat.credentials import scrub
from pytest_tokcompat.errors import BuildError, MatrixError, ReleaseError
from pytest_tokcompat.exitcodes import ExitCode
from pytest_tokcompat.inert import terminal
from pytest_tokcompat.matrix.cases import Matrix
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.matrix.settings import resolve_settings
from pytest_tokcompat.settings import passed_on


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

    def run(self, plan_only: bool = False) -> ExitCode:
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
            self.options.settings,
        )
        clients = {"with": list(with_requirements), "loaders": list(self.options.loaders)}
        if self.loader_kwargs:
            clients["loader_kwargs"] = list(self.loader_kwargs)
        keys = Keys(
            matrix,
            raw,
            clients if with_requirements or self.options.loaders else None,
            passed_on(self.options.settings),
        )
        self.with_identities = list(with_requirements)
        cache = CellCache(cache_home() / "grid" / "cells")
        self.build(runs, wheel)
        self.verify_built(runs, wheel)
        for run in runs:
            if run.versions is not None:
                plan_reuse(run, keys, cache, self.matrix)
        for why in cache.discarded:
            self.err(f"discarded a cell file that does not fit its cell, judged again: {why}")
        self.judge_watched(runs, case_ids)
        self.verify_judged(runs, wheel, case_ids)
        for run in runs:
            if run.versions is not None:
                store(run, keys, cache)
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
        reporter = GridReporter(
            self.output,
            self.out,
            self.err,
            self.shard,
            self.costs,
            matrix,
            path,
            self.options.update_expectations,
            self.options.allow_weaker,
        )
        for run in runs:
            reporter.write_report(run, path, plan)
        return reporter.finish(runs, plan)

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
        conflicts = resolver_conflicts(read_from(log, start))
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


def run_command(options: GridOptions, out: Out = print, plan_only: bool = False) -> ExitCode:
    """The ``tokcompat grid`` command; ``plan_only`` prints the plan (for the workflow's shards) and stops."""
    return GridRun(options, out).run(plan_only=plan_only)
