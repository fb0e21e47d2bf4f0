"""The grid's fixtures for every test here: the stand-in index, a project holding a matrix, the fake tox."""

from tests.helpers.fakegrid import index, project, tox  # noqa: F401 (fixtures)
