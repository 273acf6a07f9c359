"""Opening a store: a SQLite file (read whole, checked, then opened for writing in WAL mode) or,
for a ``postgresql://`` URL, a store shared by many processes (store/_postgres.py)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ._arguments import check_str
from ._drivers import open_driver
from ._errors import ArgumentTypeError, InvalidArgumentError, StoreFailedError
from ._file_checks import FORMAT_VERSION, check_store_file, lock_store_file, open_error, unlock_store_file
from ._groups import collapsing
from ._model import DEFAULT_BODY_CACHE, LogModel
from ._sqlite import SCHEMA, SqliteJournal, SqliteStore, make_stored_indexes
from ._store import Store

#: How many messages read back from a store file stay decoded in memory, unless ``open_store``
#: is told otherwise (``message_cache``).
DEFAULT_MESSAGE_CACHE = DEFAULT_BODY_CACHE

__all__ = ["open_store"]


@asynccontextmanager
async def open_store(
    path: str = ":memory:", *, synchronous: str | None = None, read_only: bool = False, message_cache: int | None = None
) -> AsyncIterator[Store]:
    """Open (creating) the store at ``path`` for the duration of the block.

    With ``read_only``, the file is opened read-only and nothing is created, migrated or locked:
    this works while a writer (another process, or a runtime in this one) holds the store, and
    every write raises :class:`StoreReadOnlyError`. The store is read as it is at the open;
    ``store.catch_up()`` reads what was committed since (:meth:`SqliteJournal.catch_up`). A
    missing file is refused with ``StoreFailedError``.

    Refuses with :class:`StoreLockedError` when another process or runtime has it open. Leaving
    the block flushes the pending commit and closes the file.

    ``synchronous`` is the durability of a commit, ``"NORMAL"`` or ``"FULL"``; not given
    (``None``), the backend's default. On a store file it is SQLite's setting in WAL mode:
    ``NORMAL`` (the default) survives a process crash (``kill -9``); ``FULL`` also survives a
    power loss, at a cost per commit. On PostgreSQL the default is the server's own
    ``synchronous_commit`` (``on`` unless its administrator changed it: a commit survives a
    crash of the server); ``FULL`` is the same, turning a configured ``off`` on; ``NORMAL``
    commits with ``synchronous_commit = off``, which survives a crash of any client process and
    may lose the last fraction of a second of commits to a crash of the server
    (docs/postgres.md). Anything else is refused (``ArgumentTypeError``,
    ``InvalidArgumentError``) before anything is opened.

    ``message_cache`` is how many of the messages read back from the store stay decoded in
    memory (``None``: ``DEFAULT_MESSAGE_CACHE``, 20,000), the least recently read leaving first.
    The open of a store file or of a PostgreSQL store reads no message and no state record: it
    reads the other records, each branch's head, how many edits and state records each block of
    a branch's sequences holds and where the messages that may name a reader stand, through
    indexes a writing open makes (a store made before them is read whole once, by its
    next writing open). A read of a message reads it then (one query, or one round trip for a
    batch of 900); a message written here stays in memory until it is committed.
    (``:memory:`` holds every message.) ``Store.statistics()`` counts what was read.
    """
    if message_cache is not None and (not isinstance(message_cache, int) or isinstance(message_cache, bool)):
        raise ArgumentTypeError("message_cache", f"must be an int or None, not {type(message_cache).__name__}")
    if message_cache is not None and message_cache < 1:
        raise InvalidArgumentError("message_cache", f"must be at least 1, not {message_cache!r}")
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    check_str(path, "path")
    if not isinstance(read_only, bool):
        raise ArgumentTypeError("read_only", f"must be True or False, not {type(read_only).__name__}")
    if synchronous is not None and not isinstance(synchronous, str):
        raise ArgumentTypeError("synchronous", f"must be 'NORMAL', 'FULL' or None, not {type(synchronous).__name__}")
    if synchronous not in (None, "NORMAL", "FULL"):
        raise InvalidArgumentError("synchronous", f"must be 'NORMAL', 'FULL' or None (the backend's default), not {synchronous!r}")
    from ._postgres import is_postgres_url  # imports no driver

    if is_postgres_url(path):  # a shared store (docs/postgres.md)
        from ._postgres import open_postgres_store

        async with open_postgres_store(
            path, read_only=read_only, synchronous=synchronous, message_cache=message_cache or DEFAULT_MESSAGE_CACHE
        ) as shared:
            yield shared
        return
    synchronous = synchronous or "NORMAL"  # a store file's default
    if read_only and (path == ":memory:" or path.startswith("file:")):
        raise InvalidArgumentError("path", "a read-only open needs the path of a store file")
    if read_only and not os.path.isfile(path):
        raise StoreFailedError(f"no store file at {path!r}; a read-only open creates nothing")
    lock = None if read_only else lock_store_file(path)
    try:
        async with collapsing(), open_driver(path, read_only=read_only, inline_commits=synchronous == "NORMAL") as driver:
            # The file is read whole before anything in it changes (store/_file_checks.py).
            try:
                await driver.execute("PRAGMA busy_timeout=5000")
                version, has_log = await check_store_file(driver, path)
            except sqlite3.Error as exc:
                raise open_error(path, exc) from exc
            model = LogModel()
            journal = SqliteJournal(
                path, driver, model, read_only=read_only, has_log=has_log, body_cache=message_cache or DEFAULT_MESSAGE_CACHE
            )
            await journal.replay()
            if not read_only:
                try:
                    await driver.execute("PRAGMA journal_mode=WAL")
                    await driver.execute(f"PRAGMA synchronous={synchronous}")
                    await driver.execute(SCHEMA)
                    await make_stored_indexes(driver)
                    if version == 0:
                        await driver.execute(f"PRAGMA user_version={FORMAT_VERSION}")
                except sqlite3.Error as exc:
                    raise open_error(path, exc) from exc
                journal.log_made()
                await journal.prepare_index()
            else:
                await journal.read_index_state()
            store = SqliteStore(journal, model)
            if not read_only and model.erasure_count and path != ":memory:":
                # An erasure whose process died between its commit and its checkpoint may have
                # left the erased bytes in the write-ahead log: empty it before anything else.
                await driver.execute("PRAGMA secure_delete=ON")
                await store.checkpoint_truncate()
            try:
                async with store._serving():
                    yield store
            finally:
                await journal.close()
    finally:
        unlock_store_file(lock)
