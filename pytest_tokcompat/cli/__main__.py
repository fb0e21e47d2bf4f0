"""``python -m pytest_tokcompat.cli``: what bisect's throwaway environments run."""

from __future__ import annotations

from pytest_tokcompat.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
