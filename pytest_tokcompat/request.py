"""What a front-end asks the judge, as one frozen object that travels down the layers once.

Each front-end (``load_tokenizer()``, ``tokcompat check``, the plugin's items and fixtures, and through
its child ``check`` bisect) builds one :class:`Request`; the resolver (``sources.resolve``) and the
evaluator (``judge.evaluate``) read it, and what comes back up is one ``Evaluation`` holding the
``Judgement``. The names of the thing judged, from the top down:

- ``request.name``: what the client names, as it would pass it to ``from_pretrained`` (a folder, a hub
  repo id, a served name, a case id, ``MATRIX::ID``), or a matrix ``Case`` for the matrix's own run;
- the ``Identity`` (``sources.checkpoint``): what that name was found to be (a case, a folder, a repo);
- the ``Checkpoint``: the files it resolved to (``checkpoint.folder``) with their context;
- the ``LoadTarget`` (``sources.names``): the name each attempt gives ``from_pretrained``, which is
  ``request.name``'s repo id or folder, never the cache folder the files were assembled in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_tokcompat.matrix.aliases import Alias
from pytest_tokcompat.matrix.cases import Case
from pytest_tokcompat.matrix.clients import ClientLoader
from pytest_tokcompat.settings import JudgeSettings, judge_settings_from_environment


@dataclass(frozen=True)
class Request:
    """One thing to judge, with everything the caller decided about it."""

    name: str | Path | Case
    """What the client names (see the module's docstring); a ``Case`` is a matrix run (its opt-in applies)."""
    matrix: Path | None = None
    """Where names are looked up (None: the bundled matrix)."""
    revision: str | None = None
    trust_remote_code: bool = False
    """The caller's opt-in; a matrix entry's applies to the matrix's own runs (a ``Case`` name) only."""
    allow_unpinned_remote_code: bool = False
    texts: tuple[str, ...] = ()
    """Extra probe texts."""
    expect: str | None = None
    """Overrides the case's expectation."""
    record: bool = False
    """Record missing golden ids (``--tokcompat-record``)."""
    keep_tokenizer: bool = False
    """Load the verdict's remedy in this process too (fixtures, ``load_tokenizer()``)."""
    registry: dict[str, Alias] | None = field(default=None, hash=False)
    """The alias registry to judge with (a pytest run's); None: the built-in aliases, the matrix's, then
    ``aliases``."""
    aliases: tuple[Alias, ...] = ()
    """The caller's own aliases (``load_tokenizer(aliases=...)``), over the built-in and the matrix's."""
    loaders: tuple[ClientLoader, ...] = ()
    """Client loaders judged beside the verdict (never a rung; their alarms fail it)."""
    verdict_cache: bool = False
    """Keep (and reuse) the verdict in the verdict cache on disk the settings name (``load_tokenizer()``)."""
    settings: JudgeSettings = field(default_factory=judge_settings_from_environment)
    """The judge's limits, isolation and caches, as the front-end resolved them (a caller without a
    front-end: the variables, then the defaults)."""

    @property
    def subject(self) -> str:
        """The name as a report says it before anything is resolved: a case's id, else the name as given."""
        return self.name.id if isinstance(self.name, Case) else str(self.name)
