"""asides on PostgreSQL next to asides on SQLite, and LangGraph's ``AsyncPostgresSaver`` on the
same server, in one run, with ratios.

    python -m benchmarks postgres [--quick]

The server is ``ASIDES_TEST_POSTGRES_URL``'s, or a throwaway cluster on a Unix socket
(``benchmarks/_pg_server.py``); every store is a schema of its own, dropped afterwards. At 2,000
and 20,000 messages of 300 bytes of text, one SQLite file and one PostgreSQL schema, both open in
one process and measured in alternation:

* ``add_message``: ``ContextManager.add_message`` through a manager with ``PassthroughStrategy``,
  one writer awaiting each (checks, the manager's write path and a durable commit). The store's
  own ``append_message`` is timed alongside and shown apart, labelled, for reference. On
  PostgreSQL twice: with the default durability (the server's ``synchronous_commit``, ``on``
  unless configured otherwise) and with ``synchronous="NORMAL"`` (``off``), a schema each, each
  next to a bare psycopg ``INSERT`` of the same row on the same server with the same setting;
* ``compile``: a passthrough compile of the whole history after one new message (written untimed);
* ``open``: with every runtime closed, ``open_runtime`` (which reads the whole log into memory),
  ``open_manager`` and the first ``compile`` (default budget), timed together;
* writers in one process: 1 and then 16 tasks on the open store, each with a manager of its
  own, awaiting ``add_message`` in a loop (``_asides_cases.concurrent_writes``): messages
  acknowledged per second, and the store's commits for them (group commit shares a commit, and
  its wait for the disk, among the writes queued meanwhile);
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
from asides.actors._runtime import internal_store

from . import _asides_cases as cases
from . import _pg_server
from ._asides_cases import ConcurrentWriters
from ._common import Goal, Stats, count, duration, interleave, print_goals, print_table, progress, ratio, section
from ._peer_libraries import AppendAndRead, measure_checkpointer
from ._pg_writer import ProcessWrites, measure_processes
from .limits import BarePostgres

BACKENDS = ("sqlite", "postgres")
NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
#: The PostgreSQL store opened with ``synchronous="NORMAL"``: its ``add_message`` and the writers
#: in one process are measured on it too (not its compile, open or writer processes).
NORMAL = "postgres NORMAL"
STORES = (*BACKENDS, NORMAL)
STORE_NAMES = {**NAMES, NORMAL: 'PostgreSQL, synchronous="NORMAL"'}


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
    #: Writer tasks in one process, and the writes of each count of tasks, all together.
    writer_tasks: tuple[int, ...] = (1, 16)
    task_writes: int = 800
    backend: str = "trio"

    @classmethod
    def quick(cls, backend: str = "trio") -> PostgresSettings:
        return cls(
            appends=150, reads=12, opens=3, langgraph_appends=15, budget_s=3.0, process_seconds=3.0, task_writes=320, backend=backend
        )


@attrs.frozen
class StoreSeries:
    """asides on one store at one history length (``compile`` and ``open``: on SQLite and
    PostgreSQL with the default durability only)."""

    add_message: Stats
    store_append: Stats
    compile: Stats | None
    open: Stats | None


@attrs.frozen
class BareInserts:
    """A bare psycopg ``INSERT`` with the ``synchronous_commit`` of the default store (``setting``),
    and with ``NORMAL``'s (``off``), timed alongside ``add_message``."""

    setting: str
    default: Stats
    normal: Stats


@attrs.frozen
class PostgresResults:
    settings: PostgresSettings
    server: str  # which server, and its version
    series: dict[tuple[str, int], StoreSeries]  # (store, size); compile and open: BACKENDS only
    processes: dict[tuple[str, int, int], ProcessWrites]  # (backend, size, processes)
    langgraph: dict[int, AppendAndRead] | None
    langgraph_missing: str | None  # why LangGraph was not measured
    bare: dict[int, BareInserts] = attrs.Factory(dict)  # by size
    tasks: dict[tuple[str, int, int], ConcurrentWriters] = attrs.Factory(dict)  # (store, size, writer tasks)


@attrs.frozen
class Measured:
    """One size's series: by store, (add_message, store append, compile or ``None``); the bare
    inserts; the writers in one process, by (store, writer tasks)."""

    writes: dict[str, tuple[Stats, Stats, Stats | None]]
    bare: BareInserts
    tasks: dict[tuple[str, int], ConcurrentWriters]


async def _writes_and_compiles(stores: dict[str, str], bare: dict[str, BarePostgres], size: int, s: PostgresSettings) -> Measured:
    """Every store open in this process, grown to ``size`` (and the bare tables too):
    ``add_message``, the store-level append and the bare inserts, in alternation; then a compile
    after one new message on SQLite and PostgreSQL, in alternation; then the writers in one
    process on each store in turn."""
    for table in bare.values():
        table.grow(size)
    async with AsyncExitStack() as stack:
        managers = {}
        runtimes = {}
        for name, store in stores.items():
            runtimes[name] = await stack.enter_async_context(open_runtime(store, synchronous="NORMAL" if name == NORMAL else None))
            await cases.grow(runtimes[name], size, batch=2000)
            managers[name] = await runtimes[name].open_manager("bench", strategy=PassthroughStrategy())
            await cases.warm(managers[name])
        series = {}
        for name in stores:
            series[f"add {name}"] = cases.writes_through(managers[name])
            series[f"store {name}"] = cases.store_appends(internal_store(runtimes[name]))
        for setting, table in bare.items():
            series[f"bare {setting}"] = table.one_round
        writes = await interleave(series, s.appends, s.budget_s)
        compiles = {backend: cases.compiles_after_one(managers[backend], cases.WHOLE) for backend in BACKENDS}
        reads = await interleave(compiles, s.reads, s.budget_s, block=3)
        for manager in managers.values():
            await manager.aclose()
        tasks = {}
        for name in stores:
            for n in s.writer_tasks:
                tasks[(name, n)] = await cases.concurrent_writes(runtimes[name], n, max(1, s.task_writes // n))
    return Measured(
        {name: (writes[f"add {name}"], writes[f"store {name}"], reads.get(name)) for name in stores},
        BareInserts(bare["default"].setting, writes["bare default"], writes["bare normal"]),
        tasks,
    )


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
    bare_inserts: dict[int, BareInserts] = {}
    tasks: dict[tuple[str, int, int], ConcurrentWriters] = {}
    langgraph = None
    missing = _langgraph_missing()
    bare: dict[str, BarePostgres] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="asides-postgres-") as directory:
            stores = {"sqlite": os.path.join(directory, "store.db"), "postgres": schemas.fresh("asides"), NORMAL: schemas.fresh("normal")}
            bare = {"default": BarePostgres(schemas.fresh("bare")), "normal": BarePostgres(schemas.fresh("bare_normal"), "NORMAL")}
            for size in s.sizes:
                progress(f"asides on SQLite and PostgreSQL at {size:,}: add_message, compile, writers in one process")
                measured = anyio.run(partial(_writes_and_compiles, stores, bare, size, s), backend=s.backend)
                bare_inserts[size] = measured.bare
                tasks.update({(name, size, n): writes for (name, n), writes in measured.tasks.items()})
                progress(f"asides on SQLite and PostgreSQL at {size:,}: open")
                opens = anyio.run(partial(_opens, {b: stores[b] for b in BACKENDS}, s), backend=s.backend)
                for name, (add, append, compile_) in measured.writes.items():
                    series[(name, size)] = StoreSeries(add, append, compile_, opens.get(name))
                for backend in BACKENDS:
                    for n in s.processes if backend == "postgres" else s.processes[:1]:
                        progress(f"{n} writer process{'es' if n > 1 else ''} on {NAMES[backend]} at {size:,}")
                        processes[(backend, size, n)] = measure_processes(stores[backend], n, s.process_seconds, s.backend)
        if missing is None:
            progress("LangGraph AsyncPostgresSaver")
            langgraph = asyncio.run(_langgraph(schemas.fresh("langgraph"), s))
    finally:
        for table in bare.values():
            table.close()
        schemas.drop_all()
    return PostgresResults(s, f"{_pg_server.describe(url)}, {where}", series, processes, langgraph, missing, bare_inserts, tasks)


# -- printing ------------------------------------------------------------------------------------


def _cell(stats: Stats) -> str:
    return f"{duration(stats.median)} (p90 {duration(stats.p90)})"


def print_main_table(r: PostgresResults) -> None:
    sizes = r.settings.sizes
    lg = r.langgraph
    setting = r.bare[sizes[0]].setting

    def series(store: str, field: str) -> list[Stats]:
        return [getattr(r.series[(store, n)], field) for n in sizes]

    def bare(field: str) -> list[Stats]:
        return [getattr(r.bare[n], field) for n in sizes]

    def row(name: str, stats: list[Stats]) -> list[str]:
        return [name] + [_cell(x) for x in stats]

    def against(name: str, numerators: list[Stats], denominators: list[Stats]) -> list[str]:
        return [f"  {name}"] + [ratio(a.median, b.median) for a, b in zip(numerators, denominators, strict=True)]

    durable, normal = series("postgres", "add_message"), series(NORMAL, "add_message")
    rows: list[list[str]] = [
        row("add_message, asides on SQLite (synchronous=NORMAL, its default)", series("sqlite", "add_message")),
        row(f"add_message, asides on PostgreSQL (default: the server's synchronous_commit={setting})", durable),
        against("PostgreSQL ÷ SQLite", durable, series("sqlite", "add_message")),
        row(f"bare psycopg INSERT, synchronous_commit={setting} (same server, same row)", bare("default")),
        against("add_message on PostgreSQL ÷ bare INSERT, same setting", durable, bare("default")),
    ]
    if lg is not None:
        theirs = [lg[n].append for n in sizes]
        rows.append(row(f"aput, one message more, LangGraph AsyncPostgresSaver ({setting})", theirs))
        rows.append(against("LangGraph ÷ asides on PostgreSQL (>1: asides faster)", theirs, durable))
    rows += [
        row('add_message, asides on PostgreSQL, synchronous="NORMAL" (synchronous_commit=off)', normal),
        row("bare psycopg INSERT, synchronous_commit=off", bare("normal")),
        against('add_message with "NORMAL" ÷ bare INSERT, same setting', normal, bare("normal")),
        against('PostgreSQL, the default ÷ "NORMAL" (what durability costs add_message)', durable, normal),
    ]
    rows += [row(f"store.append_message, asides on {STORE_NAMES[store]} (reference)", series(store, "store_append")) for store in STORES]
    for field, peer in (("compile", "aget_tuple"), ("open", None)):
        for backend in BACKENDS:
            rows.append(row(f"{field}, asides on {NAMES[backend]}", series(backend, field)))
        rows.append(against("PostgreSQL ÷ SQLite", series("postgres", field), series("sqlite", field)))
        if lg is not None and peer is not None:
            theirs = [lg[n].read for n in sizes]
            rows.append(row(f"{peer}, LangGraph AsyncPostgresSaver", theirs))
            rows.append(against("LangGraph ÷ asides on PostgreSQL (>1: asides faster)", theirs, series("postgres", field)))
    print_table(["median (p90)"] + [f"@{count(n)} messages" for n in sizes], rows)
    print(
        "add_message: ContextManager.add_message, one writer awaiting each (checks, the manager's write path, a commit\n"
        "acknowledged at the store's durability); store.append_message: the store-level append alone, timed alongside, for\n"
        "reference; bare psycopg INSERT: one autocommit INSERT of the same row into a table of its own, timed alongside.\n"
        "compile: a passthrough compile of the whole history after one new message. open: open_runtime + open_manager + the\n"
        "first compile (default budget). LangGraph keeps the conversation in a checkpoint, as a graph's messages channel does."
    )
    print()


def _columns(sizes: tuple[int, ...], counts: tuple[int, ...], one: str, many: str) -> list[str]:
    """The column heads of a table of writers: each count at each size (``16 writers @20k``)."""
    return [f"{n} {one if n == 1 else many} @{count(size)}" for size in sizes for n in counts]


def print_tasks_table(r: PostgresResults) -> None:
    sizes, counts = r.settings.sizes, r.settings.writer_tasks
    first = counts[0]
    headers = ["writers in one process: messages/s (writes, commits)", *_columns(sizes, counts, "writer", "writers")]
    rows = []
    for store in STORES:
        rows.append([f"asides on {STORE_NAMES[store]}"])
        ratios = [f"  throughput ÷ {first} writer{'s' if first > 1 else ''}"]
        for size in sizes:
            base = r.tasks[(store, size, first)].per_second
            for n in counts:
                w = r.tasks[(store, size, n)]
                rows[-1].append(f"{w.per_second:.0f}/s ({w.writes}, {w.commits})")
                ratios.append(ratio(w.per_second, base) if n != first else "")
        rows.append(ratios)
    print_table(headers, rows)
    print(
        "Each writer is a task with a manager of its own, awaiting add_message in a loop, all starting together; messages/s:\n"
        "what all of them had acknowledged, together; commits: the store's commits for those writes (group commit: the\n"
        "writes queued while a commit is out share the next one, and its wait for the disk)."
    )
    print()


def print_processes_table(r: PostgresResults) -> None:
    sizes, counts = r.settings.sizes, r.settings.processes
    headers = ["writer processes: messages/s (wall time a message)", *_columns(sizes, counts, "process", "processes")]
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
    """Issue 13's goal for writes: ``add_message`` on PostgreSQL within 2× of SQLite in the same
    run, judged like for like as it was set, both with ``synchronous="NORMAL"`` (then both
    stores' default; PostgreSQL's default now waits for the server's disk, shown beside it)."""
    out = []
    for size in r.settings.sizes:
        pg, lite = r.series[(NORMAL, size)].add_message.median, r.series[("sqlite", size)].add_message.median
        out.append(
            Goal(
                f'add_message on PostgreSQL @{count(size)} within 2× of SQLite, both synchronous="NORMAL"',
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
    print_tasks_table(r)
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
