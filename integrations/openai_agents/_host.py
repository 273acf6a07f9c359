"""The sessions' runtime of their own: the host every integration built from a path shares
(``integrations/_host.py``), with what a session refused a store file says to do instead."""

from __future__ import annotations

from pathlib import Path

from .._host import ThreadHost, release_host
from .._host import acquire_host as _acquire

__all__ = ["LOCKED_HINT", "ThreadHost", "acquire_host", "release_host"]

#: What a session refused a store file that a runtime holds should do instead.
LOCKED_HINT = (
    "An AsidesSession opens a runtime of its own on its file; if this process's host runtime holds the file, "
    "take the session from it: await AsidesSession.bound_to(rt, session_id, reader=...)"
)


def acquire_host(db_path: str | Path) -> ThreadHost:
    """The host of ``db_path`` (see ``integrations/_host.py``), for a session."""
    return _acquire(db_path, hint=LOCKED_HINT)
