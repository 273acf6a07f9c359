"""Records on their way to and from a journal: a write's records without ids, numbered where the
write takes its place, and numbered rows applied to the in-memory model with the store events
they make.

A write is encoded when it is called (so bad input is refused before anything is queued) but
takes its record ids and branch sequences only where it takes its place in the store's order
(``store._journal``), from a model that holds every record before it. The model learns a record
by replaying it (:func:`apply_rows`), whether the journal applies before its commit or after: a
record enters memory one way, the way an open reads it, and a message this process wrote enters
from its encoding, not decoded again.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from ._blocks import ContentBlock, content_to_json
from ._erasure import ERASURE, ERASURE_BRANCH, parse_erasure
from ._events import BranchCreated, MessageEdited, MessagesAppended, MessagesErased, StatesWritten, StoreEvent, StrategyNoted
from ._model import BRANCH, EDIT, MESSAGE, STATE, LogModel
from ._notes import STRATEGY_NOTE, parse_strategy_note
from ._records import EncodedMessage, blocks_to_store, encode_message, json_text

__all__ = [
    "BranchCreatedElsewhere",
    "FromElsewhere",
    "MessageEditedElsewhere",
    "MessagesAppendedElsewhere",
    "PendingRow",
    "RowTuple",
    "StatesWrittenElsewhere",
    "StrategyNotedElsewhere",
    "apply_rows",
    "branch_row",
    "edit_row",
    "message_row",
    "number_rows",
    "numbered_pages",
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


@attrs.define
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


# The bodies of the records a write makes; the store has checked names and values first.


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
    """An edit record: the new content, and when (``"at"``, the body's last key: ``edit_time``)."""
    return PendingRow(
        branch, EDIT, message_id, json_text({"content": content_to_json(blocks_to_store(content)), "at": round(time.time(), 3)}, "content")
    )


def state_row(branch: str, key: str, value: Any) -> PendingRow:
    return PendingRow(branch, STATE, key, json_text(value, key))


def branch_row(name: str, parent: str, at: int, meta: Mapping[str, Any] | None) -> PendingRow:
    record = dict(meta or {})
    record["created"] = time.time()
    return PendingRow(name, BRANCH, parent, json_text(record, "meta"), fork=at)


def number_rows(model: LogModel, first_id: int, writes: Sequence[Sequence[PendingRow]]) -> tuple[list[RowTuple], dict[int, EncodedMessage]]:
    """Give the records of ``writes`` (in order) consecutive ids from ``first_id``, and each its
    branch's next sequence after ``model``'s head (which must hold every record before them).
    Returns the rows, and the encodings of their messages by record id (for :func:`apply_rows`)."""
    heads: dict[str, int] = {}
    rows: list[RowTuple] = []
    encoded: dict[int, EncodedMessage] = {}
    record_id = first_id
    for write in writes:
        for row in write:
            branch = row.branch
            if branch == ERASURE_BRANCH:
                seq = record_id  # an audit record (erasure, disclosure): its sequence is its id
            elif row.fork is not None:
                seq = heads[branch] = row.fork
            else:
                head = heads.get(branch)
                seq = heads[branch] = (model.head(branch) if head is None else head) + 1
            rows.append((record_id, branch, seq, row.kind, row.ref, row.body))
            if row.encoded is not None:
                encoded[record_id] = row.encoded
            record_id += 1
    return rows, encoded


def numbered_pages(model: LogModel, branch: str, pages: Iterable[Sequence[PendingRow]], first_id: int) -> Iterator[list[RowTuple]]:
    """Pages of records appended to ``branch`` (no fork, no audit record) as :func:`number_rows`
    numbers them: consecutive ids from ``first_id``, and the branch's next sequences after
    ``model``'s head, read as the first page is drawn (the model must hold every record before
    them by then); a generator."""
    record_id, sequence = first_id, model.head(branch)
    for page in pages:
        rows = []
        for row in page:
            sequence += 1
            rows.append((record_id, branch, sequence, row.kind, row.ref, row.body))
            record_id += 1
        yield rows


@attrs.frozen
class StrategyNotedElsewhere(StrategyNoted, FromElsewhere):
    pass


_HERE = (MessagesAppended, MessageEdited, StatesWritten, BranchCreated, MessagesErased, StrategyNoted)
_ELSEWHERE = (
    MessagesAppendedElsewhere,
    MessageEditedElsewhere,
    StatesWrittenElsewhere,
    BranchCreatedElsewhere,
    MessagesErasedElsewhere,
    StrategyNotedElsewhere,
)


def apply_rows(
    model: LogModel, rows: Sequence[RowTuple], *, elsewhere: bool = False, encoded: Mapping[int, EncodedMessage] | None = None
) -> list[StoreEvent]:
    """Replay committed ``rows`` (in id order) into ``model``; returns the store events they make,
    consecutive messages (or states) on one branch in one event, as the writes that made them.
    With ``elsewhere`` (another process committed them) the events are the ``...Elsewhere`` kinds.
    ``encoded`` holds, by record id, the encodings of messages this process wrote (see
    :meth:`LogModel.replay_message`)."""
    appended, edited, written, created, erased, noted = _ELSEWHERE if elsewhere else _HERE
    if encoded and len(rows) == 1:  # one message this process wrote: what most writes are
        record_id, branch, seq, kind, _ref, _body = rows[0]
        given = encoded.get(record_id)
        if given is not None and kind == MESSAGE:
            return [appended(branch, (model.replay_message(record_id, branch, seq, given),))]
    events: list[StoreEvent] = []
    run: list[Any] = []  # the messages, or the state keys, of consecutive rows of one kind on one branch
    run_branch = run_kind = ""
    for row in rows:
        record_id, branch, seq, kind, ref, body = row
        if kind != run_kind or branch != run_branch:
            if run:
                events.append((appended if run_kind == MESSAGE else written)(run_branch, tuple(run)))
                run = []
            run_branch, run_kind = branch, kind
        if encoded and kind == MESSAGE:
            given = encoded.get(record_id)
            if given is not None:  # a message this process wrote, to a branch it checked (never removed)
                run.append(model.replay_message(record_id, branch, seq, given))
                continue
        if kind == STRATEGY_NOTE:
            model.replay([row])
            note = parse_strategy_note(body)
            if note is not None:
                events.append(noted(note[0], note[1]))
            continue
        if kind == ERASURE:
            before_count = model.erasure_count
            model.replay([row])
            parsed = parse_erasure(body)
            if parsed is not None and model.erasure_count > before_count:
                events.append(erased(branch, parsed[0]))
            continue
        before = model.get(branch, ref) if kind == EDIT and ref is not None and model.has_branch(branch) else None
        known = kind == BRANCH or model.has_branch(branch)
        model.replay([row])
        if not known:
            continue  # the model logged and ignored it
        if kind == MESSAGE:
            found = model.get(branch, str(record_id))
            if found is not None:
                run.append(found)
        elif kind == STATE and ref is not None:
            run.append(ref)
        elif kind == EDIT and ref is not None and before is not None:
            after = model.get(branch, ref)
            if after is not None:
                events.append(edited(branch, before, after))
        elif kind == BRANCH and model.has_branch(branch):
            events.append(created(model.branch_info(branch)))
    if run:
        events.append((appended if run_kind == MESSAGE else written)(run_branch, tuple(run)))
    return events
