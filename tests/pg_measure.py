"""Measurements behind docs/postgres.md (not a test): how to drive psycopg from Trio and asyncio,
and the PostgreSQL store next to the SQLite store in the same run.

    python tests/pg_measure.py drivers [URL]   # psycopg's AsyncConnection vs its sync connection in a thread
    python tests/pg_measure.py store [URL]     # add_message: SqliteStore vs PostgresStore
    python tests/pg_measure.py peers [URL]     # asides on PostgreSQL (2k, 20k; 1 and 4 processes) and
                                               # LangGraph's AsyncPostgresSaver on the same server

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
import urllib.parse
from typing import Any

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

    from asides.store import open_store, text

    async def run(path: str) -> tuple[float, float]:
        async with open_store(path) as opened:
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
    # synchronous_commit=off: a commit returns before its WAL reaches the disk, as SQLite's
    # synchronous=NORMAL does; a crash of the database server may lose the last ones.
    setting = urllib.parse.quote("-csynchronous_commit=off ", safe="")
    if "options=" in url:
        relaxed = url.replace("options=", "options=" + setting)
    else:
        relaxed = url + ("&" if "?" in url else "?") + "options=" + setting
    rounds: dict[str, list[tuple[float, float]]] = {"sqlite (NORMAL)": [], "postgres": [], "postgres (sync. commit off)": []}
    for round_ in range(ROUNDS):
        rounds["sqlite (NORMAL)"].append(trio.run(run, os.path.join(folder, f"store{round_}.db")))
        rounds["postgres"].append(trio.run(run, url))
        rounds["postgres (sync. commit off)"].append(trio.run(run, relaxed))
    print(f"{'store':<28} {'add_message µs':>15} {'10 writers, µs/message':>24}")
    for name, runs in rounds.items():
        print(f"{name:<28} {statistics.median(r[0] for r in runs):>15.0f} {statistics.median(r[1] for r in runs):>24.0f}")


PEER_SIZES = (2_000, 20_000)
PEER_SAMPLES = 50


def _peer_text(i: int) -> str:
    return f"message {i}: " + "lorem ipsum " * 25


async def _asides_at(url: str, size: int) -> dict[str, float]:
    """asides on PostgreSQL with ``size`` messages: µs per add_message, per compile (passthrough,
    all of it), and ms to open the runtime."""
    from asides import PassthroughStrategy, open_runtime
    from asides.store import text

    async with open_runtime(url) as rt:
        writer = await rt.open_manager("bench", strategy=PassthroughStrategy())
        have = rt.store.length("main")
        for start in range(have, size, 2000):
            items = [("user", (text(_peer_text(i)),), None) for i in range(start, min(size, start + 2000))]
            await rt.store.append_messages("main", items)
        started = time.perf_counter()
        for i in range(PEER_SAMPLES):
            await writer.add_message("user", [text(_peer_text(size + i))])
        write = (time.perf_counter() - started) / PEER_SAMPLES * 1e6
        started = time.perf_counter()
        for _ in range(5):
            await writer.compile(max_tokens=10**9, reserve_for_response=0)
        compile_ = (time.perf_counter() - started) / 5 * 1e6
    started = time.perf_counter()
    async with open_runtime(url):
        pass
    return {"write": write, "compile": compile_, "open_ms": (time.perf_counter() - started) * 1e3}


async def _langgraph_at(url: str, size: int) -> dict[str, float]:
    """LangGraph's AsyncPostgresSaver keeping ``size`` messages in a checkpoint: µs per aput of a
    checkpoint one message longer, and per aget_tuple (the read a compile starts from)."""
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(url)
    params.pop("options", None)  # the saver's own tables, in the default schema
    thread: Any = {"configurable": {"thread_id": f"bench-{size}", "checkpoint_ns": ""}}
    messages = [{"role": "user", "content": _peer_text(i)} for i in range(size)]
    async with AsyncPostgresSaver.from_conn_string(make_conninfo("", **params)) as saver:
        await saver.setup()
        config: Any = thread
        step = 0

        async def put() -> None:
            nonlocal config, step
            step += 1
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"messages": messages}
            checkpoint["channel_versions"] = {"messages": step}
            config = await saver.aput(config, checkpoint, {"source": "loop", "step": step}, {"messages": step})

        await put()
        started = time.perf_counter()
        for i in range(PEER_SAMPLES):
            messages.append({"role": "user", "content": _peer_text(size + i)})
            await put()
        write = (time.perf_counter() - started) / PEER_SAMPLES * 1e6
        started = time.perf_counter()
        for _ in range(5):
            await saver.aget_tuple(thread)
        read = (time.perf_counter() - started) / 5 * 1e6
    return {"write": write, "read": read}


def _processes_rate(url: str, count: int, seconds: float = 5.0) -> float:
    """Messages per second acknowledged by ``count`` writer processes together."""
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pg_worker.py")
    children = [subprocess.Popen([sys.executable, worker, "crash", url, str(i)], stdout=subprocess.PIPE, text=True) for i in range(count)]
    try:
        for child in children:
            assert child.stdout is not None
            child.stdout.readline()  # started
        time.sleep(seconds)
    finally:
        for child in children:
            child.kill()
    acknowledged = 0
    for child in children:
        assert child.stdout is not None
        acknowledged += sum(1 for _ in child.stdout)
    return acknowledged / seconds


def _without_options(url: str) -> str:
    """``url`` without its ``options`` (the test schema's search path)."""
    if "?" not in url:
        return url
    base, query = url.split("?", 1)
    kept = [part for part in query.split("&") if not part.startswith("options=")]
    return base + ("?" + "&".join(kept) if kept else "")


def _fresh_schema(url: str, name: str) -> str:
    import psycopg

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from pg_cluster import with_search_path

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        conn.execute(f"CREATE SCHEMA {name}")
    return with_search_path(url, name)


def peers(url: str) -> None:
    import asyncio

    base = _without_options(url)
    print(f"{'size':>7} {'asides write µs':>16} {'compile µs':>11} {'open ms':>8} {'LangGraph aput µs':>18} {'aget_tuple µs':>14}")
    for size in PEER_SIZES:
        ours = asyncio.run(_asides_at(_fresh_schema(base, f"peers_{size}"), size))
        theirs = asyncio.run(_langgraph_at(url, size))
        print(
            f"{size:>7} {ours['write']:>16.0f} {ours['compile']:>11.0f} {ours['open_ms']:>8.0f} "
            f"{theirs['write']:>18.0f} {theirs['read']:>14.0f}"
        )
    one = _processes_rate(_fresh_schema(base, "peers_one"), 1)
    four = _processes_rate(_fresh_schema(base, "peers_four"), 4)
    print(f"add_message from writer processes, messages/s: 1 process {one:.0f}, 4 processes {four:.0f}")


def main() -> None:
    if len(sys.argv) >= 4 and sys.argv[1] == "variant":
        print(json.dumps(_variant(sys.argv[2], sys.argv[3])))
        return
    if len(sys.argv) < 2 or sys.argv[1] not in ("drivers", "store", "peers"):
        sys.exit(__doc__)
    cluster = None
    url = sys.argv[2] if len(sys.argv) > 2 else None
    if url is None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from pg_cluster import Cluster

        cluster = Cluster.start()
        url = cluster.fresh_url()
    try:
        {"drivers": drivers, "store": store, "peers": peers}[sys.argv[1]](url)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
