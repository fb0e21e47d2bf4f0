"""What the plugin's modules share through pytest's stash and reports: a leaf, so none imports another
to find it."""

from __future__ import annotations

from typing import Any

import pytest

RECORD_KEY: pytest.StashKey[dict[str, Any]] = pytest.StashKey()
"""An item's report record, in ``item.stash`` until the report of its call phase carries it."""
REPORT_ATTRIBUTE = "tokcompat"
"""``report.tokcompat``: the record on the test report (a JSON string on the wire between xdist processes)."""
