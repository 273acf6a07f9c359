"""The store: branches, message logs and state records, over a journal.

One class, :class:`Store`, for every backend. It holds the in-memory model (``store.model``), which
answers every read (nothing on a read path touches the disk); it checks every write's arguments
before anything is queued; it keeps the listeners and their rule (:meth:`Store._tell`). What
makes a write durable is its journal (``store._journal``): the store turns each write into
records without ids (``store._rows``) with the caller's guard and its own rechecks, and the
journal numbers, checks, commits and applies them in the store's one order. A SQLite file
(``store._sqlite``) and a PostgreSQL database (``store._postgres``) are journals; their store
classes only choose one and reach its extras.

A write returns once it is durable (a compile's disclosure record aside: see
:meth:`Store.record_disclosure`). A refused write (a bad argument, a recheck, a guard) writes
nothing. A failed commit that the journal cannot undo stops the store: every later call raises
:class:`StoreFailedError`, so memory and disk never disagree.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import attrs

from .._deprecate import deprecated
from ._arguments import check_callable, check_mapping
from ._blocks import ContentBlock
from ._compile_records import COMPILE, CompileRecord, compile_body, parse_compile_record
from ._disclosure import DISCLOSURE, Disclosure, DisclosureRecord, disclosure_body
from ._erasure import ERASURE_BRANCH, Erasure, MessageErasedError, Tombstone
from ._errors import BranchExistsError, MalformedContentError, StoreFailedError, StoreNotEmptyError, StoreReadOnlyError, UnknownMessageError
from ._events import StoreEvent
from ._journal import Journal, PageReader, stopped
from ._messages import Message, check_message_item, check_message_items, check_timestamp
from ._model import MISSING, BranchInfo, LogModel, Row
from ._model_parts import fork_point
from ._names import check_branch, check_state_key, check_state_records
from ._notes import STRATEGY_NOTE, strategy_note_body
from ._records import encodable
from ._rows import PendingRow, RowTuple, branch_row, edit_row, message_row, state_row
from ._search import Candidates

__all__ = ["IMPORT_PAGE", "RECORD_PAGE", "RESTORE_PAGE", "RecordPages", "Store", "StoreStatistics", "check_meta", "check_write"]

log = logging.getLogger("asides.store")
T = TypeVar("T")

#: Messages :meth:`Store.import_messages` draws and writes at a time.
IMPORT_PAGE = 1000
#: Records :meth:`Store.record_pages` reads at a time unless told, and :meth:`Store.restore_records`
#: writes, then reads back into the model, at a time: what a backup or a restore holds follows
#: these, never the store's length.
RECORD_PAGE = 1000
RESTORE_PAGE = 1000


class RecordPages:
    """The pages of :meth:`Store.record_pages`: ``async for page in pages``, each a list of
    records in id order, never empty; read once."""

    def __init__(self, read: PageReader) -> None:
        self._read = read
        self._done = False

    def __aiter__(self) -> RecordPages:
        return self

    async def __anext__(self) -> list[RowTuple]:
        if not self._done:
            page = await self._read()
            if page:
                return page
            self._done = True
        raise StopAsyncIteration


@attrs.frozen
class StoreStatistics:
    """What a store counted since it was opened, as :meth:`Store.statistics` returns it: a
    snapshot, which does not change as the store goes on. For measurements and tests; nothing
    in it is needed to use the store."""

    #: Commits this process made to the store (a group commit counts once, however many writes
    #: it holds; a write refused by its guard or recheck commits nothing).
    commits: int
    #: Of those, the commits that found another process's commit first and took the write lock
    #: (a shared store only: always 0 for a store file, which one process writes).
    contended_commits: int
    #: Records this process read from other writers' commits (:meth:`Store.catch_up`,
    #: :meth:`Store.sync`, and a shared store's catching up as it commits).
    caught_up_records: int
    #: Records the open read into memory: on a store file or a PostgreSQL store with the indexes
    #: it reads through, the records other than messages (and state, compile and disclosure
    #: records); otherwise every one.
    records_read_at_open: int = 0
    #: Messages read back from the database since the open (each read of one counts).
    messages_read: int = 0
    #: Messages in memory now: read back and cached, or written and not yet committed (on
    #: ``:memory:`` and a store read whole at its open, every message held).
    messages_in_memory: int = 0
    #: Blocks of sequences whose messages that may name a reader were read back from the
    #: database since the open (a reader's view reads a block when a read first reaches it).
    audience_blocks_read: int = 0
    #: Rows of runs of ids shown the open read instead of the disclosure records (a store file
    #: or PostgreSQL store with the indexes it reads through; the rows are merged as they grow,
    #: so they follow how scattered the ids shown are, not how many compiles showed them).
    disclosed_runs_read_at_open: int = 0
    #: Disclosure records in memory now: on a store that reads its messages back, those not yet
    #: committed (an audit reads the others from the database); otherwise every one.
    disclosure_records_in_memory: int = 0
    #: Disclosure records read back from the database for audits since the open (an audit of one
    #: message reads those that may name it; the others read every one).
    disclosure_records_read: int = 0
    #: State values read back from the database since the open (each read of one counts): on a
    #: store file or PostgreSQL store with the indexes it reads through, the open leaves every
    #: state record's value there until it is read (at most 1,024 values read one by one stay
    #: decoded); otherwise every value is held from the open.
    state_values_read: int = 0
    #: State versions read back from the database since the open: on a store that reads its
    #: messages back, the open reads no state record's key, and a read reads the versions of the
    #: keys it needs (a key, the keys under a prefix, or ending with a suffix), once.
    state_versions_read: int = 0
    #: State values held decoded now: on a store that reads its messages back, at most the 1,024
    #: read or written most recently, of at most 1,000,000 characters of JSON together, besides
    #: those written here and not yet committed
    #: (``state_values_read`` counts the others read again); otherwise every one.
    state_values_in_memory: int = 0
    #: Blocks of sequences whose records other than messages (edits, states) were read back
    #: from the database since the open: on a store that reads its messages back, the open
    #: counts them a block (``1 << n`` sequences, as the blocks above) and reads none, and
    #: where a message stands in a block is read when a read first reaches it (at most 16
    #: blocks of every branch together stay read).
    gap_blocks_read: int = 0
    #: Queries that read messages back from the database since the open (``messages_read``
    #: counts the messages; a query reading many counts once): a read of one message that misses
    #: the cache reads with it the neighbours a walk a message at a time reaches next (none
    #: until the reads walk), so such a walk over ``n`` messages makes a few queries, not ``n``.
    message_queries: int = 0
    #: State keys whose versions (sequence and record id, not the value) the store holds now,
    #: each branch's counted apart: on a store that reads its messages back, those read or
    #: written since the open, of which a commit lets go of all but the keys it committed and
    #: those with a version not yet committed once they pass 8,192 (a read reads them again);
    #: otherwise every one.
    state_keys_in_memory: int = 0


class Store:
    """A store: branches, message logs and state records, over a journal.

    Reads are synchronous and served from memory. Writes are async and durable when they return.
    Listeners registered with :meth:`add_listener` hear of every write synchronously, once it is
    in memory and certain (queued for its commit, or committed), in the store's order; a
    listener's exception is logged, never raised (:meth:`_tell`).
    """

    def __init__(self, journal: Journal, model: LogModel) -> None:
        """The store over ``journal``, whose records ``model`` holds (the journal replays and
        applies them into it; nothing else writes it)."""
        self._journal = journal
        self._model = model
        self._listeners: tuple[Callable[[StoreEvent], None], ...] = ()  # replaced, never changed in place

    # -- what it is --------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """Where the store is (a PostgreSQL URL without its password)."""
        return self._journal.path

    @property
    def read_only(self) -> bool:
        """Opened with ``read_only=True``: every write raises ``StoreReadOnlyError``."""
        return self._journal.read_only

    @property
    def shared(self) -> bool:
        """Whether other processes may write the store while this one has it open: ``False`` for
        a store file, which one process holds with an exclusive lock; ``True`` for a PostgreSQL
        store. The runtime asks this (for the compression lease, and whether a write may come
        from elsewhere), never the store's class."""
        return self._journal.shared

    def statistics(self) -> StoreStatistics:
        """What the store counted since its open, as one snapshot (:class:`StoreStatistics`).
        Never refused: a closed or stopped store answers what it counted until then."""
        journal = self._journal
        model = self._model
        return StoreStatistics(
            commits=journal.commits,
            contended_commits=journal.contended_commits,
            caught_up_records=journal.caught_up_records,
            records_read_at_open=model.opened_records,
            messages_read=model.messages_read,
            message_queries=model.message_queries,
            state_keys_in_memory=model.state_keys_in_memory(),
            messages_in_memory=model.messages_in_memory(),
            audience_blocks_read=model.audience_blocks_read,
            disclosed_runs_read_at_open=model.disclosure_log.runs_read_at_open,
            state_values_read=model.state_values_read,
            state_versions_read=model.state_versions_read,
            gap_blocks_read=model.gap_blocks_read,
            state_values_in_memory=model.state_values_in_memory(),
            disclosure_records_in_memory=len(model.disclosure_log),
            disclosure_records_read=model.disclosure_log.records_read,
        )

    @property
    @deprecated("0.2.0", thing="asides.lowlevel.Store.commits", instead="asides.lowlevel.Store.statistics().commits")
    def commits(self) -> int:
        """``statistics().commits``."""
        return self.statistics().commits

    @property
    @deprecated("0.2.0", thing="asides.lowlevel.Store.caught_up_records", instead="asides.lowlevel.Store.statistics().caught_up_records")
    def caught_up_records(self) -> int:
        """``statistics().caught_up_records``."""
        return self.statistics().caught_up_records

    @property
    def model(self) -> LogModel:
        """The in-memory model (read it; never write through it)."""
        return self._model

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._journal.closed

    @property
    def failed(self) -> bool:
        return self._journal.failure is not None

    def raise_if_failed(self) -> None:
        """Raise :class:`StoreFailedError` when a commit failed (the store stopped): every call of
        a runtime on this store checks this first."""
        failure = self._journal.failure
        if failure is not None:
            raise stopped(self.path, failure)

    def _check_usable(self) -> None:
        journal = self._journal
        if journal.read_only:
            raise StoreReadOnlyError(self.path)
        if journal.failure is not None:
            raise stopped(self.path, journal.failure)
        if journal.closed:
            raise StoreFailedError(f"the store {self.path!r} is closed")

    @asynccontextmanager
    async def _serving(self) -> AsyncIterator[None]:
        """Serve the store for the block (its opener's); leaving it commits what is queued, then
        closes the journal. A writing open first merges the runs of ids shown when they are due
        (a store whose table of them was just filled from its records holds a row a record)."""
        async with self._journal.serving(self._tell):
            if not self.read_only and self._model.disclosure_log.compaction_due():
                await self._compact_disclosed()
            yield

    def add_listener(self, listener: Callable[[StoreEvent], None]) -> Callable[[], None]:
        """Hear of every write; returns a function that removes the listener. A listener's
        exception is logged, never raised (:meth:`_tell`)."""
        self._listeners = (*self._listeners, check_callable(listener, "listener"))

        def remove() -> None:
            if listener in self._listeners:
                kept = list(self._listeners)
                kept.remove(listener)
                self._listeners = tuple(kept)

        return remove

    def _tell(self, event: StoreEvent) -> None:
        """Tell every listener of ``event``: the listener rule, one for every journal, which
        tells through here. A write is told once memory holds it and it is certain (queued for
        its commit by a journal that applies first, committed by one that commits first), so
        memory and disk never disagree whatever a listener does: an exception a listener raises
        is logged with the event, the listeners after it still hear it, and the write stands,
        durable when the call returns, as it would without listeners."""
        for listener in self._listeners:
            try:
                listener(event)
            except Exception:
                log.exception("a store listener failed on %r; the write stands (memory and disk hold it)", event)

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
        defaults to the batch's ``timestamp``, else now. Each takes its sequence where the write
        takes its place, after every message committed before it (by any process).

        Content must already be validated by the caller; metadata must be a JSON object.
        """
        self._check_usable()
        self._model.require_branch(branch)  # refuses an unknown branch before anything changes
        frozen = check_message_items(items, timestamp)  # and anything that could not be stored
        rows = [
            message_row(
                branch, item[0], item[1], metadata, item[3] if len(item) == 4 and item[3] is not None else timestamp, metadata_frozen=True
            )
            for item, metadata in zip(items, frozen, strict=True)
        ]
        if not rows:
            return ()
        return tuple(map(self._committed_message, await self._journal.commit(rows)))

    async def import_messages(self, branch: str, items: Iterable[tuple[Any, ...]], *, timestamp: float | None = None) -> range:
        """Append the messages of ``items`` (each as :meth:`append_messages` takes it) after
        every message committed before them, as one atomic commit, drawing and writing
        :data:`IMPORT_PAGE` of them at a time: the store holds a page, never the batch, so
        ``items`` may be a generator reading a file of any length. Returns the record ids they
        took (an empty range for no item). Refuses, writing nothing, an item
        :meth:`append_messages` refuses (``items[N]`` counts from the first item), and raises
        whatever drawing ``items`` raises, having written nothing. The listeners hear of the
        messages a page at a time, once all are committed; writes of this process made
        meanwhile wait for it and follow its messages. Once begun it completes, as a durable
        append does: a cancel while it draws ``items`` lands after it returns."""
        self._check_usable()
        self._model.require_branch(branch)  # refuses an unknown branch before anything changes
        if timestamp is not None:
            check_timestamp(timestamp)
        return await self._journal.append_pages(branch, _in_pages(_message_rows(branch, items, timestamp), IMPORT_PAGE))

    async def append_message(
        self, branch: str, participant: str, content: tuple[ContentBlock, ...], metadata: Mapping[str, Any] | None = None
    ) -> Message:
        """Append one message; returns it once it is durable (as :meth:`append_messages` with
        one item)."""
        self._check_usable()
        self._model.require_branch(branch)
        frozen = check_message_item(participant, metadata)
        ids = await self._journal.commit([message_row(branch, participant, content, frozen, None, metadata_frozen=True)])
        return self._committed_message(ids.start)

    def _committed_message(self, record_id: int) -> Message:
        """The message a committed record holds (the journal has applied it)."""
        message = self._model.message_record(record_id)
        if message is None:  # pragma: no cover - a committed record is always applied
            raise StoreFailedError(f"record {record_id} was committed to {self.path!r} but is not in memory")
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
        ``states`` records, in one atomic commit. ``guard``: see :meth:`set_states` (the
        narrowing check: a floor raised before the edit takes its place refuses it)."""
        self._check_usable()
        if self._model.get(branch, message_id) is None:
            raise UnknownMessageError(message_id, branch)
        check_write(states, guard, optional=True)
        rows = [edit_row(branch, message_id, content)] + [state_row(branch, k, v) for k, v in (states or {}).items()]

        def recheck(model: LogModel) -> None:  # where it takes its place: an erasure made meanwhile
            if model.is_erased(message_id):
                raise MessageErasedError([message_id], "message_id")
            model.check_not_derived(states or {})

        await self._journal.commit(rows, guard=guard, recheck=recheck)
        edited = self._model.get(branch, message_id)
        if edited is None:  # pragma: no cover - a committed record is always applied
            raise StoreFailedError(f"an edit of {message_id} was committed to {self.path!r} but is not in memory")
        return edited

    async def set_states(self, branch: str, states: Mapping[str, Any], *, guard: Callable[[], None] | None = None) -> int:
        """Write state records (JSON values) in one atomic commit; each raises the branch
        sequence by one. Returns the branch head after the writes (as this process sees it).

        ``guard`` is the caller's check, run where the write takes its place in the store's
        order, with every earlier write in the model; raising refuses the write, which then
        writes nothing. A store of one process runs it at once; a shared store at commit."""
        self._check_usable()
        self._model.require_branch(branch)
        check_write(states, guard)
        rows = [state_row(branch, key, value) for key, value in states.items()]
        if rows:
            await self._journal.commit(rows, guard=guard, recheck=lambda model: model.check_not_derived(states))
        return self._model.head(branch)

    async def note_strategy(self, branch: str, namespace: str, value: Any) -> None:
        """Record that ``namespace`` on ``branch`` runs the strategy ``value`` describes, from the
        branch's head on (store/_notes.py), durable when this returns. The note takes no sequence
        of the branch. Refuses an unknown branch and a value that is not JSON, writing nothing;
        writes nothing on a read-only store."""
        if self.read_only:
            return
        self._check_usable()
        self._model.require_branch(branch)
        body = strategy_note_body(branch, namespace, self._model.head(branch), value)
        await self._journal.commit([PendingRow(ERASURE_BRANCH, STRATEGY_NOTE, None, body)])

    async def set_state(self, branch: str, key: str, value: Any, *, guard: Callable[[], None] | None = None) -> int:
        """Write one state record; returns the branch head after it."""
        return await self.set_states(branch, {check_state_key(key): value}, guard=guard)

    async def create_branch(
        self, name: str, parent: str, at_sequence: int | None = None, *, meta: Mapping[str, Any] | None = None
    ) -> BranchInfo:
        """Fork ``name`` from ``parent`` at ``at_sequence`` (default: the parent's head as this
        process sees it). Refused with ``BranchExistsError`` when any process took the name.

        Nothing is copied: the child sees the parent's records up to that point, never later.
        ``meta`` (a JSON object) is kept with the branch record."""
        self._check_usable()
        check_branch(name)
        check_meta(meta)

        def recheck(model: LogModel) -> None:  # now, and again where the write takes its place
            if model.has_branch(name):
                raise BranchExistsError(name)

        recheck(self._model)
        at = fork_point(at_sequence, self._model.head(parent), parent)
        await self._journal.commit([branch_row(name, parent, at, meta)], recheck=recheck)
        return self._model.branch_info(name)

    async def erase(self, message_ids: Sequence[str], *, reason: str, at: float) -> Erasure | None:
        """Erase messages from every branch, with every edit of them and every state record
        derived from them (store/_erasure.py), in one atomic commit; ``None`` when each was erased
        already. Refuses unknown ids (``UnknownMessagesError``), writing nothing. Never refused by
        a claim or a floor: it removes the data rather than hiding it. Planned where it takes its
        place, against every record committed before it."""
        self._check_usable()
        return await self._journal.erase(list(message_ids), reason, at)

    async def record_disclosure(
        self,
        namespace: str,
        reader: str | None,
        branch: str,
        via: str,
        message_ids: Iterable[str],
        *,
        compiled: CompileRecord | None = None,
    ) -> None:
        """Record that ``message_ids`` were shown (store/_disclosure.py): only those not shown to
        that ``(namespace, reader, via)`` before, in one record; and, given ``compiled`` (a
        compile's numbers, store/_compile_records.py), its compile record, in the same commit. A
        compression request's record is durable when this returns; a compile's or preview's may
        return once it is in memory and queued for the commit the journal starts at once (a crash
        of the process inside that commit loses it). Writes nothing when there is nothing to
        record, or when the store is read-only. Two processes showing a message at once may both
        record it (an answer then lists both)."""
        if self.read_only:
            return
        self._check_usable()
        rows: list[PendingRow] = []
        fresh = self._model.disclosure_log.new_runs(namespace, reader, via, message_ids)
        if fresh:
            rows.append(PendingRow(ERASURE_BRANCH, DISCLOSURE, None, disclosure_body(namespace, reader, branch, via, time.time(), fresh)))
        if compiled is not None:
            rows.append(PendingRow(ERASURE_BRANCH, COMPILE, namespace, compile_body(compiled)))
        if not rows:
            return
        # A compile's records need not wait for their commit: under load the wait cost a
        # 20k-message compile about 13% (docs/benchmarks.md). A failed commit stops the store, so
        # every later call says so.
        await self._journal.commit(rows, durable=via == "compression")
        if fresh and self._model.disclosure_log.compaction_due():
            await self._compact_disclosed()

    async def _compact_disclosed(self) -> None:
        """Merge the database's runs of the ids shown (store/_disclosure.py), so that an open
        reads as many rows as the ids shown are scattered, not one a record. Not cut short by a
        cancellation (it is a few statements); a failure is logged, and the next disclosure
        tries again later (the runs stay as they were, merged or not)."""
        with anyio.CancelScope(shield=True):
            try:
                deleted, written = await self._journal.compact_disclosed()
            except Exception as exc:  # noqa: BLE001 - logged: the runs are right, only less compact
                log.warning("the runs of ids shown in %r could not be merged: %r", self.path, exc)
                self._model.disclosure_log.compaction_failed()
                return
        self._model.disclosure_log.compacted(deleted, written)

    async def compile_records(
        self, *, namespace: str | None = None, branch: str | None = None, limit: int = 200
    ) -> tuple[CompileRecord, ...]:
        """The newest ``limit`` compile records (of ``namespace``, on ``branch``, when given),
        oldest first, read from the store (an open keeps none in memory): each costs the records
        it returns, plus those of the namespace on other branches it passes over. A record that
        cannot be read is logged and left out."""
        self.raise_if_failed()
        found: list[CompileRecord] = []
        before: int | None = None
        while len(found) < limit:
            want = max(limit - len(found), 64)
            rows = await self._journal.compile_rows(namespace, before, want)
            for record_id, _branch, _seq, _kind, ref, body in rows:
                record = parse_compile_record(record_id, ref, body)
                if record is None:
                    log.warning("record %s is a compile record that cannot be read; ignored", record_id)
                elif branch is None or record.branch == branch:
                    found.append(record)
            if len(rows) < want:
                break
            before = rows[-1][0]
        return tuple(reversed(found[:limit]))

    async def restore_records(self, rows: Iterable[tuple[int, str, int, str, str | None, str]]) -> None:
        """Write a backup's records (as :meth:`records` returns them, or the rows of the pages of
        :meth:`record_pages`) into this store, in one atomic commit, then read them back from
        the database a page at a time. ``rows`` may be any iterable, a generator reading a file
        included: it is drawn :data:`RESTORE_PAGE` records at a time, and the store holds a
        page, never the backup. Refuses, writing nothing, a store that already holds a record
        (``StoreNotEmptyError``; on a shared store, also when another process wrote first, found
        under the write lock) and rows that are not well formed or whose ids do not increase
        (``ValueError``; ``MalformedContentError``, naming the record and column, for text that
        is not valid Unicode or holds a NUL: both backends take the same records, and PostgreSQL
        cannot store a NUL); whatever drawing ``rows`` raises is raised as it is, having written
        nothing. A refused restore leaves the store as it was, open and usable; once begun,
        one that is not refused completes (a cancel lands after it returns). Writes of this
        process made meanwhile wait for it and follow its records. Call it before opening
        managers: they hear of no restored record. On PostgreSQL it returns once the server's
        planner statistics describe what it wrote."""
        self._check_usable()
        if self._model.next_id != 1:
            raise StoreNotEmptyError(self.path)
        await self._journal.restore(_in_pages(_checked_rows(rows), RESTORE_PAGE))

    @asynccontextmanager
    async def record_pages(self, size: int = RECORD_PAGE) -> AsyncIterator[RecordPages]:
        """Every record of the store as it is on disk, ``(id, branch, seq, kind, ref, body)`` in
        id order, a page of at most ``size`` at a time (``async for page in pages``), all from
        one snapshot taken as the block starts, after the commit of every record already in
        memory: writes made meanwhile, by this process or another, are not in it. Holds a page
        at a time (a backup of any length). On PostgreSQL the snapshot is a transaction on a
        connection of its own, held until the block ends."""
        self.raise_if_failed()
        if type(size) is not int or size < 1:
            raise ValueError(f"size: a page holds at least one record, not {size!r}")
        async with self._journal.record_pages(size) as read:
            yield RecordPages(read)

    async def records(self) -> list[RowTuple]:
        """Every record of the store as it is on disk, ``(id, branch, seq, kind, ref, body)`` in
        id order (for a backup; the one read that queries the disk), after the commit of every
        record already in memory: all at once; :meth:`record_pages` reads them a page at a time."""
        found: list[RowTuple] = []
        async with self.record_pages() as pages:
            async for page in pages:
                found += page
        return found

    # -- other writers -----------------------------------------------------------------------

    async def sync(self) -> None:
        """Bring the model up to every write committed before this call (by any process; in a
        store one process owns, there is nothing to do). Raises ``StoreFailedError`` when the
        store cannot be reached."""
        self.raise_if_failed()
        await self._journal.sync()

    async def catch_up(self) -> int:
        """Read the records other writers committed since this store last read, replay them into
        the model and tell the listeners (the ``...Elsewhere`` events); returns how many (also
        counted in ``statistics().caught_up_records``). A store file catches up only when opened read-only,
        in one read transaction (a commit is read whole or not at all); ``StoreFailedError`` when
        it cannot (see ``store._sqlite.SqliteJournal.catch_up``). A shared store catches up as :meth:`sync`."""
        self.raise_if_failed()
        return await self._journal.catch_up()

    async def search_candidates(self, query: Sequence[str]) -> Candidates:
        """The messages some version of which, on any branch and for any reader, may hold every
        word of ``query`` (store/_search.py): what the index finds, and what the records it has
        not reached yet hold (read here, from the model). Not reader-scoped:
        ``ContextManager.search`` decides what a reader is answered."""
        self.raise_if_failed()
        found = await self._journal.search_candidates(query)
        self.raise_if_failed()
        tail = self._model.messages_holding(found.unindexed, query) if found.unindexed else frozenset()
        return Candidates(found.ids | tail)

    async def index_search(self) -> int:
        """Index now, for search, every committed record the index has not reached, and the
        state records an index made before it held them lacks (a writing open's indexer does so
        in the background, in batches; a search reads what it has not reached, so this changes
        no answer, only how it is found). Returns how many records it went through; nothing on a
        read-only open."""
        self.raise_if_failed()
        return await self._journal.index_search()

    # -- reads (memory only) -----------------------------------------------------------------

    def disclosures(self, message_id: str) -> tuple[Disclosure, ...]:
        """Every disclosure of a message, oldest first."""
        self.raise_if_failed()
        return self._model.disclosure_log.for_message(message_id)

    def disclosures_to(self, reader: str | None) -> tuple[Disclosure, ...]:
        """Everything ``reader`` was shown, oldest first."""
        self.raise_if_failed()
        return self._model.disclosure_log.for_reader(reader)

    def disclosure_records(self) -> tuple[DisclosureRecord, ...]:
        """Every disclosure record, in record order."""
        self.raise_if_failed()
        return self._model.disclosure_log.records()

    @property
    def audit_anchor(self) -> str | None:
        """The random value the store keeps to anchor its audit exports (made by the first
        writing open of this version; ``None`` before)."""
        return self._journal.audit_anchor

    def erasures(self) -> tuple[Erasure, ...]:
        """Every erasure of the store, oldest first."""
        self.raise_if_failed()
        return self._model.erasures()

    def tombstone(self, message_id: str) -> Tombstone | None:
        """What remains of an erased message (``None``: not erased)."""
        self.raise_if_failed()
        return self._model.tombstone(message_id)

    def branches(self) -> tuple[BranchInfo, ...]:
        self.raise_if_failed()
        return self._model.branches()

    def branch_info(self, name: str) -> BranchInfo:
        self.raise_if_failed()
        return self._model.branch_info(name)

    def has_branch(self, name: str) -> bool:
        self.raise_if_failed()
        return self._model.has_branch(name)

    def head(self, branch: str) -> int:
        self.raise_if_failed()
        return self._model.head(branch)

    def length(self, branch: str) -> int:
        self.raise_if_failed()
        return self._model.length(branch)

    def messages(self, branch: str, start: int = 0, stop: int | None = None) -> list[Message]:
        self.raise_if_failed()
        return self._model.slice(branch, start, stop)

    def get_message(self, branch: str, message_id: str) -> Message | None:
        self.raise_if_failed()
        return self._model.get(branch, message_id)

    def get_state(self, branch: str, key: str, default: Any = None) -> Any:
        """The state record under ``key`` on ``branch``; ``default`` when there is none.
        A record whose JSON could not be read comes back as ``store.model.UNREADABLE``."""
        self.raise_if_failed()
        if not isinstance(key, str):
            check_state_key(key)  # a key of the wrong type: InvalidNameError, naming it
        value = self._model.get_state(branch, key)
        return default if value is MISSING else value

    def state_items(self, branch: str, prefix: str = "") -> dict[str, Any]:
        self.raise_if_failed()
        return self._model.state_items(branch, prefix)

    def state_keys(self, branch: str, prefix: str = "") -> list[str]:
        """Every key starting with ``prefix`` that has a state record on ``branch``, sorted; reads
        no value."""
        self.raise_if_failed()
        return self._model.state_keys(branch, prefix)

    def state_sequences(self, branch: str, prefix: str = "") -> dict[str, int]:
        """``{key: sequence}`` for every key starting with ``prefix`` that has a state record on
        ``branch``: the branch sequence its visible record was written at; reads no value."""
        self.raise_if_failed()
        return self._model.state_sequences(branch, prefix)

    def state_sequences_after(self, branch: str, prefix: str, sequence: int) -> tuple[int, dict[str, int]]:
        """How many keys starting with ``prefix`` have their state record on ``branch`` from at
        most ``sequence``, and ``{key: sequence}`` of those whose record was written after it;
        reads no value (counted in the database where it can)."""
        self.raise_if_failed()
        return self._model.state_sequences_after(branch, prefix, sequence)

    def state_keys_holding(self, branch: str, keys: Iterable[str], words: Sequence[str]) -> list[str]:
        """Those of ``keys`` (in their order) with a state record on ``branch`` whose value may
        hold every one of ``words`` (case-folded, as a search's words): a superset, narrowed in the
        database by the ASCII words without reading the values it leaves out."""
        self.raise_if_failed()
        return self._model.state_keys_holding(branch, keys, words)

    def state_keys_matching(self, branch: str, prefix: str, words: Sequence[str]) -> list[str] | None:
        """The keys starting with ``prefix`` whose state record visible on ``branch`` may hold
        every one of ``words`` (case-folded, as a search's words; a superset), sorted, found
        through the search index at the cost of the records that may hold them, never of every
        key under ``prefix``. ``None`` when the store cannot answer so (a store without the
        index, or whose index was made before it held state records, or held in memory): list
        the keys and narrow them with :meth:`state_keys_holding` then."""
        self.raise_if_failed()
        return self._model.state_keys_matching(branch, prefix, words)

    def get_states(self, branch: str, keys: Iterable[str]) -> dict[str, Any]:
        """``{key: value}`` for each of ``keys`` that has a state record on ``branch`` (the others
        left out), in one read of those the open left in the database (900 to a query)."""
        self.raise_if_failed()
        return self._model.get_states(branch, keys)

    def may_hold_audience(self, branch: str) -> bool:
        self.raise_if_failed()
        return self._model.may_hold_audience(branch)


def check_write(states: object, guard: object, *, optional: bool = False) -> None:
    """The checks of a state write's own arguments: ``states`` (``None`` too when ``optional``) a
    mapping of state keys to JSON values that can be stored, and ``guard`` ``None`` or callable
    (a shared store runs it at commit, where a wrong type would fail the committer)."""
    check_callable(guard, "guard", optional=True)
    if states is None and optional:
        return
    check_state_records(states)  # keys are names, values JSON that can be stored


def check_meta(meta: object) -> None:
    """A branch's ``meta``: ``None`` or a JSON object that can be stored."""
    if meta is not None:
        check_mapping(meta, "meta")
        check_state_records({"meta": meta})


def _in_pages(values: Iterable[T], size: int) -> Iterator[list[T]]:
    """``values`` as pages of at most ``size``, in order; a generator, which draws ``values``
    only as it is iterated."""
    page: list[T] = []
    for value in values:
        page.append(value)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page


def _checked_rows(rows: Iterable[Any]) -> Iterator[RowTuple]:
    """``rows``, each checked as :meth:`Store.restore_records` says before it is handed on."""
    last = 0
    for given in rows:
        row = Row(*given)
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
        yield row.as_tuple()


def _message_rows(branch: str, items: Iterable[Any], timestamp: float | None) -> Iterator[PendingRow]:
    """``items`` as message records to append to ``branch``, each item checked as
    :meth:`Store.append_messages` checks its items (``items[N]`` counted from the first)."""
    for index, item in enumerate(items):
        (metadata,) = check_message_items([item], first_index=index)
        stamp = item[3] if len(item) == 4 and item[3] is not None else timestamp
        yield message_row(branch, item[0], item[1], metadata, stamp, metadata_frozen=True)
