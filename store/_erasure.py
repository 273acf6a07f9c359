"""Erasure: what a store keeps of an erased message, and which records an erasure reaches.

Pure logic, no I/O. An erasure is one record of its own (kind ``erasure``, on the branch named
``""``, which no real branch can be named, with the erasure's number as its sequence) together with
the overwriting of every record that held the erased content, in the same commit:

* each erased message's own record, and every edit record of it on any branch, become
  :data:`ERASED_BODY` (``{"asides_erased": <number>}``): the message keeps its id, its branch and its
  sequence, so positions, forks and floors stay valid;
* every state record, on any branch and in any version, whose provenance names an erased message
  (a context-log copy's ``source_message_id``; a summary's, memory's, knowledge item's or chunk's
  ``message_ids``, or its ``message_runs`` naming them as runs of ids; an attempts record's
  ``members``) becomes JSON ``null``: a strategy reads it as no record (its chunk is summarised
  again from what remains), a context log as a dropped entry.
  Provenance decides, never text.

The erasure record holds ids, a reason and a time, never content: ``{"n", "message_ids",
"states", "reason", "at", "summaries"}`` (``states``: the record ids of the state records it
overwrote; ``summaries``: how many summaries it invalidated).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from ._errors import AsidesError
from ._message_ids import RUNS_FIELD, record_names

__all__ = [
    "ERASURE",
    "ERASURE_BRANCH",
    "Erasure",
    "MessageErasedError",
    "Tombstone",
    "UnknownMessagesError",
    "derived_from",
    "erased_body",
    "erasure_body",
    "parse_erasure",
]

#: The kind of an erasure record.
ERASURE: Final = "erasure"
#: The branch name erasure records are filed under (no branch can have it: names are non-empty).
ERASURE_BRANCH: Final = ""
#: The provenance fields of a state record: the ids of the messages it was derived from.
PROVENANCE_FIELDS: Final = ("message_ids", "members")
SOURCE_FIELD: Final = "source_message_id"


def erased_body(number: int) -> str:
    """What an erased message's record, and each of its edit records, holds after erasure
    ``number``."""
    return json.dumps({"asides_erased": number})


@attrs.frozen
class Erasure:
    """What one erasure did, its receipt: the ids of the messages it erased (in the order given,
    each once), how many summaries (memories, knowledge items) it invalidated, how many derived
    records it erased in all (summaries, chunk records, context-log copies, attempts), the
    reason, and when (seconds since the epoch); how many edited versions of the messages it
    erased (``versions_erased``), how many context-log copies (``context_copies``, among the
    derived records), how many search-index entries it took out or kept from ever being made
    (``index_entries``: one per message and per version), and what the store rewrote so that no
    file keeps the erased bytes (``rewrites``, each saying when). It holds no text of any message.
    ``number`` counts the store's erasures from 1. An erasure recorded before receipts says 0 and
    ``()`` for what it did not record."""

    number: int
    message_ids: tuple[str, ...]
    summaries_invalidated: int
    records_invalidated: int
    reason: str
    at: float
    versions_erased: int = 0
    context_copies: int = 0
    index_entries: int = 0
    rewrites: tuple[str, ...] = ()


@attrs.frozen
class Tombstone:
    """What remains of an erased message: its id, when it was erased, and why."""

    message_id: str
    erased_at: float
    reason: str
    erasure: int


class UnknownMessagesError(AsidesError, LookupError):
    """An erasure named messages the store does not hold; nothing was erased.
    ``message_ids`` are the unknown ones, ``path`` the argument."""

    def __init__(self, message_ids: Iterable[str], path: str = "message_ids") -> None:
        self.message_ids = tuple(message_ids)
        self.path = path
        super().__init__(f"{path}: no message {', '.join(repr(m) for m in self.message_ids)} in this store; nothing was erased")


class MessageErasedError(AsidesError, LookupError):
    """A write that would edit an erased message, or store a record derived from one (a summary
    whose request read it before the erasure landed). Nothing was written."""

    def __init__(self, message_ids: Iterable[str], path: str) -> None:
        self.message_ids = tuple(sorted(message_ids))
        self.path = path
        super().__init__(f"{path}: message(s) {', '.join(repr(m) for m in self.message_ids)} were erased; nothing was written")


def derived_from(value: object, erased: Mapping[str, Any] | set[str] | frozenset[str]) -> set[str]:
    """The erased message ids a state value names as its sources (empty: not derived from any)."""
    if not isinstance(value, dict) or not erased:
        return set()
    found: set[str] = set()
    source = value.get(SOURCE_FIELD)
    if isinstance(source, str) and source in erased:
        found.add(source)
    for field in PROVENANCE_FIELDS:
        ids = value.get(field)
        if isinstance(ids, list):
            found.update(m for m in ids if isinstance(m, str) and m in erased)
    if RUNS_FIELD in value:
        found |= record_names(value[RUNS_FIELD], erased)
    return found


def erasure_body(
    number: int,
    message_ids: Iterable[str],
    states: Iterable[int],
    reason: str,
    at: float,
    summaries: int,
    receipt: dict[str, Any] | None = None,
) -> str:
    value = {"n": number, "message_ids": list(message_ids), "states": list(states), "reason": reason, "at": at, "summaries": summaries}
    if receipt:
        value["receipt"] = receipt
    return json.dumps(value, ensure_ascii=False)


def parse_erasure(body: str) -> tuple[Erasure, tuple[int, ...]] | None:
    """An erasure record's body read back, with the record ids of the state records it
    overwrote; ``None`` when it is not one (a file changed outside asides)."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    number, ids, states = value.get("n"), value.get("message_ids"), value.get("states")
    reason, at, summaries = value.get("reason"), value.get("at"), value.get("summaries", 0)
    if (
        not isinstance(number, int)
        or not isinstance(ids, list)
        or not all(isinstance(m, str) for m in ids)
        or not isinstance(states, list)
        or not all(isinstance(s, int) for s in states)
        or not isinstance(reason, str)
        or not isinstance(at, (int, float))
        or not isinstance(summaries, int)
    ):
        return None
    receipt = value.get("receipt")
    counts = (0, 0, 0)
    rewrites: tuple[str, ...] = ()
    if isinstance(receipt, dict):
        found = tuple(receipt.get(k) for k in ("versions", "copies", "index"))
        if all(isinstance(n, int) and n >= 0 for n in found):
            counts = found  # type: ignore[assignment]
        said = receipt.get("rewrites")
        if isinstance(said, list) and all(isinstance(r, str) for r in said):
            rewrites = tuple(said)
    erasure = Erasure(number, tuple(ids), summaries, len(states), reason, float(at), *counts, rewrites)
    return erasure, tuple(states)
