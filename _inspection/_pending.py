"""What a store still owes to be as its records say, for ``asides inspect``'s ``pending``: on a
shared store, the rewrite of the log (``VACUUM FULL``) that erasures owe until their erased bytes
are in no data file of the store (``PostgresStore.owed_vacuum``); nothing on a store file, whose
open redoes what an interrupted erasure left."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ..actors._runtime import Runtime

__all__ = ["pending_lines", "pending_upkeep"]


async def pending_upkeep(rt: Runtime) -> list[dict[str, Any]]:
    """The store's pending upkeep as JSON-ready data: ``{"kind": "vacuum", "erasures": [n, ...],
    "since": <seconds since the epoch>, "blocked_by": [<server process id>, ...]}`` for an owed
    rewrite (``blocked_by``: whose transactions, older than those erasures, hold it back now);
    an empty list when nothing is owed."""
    owed = await rt.store.owed_vacuum()
    if owed is None:
        return []
    return [{"kind": "vacuum", "erasures": list(owed.erasures), "since": owed.since, "blocked_by": list(owed.blocked_by)}]


def pending_lines(pending: list[Mapping[str, Any]]) -> list[str]:
    """Each pending item in words, for the table output."""
    lines = []
    for owed in pending:
        held = ", ".join(f"server process {pid}" for pid in owed["blocked_by"])
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(owed["since"]))
        lines.append(
            f"pending: VACUUM FULL of the log, owed by erasure(s) {', '.join(map(str, owed['erasures']))} since {since}: their "
            "erased bytes are still in the store's data files; "
            + (f"held back by older transactions of {held}" if held else "the next writing open, or a writing store's next try, does it")
        )
    return lines
