"""The rewrite an erasure owes on PostgreSQL, ``VACUUM FULL asides_log``: recorded as owed in the
erasure's own commit, and forgotten only once a rewrite that removes the erased bytes is done.

An erasure overwrites records in place, and the row versions holding the erased bytes stay in
the table's data files until the table is rewritten. ``VACUUM FULL`` writes the table and its
indexes to new files, but it keeps every row version that a transaction older than the erasure
may still see, and any transaction of the database counts (an autovacuum's ``ANALYZE`` of
another schema's table, a long report). So:

* the erasure's commit also writes ``asides_meta`` row ``vacuum_owed:<erasure number>`` (its
  value: when, in seconds since the epoch), so a process killed before its rewrite leaves the
  debt on record;
* a rewrite pays every debt it can see: it reads the owed rows, waits until no transaction of
  the database that began before that read holds a snapshot (or a transaction id), rewrites the
  log, and only then deletes the rows it read; a debt held back by an older transaction stays;
* one session rewrites at a time (a session advisory lock), so processes opening together after
  a crash rewrite the log once;
* its wait for the table's lock is short (:data:`VACUUM_LOCK_TIMEOUT_MS`): while it waits, every
  writer of the store waits behind it; a rewrite that could not have the lock stays owed.

Who pays, and when (store/_postgres.py): the erasing process at once, waiting up to
:data:`ERASURE_WAIT_SECONDS` for older transactions; a writing open, waiting up to
:data:`OPEN_WAIT_SECONDS`; and, while a debt is held back, a writing store every
:data:`VACUUM_RETRY_SECONDS`. ``PostgresStore.owed_vacuum`` and ``asides inspect`` show the debt.

Functions here are synchronous and take a psycopg connection in autocommit mode: the store runs
them in a worker thread.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import attrs

__all__ = [
    "ERASURE_WAIT_SECONDS",
    "OPEN_WAIT_SECONDS",
    "VACUUM_LOCK_NAME",
    "VACUUM_LOCK_TIMEOUT_MS",
    "VACUUM_RETRY_SECONDS",
    "OwedVacuum",
    "owed_mark",
    "owed_vacuum",
    "pay_owed_vacuum",
]

log = logging.getLogger("asides.store")

#: How long an erasure waits for older transactions before it leaves its rewrite owed.
ERASURE_WAIT_SECONDS = 10.0
#: How long a writing open waits for them (a short ``ANALYZE`` ends within it; a long report does
#: not, and the rewrite is then left to the schedule below).
OPEN_WAIT_SECONDS = 1.0
#: How often a writing store tries again while an owed rewrite is held back.
VACUUM_RETRY_SECONDS = 30.0
#: How long a rewrite waits for the table's lock.
VACUUM_LOCK_TIMEOUT_MS = 5000
#: The name of the session lock one rewriting session holds (a compression lease's name starts
#: with ``compression lease``, so the two never share a name).
VACUUM_LOCK_NAME = "owed vacuum"

_PREFIX = "vacuum_owed:"
_MARK = "INSERT INTO asides_meta (key, value) VALUES (%s, extract(epoch FROM now())::text)"
#: The owed rows, and the time of the read: every erasure they name committed before it.
_READ = f"SELECT key, value, clock_timestamp() FROM asides_meta WHERE left(key, {len(_PREFIX)}) = '{_PREFIX}' ORDER BY key"
#: The database's other server processes whose transaction began before ``%s`` and holds a
#: snapshot or a transaction id (either keeps the old row versions in a rewrite). Where the
#: store's role may not see another role's processes, those read as null and are not counted.
_OLDER = (
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
    "AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL) AND xact_start <= %s ORDER BY pid"
)


@attrs.frozen
class OwedVacuum:
    """A rewrite of the log (``VACUUM FULL``) that erasures still owe: their ``erasures``
    (numbers, as ``Runtime.erasures()`` gives them), ``since`` when the oldest was committed
    (seconds since the epoch), and ``blocked_by``: the server processes whose transactions,
    older than those erasures, hold it back now (empty: the next try will do it)."""

    erasures: tuple[int, ...]
    since: float
    blocked_by: tuple[int, ...] = ()


def owed_mark(number: int) -> tuple[str, tuple[str]]:
    """The statement, and its parameters, recording in erasure ``number``'s own transaction that
    it owes a rewrite."""
    return _MARK, (f"{_PREFIX}{number}",)


def _read(conn: Any) -> tuple[list[str], OwedVacuum | None, Any]:
    """The owed rows' keys, the debt they make (``None``: nothing owed), and the time of the read."""
    rows = conn.execute(_READ).fetchall()
    if not rows:
        return [], None, None
    erasures = sorted(int(key[len(_PREFIX) :]) for key, _value, _at in rows if key[len(_PREFIX) :].isdigit())
    since = min((float(value) for _key, value, _at in rows if _is_number(value)), default=0.0)
    return [key for key, _value, _at in rows], OwedVacuum(tuple(erasures), since), rows[0][2]


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def _older(conn: Any, at: Any) -> tuple[int, ...]:
    return tuple(int(pid) for (pid,) in conn.execute(_OLDER, (at,)).fetchall())


def _wait_for_older(conn: Any, at: Any, seconds: float) -> tuple[int, ...]:
    """Wait until no transaction of the database older than ``at`` holds a snapshot or an id, or
    ``seconds`` pass; the server processes still holding one."""
    deadline = time.monotonic() + seconds
    while True:
        older = _older(conn, at)
        if not older or time.monotonic() >= deadline:
            return older
        time.sleep(0.02)


def owed_vacuum(conn: Any) -> OwedVacuum | None:
    """The debt as the database holds it now, with who holds it back now; ``None``: none."""
    _keys, owed, at = _read(conn)
    return None if owed is None else attrs.evolve(owed, blocked_by=_older(conn, at))


def pay_owed_vacuum(conn: Any, lock_key: int, wait_seconds: float, *, wait_for_lock: bool) -> OwedVacuum | None:
    """Pay what is owed if nothing holds it back within ``wait_seconds``: rewrite the log, then
    forget the debts read before the wait. Returns what is still owed (``None``: nothing): a debt
    held back (with who holds it), or one recorded meanwhile. Takes the session lock
    ``lock_key`` first, waiting for it with ``wait_for_lock``; without it, a session that holds
    it is left to pay (and what is owed is returned). Raises psycopg's errors (the lock or the
    table's lock not had in time, a lost connection); the debt then stays."""
    if _read(conn)[1] is None:  # the usual case: one query
        return None
    if wait_for_lock:
        conn.execute("SELECT pg_advisory_lock(%s)", (lock_key,))
    elif not conn.execute("SELECT pg_try_advisory_lock(%s)", (lock_key,)).fetchone()[0]:
        return owed_vacuum(conn)
    try:
        keys, owed, at = _read(conn)
        if owed is None:  # another session paid it meanwhile
            return None
        older = _wait_for_older(conn, at, wait_seconds)
        if older:
            return attrs.evolve(owed, blocked_by=older)
        (lock_timeout,) = conn.execute("SELECT current_setting('lock_timeout')").fetchone()
        conn.execute(f"SET lock_timeout = {VACUUM_LOCK_TIMEOUT_MS}")
        try:
            conn.execute("VACUUM FULL asides_log")
            (indexed,) = conn.execute("SELECT to_regclass('asides_search') IS NOT NULL").fetchone()
            if indexed:  # the search index's dead rows hold the erased words (store/_search.py)
                conn.execute("VACUUM FULL asides_search")
        finally:
            conn.execute("SELECT set_config('lock_timeout', %s, false)", (lock_timeout,))
        conn.execute("DELETE FROM asides_meta WHERE key = ANY(%s)", (keys,))
        log.info("the log was rewritten for erasure(s) %s: their erased bytes are in no data file of the store", owed.erasures)
        return _read(conn)[1]
    finally:
        if not (conn.closed or conn.broken):
            conn.execute("SELECT pg_advisory_unlock(%s)", (lock_key,))
