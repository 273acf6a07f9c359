"""The committer of a PostgreSQL journal (a base class of :class:`~store._postgres.PostgresJournal`):
one task that commits the queued writes in batches, first without the write lock, then under it,
and settles a commit whose answer was lost with its connection. docs/postgres.md, "A commit",
says how and why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel
import attrs

from ._erasure import ERASURE, ERASURE_BRANCH, Erasure, erased_body
from ._errors import BranchExistsError, StoreFailedError, StoreNotEmptyError
from ._journal import Recheck
from ._pg_driver import Connection, is_connection_error
from ._pg_notices import Notices
from ._records import EncodedMessage
from ._rows import PendingRow, RowTuple, number_rows
from ._scheduling import shielded

if TYPE_CHECKING:
    from ._model import LogModel

__all__ = ["Committer", "OPTIMISTIC_ATTEMPTS", "PendingWrite", "Sync", "failure"]

log = logging.getLogger("asides.store")
T = TypeVar("T")

#: A commit first tries this many times without the write lock: catch up with what other
#: processes committed, then append if the head has not moved since (one statement). Only then
#: does it take the lock, which it holds across two round trips and a replay: under contention
#: (several processes writing at once) lock holders queue behind one another.
OPTIMISTIC_ATTEMPTS = 3
#: The first pause before an idle store reconnects to go on hearing other processes' commits,
#: and the longest (the pause doubles after each failed attempt).
RELISTEN_FIRST = 0.05
RELISTEN_MAX = 5.0
#: How long an idle store waits for work before it watches its connection for other processes'
#: commits (so it hears of one at most this much later than it could).
QUIET_SECONDS = 0.002


@attrs.define(eq=False)
class PendingWrite:
    """One write queued for the committer, committed together or not at all, or one of the
    commits of its own kinds. ``recheck`` and ``guard`` run at commit against the caught-up
    model (``store._journal``); ``ids`` are the record ids it took, ``error`` what refused it,
    and ``done`` is set once it is committed or refused."""

    rows: list[PendingRow]
    guard: Callable[[], None] | None = None
    recheck: Recheck | None = None
    ids: range = range(0)
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
    error: BaseException | None = None
    done: anyio.Event = attrs.Factory(anyio.Event)


class Sync:
    """A caller of ``sync``, waiting for the committer's next catch-up."""

    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.error: BaseException | None = None


class Committer:
    """The committing half of :class:`~store._postgres.PostgresJournal` (a base class of it)."""

    if TYPE_CHECKING:  # what the journal provides
        path: str
        commits: int
        contended_commits: int
        caught_up_records: int
        _model: LogModel
        _connection: Connection | None
        _pending: list[PendingWrite]
        _syncs: list[Sync]
        _catch_up_wanted: bool
        _closing: bool
        _idle_scope: anyio.CancelScope | None
        _in_round: bool
        _committer_idle: bool
        _notices: Notices
        _wake: anyio.Event
        _relisten_delay: float
        _applied: int
        _announced: int

        closed: bool

        async def _call(self, fn: Callable[..., T], *args: Any) -> T: ...

        async def _ensure_connection(self, delays: Sequence[float] = ...) -> Connection: ...

        async def _pay_owed_vacuum(self, connection: Connection) -> None: ...

        def _drop_connection(self) -> None: ...

        def _apply(
            self, rows: Sequence[RowTuple], *, elsewhere: bool = True, encoded: Mapping[int, EncodedMessage] | None = None
        ) -> None: ...

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
        return notices.owed and self._connection is not None and (self._closing or notices.due(anyio.current_time()))

    async def _committer(self) -> None:
        while True:
            if self._connection is not None:
                self._hear(self._connection.announced)
            if self._in_round or not self._has_work():
                if self._closing and not self._in_round:
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
        """Write a restore's records as they are, in one transaction, into a store no process has
        written to (checked under the write lock). The model already holds them."""
        assert write.exact
        connection = await self._ensure_connection()
        head, missed = await self._call(connection.lock, self._applied)
        if head != 0 or missed:
            await self._call(connection.rollback)
            raise StoreNotEmptyError(self.path)
        await self._call(connection.commit_locked, write.exact)
        self._noticed(True)
        self._applied = self._announced = write.exact[-1][0]
        self.commits += 1

    async def _session_lock(self, write: PendingWrite, name: str, key: int, take: bool) -> None:
        """Take the session lock ``key`` for ``name`` (``take``), or give it back if no name
        counts on it any more, on the store's connection, between commits (so a commit never
        runs while the lock is being taken or given back). A take reconnects if it must (a new
        session holds nothing); giving back needs no connection: a lost session's locks are
        gone with it."""
        if not take:
            connection = self._connection
            if connection is not None and not connection.broken:
                await self._call(connection.session_unlock, key)
            return
        connection = await self._ensure_connection()
        try:
            if key not in connection.session_locks and not await self._call(connection.try_session_lock, key):
                return
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
            plan = self._model.plan_erasure(message_ids, reason, at)
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
        for attempt in range(OPTIMISTIC_ATTEMPTS):
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
        self.commits += 1
        self._apply(rows, elsewhere=False, encoded=encoded)
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
            if self._has_work() or self._closing:
                self._wake_up()
        else:
            self._wake_up()
        # Once queued, the write completes (or is refused): a cancelled caller still waits for
        # its commit, so "raised Cancelled" always means "not written", as in the SQLite store.
        if not write.done.is_set():
            await shielded(write.done.wait)
        if write.error is not None:
            raise write.error
        return write.ids

    async def sync(self) -> None:
        """Return once the model holds every record committed (by any process) before this
        call. Raises ``StoreFailedError`` when the database cannot be reached."""
        if self.closed:
            raise StoreFailedError(f"the store {self.path!r} is closed")
        waiter = Sync()
        self._syncs.append(waiter)
        self._wake_up()
        await waiter.done.wait()
        if waiter.error is not None:
            raise waiter.error


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


def failure(where: str, error: BaseException, what: str) -> BaseException:
    if isinstance(error, StoreFailedError):
        return error
    failure = StoreFailedError(f"{what} to {where!r} failed ({error}); nothing of it was written")
    failure.__cause__ = error
    return failure
