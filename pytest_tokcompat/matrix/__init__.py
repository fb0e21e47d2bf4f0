"""Inputs: the YAML matrix, its version ranges and the alias registry. Imports neither transformers nor the judge."""

from pytest_tokcompat.errors import MatrixError
from pytest_tokcompat.matrix.cases import OUTCOMES, Case, Expectation, Matrix, Problem
from pytest_tokcompat.matrix.discovery import bundled_matrix, default_matrix, find_rootdir
from pytest_tokcompat.matrix.entries import CASE_KEYS, ID_PATTERN
from pytest_tokcompat.matrix.loader import TOP_KEYS, load_matrix, parse_matrix

__all__ = [
    "CASE_KEYS",
    "ID_PATTERN",
    "OUTCOMES",
    "TOP_KEYS",
    "Case",
    "Expectation",
    "Matrix",
    "MatrixError",
    "Problem",
    "bundled_matrix",
    "default_matrix",
    "find_rootdir",
    "load_matrix",
    "parse_matrix",
]
