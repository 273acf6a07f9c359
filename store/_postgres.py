"""The journal of a store on PostgreSQL: many processes, on many hosts, sharing one store.

:class:`PostgresStore` is the one store (``store._store.Store``: the in-memory model answers all
reads, the write checks, the listeners) over a :class:`PostgresJournal`, with its session locks.
What differs from a store file is who decides the order of writes: the database.

* **One total order.** A write is numbered (its record ids, its branch's next sequences) at
  commit, after the newest record this process has seen, from a model holding every record
  committed before it; the record id is the table's primary key, so of two processes numbering
  from the same record one finds its ids taken and writes nothing. Commits of every process form
  one order, record ids follow it with no gap, and the model learns a write only once it is
  committed: sequences are gap-free and totally ordered per branch across processes, and memory
  never holds what the database might not.
* **Group commit, one round trip.** A commit is one statement, sent from the event loop; when
  its ids were taken, it reads the records it missed, replays them, and tries again; after three
  tries it takes the write lock (a table lock no commit passes) and commits after what it read.
  A writer that finds the committer idle commits itself, with no other task involved.
* **Guards.** A write may carry a ``guard``: a check run at commit, once every earlier commit is
  in the model (and its events were heard); the commit then succeeds only if no other commit
  came between, so the check and the write are one step. Raising refuses that write alone; it
  writes nothing. Claims, floor raises and narrowing edits are checked this way.
* **Other processes' writes** reach the model through ``LISTEN/NOTIFY`` on the store's one
  connection and a catch-up query (records after the last one seen): at open, after a
  notification, after a reconnect, and on :meth:`PostgresStore.sync`. They make the same store
  events as local writes. A busy writer announces its commits every 2 ms, not each one
  (``_pg_notices``), unless other processes write too.
* **Session locks** (:meth:`PostgresStore.take_session_lock`): a named lock held by the store's
  connection, a session-level advisory lock on the server. It is taken and given back between
  commits, on the connection that commits, so a write guarded by
  :meth:`PostgresStore.holds_session_lock` commits only through the session that holds the
  lock: a session that ended (the process crashed, its connection was lost) frees its locks at
  once on the server, and its later writes go through a new connection, which holds none. The
  compression lease is one (``actors/_lease.py``).
* **An erasure's rewrite** of the log (``VACUUM FULL``) is recorded as owed in the erasure's own
  commit and paid by the erasing process, then by a writing open, then on a schedule while an
  older transaction holds it back (``_pg_vacuum``); :meth:`PostgresStore.owed_vacuum` shows it.
* **The planner's statistics** (``ANALYZE``) are refreshed by a process that writes in bulk: a
  restore's commit, and a commit that brings what this process wrote since its open (or its
  last refresh) to as many records as the log held then (:func:`analysis_due`). A host writing
  at its usual pace leaves them to autovacuum.
* **A lost connection** fails the calls it affects with ``StoreFailedError``; a commit either
  happened whole or not at all. When a commit's outcome was lost with the connection, the store
  reconnects and looks for its records before it answers. New calls reconnect (bounded retries).

The synchronous reads answer from what this process has seen; :meth:`PostgresStore.sync` brings
the model up to every commit made before it was called.
"""

from __future__ import annotations

import functools
import logging
import threading
import urllib.parse
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import anyio.abc
import anyio.to_thread

from . import _pg_commit, _pg_vacuum
from ._erasure import ERASURE, ERASURE_BRANCH, Erasure, erased_body
from ._errors import BranchExistsError, StoreFailedError, StoreNotEmptyError
from ._groups import collapsing
from ._journal import PageReader, Recheck, Serving, Tell, stopped
from ._model import DEFAULT_BODY_CACHE, LogModel, RecordTypeError
from ._pg_commit import QUIET_SECONDS, RELISTEN_FIRST, RELISTEN_MAX, PendingWrite, Sync, failure
from ._pg_driver import Connection, connect, is_connection_error, session_lock_key
from ._pg_notices import Notices
from ._pg_vacuum import OwedVacuum
from ._records import EncodedMessage
from ._rows import PendingRow, RowTuple, apply_rows, number_rows, numbered_pages
from ._scheduling import Done, parking, shielded
from ._search import BUILD_BATCH, INDEX_EVERY, Candidates
from ._store import RESTORE_PAGE, Store
from ._worker import WorkerThread

__all__ = ["PostgresJournal", "PostgresStore", "open_postgres_store", "is_postgres_url", "redact_url"]

log = logging.getLogger("asides.store")

#: What an erasure rewrites in a PostgreSQL store so that no file keeps the erased bytes (its
#: receipt: ``Erasure.rewrites``).
REWRITES = (
    "the log's records and the search index's entries: overwritten and deleted in the erasure's own transaction",
    "asides_log and asides_search: rewritten by VACUUM FULL, by the time erase returns unless an older transaction "
    "holds it back, and then as soon as none does (PostgresStore.owed_vacuum() is None once done)",
)
T = TypeVar("T")

#: Attempts to (re)connect for one call, and the pause before each retry.
RECONNECT_DELAYS = (0.0, 0.1, 0.5, 2.0)

#: The fewest records a process writes before it refreshes the planner's statistics itself.
ANALYZE_AFTER_RECORDS = 10_000


def analysis_due(written: int, held: int) -> bool:
    """Whether a process that has written ``written`` records since it last refreshed the
    planner's statistics (or since its open), when the log held ``held``, refreshes them now:
    once it has written at least :data:`ANALYZE_AFTER_RECORDS` and at least ``held``. A bulk
    write (a restore, an import, a build) into a store of any size is then described to the
    planner by the time it ends, at a cost of a bounded sample each time the log doubles; a host
    writing at its usual pace leaves the statistics to autovacuum, which refreshes them sooner."""
    return written >= max(ANALYZE_AFTER_RECORDS, held)


def is_postgres_url(path: str) -> bool:
    """Whether ``path`` names a PostgreSQL store (``postgresql://`` or ``postgres://``)."""
    return isinstance(path, str) and path.startswith(("postgresql://", "postgres://"))


def redact_url(url: str) -> str:
    """``url`` without its password, for messages and ``store.path``."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is not None:
        host = parts.netloc.rsplit("@", 1)[1]
        user = urllib.parse.quote(parts.username or "", safe="")
        parts = parts._replace(netloc=f"{user}:***@{host}")
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    if any(key == "password" for key, _ in query):
        query = [(key, "***" if key == "password" else value) for key, value in query]
        parts = parts._replace(query=urllib.parse.urlencode(query, safe="/*"))
    return urllib.parse.urlunsplit(parts)


#: What an audit's read says it could not read, when it fails.
_DISCLOSURE_RECORDS_READ = "the disclosure records (for an audit)"


class PostgresJournal:
    """The journal of a store in a PostgreSQL database, shared by every process that opens the
    same URL (see the module docstring)."""

    shared = True

    def __init__(
        self,
        url: str,
        model: LogModel,
        connection: Connection,
        *,
        read_only: bool = False,
        synchronous: str | None = None,
        body_cache: int = DEFAULT_BODY_CACHE,
    ) -> None:
        self.path = redact_url(url)
        self._body_cache = body_cache
        #: The connection that reads message bodies left in the database at open (made when
        #: first needed; used from the thread that reads the model, one statement at a time).
        self._body_connection: Connection | None = None
        self._body_lock = threading.Lock()
        self.read_only = read_only
        self.url = url
        self._model = model
        self._connection: Connection | None = connection
        self._schema = connection.schema
        self._worker = WorkerThread("asides-postgres")
        self._synchronous = synchronous
        self._pending: list[PendingWrite] = []
        self._parking = parking()  # how a writer waits for its commit, never cut short
        self._syncs: list[Sync] = []
        self._catch_up_wanted = False
        self._idle_scope: anyio.CancelScope | None = None
        self._wake = anyio.Event()
        self._in_round = False
        self._committer_idle = False
        self.failure: BaseException | None = None
        self._notices = Notices()
        self._relisten_delay = RELISTEN_FIRST
        #: The newest record id this process has replayed, and the newest one it has heard of.
        self._applied = 0
        self._announced = 0
        #: What ``statistics()`` reports (``store._store.StoreStatistics``).
        self.commits = 0
        self.contended_commits = 0
        self.caught_up_records = 0
        #: The records this process committed since it last refreshed the planner's statistics
        #: (or since its open), and the newest record id then (:func:`analysis_due`).
        self._unanalyzed = 0
        self._analyzed_at = 0
        #: Writes committed and not yet answered: their commit made a refresh due (:meth:`_finish`).
        self._answered_after_analysis: list[PendingWrite] = []
        #: Whether an erasure's rewrite of the log is owed (as far as this process knows), the
        #: task group trying it again while serving, and whether that task runs.
        self._vacuum_owed = False
        self.audit_anchor: str | None = None
        #: The connection that reads the search index and builds it (store/_search.py), made at
        #: the first search or build, one call at a time; and the records not indexed yet.
        self._index_connection: Connection | None = None
        self._index_lock = anyio.Lock()
        self._index_reached = 1
        #: The first record from which the index holds state records, as last read (``None``:
        #: not read, or no index); an index made before it held them is filled in backwards.
        self._states_from: int | None = None
        self._index_wanted = anyio.Event()
        self._indexing = False
        self._background: anyio.abc.TaskGroup | None = None
        self._retrying = False
        #: Its life: whether it serves, is closing or closed, and whom it tells.
        self._life = Serving(self._committer, self._wake_up)

    # -- opening and closing -----------------------------------------------------------------

    async def replay(self) -> None:
        """Read every committed record into the model, on the connection of the open."""
        connection = self._connection
        assert connection is not None
        if await anyio.to_thread.run_sync(connection.has_stored_indexes):
            # The messages stay in the database: the records other than messages, the heads and
            # where the messages that may name a reader stand, in one snapshot.
            self._model.read_rows_from(self, self._body_cache)
            opened = await anyio.to_thread.run_sync(connection.stored_open, self._model.audience_bits)
            rows, heads, audience, disclosed, newest, gaps = opened
            try:
                self._model.count_gaps(gaps, newest + 1)
                self._model.replay(rows)
            except RecordTypeError as exc:
                raise StoreFailedError(f"{self.path}: {exc}") from None
            self._model.opened_records += len(rows)
            self._model.end_stored_open(heads, audience, newest + 1, disclosed=disclosed)
            self._applied = self._announced = self._analyzed_at = newest
        else:
            self._model.read_bodies_with(self._read_bodies, self._body_cache)
            rows = await anyio.to_thread.run_sync(functools.partial(connection.rows_after, 0, leave_bodies=True))
            self._model.replay(rows)
            self._model.opened_records += len(rows)
            self._applied = self._announced = self._analyzed_at = rows[-1][0] if rows else 0
        self.audit_anchor = await anyio.to_thread.run_sync(connection.audit_anchor)

    @property
    def closed(self) -> bool:
        """Whether the journal is closing or closed."""
        return self._life.closed

    @asynccontextmanager
    async def serving(self, tell: Tell) -> AsyncIterator[None]:
        """Serve as every journal does (``Journal.serving``), and, while serving, try an owed
        rewrite again on its schedule (:meth:`_owe_vacuum`)."""
        async with self._life.serving(tell), anyio.create_task_group() as background:
            self._background = background
            if self._vacuum_owed:
                self._owe_vacuum()
            try:
                yield
            finally:
                self._background = None
                background.cancel_scope.cancel()

    async def close(self) -> None:
        """Close the connection and the worker thread (after serving, or after an open that
        failed first)."""
        self._life.close()
        self._drop_connection()
        with anyio.CancelScope(shield=True):
            await self._worker.stop()
            index, self._index_connection = self._index_connection, None
            if index is not None:
                await anyio.to_thread.run_sync(index.close)
            with self._body_lock:
                bodies, self._body_connection = self._body_connection, None
            if bodies is not None:
                await anyio.to_thread.run_sync(bodies.close)

    # -- the worker thread and the connection ------------------------------------------------

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._worker.run(fn, *args)

    async def _ensure_connection(self, delays: Sequence[float] = RECONNECT_DELAYS) -> Connection:
        """The connection, reconnecting if it was lost (an attempt after each of ``delays``); a
        new connection first catches up, since notifications may have been missed meanwhile."""
        current = self._connection
        if current is not None and not current.broken:
            return current
        self._connection = None
        if current is not None:
            await self._call(current.close)
        error: BaseException | None = None
        for delay in delays:
            if delay:
                await anyio.sleep(delay)
            try:
                fresh = await self._call(lambda: connect(self.url, self.path, create=False, synchronous=self._synchronous))
            except Exception as exc:
                if not is_connection_error(exc):
                    raise
                error = exc
                continue
            self._connection = fresh
            log.info("reconnected to %s", self.path)
            self._apply(await self._call(fresh.rows_after, self._applied))
            return fresh
        raise StoreFailedError(f"cannot reach the store {self.path!r} after {len(delays)} attempt(s): {error}") from error

    def _writer_pid(self) -> int | None:
        connection = self._connection
        return None if connection is None else connection.backend_pid

    def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    # -- the rewrite erasures owe (store/_pg_vacuum.py) ---------------------------------------

    async def pay_owed_vacuum_at_open(self) -> None:
        """At a writing open: pay the rewrite erasures owe (a process killed before its own
        rewrite, or one held back by an older transaction), waiting at most
        ``OPEN_WAIT_SECONDS`` for older transactions; what stays owed is left to the schedule."""
        connection = self._connection
        assert connection is not None
        wait = _pg_vacuum.OPEN_WAIT_SECONDS
        await self._pay_owed_vacuum_with(lambda: connection.pay_owed_vacuum(wait, wait_for_lock=False), wait)

    async def _pay_owed_vacuum(self, connection: Connection) -> None:
        """After this process's erasure committed: rewrite the log, waiting up to
        ``ERASURE_WAIT_SECONDS`` for older transactions (in the committer's round, as the erasure's
        own commit; the caller of ``erase`` waits for it)."""
        wait = _pg_vacuum.ERASURE_WAIT_SECONDS
        await self._pay_owed_vacuum_with(lambda: connection.pay_owed_vacuum(wait, wait_for_lock=True), wait, worker=True)

    async def _pay_owed_vacuum_with(self, pay: Callable[[], OwedVacuum | None], waited: float, *, worker: bool = False) -> None:
        """Run ``pay`` (in the store's worker thread with ``worker``, else in one of its own); what
        stays owed, or a failure, is logged and tried again on the schedule. Never raises: the
        erasure is committed whether or not its rewrite is done."""
        try:
            owed = await (self._call(pay) if worker else anyio.to_thread.run_sync(pay))
        except Exception as exc:
            if self._connection is not None and self._connection.broken:  # it was the store's connection
                self._drop_connection()
            log.warning(
                "rewriting the log of %s for an erasure failed (%r); the rewrite stays owed (asides inspect shows it) and is "
                "tried again in %.0f s",
                self.path,
                exc,
                _pg_vacuum.VACUUM_RETRY_SECONDS,
            )
            self._owe_vacuum()
            return
        if owed is None:
            return
        if owed.blocked_by:
            log.warning(
                "an erasure's old row versions stay in the files of the store %s until the transactions of server processes %s "
                "end and the log is rewritten: they held snapshots older than the erasure for %.0f s; the rewrite is owed for "
                "erasure(s) %s (asides inspect shows it) and tried again every %.0f s",
                self.path,
                ", ".join(map(str, owed.blocked_by)),
                waited,
                ", ".join(map(str, owed.erasures)),
                _pg_vacuum.VACUUM_RETRY_SECONDS,
            )
        else:
            log.info("the rewrite of %s owed for erasure(s) %s is another session's, or is tried again", self.path, owed.erasures)
        self._owe_vacuum()

    def _owe_vacuum(self) -> None:
        """A rewrite is owed: while this writing store serves, try it again every
        ``VACUUM_RETRY_SECONDS`` until nothing is owed (one task at a time)."""
        self._vacuum_owed = True
        if self._background is not None and not self._retrying and not self.read_only:
            self._retrying = True
            self._background.start_soon(self._retry_owed_vacuum)

    async def _retry_owed_vacuum(self) -> None:
        def pay(connection: Connection) -> OwedVacuum | None:
            return connection.pay_owed_vacuum(0.0, wait_for_lock=False)

        try:
            while self._vacuum_owed:
                await anyio.sleep(_pg_vacuum.VACUUM_RETRY_SECONDS)
                self._vacuum_owed = False  # set again by what stays owed
                with anyio.CancelScope(shield=True):  # a rewrite under way ends before the store closes
                    await self._pay_owed_vacuum_with(lambda: self._on_own_connection(pay), 0.0)
        finally:
            self._retrying = False

    async def owed_vacuum(self) -> OwedVacuum | None:
        """See :meth:`PostgresStore.owed_vacuum`."""
        return await self._apart(Connection.owed_vacuum, "reading the rewrite erasures owe")

    def _on_own_connection(self, fn: Callable[[Connection], T]) -> T:
        """``fn`` on a connection of its own, opened and closed here (blocking: a worker thread's)."""
        connection = connect(self.url, self.path, create=False)
        try:
            return fn(connection)
        finally:
            connection.close()

    async def _apart(self, fn: Callable[[Connection], T], what: str) -> T:
        """:meth:`_on_own_connection` in a worker thread; ``StoreFailedError`` saying ``what``
        failed."""
        try:
            return await anyio.to_thread.run_sync(self._on_own_connection, fn)
        except Exception as exc:
            raise failure(self.path, exc, what) from exc

    # -- replaying committed records ---------------------------------------------------------

    def _apply(self, rows: Sequence[RowTuple], *, elsewhere: bool = True, encoded: Mapping[int, EncodedMessage] | None = None) -> None:
        """Replay committed records (in id order) into the model and tell the listeners; records
        caught up with are another process's (``elsewhere``), or, rarely, this process's own
        commit whose answer was lost with its connection. ``encoded``: see ``apply_rows``."""
        fresh = [row for row in rows if row[0] > self._applied]
        if not fresh:
            return
        events = apply_rows(self._model, fresh, elsewhere=elsewhere, encoded=encoded)
        self._applied = fresh[-1][0]
        self._announced = max(self._announced, self._applied)
        for event in events:
            self._life.tell(event)
        self._note_commit()

    # -- the committer (docs/postgres.md, "A commit") -----------------------------------------

    def _wake_up(self) -> None:
        """Have the committer look for work (it is idle, or will look before it idles)."""
        self._wake.set()
        self._committer_idle = False  # woken: writes from now on wait for its round
        if self._idle_scope is not None:
            self._idle_scope.cancel()

    def _noticed(self, announced: bool) -> None:
        """A commit was made, announcing itself or not."""
        if self._notices.committed(announced, anyio.current_time()):
            self._wake_up()  # the idle committer's wait gets a deadline: the announcement's

    def _hear(self, newest: int) -> None:
        """Another process committed records up to ``newest``: catch up with them."""
        if newest > self._announced:
            self._notices.others_write(anyio.current_time())
        if newest > self._applied:
            self._announced = max(self._announced, newest)
            self._catch_up_wanted = True

    async def _idle(self) -> None:
        """Wait for work: queued writes and syncs (they wake it), closing, or another process's
        commit announced on the connection. The connection's socket is watched only once the
        store has been idle for :data:`QUIET_SECONDS`: between the writes of a busy store, a
        wake-up costs no more than an event, and notifications arrive with the commits'
        answers."""
        announcement = self._notices.owed_at()
        self._committer_idle = True
        try:
            with anyio.CancelScope(deadline=min(anyio.current_time() + QUIET_SECONDS, announcement)):
                await self._wake.wait()
            if not (self._wake.is_set() or self._in_round or self._announcement_due()):
                with anyio.CancelScope(deadline=announcement):
                    await self._listen()
        finally:
            self._committer_idle = False
        self._wake = anyio.Event()

    async def _listen(self) -> None:
        """Wait for another process's commit to be announced on the connection, or a wake-up.
        With the connection lost, reconnect (which catches up with what was missed meanwhile)
        after a pause that grows to :data:`RELISTEN_MAX`."""
        with anyio.CancelScope() as scope:
            self._idle_scope = scope
            try:
                connection = self._connection
                if connection is None or connection.broken:
                    await anyio.sleep(self._relisten_delay)
                    self._relisten_delay = min(self._relisten_delay * 2, RELISTEN_MAX)
                    await self._ensure_connection((0.0,))
                else:
                    await connection.wait_for_notifications()
                self._relisten_delay = RELISTEN_FIRST
            except Exception as exc:
                self._drop_connection()
                log.warning("listening to %s failed (%r); trying again in %.2f s", self.path, exc, self._relisten_delay)
            finally:
                self._idle_scope = None

    def _has_work(self) -> bool:
        return bool(self._pending or self._syncs or self._catch_up_wanted or self._announcement_due())

    def _announcement_due(self) -> bool:
        """Whether the owed announcement is to be made now (never without a connection: a new
        one catches up, and the pause of reconnecting is not spent looping here)."""
        notices = self._notices
        return notices.owed and self._connection is not None and (self._life.closing or notices.due(anyio.current_time()))

    async def _committer(self) -> None:
        while True:
            if self._connection is not None:
                self._hear(self._connection.announced)
            if self._in_round or not self._has_work():
                if self._life.closing and not self._in_round:
                    return
                await self._idle()
                continue
            await self._round()
            # Let the writers the round answered run (and queue their next writes) before the
            # next round, so that it takes them together rather than in turns.
            await anyio.lowlevel.checkpoint()

    async def _round(self) -> None:
        """Commit every queued write and answer every queued sync: one round, shielded from
        cancellation. Run by the committer, or by a writer that found it idle (see
        :meth:`_submit`); never two at once."""
        self._in_round = True
        writes, self._pending = self._pending, []
        syncs, self._syncs = self._syncs, []
        catch_up, self._catch_up_wanted = self._catch_up_wanted, False
        with anyio.CancelScope(shield=True):
            error: BaseException | None = None
            try:
                for write in [w for w in writes if w.exact is not None or w.erase is not None or w.lock is not None]:
                    writes.remove(write)
                    try:
                        if write.lock is not None:
                            await self._session_lock(write, *write.lock)
                        else:
                            await (self._write_exact(write) if write.exact is not None else self._write_erasure(write))
                    except Exception as exc:
                        write.error = exc
                    write.done.set()
                committed = await self._commit_retrying(writes) if writes else False
                if self._answered_after_analysis:  # their commit made the statistics due (_finish)
                    await self._analyze()
                    answered, self._answered_after_analysis = self._answered_after_analysis, []
                    for write in answered:
                        write.done.set()
                if not committed and (writes or syncs or catch_up):
                    connection = await self._ensure_connection()
                    rows = await self._call(connection.rows_after, self._applied)
                    self.caught_up_records += len(rows)
                    self._apply(rows)
                if self._announcement_due():
                    await (await self._ensure_connection()).announce_here(self._applied)
                    self._noticed(True)
            except Exception as exc:
                error = exc
                if is_connection_error(exc) or (self._connection is not None and self._connection.broken):
                    self._drop_connection()
                log.warning("a round of the store %r failed: %r", self.path, exc)
            finally:
                self._in_round = False
            for write in writes:
                if error is not None and write.error is None and not write.done.is_set():
                    write.error = failure(self.path, error, "the commit holding this write")
                write.done.set()
            for sync in syncs:
                if error is not None:
                    sync.error = failure(self.path, error, "catching up with other processes' commits")
                sync.done.set()

    def _accept(self, writes: Sequence[PendingWrite]) -> list[PendingWrite]:
        """The writes that pass their rechecks and guards against the model as it is now."""
        accepted = []
        names: set[str] = set()
        for write in writes:
            if write.error is not None:
                continue
            try:
                if write.recheck is not None:
                    write.recheck(self._model)
                for row in write.rows:
                    if row.fork is not None and row.branch in names:
                        raise BranchExistsError(row.branch)
                if write.guard is not None:
                    write.guard()
            except Exception as exc:
                write.error = exc
                continue
            names.update(row.branch for row in write.rows if row.fork is not None)
            accepted.append(write)
        return accepted

    async def _commit_retrying(self, writes: list[PendingWrite]) -> bool:
        """:meth:`_commit`, tried once more on a fresh connection when the connection was lost
        and the first attempt is known to have written nothing (so the retry cannot double it)."""
        try:
            return await self._commit(writes)
        except _Unwritten as lost:
            log.info("a commit to %s was lost with its connection (%s) and wrote nothing; retrying once", self.path, lost.cause)
            try:
                return await self._commit(writes)
            except _Unwritten as again:
                raise StoreFailedError(
                    f"the connection to {self.path!r} was lost during a commit, twice ({again.cause}); nothing of it was written"
                ) from again.cause

    async def _write_exact(self, write: PendingWrite) -> None:
        """Write the pages of a paged write (a restore's, or messages appended a page at a time)
        as they are, in one transaction under the write lock, after catching up with every
        record before it (a write into an empty store only refuses any), then apply them from
        the database a page at a time, telling the listeners when it ``tell``s. A page that
        cannot be drawn or appended rolls back, writing nothing; a commit whose outcome is lost
        with its connection stops the store."""
        assert write.exact is not None
        connection = await self._ensure_connection()
        head, missed = await self._call(connection.lock, self._applied)
        try:
            if write.empty_only and (head != 0 or missed):
                raise StoreNotEmptyError(self.path)
            self.caught_up_records += len(missed)
            self._apply(missed)
            self._applied = max(self._applied, head)
            first, newest = head + 1, head
            for page in write.exact(first):
                if page:
                    await self._call(connection.append_locked, page)
                    newest = page[-1][0]
        except BaseException:
            await self._call(connection.rollback)
            raise
        try:
            await self._call(functools.partial(connection.commit_locked, [], announcing=newest))
        except BaseException as exc:
            self.failure = exc  # committed or not, nothing tells: memory and the database may disagree
            raise
        self._noticed(True)
        write.ids = range(first, newest + 1)
        after = head
        while after < newest and (page := await self._call(connection.page_after, after, RESTORE_PAGE)):
            if write.tell:
                self._apply(page, elsewhere=False)
            else:
                self._model.replay(page)
                self._applied = self._announced = page[-1][0]
                self._note_commit()  # committed: the page may leave memory
            after = page[-1][0]
        self.commits += 1
        await self._analyze()

    async def _analyze(self) -> None:
        """Refresh the planner's statistics of the log's tables (``Connection.analyze``), before
        the writes whose commit made them due are answered. A failure (a lock not had in time, a
        lost connection) is logged and left to autovacuum: the commits stand. Never raises."""
        self._unanalyzed, self._analyzed_at = 0, self._applied
        try:
            await self._call((await self._ensure_connection()).analyze)
        except Exception as exc:
            if is_connection_error(exc):
                self._drop_connection()
            log.warning("the store %r could not refresh the planner's statistics after a bulk write (%r); autovacuum will", self.path, exc)

    async def _session_lock(self, write: PendingWrite, name: str, key: int, take: bool) -> None:
        """Take the session lock ``key`` for ``name`` (``take``), or give it back if no name
        counts on it any more, on the store's connection, between commits (so a commit never
        runs while the lock is being taken or given back). A take that takes the lock on the
        server then catches up, so the model holds every record committed before the lock was
        taken. A take reconnects if it must (a new session holds nothing); giving back needs no
        connection: a lost session's locks are gone with it."""
        if not take:
            connection = self._connection
            if connection is not None and not connection.broken:
                await self._call(connection.session_unlock, key)
            return
        connection = await self._ensure_connection()
        try:
            if key not in connection.session_locks:
                if not await self._call(connection.try_session_lock, key):
                    return
                # Newly taken: read what other processes committed before it, so that the take
                # answers with them in the model. A holder's writes under the lock all committed
                # before it gave the lock back, so the new holder works from them, and not from a
                # model that lags its notifications (it would do the same work again).
                missed = await self._call(connection.rows_after, self._applied)
                self.caught_up_records += len(missed)
                self._apply(missed)
        except Exception as exc:
            if is_connection_error(exc):
                self._drop_connection()
            raise failure(self.path, exc, "taking a session lock") from exc
        connection.session_locks[key].add(name)
        write.locked = True

    async def _write_erasure(self, write: PendingWrite) -> None:
        """Plan an erasure against the model caught up under the write lock (so no process
        commits a record between the plan and the commit), and commit it in that transaction,
        with the rewrite of the log it owes; then pay that (``_pay_owed_vacuum``)."""
        assert write.erase is not None
        message_ids, reason, at = write.erase
        connection = await self._ensure_connection()
        head, missed = await self._call(connection.lock, self._applied)
        try:
            self.caught_up_records += len(missed)
            self._apply(missed)
            self._applied = max(self._applied, head)
            plan = self._model.plan_erasure(message_ids, reason, at, REWRITES)
        except BaseException:
            await self._call(connection.rollback)
            raise
        if plan is None:
            await self._call(connection.rollback)
            return
        erasure, body, states = plan
        rows = [(head + 1, ERASURE_BRANCH, head + 1, ERASURE, None, body)]
        ids = list(erasure.message_ids)
        number = erasure.number
        await self._call(connection.commit_erasure, rows, [int(m) for m in ids], ids, list(states), erased_body(number), number)
        self._noticed(True)
        self.commits += 1
        self._apply(rows, elsewhere=False)
        write.erased = erasure
        await self._pay_owed_vacuum(connection)

    async def _commit(self, writes: list[PendingWrite]) -> bool:
        """Commit the writes that pass their checks, in one transaction, after every commit made
        before; whether the database now holds every record of this process's model's future
        (so no catch-up is needed)."""
        connection = await self._ensure_connection()
        for attempt in range(_pg_commit.OPTIMISTIC_ATTEMPTS):
            if attempt or self._announced > self._applied:  # catch up without the lock first
                missed = await self._call(connection.rows_after, self._applied)
                self.caught_up_records += len(missed)
                self._apply(missed)
            accepted = self._accept(writes)
            if not accepted:
                return False
            rows, encoded = _numbered(self._model, self._applied + 1, accepted)
            announce = self._notices.due(anyio.current_time())
            try:
                done = await connection.append_here(rows, announce=announce)
                if done is None:
                    done, announce = await self._call(connection.append, rows), True
            except Exception as exc:
                if not is_connection_error(exc):
                    raise
                await self._settle_unknown(accepted, rows, exc)
                return True
            if done:
                self._noticed(announce)
                self._finish(accepted, rows, encoded)
                return True
            self._notices.others_write(anyio.current_time())
        self.contended_commits += 1
        head, missed = await self._call(connection.lock, self._applied)
        try:
            self.caught_up_records += len(missed)
            self._apply(missed)
            self._applied = max(self._applied, head)
            accepted = self._accept(writes)
            rows, encoded = _numbered(self._model, head + 1, accepted)
        except BaseException:
            await self._call(connection.rollback)
            raise
        try:
            await self._call(connection.commit_locked, rows)
        except Exception as exc:
            if not is_connection_error(exc) or not rows:
                raise
            await self._settle_unknown(accepted, rows, exc)
            return True
        self._noticed(True)
        self._finish(accepted, rows, encoded)
        return True

    def _finish(self, accepted: Sequence[PendingWrite], rows: Sequence[RowTuple], encoded: Mapping[int, EncodedMessage]) -> None:
        """A commit of ``accepted`` is in: apply it and answer its writers, or, when it makes a
        refresh of the planner's statistics due (:func:`analysis_due`), answer them once the
        round has refreshed them, so that a bulk write returns described to the planner."""
        self.commits += 1
        self._unanalyzed += len(rows)
        self._apply(rows, elsewhere=False, encoded=encoded)
        if analysis_due(self._unanalyzed, self._analyzed_at):
            self._answered_after_analysis.extend(accepted)
            return
        for write in accepted:
            write.done.set()

    async def _settle_unknown(self, accepted: Sequence[PendingWrite], rows: Sequence[RowTuple], cause: BaseException) -> None:
        """The connection was lost while a commit was out: reconnect, catch up, and see whether
        the commit happened (its records are there, exactly) before answering its writers.
        Raises :class:`_Unwritten` when it did not happen."""
        self._drop_connection()
        try:
            await self._ensure_connection()
        except Exception as exc:
            raise StoreFailedError(
                f"the connection to {self.path!r} was lost during a commit ({cause}) and could not be restored, so whether "
                "it happened is not known; a later open (or sync) shows it"
            ) from exc
        connection = await self._ensure_connection()
        stored = await self._call(connection.rows_with_ids, [row[0] for row in rows])
        if [tuple(row) for row in stored] == list(rows):
            self.commits += 1
            self._unanalyzed += len(rows)
            self._notices.committed(False, anyio.current_time())  # whether it announced itself is not known
            for write in accepted:
                write.done.set()
            return
        raise _Unwritten(cause)

    # -- queueing writes ---------------------------------------------------------------------

    async def _submit(self, write: PendingWrite) -> range:
        """Queue ``write`` and return its record ids once it is committed. A writer that finds
        the committer idle (waiting for work, not watching the connection) commits the round
        itself: a lone writer's commit then involves no other task. Between its rounds the
        committer is not idle, so that writes arriving then make one batch."""
        self._pending.append(write)
        if self._committer_idle and self._idle_scope is None and not self._in_round:
            # The round is this writer's from here (under asyncio it runs in a task of its own,
            # begun later), and once begun it ends, past asyncio's own Task.cancel() too.
            self._in_round = True
            await shielded(self._round)
            if self._has_work() or self._life.closing:
                self._wake_up()
        else:
            self._wake_up()
        # Once queued, the write completes (or is refused): a cancelled caller still waits for
        # its commit, so "raised Cancelled" always means "not written", as in the SQLite store.
        await write.done.wait()
        if write.error is not None:
            raise write.error
        return write.ids

    async def sync(self) -> None:
        """Return once the model holds every record committed (by any process) before this
        call. Raises ``StoreFailedError`` when the database cannot be reached."""
        if self._life.closed:
            raise StoreFailedError(f"the store {self.path!r} is closed")
        waiter = Sync()
        self._syncs.append(waiter)
        self._wake_up()
        await waiter.done.wait()
        if waiter.error is not None:
            raise waiter.error

    # -- writes ------------------------------------------------------------------------------

    async def commit(
        self,
        rows: list[PendingRow],
        *,
        guard: Callable[[], None] | None = None,
        recheck: Recheck | None = None,
        durable: bool = True,
    ) -> range:
        """Queue the write for the committer, which numbers it at commit after every record any
        process committed before it, runs its recheck and guard there (under the write lock, when
        it takes it), and applies it once committed. Always waits for the commit (``durable`` or
        not), so that a refusal reaches its caller."""
        return await self._submit(PendingWrite(rows, guard=guard, recheck=recheck, done=Done(self._parking)))

    async def erase(self, message_ids: Sequence[str], reason: str, at: float) -> Erasure | None:
        """Planned and committed under the write lock, against every record any process committed
        before it; the log is then rewritten (``VACUUM FULL``)."""
        write = PendingWrite([], erase=(list(message_ids), reason, at), done=Done(self._parking))
        await self._submit(write)
        return write.erased

    async def restore(self, pages: Iterable[Sequence[RowTuple]]) -> None:
        """Write the pages in one transaction into a store no process has written to, then
        replay them (:meth:`_write_exact`, in a round of the committer: other writes of this
        process commit after it, numbered after its records). A restore tells no listener."""
        await self._submit(PendingWrite([], exact=lambda _first: pages, empty_only=True, tell=False, done=Done(self._parking)))

    async def append_pages(self, branch: str, pages: Iterable[Sequence[PendingRow]]) -> range:
        """Append the pages of messages to ``branch`` in one transaction, numbered after every
        record committed before them (:meth:`_write_exact`); the listeners hear of them a page
        at a time, once committed."""
        pages_from = functools.partial(numbered_pages, self._model, branch, pages)  # drawn caught up, under the write lock
        return await self._submit(PendingWrite([], exact=pages_from, done=Done(self._parking)))

    # -- session locks -----------------------------------------------------------------------

    def _session_lock_key(self, name: str) -> int:
        return session_lock_key(self._schema, name)

    async def take_session_lock(self, name: str) -> bool:
        """See :meth:`PostgresStore.take_session_lock`."""
        write = PendingWrite([], lock=(name, self._session_lock_key(name), True), done=Done(self._parking))
        await self._submit(write)
        return write.locked

    def holds_session_lock(self, name: str) -> bool:
        """See :meth:`PostgresStore.holds_session_lock`."""
        connection = self._connection
        if connection is None or connection.broken:
            return False
        return name in connection.session_locks.get(self._session_lock_key(name), ())

    def release_session_lock(self, name: str) -> None:
        """See :meth:`PostgresStore.release_session_lock`."""
        connection = self._connection
        key = self._session_lock_key(name)
        names = None if connection is None else connection.session_locks.get(key)
        if names is None or name not in names:
            return
        names.discard(name)
        self._pending.append(PendingWrite([], lock=(name, key, False), done=Done(self._parking)))
        self._wake_up()

    async def session_lock_holders(self, names: Iterable[str]) -> dict[str, str]:
        """See :meth:`PostgresStore.session_lock_holders`."""
        keyed = {self._session_lock_key(name): name for name in names}
        found = await self._apart(lambda connection: connection.session_lock_holders(keyed), "reading who holds its session locks")
        return {keyed[key]: holder for key, holder in found.items()}

    # -- reads -------------------------------------------------------------------------------

    async def catch_up(self) -> int:
        """Read what other processes committed since (as :meth:`sync`); how many records."""
        before = self.caught_up_records
        await self.sync()
        return self.caught_up_records - before

    # -- message bodies read on demand --------------------------------------------------------

    def _read_bodies(self, record_ids: Sequence[int]) -> dict[int, str]:
        """The bodies of committed message records (``LogModel.read_bodies_with``), read
        synchronously, in one round trip, on a connection of their own: a read that misses the
        cache holds up the thread that reads (the event loop's) for that round trip and no
        longer, and waits for no commit (a commit holds no lock a read needs). After the close a
        read opens a connection for itself and closes it. A body the database cannot give is a
        ``StoreFailedError`` naming the store."""
        return self._read(lambda connection: connection.bodies(record_ids))

    # What a model whose messages stay in the database reads (``store._model_parts.StoredRows``),
    # each in one round trip, as ``_read_bodies``.

    def record_bodies(self, record_ids: Sequence[int]) -> dict[int, str]:
        return self._read_bodies(record_ids)

    def records_holding(self, record_ids: Sequence[int], words: Sequence[str]) -> set[int]:
        return self._read(lambda connection: connection.records_holding(record_ids, words))

    def states_matching(
        self, prefix: str, upper: str, words: Sequence[str]
    ) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]] | None:
        self._start_indexer()
        return self._read(lambda connection: connection.states_matching(prefix, upper, words), "the search index")

    def state_versions(
        self,
        before: int,
        *,
        keys: Sequence[str] | None = None,
        prefix: str | None = None,
        suffix: str | None = None,
        containing: str | None = None,
        blanked: bool = True,
    ) -> list[tuple[int, str, int, str, bool]]:
        return self._read(lambda connection: connection.state_versions(before, keys, prefix, suffix, containing, blanked))

    def state_sequences_after(self, before: int, branch: str, prefix: str, sequence: int) -> tuple[int, list[tuple[str, int]]]:
        return self._read(lambda connection: connection.state_sequences_after(before, branch, prefix, sequence))

    def state_record_page(self, after: int, before: int, limit: int) -> list[tuple[int, str, str, str]]:
        return self._read(lambda connection: connection.state_record_page(after, before, limit))

    def message_rows(self, branch: str, first: int, last: int, bodies: bool) -> list[tuple[int, int, str | None]]:
        return self._read(lambda connection: connection.message_rows(branch, first, last, bodies))

    def audience_rows(self, branch: str, first: int, last: int) -> list[tuple[int, str | None, str | None]]:
        return self._read(lambda connection: connection.audience_rows(branch, first, last))

    def gap_sequences(self, branch: str, first: int, last: int, before: int) -> list[int]:
        return self._read(lambda connection: connection.gap_sequences(branch, first, last, before))

    def message_places(self, record_ids: Sequence[int]) -> list[tuple[int, str, int]]:
        return self._read(lambda connection: connection.message_places(record_ids))

    def all_message_ids(self) -> list[int]:
        return self._read(lambda connection: connection.all_message_ids())

    def message_page(self, after: int, limit: int) -> list[tuple[int, str, int, str | None]]:
        return self._read(lambda connection: connection.message_page(after, limit))

    def disclosure_page(self, after: int, limit: int) -> list[tuple[int, str]]:
        return self._read(lambda connection: connection.disclosure_page(after, limit), _DISCLOSURE_RECORDS_READ)

    def disclosures_holding(self, message_id: int) -> list[tuple[int, str]]:
        return self._read(lambda connection: connection.disclosures_holding(message_id), _DISCLOSURE_RECORDS_READ)

    async def compact_disclosed(self) -> tuple[int, int]:
        """Merge the runs the store keeps of the ids shown (``Connection.compact_disclosed``),
        on the index's connection, so no commit waits for it."""
        return await self._on_index_connection(lambda connection: connection.compact_disclosed(), "merging the runs of ids shown")

    def _read(self, fn: Callable[[Connection], T], what: str = "the messages' bodies") -> T:
        with self._body_lock:
            connection, transient = self._body_connection, False
            try:
                if connection is None or connection.broken:
                    connection = connect(self.url, self.path, create=False)
                    if self._life.closed:
                        transient = True
                    else:
                        self._body_connection = connection
                return fn(connection)
            except StoreFailedError:
                raise
            except Exception as exc:
                raise StoreFailedError(f"{what} could not be read from {self.path!r}: {exc}") from exc
            finally:
                if transient and connection is not None:
                    connection.close()

    # -- the search index (store/_search.py) ---------------------------------------------------

    async def _on_index_connection(self, fn: Callable[[Connection], T], what: str) -> T:
        """``fn`` on the index's connection in a worker thread, one call at a time (a lost
        connection is made again at the next call); ``StoreFailedError`` saying ``what`` failed."""
        async with self._index_lock:
            try:
                connection = self._index_connection
                if connection is None or connection.broken:
                    connection = self._index_connection = await anyio.to_thread.run_sync(
                        lambda: connect(self.url, self.path, create=False)
                    )
                return await anyio.to_thread.run_sync(fn, connection)
            except Exception as exc:
                raise failure(self.path, exc, what) from exc

    async def search_candidates(self, query: Sequence[str]) -> Candidates:
        """The messages some version of which holds every word of ``query`` (``Candidates``),
        read on the index's own connection, so no commit waits for it."""
        if self.failure is not None:
            raise stopped(self.path, self.failure)
        self._start_indexer()
        ids, reached = await self._on_index_connection(lambda connection: connection.search(query), "searching")
        if reached is None:  # a store with no index (only a read-only open leaves it so)
            reached = 1
        self._index_reached = max(self._index_reached, reached)
        return Candidates(frozenset(ids) | self._model.edited_since(reached), range(reached, self._model.next_id))

    def _start_indexer(self) -> None:
        """Start the indexer, once: it runs in a process that searches, from its first search
        on (of messages or of memories). A process that only writes and compiles does nothing
        for the index (another one, or a later search, indexes what it wrote), so it runs as it
        would without one."""
        if not self._indexing and not self.read_only and self._background is not None:
            self._indexing = True
            self._background.start_soon(self._index)

    def _note_commit(self) -> None:
        """Let what is committed leave memory, and wake the indexer once enough records wait
        for it (store/_search.py)."""
        self._model.committed(self._applied)
        if self._model.next_id - self._index_reached >= INDEX_EVERY:
            self._index_wanted.set()

    async def _index(self) -> None:
        """The indexer (store/_search.py): index the records after the last one indexed, a
        batch per transaction on the index's connection, whenever enough of them wait. A
        failure (the database out of reach) is logged and tried again at the next wake: a
        search reads what the index has not reached, so nothing waits for it."""
        known = False
        while True:
            try:
                if not known:
                    reached = await self._on_index_connection(lambda connection: connection.search_state(), "reading the search index")
                    self._index_reached = max(self._index_reached, reached if reached is not None else 1)
                    self._states_from = await self._on_index_connection(Connection.states_from, "reading the search index")
                    known = True
                if self._model.next_id - self._index_reached >= INDEX_EVERY:
                    await self._index_batch()
                    continue
                if self._states_from is not None and self._states_from > 1:
                    await self._index_earlier_states()
                    await anyio.lowlevel.checkpoint()
                    continue
            except StoreFailedError as exc:
                log.warning("the search index of %r could not be brought up to date (tried again later): %s", self.path, exc)
            await self._index_wanted.wait()
            self._index_wanted = anyio.Event()

    async def _index_batch(self) -> None:
        """Index the next batch of the records this process has applied (all committed)."""
        first = self._index_reached
        last = min(self._model.next_id - 1, first + BUILD_BATCH - 1)
        if last < first:
            return
        reached = await self._on_index_connection(
            functools.partial(Connection.build_search, first=first, last=last), "indexing the log for search"
        )
        self._index_reached = max(self._index_reached, reached)

    async def _index_earlier_states(self) -> None:
        """Add to an index made before it held state records those of the :data:`BUILD_BATCH`
        records below the first it holds (store/_search.py)."""
        assert self._states_from is not None
        last = self._states_from - 1
        first = max(1, last - BUILD_BATCH + 1)
        self._states_from = await self._on_index_connection(
            functools.partial(Connection.build_states, first=first, last=last), "indexing the log for search"
        )

    async def index_search(self) -> int:
        """Index now every record this process has applied that the index has not reached, and
        the state records an index made before it held them lacks (a writing open; the indexer
        does it in the background); returns how many records that was (read, not only indexed)."""
        if self.read_only:
            return 0
        if self.failure is not None:
            raise stopped(self.path, self.failure)
        reached = await self._on_index_connection(lambda connection: connection.search_state(), "reading the search index")
        if reached is None:
            return 0
        self._index_reached = start = max(self._index_reached, reached)
        self._states_from = states = await self._on_index_connection(Connection.states_from, "reading the search index")
        while self._index_reached < self._model.next_id:
            await self._index_batch()
        while self._states_from is not None and self._states_from > 1:
            await self._index_earlier_states()
        return self._index_reached - start + (states or 1) - (self._states_from or 1)

    @asynccontextmanager
    async def record_pages(self, size: int) -> AsyncIterator[PageReader]:
        """``Journal.record_pages``: a read-only transaction of repeatable read (one snapshot) on
        a connection of its own, held for the block with no idle timeout (a slow reader of the
        pages holds back the server's vacuum meanwhile), each page read in a worker thread."""
        what = "reading the records"

        def start() -> Connection:
            connection = connect(self.url, self.path, create=False)
            try:
                connection.begin_snapshot()
            except BaseException:
                connection.close()
                raise
            return connection

        try:
            connection = await anyio.to_thread.run_sync(start)
        except Exception as exc:
            raise failure(self.path, exc, what) from exc
        after = 0

        async def next_page() -> list[RowTuple]:
            nonlocal after
            try:
                page = await anyio.to_thread.run_sync(connection.page_after, after, size)
            except Exception as exc:
                raise failure(self.path, exc, what) from exc
            if page:
                after = page[-1][0]
            return page

        try:
            yield next_page
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(connection.close)

    async def compile_rows(self, namespace: str | None, before: int | None, limit: int) -> list[RowTuple]:
        """The newest ``limit`` compile records (of ``namespace`` when given) with ids below
        ``before`` (when given), newest first, read on a connection of its own."""
        return await self._apart(lambda connection: connection.compile_rows(namespace, before, limit), "reading compile records")


def _numbered(model: LogModel, first_id: int, writes: Sequence[PendingWrite]) -> tuple[list[RowTuple], dict[int, EncodedMessage]]:
    """``number_rows`` for the writes of a commit, giving each write its ids."""
    start = first_id
    for write in writes:
        write.ids = range(start, start + len(write.rows))
        start += len(write.rows)
    return number_rows(model, first_id, [write.rows for write in writes])


class _Unwritten(Exception):
    """A commit lost with its connection, known not to have happened."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause



class PostgresStore(Store):
    """A store in a PostgreSQL database, shared by every process that opens the same URL
    (:class:`~store._store.Store` over a :class:`PostgresJournal`), with its session locks."""

    def __init__(self, journal: PostgresJournal, model: LogModel) -> None:
        super().__init__(journal, model)
        self._database = journal

    @property
    def url(self) -> str:
        """The URL it was opened with (password included: ``path`` is the one to show)."""
        return self._database.url

    @property
    def contended_commits(self) -> int:
        """Commits that found another process's commit first and took the write lock:
        ``statistics().contended_commits`` (kept here, where it is documented)."""
        return self.statistics().contended_commits

    async def take_session_lock(self, name: str) -> bool:
        """Take the session lock ``name`` unless another session (another process, or another
        store of this one) holds it; whether this store's connection holds it now. Never waits
        for it: one round trip, between commits, and one more once it is taken, to read what
        other processes committed before it (a taken lock answers with every record committed
        before it in the model: what a previous holder wrote under it). Held, it stays until
        :meth:`release_session_lock`, the store's close, or the end of the connection's
        session (a crash, a lost connection: the server frees it at once)."""
        self._check_usable()
        return await self._database.take_session_lock(name)

    def holds_session_lock(self, name: str) -> bool:
        """Whether this store's connection holds the session lock ``name``, as far as this
        process knows (in memory). A guard asking it at commit refuses a write unless the
        commit goes through the session that holds the lock."""
        return self._database.holds_session_lock(name)

    def release_session_lock(self, name: str) -> None:
        """Give the session lock ``name`` up: from now on :meth:`holds_session_lock` says no (a
        write it guards is refused), and the server frees it with the committer's next round."""
        self._database.release_session_lock(name)

    async def session_lock_holders(self, names: Iterable[str]) -> dict[str, str]:
        """Which session holds each of the session locks ``names`` now, in words (``server
        process 4242, 'asides pid 77' from 10.0.0.5``), read from ``pg_locks`` on a connection of
        its own (a read-only store may ask); a lock nobody holds is left out."""
        self.raise_if_failed()
        return await self._database.session_lock_holders(names)

    async def owed_vacuum(self) -> OwedVacuum | None:
        """The rewrite of the log (``VACUUM FULL``) that erasures of the store still owe, whoever
        made them, read from the database on a connection of its own (a read-only store may
        ask): the erasures' numbers, since when, and the server processes whose transactions,
        older than those erasures, hold it back now; ``None`` when nothing is owed. Until it is
        done, the erased bytes are still in the store's data files. A writing store pays it by
        itself: the erasing process at once, a writing open, and a try every
        ``VACUUM_RETRY_SECONDS`` while an older transaction holds it back (docs/postgres.md,
        "Erasure"). Raises ``StoreFailedError`` when the database cannot be read."""
        self.raise_if_failed()
        return await self._database.owed_vacuum()



@asynccontextmanager
async def open_postgres_store(
    url: str, *, read_only: bool = False, synchronous: str | None = None, message_cache: int = DEFAULT_BODY_CACHE
) -> AsyncIterator[PostgresStore]:
    """Open (creating its tables, unless ``read_only``) the store at the PostgreSQL ``url`` for
    the block; any number of processes may have it open at once. ``synchronous``: the durability
    of its commits (``_pg_driver.set_durability``; ``None``, the default: the server's setting).
    A writing open first pays the rewrite of the log erasures owe, if any, waiting at most
    ``OPEN_WAIT_SECONDS`` for older transactions (``PostgresStore.owed_vacuum``). The open leaves
    in the database the body of every message that cannot name a reader; a read of one reads it
    then (``PostgresJournal._read_bodies``), keeping at most ``message_cache`` of them decoded.

    Refuses with ``StoreFailedError``: a database that cannot be reached, and a schema that holds
    another format or tables that are not an asides store's (changing nothing there). Leaving the
    block flushes the pending commit and closes the connections.
    """
    where = redact_url(url)
    try:
        connection = await anyio.to_thread.run_sync(lambda: connect(url, where, create=not read_only, synchronous=synchronous))
    except Exception as exc:
        if isinstance(exc, StoreFailedError):
            raise
        raise StoreFailedError(f"cannot open the store {where!r}: {exc}") from exc
    model = LogModel()
    journal = PostgresJournal(url, model, connection, read_only=read_only, synchronous=synchronous, body_cache=message_cache)
    store = PostgresStore(journal, model)
    try:
        async with collapsing():
            await journal.replay()
            if not read_only:
                await journal.pay_owed_vacuum_at_open()
            async with store._serving():
                yield store
    finally:
        await journal.close()
