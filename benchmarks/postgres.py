"""asides on PostgreSQL next to asides on SQLite, and LangGraph's ``AsyncPostgresSaver`` on the
same server, in one run, with ratios.

    python -m benchmarks postgres [--quick]

The server is ``ASIDES_TEST_POSTGRES_URL``'s, or a throwaway cluster on a Unix socket
(``benchmarks/_pg_server.py``); every store is a schema of its own, dropped afterwards. At 2,000
and 20,000 messages of 300 bytes of text, one SQLite file and one PostgreSQL schema, both open in
one process and measured in alternation:

* ``add_message``: ``ContextManager.add_message`` through a manager with ``PassthroughStrategy``,
  one writer awaiting each (checks, the manager's write path and a durable commit). The store's
  own ``append_message`` is timed alongside and shown apart, labelled, for reference;
* ``compile``: a passthrough compile of the whole history after one new message (written untimed);
* ``open``: with every runtime closed, ``open_runtime`` (which reads the whole log into memory),
  ``open_manager`` and the first ``compile`` (default budget), timed together;
* writer processes: 1 and 4 processes on the store, each awaiting ``add_message`` in a loop for a
  few seconds (``benchmarks/_pg_writer.py``): messages acknowledged per second, all together.
  SQLite runs 1 process only: a SQLite store belongs to one process, and a second is refused.

Then LangGraph's ``AsyncPostgresSaver`` on the same server, keeping the conversation in a
checkpoint as ``AsyncSqliteSaver`` does in the ``peers`` part: ``aput`` of a checkpoint one message
longer, and ``aget_tuple``. asides runs under Trio (``--backend asyncio`` to change), LangGraph
under asyncio. Medians, with the 90th percentile; every series stops early after its time budget.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from functools import partial

import anyio
import attrs

from asides import PassthroughStrategy, open_runtime

from . import _asides_cases as cases
from . import _pg_server
from ._common import Goal, Stats, count, duration, interleave, print_goals, print_table, progress, ratio, section
from ._peer_libraries import AppendAndRead, measure_checkpointer
from ._pg_writer import ProcessWrites, measure_processes

BACKENDS = ("sqlite", "postgres")
NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


@attrs.frozen
class PostgresSettings:
    """How much to measure; ``quick()`` keeps the part to about half a minute."""

    sizes: tuple[int, ...] = (2000, 20000)
    appends: int = 300
    reads: int = 30
    opens: int = 5
    langgraph_appends: int = 40
    budget_s: float = 8.0
    processes: tuple[int, ...] = (1, 4)
    process_seconds: float = 5.0
    backend: str = "trio"

    @classmethod
    def quick(cls, backend: str = "trio") -> PostgresSettings:
        return cls(appends=150, reads=12, opens=3, langgraph_appends=15, budget_s=3.0, process_seconds=3.0, backend=backend)


@attrs.frozen
class StoreSeries:
    """asides on one store at one history length."""

    add_message: Stats
    store_append: Stats
    compile: Stats
    open: Stats


@attrs.frozen
class PostgresResults:
    settings: PostgresSettings
    server: str  # which server, and its version
    series: dict[tuple[str, int], StoreSeries]  # (backend, size)
    processes: dict[tuple[str, int, int], ProcessWrites]  # (backend, size, processes)
    langgraph: dict[int, AppendAndRead] | None
    langgraph_missing: str | None  # why LangGraph was not measured


async def _writes_and_compiles(stores: dict[str, str], size: int, s: PostgresSettings) -> dict[str, tuple[Stats, Stats, Stats]]:
    """Both stores open in this process, grown to ``size``: ``add_message`` and the store-level
    append on each, in alternation; then a compile after one new message on each, in
    alternation. Keyed by backend: (add_message, store append, compile)."""
    async with AsyncExitStack() as stack:
        managers = {}
        runtimes = {}
        for backend, store in stores.items():
            runtimes[backend] = await stack.enter_async_context(open_runtime(store))
            await cases.grow(runtimes[backend], size, batch=2000)
            managers[backend] = await runtimes[backend].open_manager("bench", strategy=PassthroughStrategy())
            await cases.warm(managers[backend])
        series = {}
        for backend in stores:
            series[f"add {backend}"] = cases.writes_through(managers[backend])
            series[f"store {backend}"] = cases.store_appends(runtimes[backend].store)
        writes = await interleave(series, s.appends, s.budget_s)
        compiles = {backend: cases.compiles_after_one(managers[backend], cases.WHOLE) for backend in stores}
        reads = await interleave(compiles, s.reads, s.budget_s, block=3)
        for manager in managers.values():
            await manager.aclose()
    return {backend: (writes[f"add {backend}"], writes[f"store {backend}"], reads[backend]) for backend in stores}


async def _opens(stores: dict[str, str], s: PostgresSettings) -> dict[str, Stats]:
    """Each store opened and closed in turn: ``open_runtime``, ``open_manager`` and a first
    compile (default budget), timed together."""

    def opening(store: str):  # type: ignore[no-untyped-def]
        async def one_round(i: int) -> float:
            t0 = time.perf_counter()
            async with open_runtime(store) as runtime:
                manager = await runtime.open_manager("bench", strategy=PassthroughStrategy())
                await manager.compile()
                elapsed = time.perf_counter() - t0
                await manager.aclose()
            return elapsed

        return one_round

    return await interleave({b: opening(store) for b, store in stores.items()}, s.opens, s.budget_s, block=1, minimum=min(3, s.opens))


async def _langgraph(url: str, s: PostgresSettings) -> dict[int, AppendAndRead]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    return await measure_checkpointer(AsyncPostgresSaver.from_conn_string(url), s.sizes, s.langgraph_appends, s.reads, s.budget_s)


def _langgraph_missing() -> str | None:
    try:
        import langgraph.checkpoint.postgres.aio  # noqa: F401
    except ImportError:
        return "langgraph-checkpoint-postgres is not installed (pip install -e '.[bench]')"
    return None


def measure(s: PostgresSettings, url: str, where: str) -> PostgresResults:
    """Everything, on the server at ``url`` (``where`` says which, for the report) and on SQLite
    files in a temporary directory; each store in a schema of its own, dropped afterwards."""
    schemas = _pg_server.Schemas(url)
    series: dict[tuple[str, int], StoreSeries] = {}
    processes: dict[tuple[str, int, int], ProcessWrites] = {}
    langgraph = None
    missing = _langgraph_missing()
    try:
        with tempfile.TemporaryDirectory(prefix="asides-postgres-") as directory:
            stores = {"sqlite": os.path.join(directory, "store.db"), "postgres": schemas.fresh("asides")}
            for size in s.sizes:
                progress(f"asides on SQLite and PostgreSQL at {size:,}: add_message and compile")
                measured = anyio.run(partial(_writes_and_compiles, stores, size, s), backend=s.backend)
                progress(f"asides on SQLite and PostgreSQL at {size:,}: open")
                opens = anyio.run(partial(_opens, stores, s), backend=s.backend)
                for backend, (add, append, compile_) in measured.items():
                    series[(backend, size)] = StoreSeries(add, append, compile_, opens[backend])
                for backend in BACKENDS:
                    for n in s.processes if backend == "postgres" else s.processes[:1]:
                        progress(f"{n} writer process{'es' if n > 1 else ''} on {NAMES[backend]} at {size:,}")
                        processes[(backend, size, n)] = measure_processes(stores[backend], n, s.process_seconds, s.backend)
        if missing is None:
            progress("LangGraph AsyncPostgresSaver")
            langgraph = asyncio.run(_langgraph(schemas.fresh("langgraph"), s))
    finally:
        schemas.drop_all()
    return PostgresResults(s, f"{_pg_server.describe(url)}, {where}", series, processes, langgraph, missing)


# -- printing ------------------------------------------------------------------------------------


def _cell(stats: Stats) -> str:
    return f"{duration(stats.median)} (p90 {duration(stats.p90)})"


def print_main_table(r: PostgresResults) -> None:
    sizes = r.settings.sizes
    lg = r.langgraph

    def series(backend: str, field: str) -> list[Stats]:
        return [getattr(r.series[(backend, n)], field) for n in sizes]

    def against(name: str, numerators: list[Stats], denominators: list[Stats]) -> list[str]:
        return [f"  {name}"] + [ratio(a.median, b.median) for a, b in zip(numerators, denominators, strict=True)]

    rows: list[list[str]] = []
    for field, peer in (("add_message", "aput, one message more"), ("compile", "aget_tuple"), ("open", None)):
        for backend in BACKENDS:
            rows.append([f"{field}, asides on {NAMES[backend]}"] + [_cell(x) for x in series(backend, field)])
        rows.append(against("PostgreSQL ÷ SQLite", series("postgres", field), series("sqlite", field)))
        if lg is not None and peer is not None:
            theirs = [(lg[n].append if field == "add_message" else lg[n].read) for n in sizes]
            rows.append([f"{peer}, LangGraph AsyncPostgresSaver"] + [_cell(x) for x in theirs])
            rows.append(against("LangGraph ÷ asides on PostgreSQL (>1: asides faster)", theirs, series("postgres", field)))
        if field == "add_message":
            for backend in BACKENDS:
                rows.append(
                    [f"store.append_message, asides on {NAMES[backend]} (reference)"] + [_cell(x) for x in series(backend, "store_append")]
                )
    print_table(["median (p90)"] + [f"@{count(n)} messages" for n in sizes], rows)
    print(
        "add_message: ContextManager.add_message, one writer awaiting each (checks, the manager's write path, a durable\n"
        "commit); store.append_message: the store-level append alone, timed alongside, for reference. compile: a\n"
        "passthrough compile of the whole history after one new message. open: open_runtime + open_manager + the first\n"
        "compile (default budget). LangGraph keeps the conversation in a checkpoint, as a graph's messages channel does."
    )
    print()


def print_processes_table(r: PostgresResults) -> None:
    sizes, counts = r.settings.sizes, r.settings.processes
    headers = ["writer processes: messages/s (wall time a message)"]
    headers += [f"{n} process{'es' if n > 1 else ''} @{count(size)}" for size in sizes for n in counts]
    rows = []
    for b in BACKENDS:
        row = [f"asides on {NAMES[b]}"]
        for size in sizes:
            for n in counts:
                p = r.processes.get((b, size, n))
                row.append(f"{p.per_second:.0f}/s ({duration(p.per_message)})" if p else "n/a: one process")
        rows.append(row)
    first = counts[0]
    row = [f"  PostgreSQL, throughput ÷ {first} process{'es' if first > 1 else ''}"]
    for size in sizes:
        base = r.processes[("postgres", size, first)].per_second
        row += [ratio(r.processes[("postgres", size, n)].per_second, base) if n != first else "" for n in counts]
    rows.append(row)
    print_table(headers, rows)
    print(
        f"Each process awaits ContextManager.add_message in a loop for {r.settings.process_seconds:g} s, all starting together;\n"
        "messages/s: what all of them had acknowledged, together. A SQLite store belongs to one process (a second is refused)."
    )
    print()


def goals(r: PostgresResults) -> list[Goal]:
    """Issue 13's goal for writes: ``add_message`` on PostgreSQL within 2× of SQLite in the same run."""
    out = []
    for size in r.settings.sizes:
        pg, lite = r.series[("postgres", size)].add_message.median, r.series[("sqlite", size)].add_message.median
        out.append(
            Goal(
                f"add_message on PostgreSQL @{count(size)} within 2× of SQLite",
                f"{ratio(pg, lite)} ({duration(pg)} vs {duration(lite)})",
                pg <= 2 * lite,
            )
        )
    return out


def report(r: PostgresResults) -> None:
    s = r.settings
    print(f"{r.server}; SQLite files in a temp dir; 300-byte messages; asides under {s.backend}, LangGraph under asyncio.")
    print()
    print_main_table(r)
    if r.langgraph_missing:
        print(f"LangGraph AsyncPostgresSaver not measured: {r.langgraph_missing}")
        print()
    print_processes_table(r)
    print_goals("Goals (the PostgreSQL issue), medians of this run", goals(r))


def run(quick: bool, backend: str = "trio", settings: PostgresSettings | None = None) -> PostgresResults | None:
    """Measure and print; returns the results, or ``None`` (after one line saying why) when no
    PostgreSQL server can be had here."""
    reason = _pg_server.why_unavailable()
    if reason is not None:
        print(f"\nPostgreSQL: skipped: {reason}")
        return None
    s = settings or (PostgresSettings.quick(backend) if quick else PostgresSettings(backend=backend))
    section(f"PostgreSQL: asides on PostgreSQL next to SQLite, and LangGraph's AsyncPostgresSaver ({'quick' if quick else 'full'})")
    with _pg_server.server() as (url, where):
        results = measure(s, url, where)
    report(results)
    return results


if __name__ == "__main__":
    run("--quick" in sys.argv, "asyncio" if "asyncio" in sys.argv else "trio")
