"""What the inspector's pictures and its search draw from, as JSON-ready data: reads of one
:class:`Snapshot`, refused as ``_data`` refuses (:class:`NotFound`, :class:`BadParameter`).

- :func:`compiles`: the compile records of a reader's namespaces (each compile's tokens by part
  against its budget, and what a prompt cache could serve of it), read from the store.
- :func:`life`: a message's life: written, edited, shown to whom and how, erased.
- :func:`visibility`: who can see whose lines, counted once and then kept up to date from where
  the last count stopped (:class:`LineCounts`).
- :func:`search`: ``ContextManager.search`` as one reader.
"""

from __future__ import annotations

from typing import Any

from ..actors._runtime import internal_store
from ..store._errors import ArgumentTypeError, InvalidArgumentError
from ._data import (
    BadParameter,
    NotFound,
    audiences_of,
    branch_of,
    claiming,
    known_readers,
    namespace_of,
    page_message,
    reader_manager,
    reader_of,
    whole_number,
)
from ._snapshots import Snapshot

__all__ = ["LineCounts", "compiles", "life", "search", "visibility"]

MAX_COMPILES = 1000


async def compiles(
    snapshot: Snapshot, *, branch: str | None, reader: str | None, namespace: str | None, limit: str | None
) -> dict[str, Any]:
    """The newest ``limit`` compile records, oldest first: of ``namespace`` when given, else of
    the namespaces that record ``reader`` when given, else of every namespace; on ``branch``."""
    name = branch_of(snapshot, branch)
    count = whole_number(limit, "limit", default=200, least=1, most=MAX_COMPILES)
    rt = snapshot.runtime
    if namespace:
        wanted: list[str | None] = [namespace_of(snapshot, name, namespace)]
    elif reader:
        wanted = list(claiming(snapshot, name, reader_of(snapshot, name, reader)))
    else:
        wanted = [None]
    found = [record for ns in wanted for record in await rt.compile_records(namespace=ns, branch=name, limit=count)]
    found.sort(key=lambda record: record.record_id)
    shown = [record.to_json() for record in found[-count:]]
    return {"branch": name, "reader": reader or None, "namespace": namespace or None, "compiles": shown, "count": len(shown)}


async def life(snapshot: Snapshot, *, branch: str | None, message: str | None) -> dict[str, Any]:
    """A message's life, oldest first: written, each edit, each time it was shown (to whom, in
    which namespace, how), and its erasure; and the readers its blocks are for."""
    name = branch_of(snapshot, branch)
    if not message or not message.isdigit():
        raise BadParameter("message", f"{message!r} is not a message id (a whole number)" if message else "a message id is required")
    rt = snapshot.runtime
    stored = rt.store.get_message(name, message)
    if stored is None:
        raise NotFound("message", f"branch {name!r} holds no message {message!r}")
    model = internal_store(rt).model
    events: list[dict[str, Any]] = [{"what": "written", "at": stored.timestamp}]
    events += [{"what": "edited", "at": at, "sequence": seq} for seq, at in model.edit_history(name, message)]
    events += [
        {"what": "shown", "at": d.at, "reader": d.reader, "namespace": d.namespace, "branch": d.branch, "via": d.via}
        for d in rt.disclosures(message)
    ]
    stone = rt.tombstone(message)
    if stone is not None:
        events.append({"what": "erased", "at": stone.erased_at, "reason": stone.reason, "erasure": stone.erasure})
    order = {"written": 0, "edited": 1, "shown": 2, "erased": 3}
    events.sort(key=lambda e: (e["at"] is None, e["at"] or 0.0, order[e["what"]]))
    restricted, names, _every = audiences_of(stored)
    return {
        "branch": name,
        "message": page_message(snapshot, stored, None),
        "events": events,
        "readers": sorted(names) if restricted else None,
        "recording": "recorded",
    }


class LineCounts:
    """Who can see whose lines on one branch, counted from where the last count stopped: the
    messages appended since. An edit or an erasure on the branch (which may change what was
    counted) starts the count afresh. ``scanned`` counts the messages looked at."""

    def __init__(self) -> None:
        self.scanned = 0
        self.edits = self.erasures = -1
        self._afresh()

    def _afresh(self) -> None:
        self.position = 0
        self.participants: dict[str, int] = {}  # participant -> messages
        self.shared: dict[str, int] = {}  # participant -> messages with no audience
        self.restricted: dict[str, int] = {}  # participant -> messages with an audience
        self.private: dict[tuple[str, str], int] = {}  # (reader, participant) -> a block names the reader
        self.whole: dict[tuple[str, str], int] = {}  # (reader, participant) -> every audience names the reader

    def update(self, snapshot: Snapshot, branch: str) -> LineCounts:
        store = internal_store(snapshot.runtime)
        model = store.model
        length, edits, erasures = store.length(branch), model.edit_count(branch), model.erasure_count
        if (edits, erasures) != (self.edits, self.erasures):
            self._afresh()
            self.edits, self.erasures = edits, erasures
        if self.position < length:
            for message in store.messages(branch, self.position, length):
                self.scanned += 1
                who = message.participant
                if not who:  # erased: no participant, no line
                    continue
                self.participants[who] = self.participants.get(who, 0) + 1
                restricted, names, every = audiences_of(message)
                if not restricted:
                    self.shared[who] = self.shared.get(who, 0) + 1
                    continue
                self.restricted[who] = self.restricted.get(who, 0) + 1
                for reader in names:
                    self.private[(reader, who)] = self.private.get((reader, who), 0) + 1
                for reader in every or ():
                    self.whole[(reader, who)] = self.whole.get((reader, who), 0) + 1
        self.position = length
        return self


def visibility(snapshot: Snapshot, *, branch: str | None) -> dict[str, Any]:
    """Readers against participants: for each pair, how many of the participant's messages hold
    a line for the reader (a block whose audience names it: ``private``) and how many hold a
    line kept from it (a block whose audience does not name it: ``hidden``); and how many of
    each participant's messages every reader sees whole (``shared``)."""
    name = branch_of(snapshot, branch)
    key = ("line counts", name)
    counts = snapshot.kept.get(key)
    if not isinstance(counts, LineCounts):
        counts = snapshot.kept[key] = LineCounts()
    counts.update(snapshot, name)
    readers = known_readers(snapshot, name)
    participants = sorted(counts.participants)
    cells = [
        {
            "reader": reader,
            "participant": who,
            "private": counts.private.get((reader, who), 0),
            "hidden": counts.restricted.get(who, 0) - counts.whole.get((reader, who), 0),
        }
        for reader in readers
        for who in participants
    ]
    return {
        "branch": name,
        "readers": readers,
        "participants": participants,
        "cells": cells,
        "shared": {who: counts.shared.get(who, 0) for who in participants},
        "messages": snapshot.runtime.store.length(name),
    }


async def search(
    snapshot: Snapshot, *, branch: str | None, reader: str | None, query: str | None, namespace: str | None, limit: str | None
) -> dict[str, Any]:
    """``ContextManager.search`` as ``reader``: through ``namespace`` when given, else the
    namespace that records the reader (the first by name), else a preview of its view (which
    finds messages only). Read-only: the inspector records no disclosure."""
    name = branch_of(snapshot, branch)
    who = reader_of(snapshot, name, reader)
    count = whole_number(limit, "limit", default=20, least=1, most=100)
    if not query or not query.strip():
        raise BadParameter("q", "give the words to search for")
    async with snapshot.lock:
        ns, _strategy, manager = await reader_manager(snapshot, name, who, namespace or None)
        try:
            hits = await manager.search(query, limit=count)
        except (InvalidArgumentError, ArgumentTypeError) as exc:
            raise BadParameter("q", str(exc)) from None
    return {
        "branch": name,
        "reader": who,
        "namespace": ns,
        "query": query,
        "hits": [
            {
                "kind": hit.kind,
                "id": hit.id,
                "text": hit.text,
                "score": hit.score,
                "sequence": hit.sequence,
                "participant": hit.participant,
                "timestamp": hit.timestamp,
                "level": hit.level,
            }
            for hit in hits
        ],
    }
