"""The bundled matrix and its offline snapshots, installed as ``pytest_tokcompat.bundled``."""
