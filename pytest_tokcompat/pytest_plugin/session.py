"""The state of one pytest run of the matrix, kept in ``config.stash``, and how the matrix is collected.

A matrix inside the rootdir is collected the way pytest collects any file (through
``pytest_collect_file``), so the node ids pytest prints can be passed back to it:
``pytest --tokcompat matrix/models.yaml::deepseek-v3``. Only a matrix outside the
rootdir (the bundled one) gets a synthetic node, ``tokcompat/models.yaml``. Never
both: the matrix is collected once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_tokcompat.errors import ConfigError, MatrixError
from pytest_tokcompat.judge.cache import JudgeCache
from pytest_tokcompat.matrix.cases import Case, Matrix
from pytest_tokcompat.matrix.clients import (
    SPEC_FORM,
    ClientLoader,
    check_unique,
    loader_from_declaration,
    parse_loader_option,
    with_kwargs,
)
from pytest_tokcompat.matrix.loader import load_matrix
from pytest_tokcompat.matrix.settings import Settings, resolve_settings
from pytest_tokcompat.pytest_plugin.hookcalls import results_by_plugin
from pytest_tokcompat.settings import OPTIONS, JudgeSettings

if TYPE_CHECKING:
    from pytest_tokcompat.judge.judgement import Judgement
    from pytest_tokcompat.matrix.aliases import Alias
    from pytest_tokcompat.request import Request
    from pytest_tokcompat.settings import Limits

TOKENIZERS_KEPT = 4
"""Loaded tokenizers the fixture keeps, most recently used first (a DeepSeek tokenizer holds ~100 MB)."""


SETTINGS_KEY: pytest.StashKey[Settings] = pytest.StashKey()
RUN_KEY: pytest.StashKey[TokcompatRun] = pytest.StashKey()
"""The run's state (matrix, limits, judgements, fixtures' tokenizers) in ``config.stash``."""


def run_settings(config: pytest.Config) -> Settings:
    """The run's settings, built once: the options, $TOKCOMPAT_*, [tool.tokcompat], the ini, the defaults."""
    settings = config.stash.get(SETTINGS_KEY, None)
    if settings is None:
        try:
            settings = resolve_settings(
                cwd=Path(config.invocation_params.dir),
                flags={
                    "matrix": config.getoption("tokcompat_matrix"),
                    "report": config.getoption("tokcompat_report"),
                    **{setting.key: config.getoption(setting.dest) for setting in OPTIONS},
                },
                ini={
                    "matrix": config.getini("tokcompat_matrix"),
                    "loaders": config.getini("tokcompat_loaders"),
                    **{setting.key: config.getini(setting.ini) for setting in OPTIONS},
                },
                ini_root=Path(config.rootpath),
            )
        except ConfigError as error:
            raise pytest.UsageError(f"pytest-tokcompat: {error}") from None
        config.stash[SETTINGS_KEY] = settings
    return settings


def matrix_path(config: pytest.Config) -> Path:
    """--tokcompat-matrix, $TOKCOMPAT_MATRIX, [tool.tokcompat] matrix, the ini option, else the project's
    matrix/models.yaml or ci/tokenizers.yaml, else the bundled one."""
    return run_settings(config).matrix


def load_or_usage_error(path: Path, *, missing_expect: bool = False) -> Matrix:
    try:
        return load_matrix(path, missing_expect=missing_expect)
    except MatrixError as error:
        lines = "\n".join(f"  {problem}" for problem in error.problems)
        raise pytest.UsageError(
            f"tokcompat: the matrix has {len(error.problems)} problem(s):\n{lines}"
        ) from None


LOADERS_HOOK = "pytest_tokcompat_loaders"


def hook_loaders(config: pytest.Config) -> list[ClientLoader]:
    """What every ``pytest_tokcompat_loaders`` implementation declares, concatenated in pluggy's call order;
    anything that is not a loader is a usage error naming the implementation."""
    found: list[ClientLoader] = []
    for answer in results_by_plugin(config, LOADERS_HOOK):
        where, result = answer.where, answer.value
        if isinstance(result, (str, bytes, Mapping, ClientLoader)) or not isinstance(result, Iterable):
            raise pytest.UsageError(
                f"tokcompat: {where} returned {type(result).__name__}; return a list of loader specs "
                f"({SPEC_FORM})"
            )
        try:
            found.extend(loader_from_declaration(item, where) for item in result)
        except ValueError as error:
            raise pytest.UsageError(f"tokcompat: {error}") from None
    return found


def loaders_from(config: pytest.Config, matrix: Matrix) -> list[ClientLoader]:
    """The matrix's ``loaders:``, the ``pytest_tokcompat_loaders`` hook's, [tool.tokcompat] loaders (else the
    ini option's), then --tokcompat-loader's, each with the keyword arguments of ``tokcompat_loader_kwargs``
    and then --tokcompat-loader-kwargs merged over its own; bad input is a usage error."""
    given = [*run_settings(config).loaders, *config.getoption("tokcompat_loader")]
    try:
        loaders = [
            *matrix.loaders,
            *hook_loaders(config),
            *(parse_loader_option(text) for text in given if text.strip()),
        ]
    except ValueError as error:
        raise pytest.UsageError(f"tokcompat: {error}") from None
    problem = check_unique(loaders)
    if problem:
        raise pytest.UsageError(f"tokcompat: {problem}")
    try:
        loaders = with_kwargs(loaders, config.getini("tokcompat_loader_kwargs"), "tokcompat_loader_kwargs")
        return with_kwargs(loaders, config.getoption("tokcompat_loader_kwargs"), "--tokcompat-loader-kwargs")
    except ValueError as error:
        raise pytest.UsageError(f"tokcompat: {error}") from None


def is_controller(config: pytest.Config) -> bool:
    """Not an xdist worker: the process that owns the session's report."""
    return not hasattr(config, "workerinput")


class TokcompatRun:
    """One run's matrix, limits, judgements and fixture tokenizers; also the plugin that collects it."""

    def __init__(self, config: pytest.Config, *, enabled: bool) -> None:
        self.config = config
        self.enabled = enabled
        """--tokcompat was given: the matrix is collected. Without it only the fixtures use the run."""
        self.path = matrix_path(config)
        self.update_expectations = bool(config.getoption("tokcompat_update_expectations"))
        """--tokcompat-update-expectations: entries without expect run too, and the end writes them."""
        self.record = bool(config.getoption("tokcompat_record"))
        self.require_hub = bool(config.getoption("tokcompat_require_hub"))
        self.settings: JudgeSettings = run_settings(config).judge
        """The judge's limits, isolation and caches for every item, fixture and attempt of the run."""
        self.judges = JudgeCache()
        self._matrix: Matrix | None = None
        self._loaders: list[ClientLoader] | None = None
        self._registry: dict[str, Alias] | None = None
        self._tokenizers: OrderedDict[str, Any] = OrderedDict()
        self._nodeid_files: dict[str, bool] = {}

    @property
    def matrix(self) -> Matrix:
        if self._matrix is None:
            measuring = self.update_expectations or bool(self.config.getoption("tokcompat_measure"))
            self._matrix = load_or_usage_error(self.path, missing_expect=measuring)
        return self._matrix

    @property
    def loaders(self) -> list[ClientLoader]:
        """The clients' own loaders, judged beside every case's verdict (see ``loaders_from``)."""
        if self._loaders is None:
            self._loaders = loaders_from(self.config, self.matrix)
        return self._loaders

    @property
    def registry(self) -> dict[str, Alias]:
        """The run's alias registry: the built-in aliases, then the matrix's ``aliases:``, then those of the
        ``pytest_tokcompat_aliases`` hooks, each applied exactly as declared. Every item, fixture and attempt
        gets this one (as data, down to the attempt's child); the module-level REGISTRY never changes."""
        if self._registry is None:
            from pytest_tokcompat.matrix.aliases import effective_registry
            from pytest_tokcompat.pytest_plugin.registry import hook_aliases

            self._registry = effective_registry(self.matrix.aliases, hook_aliases(self.config))
        return self._registry

    @property
    def limits(self) -> Limits:
        return self.settings.limits

    @property
    def inside_rootdir(self) -> bool:
        return self.path.is_relative_to(Path(self.config.rootpath).resolve())

    @property
    def synthetic_nodeid(self) -> str:
        return f"tokcompat/{self.path.name}"

    def request_for(self, case: Case, *, record: bool = False) -> Request:
        """The request of one of the run's cases: the matrix's run of it, with the run's registry, settings
        and (under --tokcompat, where the case item's judgement is shared) the clients' loaders; fixtures
        alone need no loaders judged."""
        from pytest_tokcompat.request import Request

        loaders = tuple(self.loaders) if self.enabled else ()
        return Request(case, record=record, registry=self.registry, loaders=loaders, settings=self.settings)

    def wanted_ids(self) -> list[str]:
        """Every item of the matrix: its cases, then the run's alias registry's lifecycle items."""
        return [case.id for case in self.matrix.cases] + [
            f"alias:{model_type}" for model_type in self.registry
        ]

    # --- collection -------------------------------------------------------------------------------

    def add_matrix_to_the_arguments(self) -> None:
        """Collect an in-rootdir matrix natively, unless the command line already reaches it."""
        if not self.inside_rootdir or self._named_by_the_arguments():
            return
        self.config.args.append(str(self.path))

    def _named_by_the_arguments(self) -> bool:
        """An argument is the matrix (maybe as node ids), or a folder that holds it."""
        base = Path(
            self.config.rootpath
            if self.config.args_source == pytest.Config.ArgsSource.TESTPATHS
            else self.config.invocation_params.dir
        )
        for argument in self.config.args:
            where = (base / argument.split("::", 1)[0]).resolve()
            if where == self.path or where in self.path.parents:
                return True
        return False

    def record_id_of(self, nodeid: str) -> str | None:
        """The record id (case id, or alias:<model_type>) of a matrix item's node id, else None."""
        file_part, separator, name = nodeid.partition("::")
        if not separator or "::" in name:
            return None
        if file_part not in self._nodeid_files:
            self._nodeid_files[file_part] = file_part == self.synthetic_nodeid or (
                (Path(self.config.rootpath) / file_part).resolve() == self.path
            )
        return name if self._nodeid_files[file_part] else None

    # --- hub prefetch (the controller fills the cache once, for every worker) ----------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        entries = [
            (c.repo, c.revision, c.trust_remote_code)
            for c in self.matrix.cases
            if c.snapshot is None and c.repo
        ]
        if entries and is_controller(self.config):
            from pytest_tokcompat.sources.hub import hub_offline, prefetch

            if not hub_offline():
                prefetch(entries)

    # --- the fixture's tokenizers ------------------------------------------------------------------

    def tokenizer_for(self, case: Case) -> Any:
        """The case's tokenizer, loaded with its verdict's remedy: one judgement per case per run."""
        if case.id in self._tokenizers:
            self._tokenizers.move_to_end(case.id)
            return self._tokenizers[case.id]
        from pytest_tokcompat.judge.evaluate import NOT_CHECKED, evaluate

        outcome = evaluate(self.request_for(case), self.judges)
        if outcome.status == NOT_CHECKED:
            pytest.skip(f"not checked: {outcome.message}")
        remedy = chosen_remedy(outcome.judgement)
        if outcome.judgement is None or outcome.folder is None or remedy is None:
            pytest.fail(f"case {case.id!r} has no working tokenizer: {outcome.message}", pytrace=False)
        tokenizer = load_remedy(outcome.folder, remedy, outcome.judgement, self.limits, self.registry)
        self._tokenizers[case.id] = tokenizer
        while len(self._tokenizers) > TOKENIZERS_KEPT:
            self._tokenizers.popitem(last=False)
        return tokenizer


def chosen_remedy(judgement: Judgement | None) -> str | None:
    """The remedy the verdict stands for; for a tokenizer that loads without ground truth, the one that loaded."""
    if judgement is None:
        return None
    from pytest_tokcompat.model import AttemptStatus, Remedy, Verdict

    if judgement.verdict in tuple(Remedy):
        return str(judgement.verdict)
    if judgement.verdict == Verdict.NOT_CHECKED:
        loaded = [a for a in judgement.attempts if a.status == AttemptStatus.NOT_CHECKED]
        return loaded[0].remedy if loaded else None
    return None


def load_remedy(
    folder: Path,
    remedy: str,
    judgement: Judgement,
    limits: Limits,
    registry: dict[str, Alias] | None = None,
) -> Any:
    """Load the checkpoint as the judged remedy prescribes, within the load time limit, leaving no trace."""
    from pytest_tokcompat.judge.isolation import isolated_transformers
    from pytest_tokcompat.judge.loading import load_with
    from pytest_tokcompat.judge.timelimit import time_limit
    from pytest_tokcompat.matrix.aliases import find_alias

    alias = find_alias(judgement.model_type, registry) if remedy == "alias" else None
    try:
        with isolated_transformers(foreign=remedy == "auto_map"), time_limit(limits.load_timeout):
            return load_with(folder, remedy, alias)
    except Exception as error:  # judged to load a moment ago; say what changed rather than crash
        pytest.fail(
            f"{folder}: loading with remedy {remedy} failed: {type(error).__name__}: {error}", pytrace=False
        )


def run_of(config: pytest.Config) -> TokcompatRun:
    """The run's state; created on first use where --tokcompat is off (the fixtures alone)."""
    run = config.stash.get(RUN_KEY, None)
    if run is None:
        run = config.stash[RUN_KEY] = TokcompatRun(config, enabled=False)
    return run


def start_run(config: pytest.Config) -> TokcompatRun:
    """--tokcompat: the matrix and the report path are checked now, before any test runs."""
    run = config.stash[RUN_KEY] = TokcompatRun(config, enabled=True)
    run.matrix  # noqa: B018 - load and validate now: a bad matrix is a usage error before collection
    run.loaders  # noqa: B018 - and the clients' loaders, from the matrix, the ini file and the options
    run.registry  # noqa: B018 - and the declared aliases (matrix and hooks): a bad one stops the run now
    run.add_matrix_to_the_arguments()
    config.pluginmanager.register(run, "tokcompat-run")
    return run
