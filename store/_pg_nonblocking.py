"""One prepared statement on a psycopg connection's libpq handle, driven from the event loop's own
thread, without the worker thread: the store's commits take this path (docs/postgres.md, "A
commit").

Why: a commit is one short round trip, and on a machine whose idle processors sleep, every
wake-up of a blocked thread or process costs tens of microseconds. Through the worker thread a
commit paid for three (the thread, the server's answer, the event loop); here it pays for one at
most. For the same reason the answer is first polled for a short while (:data:`POLL_SECONDS`)
before the event loop waits for the socket: a local server usually answers within it, and
polling reads that answer without a wake-up. Measured in docs/postgres.md.

Only the committer calls these, one at a time, and only while no worker-thread call uses the
same connection.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel

__all__ = ["POLL_SECONDS", "encode_params", "prepare", "run_prepared"]

#: How long the event loop polls for the server's answer before it waits for the socket
#: instead. A local server answers a commit within it; a slower one (a server across a network)
#: costs this much of the event loop's time a commit, then the event loop waits as usual.
POLL_SECONDS = 0.0002
#: After polling this long, each poll also offers the processor to other threads: the server
#: process this answer waits for may be waiting for this very processor, and polling alone then
#: delays the answer it waits for (docs/postgres.md, "Measured").
YIELD_AFTER_SECONDS = 0.00004
_yield = getattr(os, "sched_yield", None)


def encode_params(values: Sequence[Any]) -> list[bytes | None] | None:
    """The values as libpq's text parameters; ``None`` when one cannot be sent so (a string
    holding a NUL character, which the text format cannot carry: the caller then goes through
    psycopg, which refuses it with its own error)."""
    encoded: list[bytes | None] = []
    for value in values:
        if value is None:
            encoded.append(None)
        elif isinstance(value, int):
            encoded.append(b"%d" % value)
        else:
            data = value.encode("utf-8")
            if b"\x00" in data:
                return None
            encoded.append(data)
    return encoded


async def prepare(pgconn: Any, name: bytes, sql: bytes) -> None:
    """Prepare ``sql`` as the statement ``name``; raises as :func:`run_prepared` does."""
    pgconn.send_prepare(name, sql)
    await _flush(pgconn)
    _check(await _results(pgconn))


async def run_prepared(pgconn: Any, name: bytes, params: Sequence[bytes | None]) -> Any:
    """Run the prepared statement ``name`` and return its result; raises psycopg's error for a
    statement the server refused, or ``psycopg.OperationalError`` when the connection was lost."""
    pgconn.send_query_prepared(name, params)
    await _flush(pgconn)
    # The one scheduling point of a commit: other tasks run while the server works.
    await anyio.lowlevel.checkpoint()
    return _check(await _results(pgconn))


async def _flush(pgconn: Any) -> None:
    while pgconn.flush():
        await anyio.wait_writable(pgconn.socket)


async def _results(pgconn: Any) -> list[Any]:
    results: list[Any] = []
    while True:
        started = time.perf_counter()
        polled_until = started + POLL_SECONDS
        while True:
            pgconn.consume_input()
            if not pgconn.is_busy():
                break
            now = time.perf_counter()
            if now >= polled_until:
                await anyio.wait_readable(pgconn.socket)
            elif now - started > YIELD_AFTER_SECONDS and _yield is not None:
                _yield()
        result = pgconn.get_result()
        if result is None:
            return results
        results.append(result)


def _check(results: list[Any]) -> Any:
    import psycopg
    from psycopg import errors, pq

    for result in results:
        if result.status == pq.ExecStatus.FATAL_ERROR:
            raise errors.error_from_result(result)
    if not results:
        raise psycopg.OperationalError("the server sent no result")
    return results[-1]
