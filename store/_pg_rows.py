"""Records on their way to and from PostgreSQL: pending writes, and committed rows replayed into
the in-memory model with the store events they make.

A write is encoded when it is called (so bad input is refused before anything is queued) but
takes its record ids and branch sequences only at commit, under the store's write lock, from a
model that holds every record committed before it. The model learns a record only once it is
committed, by replaying it: memory never holds a record the database might not.

The record bodies are the same JSON the in-memory model writes for the SQLite store (the model
reads both alike).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import attrs

from ._blocks import ContentBlock, content_to_json
from ._erasure import ERASURE, ERASURE_BRANCH, Erasure, parse_erasure
from ._events import BranchCreated, MessageEdited, MessagesAppended, MessagesErased, StatesWritten, StoreEvent
from ._messages import Message
from ._model import BRANCH, EDIT, MESSAGE, STATE, LogModel
from ._records import EncodedMessage, blocks_to_store, encodable, encode_message

__all__ = [
    "BranchCreatedElsewhere",
    "FromElsewhere",
    "MessageEditedElsewhere",
    "MessagesAppendedElsewhere",
    "PendingRow",
    "PendingWrite",
    "RowTuple",
    "StatesWrittenElsewhere",
    "apply_rows",
    "branch_row",
    "edit_row",
    "message_row",
    "number_rows",
    "state_row",
]

RowTuple = tuple[int, str, int, str, str | None, str]


class FromElsewhere:
    """Marks a store event made by another process's commit (heard through a notification or
    a catch-up); the event is otherwise the one a local write makes."""


@attrs.frozen
class MessagesAppendedElsewhere(MessagesAppended, FromElsewhere):
    pass


@attrs.frozen
class MessageEditedElsewhere(MessageEdited, FromElsewhere):
    pass


@attrs.frozen
class StatesWrittenElsewhere(StatesWritten, FromElsewhere):
    pass


@attrs.frozen
class BranchCreatedElsewhere(BranchCreated, FromElsewhere):
    pass


@attrs.frozen
class MessagesErasedElsewhere(MessagesErased, FromElsewhere):
    pass


@attrs.frozen
class PendingRow:
    """A record without its id; ``fork`` is the sequence of a branch record (its fork point),
    ``None`` for the records that take their branch's next sequence."""

    branch: str
    kind: str
    ref: str | None
    body: str
    fork: int | None = None
    #: A message record's encoding, which the model takes as it is once the record is committed
    #: by this process (instead of decoding the body again).
    encoded: EncodedMessage | None = attrs.field(default=None, eq=False)


@attrs.define(eq=False)
class PendingWrite:
    """One call's records, committed together or not at all.

    ``recheck`` runs at commit against the caught-up model and raises what the call would have
    raised had it been made then (a branch name taken meanwhile); ``guard`` is the caller's own
    check, run at the same moment. Either raising refuses the write, which then writes nothing.
    """

    rows: list[PendingRow]
    #: Records written exactly as they are, ids included (a restore), instead of ``rows``.
    exact: list[RowTuple] | None = None
    #: An erasure ``(message ids, reason, at)``, planned and committed under the write lock
    #: instead of ``rows``; ``erased`` is what it did (``None``: nothing was left to erase).
    erase: tuple[list[str], str, float] | None = None
    erased: Erasure | None = None
    #: A session lock ``(name, key, take)`` to take (``take``) or give back on the store's
    #: connection instead of ``rows``; ``locked`` says whether the take got it.
    lock: tuple[str, int, bool] | None = None
    locked: bool = False
    recheck: Callable[[LogModel], None] | None = None
    guard: Callable[[], None] | None = None
    ids: list[int] = attrs.Factory(list)
    error: BaseException | None = None
    done: anyio.Event = attrs.Factory(anyio.Event)


# The bodies below are the ones LogModel.append_message, edit_message, set_state and
# create_branch write; the callers have checked names and values as the SQLite store does.


def message_row(
    branch: str,
    participant: str,
    content: tuple[ContentBlock, ...],
    metadata: Mapping[str, Any] | None,
    timestamp: float | None,
    *,
    metadata_frozen: bool = False,
) -> PendingRow:
    encoded = encode_message(participant, content, metadata, timestamp, metadata_frozen=metadata_frozen)
    return PendingRow(branch, MESSAGE, None, encoded[4], encoded=encoded)


def edit_row(branch: str, message_id: str, content: tuple[ContentBlock, ...]) -> PendingRow:
    body = json.dumps({"content": content_to_json(blocks_to_store(content))}, ensure_ascii=False)
    return PendingRow(branch, EDIT, message_id, encodable(body, "content"))


def state_row(branch: str, key: str, value: Any) -> PendingRow:
    return PendingRow(branch, STATE, key, encodable(json.dumps(value, ensure_ascii=False, allow_nan=False), key))


def branch_row(name: str, parent: str, at: int, meta: Mapping[str, Any] | None) -> PendingRow:
    record = dict(meta or {})
    record["created"] = time.time()
    return PendingRow(name, BRANCH, parent, encodable(json.dumps(record, ensure_ascii=False), "meta"), fork=at)


def number_rows(model: LogModel, first_id: int, writes: Sequence[PendingWrite]) -> list[RowTuple]:
    """Give the writes' records consecutive ids from ``first_id`` and each its branch's next
    sequence after ``model``'s head (which must hold every committed record)."""
    heads: dict[str, int] = {}
    rows: list[RowTuple] = []
    record_id = first_id
    for write in writes:
        write.ids = []
        for row in write.rows:
            if row.branch == ERASURE_BRANCH:
                seq = record_id  # an audit record (erasure, disclosure): its sequence is its id
            elif row.fork is not None:
                seq = row.fork
                heads[row.branch] = row.fork
            else:
                seq = heads.get(row.branch, model.head(row.branch) if model.has_branch(row.branch) else 0) + 1
                heads[row.branch] = seq
            rows.append((record_id, row.branch, seq, row.kind, row.ref, row.body))
            write.ids.append(record_id)
            record_id += 1
    return rows


def apply_rows(
    model: LogModel, rows: Sequence[RowTuple], *, elsewhere: bool = False, encoded: Mapping[int, EncodedMessage] | None = None
) -> list[StoreEvent]:
    """Replay committed ``rows`` (in id order) into ``model``; returns the store events they make,
    consecutive messages (or states) on one branch in one event, as the writes that made them.
    With ``elsewhere`` (another process committed them) the events are the ``...Elsewhere`` kinds.
    ``encoded`` holds, by record id, the encodings of messages this process wrote (see
    :meth:`LogModel.replay_message`)."""
    appended, edited, written, created = (
        (MessagesAppendedElsewhere, MessageEditedElsewhere, StatesWrittenElsewhere, BranchCreatedElsewhere)
        if elsewhere
        else (MessagesAppended, MessageEdited, StatesWritten, BranchCreated)
    )
    events: list[StoreEvent] = []
    messages: list[Message] = []
    keys: list[str] = []
    current: tuple[str, str] | None = None

    def flush() -> None:
        nonlocal current
        if current is not None and messages:
            events.append(appended(current[0], tuple(messages)))
        elif current is not None and keys:
            events.append(written(current[0], tuple(keys)))
        messages.clear()
        keys.clear()
        current = None

    for row in rows:
        record_id, branch, seq, kind, ref, _body = row
        if (branch, kind) != current:
            flush()
        if kind == ERASURE:
            before_count = model.erasure_count
            model.replay([row])
            parsed = parse_erasure(_body)
            if parsed is not None and model.erasure_count > before_count:
                events.append((MessagesErasedElsewhere if elsewhere else MessagesErased)(branch, parsed[0]))
            continue
        before = model.get(branch, ref) if kind == EDIT and ref is not None and model.has_branch(branch) else None
        known = kind == BRANCH or model.has_branch(branch)
        given = encoded.get(record_id) if encoded and kind == MESSAGE and known else None
        if given is not None:
            current = (branch, kind)
            messages.append(model.replay_message(record_id, branch, seq, given))
            continue
        model.replay([row])
        if not known:
            continue  # the model logged and ignored it
        if kind == MESSAGE:
            current = (branch, kind)
            found = model.get(branch, str(record_id))
            if found is not None:
                messages.append(found)
        elif kind == STATE and ref is not None:
            current = (branch, kind)
            keys.append(ref)
        elif kind == EDIT and ref is not None and before is not None:
            after = model.get(branch, ref)
            if after is not None:
                events.append(edited(branch, before, after))
        elif kind == BRANCH and model.has_branch(branch):
            events.append(created(model.branch_info(branch)))
    flush()
    return events
