"""Which matrix a run uses: the bundled one, a project's own, or the one it names.

One rule for every front-end, so that ``pytest`` and ``tokcompat`` run from the same folder read
the same file.
"""

from __future__ import annotations

import os
from pathlib import Path


def bundled_dir() -> Path:
    """The bundled matrix folder: ``pytest_tokcompat/bundled`` when installed, ``matrix/`` of a checkout."""
    package = Path(__file__).resolve().parent.parent
    installed = package / "bundled"
    if (installed / "models.yaml").is_file():
        return installed
    return package.parent / "matrix"


def bundled_matrix() -> Path:
    """The matrix shipped with the package."""
    return bundled_dir() / "models.yaml"


PROJECT_MATRIX = Path("matrix") / "models.yaml"
PROJECT_MATRICES = (PROJECT_MATRIX, Path("ci") / "tokenizers.yaml")
"""A project's own matrix where nothing names one: the first of these under its folder that exists."""
_PROJECT_MARKERS = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", ".git")


def find_rootdir(start: Path) -> Path:
    """The project folder a command runs in: the nearest ancestor of ``start`` with a project file.

    pytest has its own rootdir; the CLI uses this one, so ``tokcompat`` run from a
    subfolder finds the same ``matrix/models.yaml`` as ``pytest`` run from there.
    """
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in _PROJECT_MARKERS):
            return folder
    return start


def default_matrix(
    given: str | Path | None, ini: str | Path | None, rootdir: Path | None, *, cwd: Path | None = None
) -> Path:
    """The one rule for which matrix a run uses; an absolute path.

    The option (relative to ``cwd``, the invocation folder), then the ini value
    (relative to ``rootdir``), then the project's ``matrix/models.yaml`` (else its
    ``ci/tokenizers.yaml``) under ``rootdir``, then the bundled matrix. Every front-end
    reaches it through :func:`pytest_tokcompat.matrix.settings.resolve_settings`.
    """
    here = Path.cwd() if cwd is None else Path(cwd)
    if given:
        return Path(os.path.abspath(here / Path(given)))
    if ini:
        return Path(os.path.abspath((rootdir if rootdir is not None else here) / Path(ini)))
    if rootdir is not None:
        for candidate in PROJECT_MATRICES:
            own = Path(os.path.abspath(Path(rootdir) / candidate))
            if own.is_file():
                return own
    return Path(os.path.abspath(bundled_matrix()))
