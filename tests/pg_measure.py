"""Measurements behind docs/postgres.md (not a test): how to drive psycopg from Trio and asyncio,
and the PostgreSQL store next to the SQLite store in the same run.

    python tests/pg_measure.py drivers [URL]   # psycopg's AsyncConnection vs its sync connection in a thread
    python tests/pg_measure.py store [URL]     # store.append_message: SqliteStore vs PostgresStore, NORMAL and FULL

asides on PostgreSQL next to SQLite at 2k and 20k messages, with 1 and 4 writer processes, and
LangGraph's AsyncPostgresSaver on the same server: ``python -m benchmarks postgres``.

Without URL it starts a throwaway cluster (tests/pg_cluster.py). Each driver variant runs in a
fresh process, since the async connection under Trio needs trio-asyncio imported before psycopg.
Timings are medians of several rounds, interleaved, in microseconds per operation; on a shared
machine they vary, so compare columns of one run only.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

COMMITS = 300
SELECTS = 1000
ROUNDS = 3
VARIANTS = ("trio+thread", "trio+trio-asyncio", "asyncio+thread", "asyncio+async")
_TABLE = "CREATE TABLE IF NOT EXISTS measure (id bigserial PRIMARY KEY, body text NOT NULL)"
_INSERT = "INSERT INTO measure (body) VALUES (%s)"
_BODY = json.dumps({"participant": "user", "content": [{"type": "text", "text": "x" * 200}]})


def _variant(name: str, url: str) -> dict[str, float]:
    """One variant, in this process: microseconds per commit (one INSERT in autocommit) and per
    ``SELECT 1``."""
    if name == "trio+trio-asyncio":
        import trio_asyncio  # noqa: F401  (before psycopg: psycopg binds asyncio's loop lookup at import)
    import anyio
    import psycopg

    async def thread() -> dict[str, float]:
        conn = await anyio.to_thread.run_sync(lambda: psycopg.connect(url, autocommit=True))
        limiter = anyio.CapacityLimiter(1)
        conn.execute(_TABLE)
        started = time.perf_counter()
        for _ in range(COMMITS):
            await anyio.to_thread.run_sync(conn.execute, _INSERT, (_BODY,), limiter=limiter)
        commit = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(SELECTS):
            await anyio.to_thread.run_sync(lambda: conn.execute("SELECT 1").fetchall(), limiter=limiter)
        select = time.perf_counter() - started
        conn.close()
        return {"commit": commit / COMMITS * 1e6, "select": select / SELECTS * 1e6}

    async def native() -> dict[str, float]:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
        await conn.execute(_TABLE)
        started = time.perf_counter()
        for _ in range(COMMITS):
            await conn.execute(_INSERT, (_BODY,))
        commit = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(SELECTS):
            await (await conn.execute("SELECT 1")).fetchall()
        select = time.perf_counter() - started
        await conn.close()
        return {"commit": commit / COMMITS * 1e6, "select": select / SELECTS * 1e6}

    if name == "trio+thread":
        import trio

        return trio.run(thread)
    if name == "asyncio+thread":
        import asyncio

        return asyncio.run(thread())
    if name == "asyncio+async":
        import asyncio

        return asyncio.run(native())
    import trio
    import trio_asyncio

    async def bridged() -> dict[str, float]:
        async with trio_asyncio.open_loop():
            return await trio_asyncio.aio_as_trio(native)()  # type: ignore[no-any-return]

    return trio.run(bridged)


def drivers(url: str) -> None:
    results: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    for _ in range(ROUNDS):
        for name in VARIANTS:
            out = subprocess.run([sys.executable, __file__, "variant", name, url], capture_output=True, text=True, check=True)
            results[name].append(json.loads(out.stdout))
    print(f"{'driver':<20} {'commit µs':>10} {'SELECT 1 µs':>12}")
    for name, runs in results.items():
        commit = statistics.median(r["commit"] for r in runs)
        select = statistics.median(r["select"] for r in runs)
        print(f"{name:<20} {commit:>10.0f} {select:>12.0f}")


def store(url: str) -> None:
    import trio

    from asides.lowlevel import open_store
    from asides.store import text

    async def run(path: str, synchronous: str = "NORMAL") -> tuple[float, float]:
        async with open_store(path, synchronous=synchronous) as opened:
            started = time.perf_counter()
            for n in range(COMMITS):
                await opened.append_message("main", "user", (text(f"message {n} " + "x" * 200),))
            sequential = (time.perf_counter() - started) / COMMITS * 1e6

            async def writer(task: int) -> None:
                for n in range(COMMITS // 10):
                    await opened.append_message("main", f"t{task}", (text(f"message {n} " + "x" * 200),))

            started = time.perf_counter()
            async with trio.open_nursery() as nursery:
                for task in range(10):
                    nursery.start_soon(writer, task)
            concurrent = (time.perf_counter() - started) / COMMITS * 1e6
            return sequential, concurrent

    folder = tempfile.mkdtemp()
    # NORMAL (the default): SQLite's WAL without a sync per commit; PostgreSQL with
    # synchronous_commit=off. FULL: SQLite syncs every commit; PostgreSQL keeps the server's
    # setting (on: a commit waits for its log to reach the disk).
    rounds: dict[str, list[tuple[float, float]]] = {
        "sqlite, NORMAL": [],
        "postgres, NORMAL": [],
        "sqlite, FULL": [],
        "postgres, FULL": [],
    }
    for round_ in range(ROUNDS):
        rounds["sqlite, NORMAL"].append(trio.run(run, os.path.join(folder, f"store{round_}.db")))
        rounds["postgres, NORMAL"].append(trio.run(run, url))
        rounds["sqlite, FULL"].append(trio.run(run, os.path.join(folder, f"full{round_}.db"), "FULL"))
        rounds["postgres, FULL"].append(trio.run(run, url, "FULL"))
    print(f"{'store.append_message':<28} {'one writer µs':>15} {'10 writers, µs/message':>24}")
    for name, runs in rounds.items():
        print(f"{name:<28} {statistics.median(r[0] for r in runs):>15.0f} {statistics.median(r[1] for r in runs):>24.0f}")


def main() -> None:
    if len(sys.argv) >= 4 and sys.argv[1] == "variant":
        print(json.dumps(_variant(sys.argv[2], sys.argv[3])))
        return
    if len(sys.argv) < 2 or sys.argv[1] not in ("drivers", "store"):
        sys.exit(__doc__)
    cluster = None
    url = sys.argv[2] if len(sys.argv) > 2 else None
    if url is None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from pg_cluster import Cluster

        cluster = Cluster.start()
        url = cluster.fresh_url()
    try:
        {"drivers": drivers, "store": store}[sys.argv[1]](url)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
