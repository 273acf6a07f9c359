"""The SQLite driver under Trio: aiosqlite through trio-asyncio, a writer thread, inline commits.

    python -m benchmarks drivers [--quick]

The store writes every commit as one multi-row ``INSERT`` in autocommit mode (one implicit
transaction) into its append-only ``log`` table. This part times exactly that statement, alone,
outside asides, through each way of reaching SQLite from an async host:

* ``aiosqlite via trio-asyncio`` (what the store does under Trio today): ``aio_as_trio`` around
  ``connection.execute_fetchall``, inside ``trio_asyncio.open_loop()``;
* ``sqlite3 in to_thread (limiter 1)``: one ``sqlite3`` connection, each commit a
  ``trio.to_thread.run_sync`` call holding a ``CapacityLimiter(1)``;
* ``sqlite3 in a dedicated thread`` (the store's driver in 0.2): one thread owns the connection
  and takes commits from a ``queue.SimpleQueue``; it wakes the waiting Trio task through the
  Trio token;
* ``the store's driver`` as the store opens it now: the same thread, but with
  ``synchronous=NORMAL`` a small commit runs on the event loop's thread while the thread is idle
  (a commit that does not wait for the disk costs less than the hand-off to a thread and back;
  checkpoints, which write the database file, stay in the thread). With ``FULL`` it is the
  dedicated thread;
* the reference: ``aiosqlite under asyncio`` (no bridge: what asyncio hosts pay).

For each: WAL, ``synchronous`` NORMAL and FULL, commits of one row and of 16 rows (300-byte
bodies), one after the other; µs per commit, median and p90, on a fresh file each. The four Trio
ways of one configuration are timed in alternation (blocks of 20 commits), so a change in the
machine's load falls on all of them alike.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

import trio

from ._common import Stats, duration, interleave, print_table, progress, section

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY, branch TEXT NOT NULL, seq INTEGER NOT NULL,"
    " kind TEXT NOT NULL, ref TEXT, body TEXT NOT NULL)"
)
BODY = "x" * 300
WARMUP = 10

Commit = Callable[[str, list[Any]], Awaitable[None]]


def insert(rows: int) -> str:
    return "INSERT INTO log (branch, seq, kind, ref, body) VALUES " + ", ".join(["(?, ?, ?, ?, ?)"] * rows)


def params(first: int, rows: int) -> list[Any]:
    out: list[Any] = []
    for seq in range(first, first + rows):
        out += ["main", seq, "message", None, BODY]
    return out


def _connect(path: str, synchronous: str) -> sqlite3.Connection:
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute(f"PRAGMA synchronous={synchronous}")
    connection.execute(SCHEMA)
    return connection


async def _series(commit: Commit, rows: int, count: int, budget_s: float) -> Stats:
    """One driver alone: a few untimed commits, then up to ``count`` timed ones."""
    (stats,) = (await _interleaved({"one": commit}, rows, count, budget_s)).values()
    return stats


async def _interleaved(commits: dict[str, Commit], rows: int, count: int, budget_s: float) -> dict[str, Stats]:
    """Several drivers timed in alternation (blocks of 20 commits each), each on its own file."""
    sql = insert(rows)
    next_seq = dict.fromkeys(commits, 0)

    def timed(name: str) -> Callable[[int], Awaitable[float]]:
        commit = commits[name]

        async def one_round(i: int) -> float:
            values = params(next_seq[name], rows)
            next_seq[name] += rows
            t0 = time.perf_counter()
            await commit(sql, values)
            return time.perf_counter() - t0

        return one_round

    for name in commits:
        for i in range(WARMUP):
            await timed(name)(i)
    return await interleave({name: timed(name) for name in commits}, count, budget_s, block=20)


# -- the drivers ----------------------------------------------------------------------------------


@asynccontextmanager
async def via_trio_asyncio(path: str, synchronous: str) -> AsyncIterator[Commit]:
    """aiosqlite, each call bridged with ``trio_asyncio.aio_as_trio`` (the store's way today)."""
    import aiosqlite
    import trio_asyncio

    async with trio_asyncio.open_loop():
        connection = await trio_asyncio.aio_as_trio(aiosqlite.connect)(path, isolation_level=None)
        execute = trio_asyncio.aio_as_trio(connection.execute_fetchall)
        try:
            for statement in ("PRAGMA journal_mode=WAL", f"PRAGMA synchronous={synchronous}", SCHEMA):
                await execute(statement, ())

            async def commit(sql: str, values: list[Any]) -> None:
                await execute(sql, values)

            yield commit
        finally:
            await trio_asyncio.aio_as_trio(connection.close)()


@asynccontextmanager
async def via_to_thread(path: str, synchronous: str) -> AsyncIterator[Commit]:
    """One ``sqlite3`` connection; each commit a ``trio.to_thread.run_sync`` under a limiter of 1."""
    connection = _connect(path, synchronous)
    limiter = trio.CapacityLimiter(1)
    try:

        async def commit(sql: str, values: list[Any]) -> None:
            await trio.to_thread.run_sync(connection.execute, sql, values, limiter=limiter)

        yield commit
    finally:
        connection.close()


@asynccontextmanager
async def via_store_driver(path: str, synchronous: str, *, inline_commits: bool) -> AsyncIterator[Commit]:
    """The store's own driver (``asides.store._drivers.ThreadDriver``): a dedicated thread owns
    the connection; with ``inline_commits`` a small commit runs on the loop's thread when the
    thread is idle (checkpoints stay in the thread)."""
    from asides.store._drivers import ThreadDriver

    driver = ThreadDriver(lambda: sqlite3.connect(path, isolation_level=None, check_same_thread=False), inline_commits=inline_commits)
    try:
        for statement in ("PRAGMA journal_mode=WAL", f"PRAGMA synchronous={synchronous}", SCHEMA):
            await driver.execute(statement)

        async def commit(sql: str, values: list[Any]) -> None:
            await driver.execute(sql, values)

        yield commit
    finally:
        await driver.close()


@asynccontextmanager
async def via_writer_thread(path: str, synchronous: str) -> AsyncIterator[Commit]:
    async with via_store_driver(path, synchronous, inline_commits=False) as commit:
        yield commit


@asynccontextmanager
async def as_the_store_opens_it(path: str, synchronous: str) -> AsyncIterator[Commit]:
    async with via_store_driver(path, synchronous, inline_commits=synchronous == "NORMAL") as commit:
        yield commit


def aiosqlite_under_asyncio(path: str, synchronous: str, rows: int, count: int, budget_s: float) -> Stats:
    """The reference: aiosqlite called directly from an asyncio loop."""
    import aiosqlite

    async def main() -> Stats:
        async with aiosqlite.connect(path, isolation_level=None) as connection:
            for statement in ("PRAGMA journal_mode=WAL", f"PRAGMA synchronous={synchronous}", SCHEMA):
                await connection.execute_fetchall(statement, ())

            async def commit(sql: str, values: list[Any]) -> None:
                await connection.execute_fetchall(sql, values)

            return await _series(commit, rows, count, budget_s)

    return asyncio.run(main())


TRIO_DRIVERS: dict[str, Callable[[str, str], AbstractAsyncContextManager[Commit]]] = {
    "aiosqlite via trio-asyncio (before 0.2)": via_trio_asyncio,
    "sqlite3 in to_thread (limiter 1)": via_to_thread,
    "sqlite3 in a dedicated thread (0.2)": via_writer_thread,
    "the store's driver (NORMAL: inline commits)": as_the_store_opens_it,
}
ASYNCIO_REFERENCE = "aiosqlite under asyncio (no bridge)"

CONFIGS = [(sync, rows) for sync in ("NORMAL", "FULL") for rows in (1, 16)]


async def _trio_drivers(paths: dict[str, str], synchronous: str, rows: int, count: int, budget_s: float) -> dict[str, Stats]:
    async with AsyncExitStack() as stack:
        commits = {name: await stack.enter_async_context(TRIO_DRIVERS[name](path, synchronous)) for name, path in paths.items()}
        return await _interleaved(commits, rows, count, budget_s)


def measure(count: int, budget_s: float) -> dict[str, dict[tuple[str, int], Stats]]:
    """Every driver, every configuration, each on a fresh file; the Trio drivers of one
    configuration in alternation, in one ``trio.run``; the asyncio reference after them."""
    results: dict[str, dict[tuple[str, int], Stats]] = {name: {} for name in [*TRIO_DRIVERS, ASYNCIO_REFERENCE]}
    with tempfile.TemporaryDirectory(prefix="asides-drivers-") as directory:
        for k, (sync, rows) in enumerate(CONFIGS):
            progress(f"synchronous={sync}, {rows} row(s) a commit")
            paths = {name: os.path.join(directory, f"c{k}-d{d}.db") for d, name in enumerate(TRIO_DRIVERS)}
            for name, stats in trio.run(_trio_drivers, paths, sync, rows, count, budget_s).items():
                results[name][(sync, rows)] = stats
            path = os.path.join(directory, f"c{k}-asyncio.db")
            results[ASYNCIO_REFERENCE][(sync, rows)] = aiosqlite_under_asyncio(path, sync, rows, count, budget_s / 4)
    return results


def report(results: dict[str, dict[tuple[str, int], Stats]]) -> None:
    headers = ["µs per commit, median (p90)"] + [f"{sync}, {rows} row{'s' if rows > 1 else ''}" for sync, rows in CONFIGS]
    rows = [[name] + [f"{duration(s.median)} ({duration(s.p90)})" for s in by.values()] for name, by in results.items()]
    base = results["aiosqlite via trio-asyncio (before 0.2)"]
    for name, by in results.items():
        if name not in ("aiosqlite via trio-asyncio (before 0.2)", ASYNCIO_REFERENCE):
            rows.append([f"  {name} ÷ trio-asyncio"] + [f"{by[c].median / base[c].median:.2f}×" for c in CONFIGS])
    print_table(headers, rows)
    print("One multi-row INSERT per commit in autocommit mode (the store's commit), WAL, a fresh file per cell.")
    print()


def run(quick: bool) -> dict[str, dict[tuple[str, int], Stats]]:
    section(f"Drivers: one commit under Trio ({'quick' if quick else 'full'})")
    sys.stdout.flush()
    results = measure(500 if quick else 3000, 3.0 if quick else 15.0)
    report(results)
    return results


if __name__ == "__main__":
    run("--quick" in sys.argv)
