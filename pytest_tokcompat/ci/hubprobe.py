"""Whether the Hugging Face Hub can be reached from here, asked once before a grid starts its runs.

huggingface_hub retries a connection that fails (tens of seconds per hub entry and release)
and logs each failure; where the hub cannot be reached at all, the grid's runs go offline
(``HF_HUB_OFFLINE=1``) instead, so a hub entry that is not in the hub cache is not checked
at once, with the fix, and every other cell is judged as ever.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

PROBE_TIMEOUT = 3.0


def hub_endpoint() -> str:
    """``HF_ENDPOINT`` as set now, else huggingface_hub's own default."""
    from huggingface_hub import constants

    return os.environ.get("HF_ENDPOINT") or str(constants.ENDPOINT)


def hub_unreachable(timeout: float = PROBE_TIMEOUT) -> str | None:
    """Why the hub's endpoint takes no connection (a name that does not resolve, a refused or timed out
    connection); None where it takes one."""
    endpoint = hub_endpoint()
    parts = urlsplit(endpoint)
    if not parts.hostname:
        return f"{endpoint} is not a URL"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as error:
        return f"{endpoint}: {error.strerror or type(error).__name__}"
    return None
