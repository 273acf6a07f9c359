"""Strategy notes: which strategy a namespace runs, kept beside the branches.

Pure logic, no I/O. A strategy note (kind ``strategy``, on the audit branch ``""`` like an
erasure or a disclosure record, its sequence its record id) says that ``namespace`` on
``branch`` runs the strategy its value describes (``strategies._recorded``), from the branch's
sequence ``at`` (the branch's head when it was written) on. It takes no sequence of its branch:
an open that claims nothing writes nothing any branch's sequence counts, and a reader's open
writes exactly its claim there (the seed's sequence rules).

Which note a branch sees: its own newest one; else, walking up, the newest one of an ancestor
written before the fork, from a sequence at most the fork point (``LogModel.strategy_note_at``).
"""

from __future__ import annotations

from typing import Any, Final

from ._records import json_text
from ._stored_json import read_stored_json

__all__ = ["STRATEGY_NOTE", "parse_strategy_note", "strategy_note_body"]

#: The kind of a strategy note.
STRATEGY_NOTE: Final = "strategy"


def strategy_note_body(branch: str, namespace: str, at: int, value: Any) -> str:
    """The body of a note that ``namespace`` on ``branch`` runs ``value`` from sequence ``at``;
    refuses (``MalformedContentError``, naming the record) a value that is not JSON."""
    return json_text({"b": branch, "ns": namespace, "at": at, "strategy": value}, f"{namespace}/strategy")


def parse_strategy_note(body: str) -> tuple[str, str, int, Any] | None:
    """``(branch, namespace, at, value)`` of a note's body, or ``None`` when it cannot be read."""
    try:
        record = read_stored_json(body)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    branch, namespace, at = record.get("b"), record.get("ns"), record.get("at")
    if not isinstance(branch, str) or not isinstance(namespace, str) or type(at) is not int or "strategy" not in record:
        return None
    return branch, namespace, at, record["strategy"]
