"""Test helpers internal to this suite (not fixtures): raw records and store dumps.

What a user's tests need too (test models, the leak check, a runtime on a temporary store) lives
in ``asides.testing``; only what reaches below the public API stays here.

* :func:`seed_records` writes raw records into a store file *before* a runtime opens it: the way
  tests stand in for old or foreign data (a corrupt reader record, an audience where a write
  refuses one) that no public write can produce.
* :func:`dump` captures everything a runtime's store holds, for "a refusal writes nothing"
  comparisons (take one before, one after, assert equal).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

_SCHEMA = """CREATE TABLE IF NOT EXISTS log (
    id INTEGER PRIMARY KEY, branch TEXT NOT NULL, seq INTEGER NOT NULL,
    kind TEXT NOT NULL, ref TEXT, body TEXT NOT NULL)"""


def seed_records(path: str, records: list[tuple[str, str, str | None, Any]]) -> list[str]:
    """Append records ``(branch, kind, ref, body)`` to the store file at ``path``.

    ``kind`` is ``"message"`` (body: ``{"participant", "content", "metadata", "timestamp"}``),
    ``"state"`` (ref: the full key, body: any JSON value, or a ``str`` used verbatim as raw body
    text when wrapped in :class:`Raw`), or ``"edit"`` (ref: message id). Each record takes its
    branch's next sequence. Returns the record ids (message ids for messages). The store must
    not be open.
    """
    connection = sqlite3.connect(path)
    try:
        connection.execute(_SCHEMA)
        connection.execute("PRAGMA user_version=1")
        ids = []
        for branch, kind, ref, body in records:
            next_id = connection.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM log").fetchone()[0]
            # a branch record's seq is its fork point, so the newest seq on the branch is its head
            head = connection.execute("SELECT COALESCE(MAX(seq), 0) FROM log WHERE branch=?", (branch,)).fetchone()[0]
            text = body.text if isinstance(body, Raw) else json.dumps(body)
            connection.execute(
                "INSERT INTO log (id, branch, seq, kind, ref, body) VALUES (?,?,?,?,?,?)",
                (next_id, branch, head + 1, kind, ref, text),
            )
            ids.append(str(next_id))
        connection.commit()
        return ids
    finally:
        connection.close()


class Raw:
    """A record body given verbatim (for example text that is not JSON)."""

    def __init__(self, text: str) -> None:
        self.text = text


def message_body(participant: str, content: list[dict[str, Any]], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """A message record body in the stored wire form."""
    return {"participant": participant, "content": content, "metadata": metadata or {}, "timestamp": 0.0}


def dump(store: Any) -> dict[str, Any]:
    """Everything the store holds: branches (name, parent, fork point, head), each branch's
    messages as stored, and each branch's state records."""
    out: dict[str, Any] = {}
    for info in store.branches():
        out[info.name] = {
            "info": (info.parent, info.fork_sequence, info.head),
            "messages": [
                (m.id, m.sequence, m.participant, m.content, dict(m.metadata)) for m in store.messages(info.name)
            ],
            "state": store.state_items(info.name),
        }
    return out
