"""The SQLite drivers: what the store needs of a connection, and the connections that provide it.

The store talks to SQLite only through :class:`Driver` (``execute`` and ``close``), as httpcore
keeps its network backends behind one small interface. Two drivers:

* under Trio, :class:`ThreadDriver`: one dedicated thread owns a ``sqlite3`` connection and runs
  the statements sent to it in order; with ``synchronous=NORMAL`` small commits run on the event
  loop's thread instead (``python -m benchmarks drivers`` measures each way; docs/DESIGN.md has
  the figures);
* under asyncio, :class:`AiosqliteDriver`: aiosqlite, called directly.

A read-only open of a store no writer holds uses SQLite's ``immutable`` mode (no ``-wal`` or
``-shm`` file is created); each read then checks that no writer changed the file meanwhile.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import urllib.parse
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import sniffio

from ._errors import StoreFailedError
from ._scheduling import shielded
from ._worker import WorkerThread

__all__ = ["AiosqliteDriver", "Driver", "ImmutableCheck", "ThreadDriver", "open_driver"]

Rows = list[tuple[Any, ...]]

log = logging.getLogger("asides.store")


class Driver(Protocol):
    """What the store needs of a SQLite connection. A statement that was sent always finishes
    before its caller goes on: a cancelled caller waits for it, shielded, and sees the
    cancellation afterwards (so a commit never stops halfway)."""

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows: ...

    async def close(self) -> None: ...


class AiosqliteDriver:
    """aiosqlite (asyncio)."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        # See Driver: a statement sent always finishes, also past asyncio's own Task.cancel().
        return list(await shielded(lambda: self._connection.execute_fetchall(sql, params)))

    async def close(self) -> None:
        await self._connection.close()


#: A write run on the event loop's thread holds at most this many parameters (about 64 rows).
INLINE_PARAMETERS = 400
#: Rows a connection with inline commits writes between two checkpoints (run in the worker
#: thread), whichever thread wrote them: an inline commit counts its rows, and so does a batch.
CHECKPOINT_ROWS = 2000


class ThreadDriver:
    """A ``sqlite3`` connection owned by one dedicated thread (Trio). Statements run in the order
    they are sent; a caller waits for its own, shielded, so a statement that was sent always
    finishes before its caller goes on (a cancelled caller sees the cancellation afterwards).

    With ``inline_commits`` (for ``synchronous=NORMAL``, where a commit does not wait for the
    disk), a small write outside a transaction runs on the event loop's thread instead when the
    worker has nothing queued: it costs about 10 µs, less than handing it to a thread and back
    (about 120 µs); only an insert of log records is taken so (``INSERT INTO log``), never the
    search indexer's batch, which runs long. Such a connection does not checkpoint on its own
    (``wal_autocheckpoint=0``): once :data:`CHECKPOINT_ROWS` rows were written since the last
    checkpoint (the connection's ``total_changes`` says), a passive checkpoint, which writes the
    database file, runs in the worker thread: after the statement there that ended its
    transaction, or, after an inline commit, queued to it, with writes sent meanwhile queued
    behind it. So small commits and large batches alike keep the write-ahead log bounded.
    Reads, transactions and large writes always run in the worker thread.
    """

    def __init__(self, connect: Callable[[], sqlite3.Connection], *, inline_commits: bool = False) -> None:
        self._connect = connect
        self._connection: sqlite3.Connection | None = None
        self._worker = WorkerThread("asides-sqlite")
        self._inline_commits = inline_commits
        self._queued = 0  # statements sent to the worker and not finished (counted by the loop)
        self._checkpointing = False  # set by the loop, cleared by the worker thread
        self._changes_checkpointed = 0  # the connection's total_changes at the last checkpoint
        self._inline_cursor: sqlite3.Cursor | None = None  # the loop thread's own, for inline writes

    def _execute(self, sql: str, params: tuple[Any, ...]) -> Rows:
        if self._connection is None:
            self._connection = self._connect()
            if self._inline_commits:
                self._connection.execute("PRAGMA wal_autocheckpoint=0")
        connection = self._connection
        rows = connection.execute(sql, params).fetchall()
        if (
            self._inline_commits
            and not connection.in_transaction
            and connection.total_changes - self._changes_checkpointed >= CHECKPOINT_ROWS
        ):
            self._checkpoint_now(connection)
        return rows

    def _checkpoint_now(self, connection: sqlite3.Connection) -> None:
        """In the worker thread, outside a transaction: a passive checkpoint (it never waits for
        readers); a failure only leaves the write-ahead log longer until the next one."""
        self._changes_checkpointed = connection.total_changes
        try:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:
            log.warning("a checkpoint of the write-ahead log failed (it stays longer until the next one): %s", exc)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        connection = self._connection
        if (
            self._inline_commits
            and self._queued == 0
            and not self._checkpointing
            and connection is not None
            and not connection.in_transaction
            and len(params) <= INLINE_PARAMETERS
            and sql.startswith("INSERT INTO log ")
        ):
            cursor = self._inline_cursor
            if cursor is None:
                cursor = self._inline_cursor = connection.cursor()
            rows = cursor.execute(sql, params if type(params) is tuple else tuple(params)).fetchall()
            if connection.total_changes - self._changes_checkpointed >= CHECKPOINT_ROWS:
                self._checkpointing = True
                self._worker.run_after(self._checkpoint)
            return rows
        self._queued += 1
        try:
            return await self._worker.run(self._execute, sql, tuple(params))
        finally:
            self._queued -= 1

    def _checkpoint(self) -> None:
        """In the worker thread, queued by an inline commit: :meth:`_checkpoint_now`."""
        try:
            if self._connection is not None and not self._connection.in_transaction:
                self._checkpoint_now(self._connection)
        finally:
            self._checkpointing = False

    def _close(self) -> None:
        if self._connection is not None:
            self._inline_cursor = None
            self._connection.close()
            self._connection = None

    async def close(self) -> None:
        self._worker.run_after(self._close)
        await self._worker.stop()


class ImmutableCheck:
    """Wraps the driver of a read-only open in ``immutable`` mode: each read checks that no writer
    changed the file meanwhile, and refuses its answer if one did."""

    def __init__(self, inner: Driver, path: str, stamp: tuple[int, ...]) -> None:
        self._inner = inner
        self._path = path
        self._stamp = stamp

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        rows = await self._inner.execute(sql, params)
        if _file_stamp(self._path) != self._stamp:
            raise StoreFailedError(f"the store {self._path!r} changed on disk while it was being read (a writer opened it); read it again")
        return rows

    async def close(self) -> None:
        await self._inner.close()


def _file_stamp(path: str) -> tuple[int, ...]:
    info = os.stat(path)
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _read_only_target(path: str) -> tuple[str, tuple[int, ...] | None]:
    """The URI a read-only open connects to (``mode=ro``, never creating the file), and, when no
    writer has the store open (no ``-wal`` file), the file's stamp for ``immutable`` mode."""
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
    if os.path.exists(path + "-wal"):
        return uri, None
    return uri + "&immutable=1", _file_stamp(path)


@asynccontextmanager
async def open_driver(path: str, *, read_only: bool = False, inline_commits: bool = False) -> AsyncIterator[Driver]:
    """A driver for the store file at ``path`` (or ``:memory:``) for the block; ``inline_commits``
    (Trio only, for ``synchronous=NORMAL``): see :class:`ThreadDriver`."""
    target, stamp = _read_only_target(path) if read_only else (path, None)
    driver: Driver
    if sniffio.current_async_library() == "trio":
        driver = ThreadDriver(
            lambda: sqlite3.connect(target, isolation_level=None, uri=read_only, check_same_thread=False),
            inline_commits=inline_commits and not read_only,
        )
    else:
        import aiosqlite

        driver = AiosqliteDriver(await aiosqlite.connect(target, isolation_level=None, uri=read_only))
    if stamp is not None:
        driver = ImmutableCheck(driver, path, stamp)
    try:
        yield driver
    finally:
        with anyio.CancelScope(shield=True):
            await driver.close()
