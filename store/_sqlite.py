"""The durable store: one SQLite file, one append-only table, group commit.

Every write (a message, an edit, a state record, a new branch) is one row of the ``log`` table.
Rows are never updated or deleted, so a write's cost does not depend on history length. All reads
are answered from the in-memory model (``store.model``) loaded at open; nothing on a read path
touches the database.

Writers share commits: a write puts its rows in memory; a writer that finds no commit running
commits its own rows in its own task, and one that finds a commit running puts them in the pending
batch and waits while one committer task writes the whole batch as a single multi-row ``INSERT`` (one statement, which
SQLite runs as one implicit transaction; a batch too large for one statement is written inside
``BEGIN IMMEDIATE`` ... ``COMMIT`` and rolled back on failure). A write returns only after its
batch committed. If a commit fails, the store stops: every later call raises
:class:`StoreFailedError`, so memory and disk never disagree.

The SQLite store's SQL lives in this module (the open's settings in store._open). Connections sit behind the small ``Driver``
interface (``store._drivers``): under Trio a dedicated thread owning a ``sqlite3`` connection
(small ``NORMAL`` commits run on the loop's thread), under asyncio aiosqlite. Its events are in
``store._events``, the file's checks and process lock in ``store._file_checks``.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel

from ._arguments import check_callable, check_mapping
from ._blocks import ContentBlock
from ._disclosure import Disclosure
from ._drivers import Driver, ImmutableCheck
from ._erasure import ERASURE_BRANCH, Erasure, Tombstone, erased_body
from ._errors import (
    MalformedContentError,
    StoreCorruptError,
    StoreFailedError,
    StoreNotEmptyError,
    StoreReadOnlyError,
    UnknownMessageError,
)
from ._events import BranchCreated, MessageEdited, MessagesAppended, MessagesErased, StatesWritten, StoreEvent
from ._file_checks import open_error
from ._messages import Message, check_message_items
from ._model import MISSING, BranchInfo, LogModel, RecordTypeError, Row
from ._names import check_state_key, check_state_records
from ._pg_rows import apply_rows
from ._records import encodable

__all__ = ["SqliteStore", "StoreEvent", "MessagesAppended", "MessageEdited", "MessagesErased", "StatesWritten", "BranchCreated"]

log = logging.getLogger("asides.store")

SCHEMA = """
CREATE TABLE IF NOT EXISTS log (
    id INTEGER PRIMARY KEY,
    branch TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ref TEXT,
    body TEXT NOT NULL
)
"""
#: Rows per INSERT statement; SQLite allows 32766 bound variables per statement.
_ROWS_PER_STATEMENT = 2000


# -- the store ---------------------------------------------------------------------------------


class _Batch:
    """The rows of one commit, and how its writers learn that it ended."""

    __slots__ = ("rows", "erasures", "error", "ended", "_ended_event")

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        #: Statements overwriting erased records, run after the batch's inserts in its transaction.
        self.erasures: list[tuple[str, list[Any]]] = []
        self.error: BaseException | None = None
        self.ended = False
        self._ended_event: anyio.Event | None = None  # made only when a writer waits (a lone writer never does)

    def end(self, error: BaseException | None = None) -> None:
        """The commit ended (``error``: it failed); wake every writer waiting for it."""
        if error is not None:
            self.error = error
        self.ended = True
        if self._ended_event is not None:
            self._ended_event.set()

    async def wait(self) -> None:
        """Wait, shielded, until the commit ended (so a cancelled writer still waits for it)."""
        if self.ended:
            return
        if self._ended_event is None:
            self._ended_event = anyio.Event()
        with anyio.CancelScope(shield=True):
            await self._ended_event.wait()


class SqliteStore:
    """A store file (or ``:memory:``): branches, message logs and state records.

    Reads are synchronous and served from memory. Writes are async and durable when they return.
    Listeners registered with :meth:`add_listener` hear of every write synchronously, after the
    in-memory model changed and the write was queued for its commit, before the commit is
    awaited, in write order; a listener's exception is logged, never raised (:meth:`_tell`).
    """

    #: Whether other processes may write the store while this one has it open: ``False`` for a
    #: store file, which one process holds with an exclusive lock; ``True`` for a PostgreSQL store.
    #: The runtime asks this (for the compression lease, and whether a write may come from
    #: elsewhere), never the store's class.
    shared = False

    def __init__(self, path: str, driver: Driver, model: LogModel, *, read_only: bool = False) -> None:
        self.path = path
        #: Opened with ``read_only=True``: every write raises ``StoreReadOnlyError``.
        self.read_only = read_only
        self._driver = driver
        self._model = model
        self._listeners: list[Callable[[StoreEvent], None]] = []
        self._batch: _Batch | None = None
        self._wakeup = anyio.Event()
        self._closing = False
        self._closed = False
        self._committing = False  # a commit (the committer's, or a lone writer's) is running
        self._failure: BaseException | None = None
        self.commits = 0
        #: Records a read-only open read after its open (:meth:`catch_up`).
        self.caught_up_records = 0
        self._has_log = True

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def model(self) -> LogModel:
        """The in-memory model (read it; never write through it)."""
        return self._model

    @property
    def closed(self) -> bool:
        return self._closed or self._closing

    @property
    def failed(self) -> bool:
        return self._failure is not None

    def raise_if_failed(self) -> None:
        """Raise :class:`StoreFailedError` when a commit failed (the store stopped): every call of
        a runtime on this store checks this first."""
        if self._failure is not None:
            raise StoreFailedError(
                f"the store {self.path!r} stopped after a failed commit ({self._failure!r}); reopen it to continue"
            ) from self._failure

    def _check_not_failed(self) -> None:
        self.raise_if_failed()

    def _check_usable(self) -> None:
        if self.read_only:
            raise StoreReadOnlyError(self.path)
        self.raise_if_failed()
        if self._closing or self._closed:
            raise StoreFailedError(f"the store {self.path!r} is closed")

    def add_listener(self, listener: Callable[[StoreEvent], None]) -> Callable[[], None]:
        """Hear of every write; returns a function that removes the listener. A listener's
        exception is logged, never raised (:meth:`_tell`)."""
        self._listeners.append(check_callable(listener, "listener"))
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _tell(self, event: StoreEvent) -> None:
        """Tell every listener of ``event``: the listener rule, one for both stores (the
        PostgreSQL store tells through here too). A write is told once memory holds it and its
        rows are queued for their commit (SQLite) or committed (PostgreSQL), so memory and disk
        never disagree whatever a listener does: an exception a listener raises is logged with
        the event, the listeners after it still hear it, and the write stands, durable when the
        call returns, as it would without listeners."""
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:
                log.exception("a store listener failed on %r; the write stands (memory and disk hold it)", event)

    async def _committer(self) -> None:
        while True:
            if self._failure is not None:
                raise StoreFailedError(f"a commit to {self.path!r} failed; the store stopped") from self._failure
            batch = self._batch
            if batch is None or self._committing:
                if self._closing and batch is None and not self._committing:
                    return
                await self._wakeup.wait()
                self._wakeup = anyio.Event()
                continue
            self._batch = None
            self._committing = True
            try:
                with anyio.CancelScope(shield=True):
                    try:
                        await self._commit_batch(batch)
                    except BaseException as exc:
                        self._stop(exc, len(batch.rows), batch)
                        raise StoreFailedError(f"a commit to {self.path!r} failed; the store stopped") from exc
            finally:
                self._committing = False
            self.commits += 1
            batch.end()

    def _stop(self, exc: BaseException, records: int, batch: _Batch | None) -> None:
        """Fail-stop after a failed commit: fail ``batch`` and the one filling behind it, so
        nothing waits forever, and wake the committer, which ends the opener's block."""
        self._failure = exc
        for failed in (batch, self._batch):
            if failed is not None:
                failed.end(exc)
        self._batch = None
        self._wakeup.set()
        log.critical("commit of %d record(s) to %r failed; the store stops: %r", records, self.path, exc)

    async def _lead(self, batch: _Batch) -> None:
        """A writer that opens a batch while no commit runs commits it itself, in its own task, so
        a lone write involves no other task. Its one scheduling point, before the commit, lets
        writers that are ready join the batch (group commit); writes that arrive during the commit
        queue in the next batch, which the committer takes when this one is done."""
        self._committing = True
        try:
            await anyio.lowlevel.cancel_shielded_checkpoint()  # a scheduling point that is never a cancel point
            if self._batch is batch:
                self._batch = None
            try:
                # Not cancellable: a statement sent to a driver always finishes before its caller
                # goes on (``Driver``), and nothing else here awaits.
                await self._commit_batch(batch)
            except BaseException as exc:
                self._stop(exc, len(batch.rows), batch)
                raise StoreFailedError(f"the commit holding this write to {self.path!r} failed; the store stopped") from exc
            self.commits += 1
            batch.end()
        finally:
            self._committing = False
            if self._batch is not None or self._closing:
                self._wakeup.set()

    async def _commit_batch(self, batch: _Batch) -> None:
        """Commit one batch: an erasure's in a transaction of its own (:meth:`_erase_rows`)."""
        if batch.erasures:
            await self._erase_rows(batch)
        else:
            await self._insert(batch.rows)

    async def _insert(self, rows: list[tuple[Any, ...]]) -> None:
        if len(rows) <= _ROWS_PER_STATEMENT:
            await self._driver.execute(_insert_sql(len(rows)), [v for row in rows for v in row])
            return
        await self._driver.execute("BEGIN IMMEDIATE")
        try:
            for start in range(0, len(rows), _ROWS_PER_STATEMENT):
                chunk = rows[start : start + _ROWS_PER_STATEMENT]
                await self._driver.execute(_insert_sql(len(chunk)), [v for row in chunk for v in row])
            await self._driver.execute("COMMIT")
        except BaseException:
            await self._driver.execute("ROLLBACK")
            raise

    async def _erase_rows(self, batch: _Batch) -> None:
        """Commit a batch holding an erasure: its inserts and overwrites in one transaction, with
        ``secure_delete`` (freed space is zeroed), then a truncating checkpoint, so the erased
        bytes are in neither the database file nor its write-ahead log once this returns."""
        await self._driver.execute("PRAGMA secure_delete=ON")
        await self._driver.execute("BEGIN IMMEDIATE")
        try:
            for start in range(0, len(batch.rows), _ROWS_PER_STATEMENT):
                chunk = batch.rows[start : start + _ROWS_PER_STATEMENT]
                await self._driver.execute(_insert_sql(len(chunk)), [v for row in chunk for v in row])
            for sql, params in batch.erasures:
                await self._driver.execute(sql, params)
            await self._driver.execute("COMMIT")
        except BaseException:
            await self._driver.execute("ROLLBACK")
            raise
        await self.checkpoint_truncate()

    async def checkpoint_truncate(self) -> bool:
        """Copy the write-ahead log into the database file and empty it (``TRUNCATE``); whether
        it could (a reader in another process holding an old snapshot stops it). Logged when not."""
        for _attempt in range(3):
            busy, _log, _done = (await self._driver.execute("PRAGMA wal_checkpoint(TRUNCATE)"))[0]
            if not busy:
                return True
        log.warning(
            "the write-ahead log of %r could not be emptied (a reader holds it); erased bytes stay in it until the next checkpoint",
            self.path,
        )
        return False

    async def _persist(self, rows: Sequence[Row], *events: StoreEvent) -> None:
        """Queue a write's rows (already in memory) for their commit, tell the listeners of
        ``events`` (:meth:`_tell`), then wait for the commit. Once queued, the write is certain:
        the committer commits it whatever a listener or the caller does next, and a cancelled
        caller still waits for its commit and returns normally, so "raised Cancelled" always
        means "not written"."""
        await self._queue(rows, events=events)

    async def _queue(
        self, rows: Sequence[Row], erasures: Sequence[tuple[str, list[Any]]] = (), *, events: Sequence[StoreEvent] = ()
    ) -> None:
        """:meth:`_persist`, with an erasure's overwrites committed in the same transaction."""
        if not rows:
            return
        batch = self._batch
        opened = batch is None
        if batch is None:
            batch = self._batch = _Batch()
        batch.rows.extend([row.as_tuple() for row in rows])
        if erasures:
            batch.erasures.extend(erasures)
        for event in events:
            self._tell(event)
        if opened and not self._committing and not self._closing:
            await self._lead(batch)
            return
        if not self._committing:
            self._wakeup.set()  # a running commit wakes the committer when it is done
        await batch.wait()
        if batch.error is not None:
            raise StoreFailedError(f"the commit holding this write to {self.path!r} failed; the store stopped") from batch.error

    @asynccontextmanager
    async def _serving(self) -> AsyncIterator[None]:
        """Run the store's committer for the block (its opener's); leaving the block commits
        what is queued, then closes the store."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._committer)
            try:
                yield
            finally:
                with anyio.CancelScope(shield=True):
                    await self._shutdown()
        self._closed = True

    async def _shutdown(self) -> None:
        self._closing = True
        self._wakeup.set()

    # -- writes ------------------------------------------------------------------------------

    async def append_messages(
        self,
        branch: str,
        items: Sequence[tuple[Any, ...]],
        *,
        timestamp: float | None = None,
    ) -> tuple[Message, ...]:
        """Append messages as one atomic commit. Each item is ``(participant, content, metadata)``
        or ``(participant, content, metadata, timestamp)``; ``timestamp`` (seconds since the epoch)
        defaults to the batch's ``timestamp``, else now.

        Content must already be validated by the caller; metadata must be a JSON object.
        """
        self._check_usable()
        self._model.require_branch(branch)  # refuses an unknown branch before anything changes
        frozen = check_message_items(items, timestamp)  # and anything that could not be stored
        entries = [
            (item[0], item[1], metadata, item[3] if len(item) == 4 and item[3] is not None else timestamp)
            for item, metadata in zip(items, frozen, strict=True)
        ]
        messages, rows = self._model.append_messages(branch, entries, metadata_frozen=True)  # all or nothing
        appended = tuple(messages)
        await self._persist(rows, MessagesAppended(branch, appended))
        return appended

    async def append_message(
        self, branch: str, participant: str, content: tuple[ContentBlock, ...], metadata: Mapping[str, Any] | None = None
    ) -> Message:
        """Append one message; returns it once it is durable."""
        (message,) = await self.append_messages(branch, [(participant, content, metadata)])
        return message

    async def edit_message(
        self,
        branch: str,
        message_id: str,
        content: tuple[ContentBlock, ...],
        *,
        states: Mapping[str, Any] | None = None,
        guard: Callable[[], None] | None = None,
    ) -> Message:
        """Replace a message's content on ``branch`` (id and sequence kept), together with any
        ``states`` records, in one atomic commit. ``guard``: see :meth:`set_states`."""
        self._check_usable()
        before = self._model.get(branch, message_id)
        if before is None:
            raise UnknownMessageError(message_id, branch)
        check_write(states, guard, optional=True)
        if guard is not None:
            guard()
        after, rows = self._model.edit_message(branch, message_id, content, states)  # all or nothing
        events: list[StoreEvent] = [MessageEdited(branch, before, after)]
        if states:
            events.append(StatesWritten(branch, tuple(states)))
        await self._persist(rows, *events)
        return after

    async def set_states(self, branch: str, states: Mapping[str, Any], *, guard: Callable[[], None] | None = None) -> int:
        """Write state records (JSON values) in one atomic commit; each raises the branch
        sequence by one. Returns the branch head after the writes.

        ``guard`` is the caller's check, run where the write takes its place in the store's
        order, with every earlier write in the model; raising refuses the write, which then
        writes nothing. Here (one process) that is now; a shared store runs it at commit."""
        self._check_usable()
        self._model.branch_info(branch)
        check_write(states, guard)
        if guard is not None:
            guard()
        rows = self._model.set_states(branch, states)  # all or nothing
        head = self._model.head(branch)
        if rows:
            await self._persist(rows, StatesWritten(branch, tuple(states)))
        return head

    async def set_state(self, branch: str, key: str, value: Any, *, guard: Callable[[], None] | None = None) -> int:
        """Write one state record; returns its sequence."""
        return await self.set_states(branch, {check_state_key(key): value}, guard=guard)

    async def sync(self) -> None:
        """Bring the model up to every write committed before this call: nothing to do here,
        where one process owns the file (a shared store catches up with other processes)."""
        self._check_not_failed()

    async def create_branch(
        self, name: str, parent: str, at_sequence: int | None = None, *, meta: Mapping[str, Any] | None = None
    ) -> BranchInfo:
        """Fork ``name`` from ``parent`` at ``at_sequence`` (default: the parent's head).

        Nothing is copied: the child sees the parent's records up to that point, never later.
        ``meta`` (a JSON object) is kept with the branch record."""
        self._check_usable()
        check_meta(meta)
        info, row = self._model.create_branch(name, parent, at_sequence, meta)
        await self._persist([row], BranchCreated(info))
        return info

    async def erase(self, message_ids: Sequence[str], *, reason: str, at: float) -> Erasure | None:
        """Erase messages from every branch, with every edit of them and every state record
        derived from them (store/_erasure.py), in one atomic commit; ``None`` when each was erased
        already. Refuses unknown ids (``UnknownMessagesError``), writing nothing. Never refused by
        a claim or a floor: it removes the data rather than hiding it."""
        self._check_usable()
        plan = self._model.plan_erasure(message_ids, reason, at)
        if plan is None:
            return None
        erasure, body, states = plan
        row = self._model.erasure_row(erasure, body)
        self._model.apply_erasure(erasure, states)
        await self._queue([row], _erase_statements(erasure, states), events=self._erasure_events(erasure))
        return erasure

    def _erasure_events(self, erasure: Erasure) -> tuple[StoreEvent, ...]:
        """What listeners hear of an erasure: one ``MessagesErased``."""
        return (MessagesErased(ERASURE_BRANCH, erasure),)

    async def record_disclosure(self, namespace: str, reader: str | None, branch: str, via: str, message_ids: Iterable[str]) -> None:
        """Record that ``message_ids`` were shown (store/_disclosure.py): only those not shown to
        that ``(namespace, reader, via)`` before, in one record. A compression request's record is
        durable when this returns; a compile's or preview's is in memory at once and goes out
        with the commit the committer starts at once (a crash of the process inside that commit
        loses it). Writes nothing when none is new, or when the store is read-only."""
        if self.read_only:
            return
        self._check_usable()
        row = self._model.disclosure_row(namespace, reader, branch, via, time.time(), message_ids)
        if row is None:
            return
        if via == "compression":
            await self._persist([row])  # durable before the request leaves for the provider
            return
        # A compile's record joins the commit the committer starts now, without waiting for it:
        # under load the wait cost a 20k-message compile about 13% (docs/benchmarks.md). A failed
        # commit stops the store, so every later call says so.
        batch = self._batch
        if batch is None:
            batch = self._batch = _Batch()
        batch.rows.append(row.as_tuple())
        self._wakeup.set()

    def disclosures(self, message_id: str) -> tuple[Disclosure, ...]:
        """Every disclosure of a message, oldest first."""
        self._check_not_failed()
        return self._model.disclosure_log.for_message(message_id)

    def disclosures_to(self, reader: str | None) -> tuple[Disclosure, ...]:
        """Everything ``reader`` was shown, oldest first."""
        self._check_not_failed()
        return self._model.disclosure_log.for_reader(reader)

    def erasures(self) -> tuple[Erasure, ...]:
        """Every erasure of the store, oldest first."""
        self._check_not_failed()
        return self._model.erasures()

    def tombstone(self, message_id: str) -> Tombstone | None:
        """What remains of an erased message (``None``: not erased)."""
        self._check_not_failed()
        return self._model.tombstone(message_id)

    # -- backups -----------------------------------------------------------------------------

    async def records(self) -> list[tuple[int, str, int, str, str | None, str]]:
        """Every record of the store as it is on disk, ``(id, branch, seq, kind, ref, body)`` in
        id order (for a backup; the one read that queries the file), after the commit of every
        record already in memory."""
        self._check_not_failed()
        pending = self._batch
        if pending is not None:
            await pending.wait()
            self._check_not_failed()
        if not self._has_log:
            return []
        try:
            return [tuple(row) for row in await self._driver.execute(SELECT_ROWS)]
        except sqlite3.Error as exc:
            raise open_error(self.path, exc) from exc

    async def catch_up(self) -> int:
        """A read-only open only: read the records committed to the file since this store last
        read it (the ids above the newest it holds), replay them into the model and tell the
        listeners, as a PostgreSQL store does with other processes' commits (the same replay,
        ``apply_rows``, and the same ``...Elsewhere`` events). One ``SELECT``, so one read
        transaction: a commit is read whole or not at all. Returns how many records it read
        (also added to :attr:`caught_up_records`).

        Raises :class:`StoreFailedError` when the file cannot be caught up with: opened while no
        writer held it (``immutable`` mode, which reads no later commit) and written since, or
        without a ``log`` table at the open; open it again instead. :class:`StoreCorruptError`
        for a record of the wrong types."""
        self._check_not_failed()
        if not self.read_only:
            raise StoreFailedError(f"the store {self.path!r} is open for writing; catch_up is for read-only opens")
        if self._closing or self._closed:
            raise StoreFailedError(f"the store {self.path!r} is closed")
        if not self._has_log:
            raise StoreFailedError(f"the store {self.path!r} had no log at its read-only open; open it again to read one")
        if isinstance(self._driver, ImmutableCheck):
            raise StoreFailedError(f"the store {self.path!r} was opened with no writer (immutable mode); open it again to read more")
        try:
            rows = [tuple(row) for row in await self._driver.execute(SELECT_ROWS_AFTER, (self._model.next_id - 1,))]
        except sqlite3.Error as exc:
            raise open_error(self.path, exc) from exc
        if not rows:
            return 0
        try:
            events = apply_rows(self._model, rows, elsewhere=True)
        except RecordTypeError as exc:
            raise StoreCorruptError(self.path, str(exc)) from None
        self.caught_up_records += len(rows)
        for event in events:
            self._tell(event)
        return len(rows)

    async def restore_records(self, rows: Sequence[tuple[int, str, int, str, str | None, str]]) -> None:
        """Write a backup's records (as :meth:`records` returns them) into this store, in one atomic
        commit, and read them as an open would. Refuses, writing nothing, a store that already holds
        a record (``StoreNotEmptyError``) and rows that are not well formed or whose ids do not
        increase (``ValueError``; ``MalformedContentError``, naming the record and column, for
        text that is not valid Unicode or holds a NUL: both backends take the same records, and
        PostgreSQL cannot store a NUL). Call it before opening managers: they hear of no restored
        record."""
        self._check_usable()
        if self._model.next_id != 1:
            raise StoreNotEmptyError(self.path)
        checked = [Row(*row) for row in rows]
        last = 0
        for row in checked:
            if type(row.id) is not int or row.id <= last:
                raise ValueError(f"record {row.id!r}: record ids must be integers that increase")
            if type(row.seq) is not int or row.seq < 0:
                raise ValueError(f"record {row.id}: seq must be a non-negative integer")
            for name, value in (("branch", row.branch), ("kind", row.kind), ("ref", row.ref), ("body", row.body)):
                if value is None and name == "ref":
                    continue
                if not isinstance(value, str):
                    raise ValueError(f"record {row.id}: {name} must be a string")
                encodable(value, f"record {row.id}: {name}")
                nul = value.find("\x00")
                if nul != -1:
                    raise MalformedContentError(
                        f"record {row.id}: {name}",
                        f"holds U+0000 (NUL) at index {nul}, which a PostgreSQL store cannot hold; no asides "
                        "write stores one (a body escapes it as \\u0000), so no store of either kind takes it in a restore",
                    )
            last = row.id
        self._model.replay([row.as_tuple() for row in checked])
        await self._persist(checked)

    # -- reads (memory only) -----------------------------------------------------------------

    def branches(self) -> tuple[BranchInfo, ...]:
        self._check_not_failed()
        return self._model.branches()

    def branch_info(self, name: str) -> BranchInfo:
        self._check_not_failed()
        return self._model.branch_info(name)

    def has_branch(self, name: str) -> bool:
        self._check_not_failed()
        return self._model.has_branch(name)

    def head(self, branch: str) -> int:
        self._check_not_failed()
        return self._model.head(branch)

    def length(self, branch: str) -> int:
        self._check_not_failed()
        return self._model.length(branch)

    def messages(self, branch: str, start: int = 0, stop: int | None = None) -> list[Message]:
        self._check_not_failed()
        return self._model.slice(branch, start, stop)

    def get_message(self, branch: str, message_id: str) -> Message | None:
        self._check_not_failed()
        return self._model.get(branch, message_id)

    def get_state(self, branch: str, key: str, default: Any = None) -> Any:
        """The state record under ``key`` on ``branch``; ``default`` when there is none.
        A record whose JSON could not be read comes back as ``store.model.UNREADABLE``."""
        self._check_not_failed()
        if not isinstance(key, str):
            check_state_key(key)  # a key of the wrong type: InvalidNameError, naming it
        value = self._model.get_state(branch, key)
        return default if value is MISSING else value

    def state_items(self, branch: str, prefix: str = "") -> dict[str, Any]:
        self._check_not_failed()
        return self._model.state_items(branch, prefix)

    def may_hold_audience(self, branch: str) -> bool:
        self._check_not_failed()
        return self._model.may_hold_audience(branch)


def check_write(states: object, guard: object, *, optional: bool = False) -> None:
    """The checks of a state write's own arguments, for both stores: ``states`` (``None`` too
    when ``optional``) a mapping of state keys to JSON values that can be stored, and ``guard``
    ``None`` or callable (on PostgreSQL it runs at commit, where a wrong type would fail the
    committer)."""
    check_callable(guard, "guard", optional=True)
    if states is None and optional:
        return
    check_state_records(states)  # keys are names, values JSON that can be stored


def check_meta(meta: object) -> None:
    """A branch's ``meta``: ``None`` or a JSON object that can be stored."""
    if meta is not None:
        check_mapping(meta, "meta")
        check_state_records({"meta": meta})


SELECT_ROWS = "SELECT id, branch, seq, kind, ref, body FROM log ORDER BY id"
SELECT_ROWS_AFTER = "SELECT id, branch, seq, kind, ref, body FROM log WHERE id > ? ORDER BY id"


def _erase_statements(erasure: Erasure, states: Sequence[int]) -> list[tuple[str, list[Any]]]:
    """The overwrites of an erasure (see store/_erasure.py), in statements of at most 900 ids."""
    body = erased_body(erasure.number)
    statements: list[tuple[str, list[Any]]] = []
    ids = list(erasure.message_ids)
    for start in range(0, len(ids), 900):
        chunk = ids[start : start + 900]
        marks = ",".join("?" * len(chunk))
        statements.append((f"UPDATE log SET body = ? WHERE kind = 'message' AND id IN ({marks})", [body, *(int(m) for m in chunk)]))
        statements.append((f"UPDATE log SET body = ? WHERE kind = 'edit' AND ref IN ({marks})", [body, *chunk]))
    for start in range(0, len(states), 900):
        records: list[Any] = list(states[start : start + 900])
        statements.append((f"UPDATE log SET body = 'null' WHERE kind = 'state' AND id IN ({','.join('?' * len(records))})", records))
    return statements


@functools.lru_cache(maxsize=64)
def _insert_sql(count: int) -> str:
    return "INSERT INTO log (id, branch, seq, kind, ref, body) VALUES " + ",".join(["(?,?,?,?,?,?)"] * count)
