"""``python -m benchmarks limits``: asides against what the machine itself can do, in one run.

The goals of this part are ratios to a physical reference measured in the same process, in
alternation, so that they carry between machines:

- a store-level ``append_message`` at most 3× a bare ``sqlite3`` autocommit INSERT of the same
  row (the same 300-byte text, encoded as the store encodes it; WAL, ``synchronous=NORMAL``, on the
  event loop's thread), and ``ContextManager.add_message`` (passthrough) at most 4×, at two
  history lengths;
- 16 concurrent writers: the wall time per write at most one bare INSERT (group commit);
- an autobiographical compile after one new message and a drain at most 2× a passthrough compile of
  a history as long as its output, and flat between the two history lengths (at most 1.2×);
- on PostgreSQL, where a server can be had, ``add_message`` at most 4× a bare psycopg INSERT of the
  same row on the same server (autocommit, with the ``synchronous_commit`` asides' store commits
  with by default: the server's own, ``on`` unless configured otherwise).

The machine's ``sum(range(1000))`` time is printed beside the figures so readers can compare
machines. ``--quick`` measures appends at 2,000 and 20,000 messages and the compile at 20,000
(about a minute on an idle 2-core machine); the full run appends at 2,000 and 200,000 and compiles
at 20,000 and 200,000.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
from functools import partial
from typing import Any

import anyio
import attrs

from asides import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy, open_runtime
from asides.actors._runtime import internal_store

from . import _pg_server
from ._asides_cases import (
    AUTOBIOGRAPHICAL_BUDGET,
    AUTOBIOGRAPHICAL_OPTIONS,
    WHOLE,
    _drain,
    compiles_after_one,
    content,
    grow,
    measure_concurrent_writers,
    store_appends,
    warm,
    writes_through,
)
from ._common import (
    Goal,
    Stats,
    duration,
    interleave,
    message_text,
    participant,
    print_goals,
    print_table,
    progress,
    python_speed,
    ratio,
    section,
)


@attrs.frozen
class LimitsSettings:
    sizes: tuple[int, int]
    writes: int
    compiles: int
    budget_s: float
    compile_sizes: tuple[int, ...] = (20_000,)
    writers: int = 16
    per_writer: int = 50

    @classmethod
    def quick(cls) -> LimitsSettings:
        return cls(sizes=(2000, 20_000), writes=300, compiles=15, budget_s=4.0)

    @classmethod
    def full(cls) -> LimitsSettings:
        return cls(sizes=(2000, 200_000), writes=1000, compiles=40, budget_s=10.0, compile_sizes=(20_000, 200_000))


def row_body(i: int) -> str:
    """Message ``i``'s blocks as JSON, the same text ``content(i)`` holds."""
    return json.dumps([{"type": "text", "text": message_text(i)}], separators=(",", ":"))


class BareTable:
    """A bare table of messages on one connection (``conn``, in autocommit mode): a round is one
    timed INSERT of message ``i``'s row (``insert``, with the connection's placeholders)."""

    conn: Any
    insert: str
    seq: int = 0

    async def one_round(self, i: int) -> float:
        body = row_body(i)
        t0 = time.perf_counter()
        self.conn.execute(self.insert, ("main", self.seq, participant(i), body))
        elapsed = time.perf_counter() - t0
        self.seq += 1
        return elapsed

    def close(self) -> None:
        self.conn.close()


class BareSqlite(BareTable):
    """A bare ``sqlite3`` table of messages: one autocommit INSERT a row, WAL, ``synchronous=NORMAL``."""

    insert = "INSERT INTO messages (branch, seq, participant, body) VALUES (?, ?, ?, ?)"

    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, branch TEXT, seq INTEGER, participant TEXT, body TEXT)"
        )

    def grow(self, size: int) -> None:
        self.conn.execute("BEGIN")
        while self.seq < size:
            self.conn.execute(self.insert, ("main", self.seq, participant(self.seq), row_body(self.seq)))
            self.seq += 1
        self.conn.execute("COMMIT")


class BarePostgres(BareTable):
    """A bare psycopg table of messages in the schema ``url`` names: one autocommit INSERT a row,
    committed with the ``synchronous_commit`` an asides store opened with ``synchronous`` takes
    (the store's own rule, ``asides.store._pg_driver.set_durability``): the server's setting by
    default. ``setting`` is the one in force."""

    insert = "INSERT INTO bare_messages (branch, seq, participant, body) VALUES (%s, %s, %s, %s)"

    def __init__(self, url: str, synchronous: str | None = None) -> None:
        import psycopg

        from asides.store._pg_driver import set_durability

        self.conn = psycopg.connect(url, autocommit=True)
        set_durability(self.conn, url, synchronous)
        self.setting = str(self.conn.execute("SHOW synchronous_commit").fetchone()[0])
        self.conn.execute("CREATE TABLE bare_messages (id BIGSERIAL PRIMARY KEY, branch TEXT, seq BIGINT, participant TEXT, body TEXT)")

    def grow(self, size: int) -> None:
        with self.conn.cursor().copy("COPY bare_messages (branch, seq, participant, body) FROM STDIN") as copy:
            while self.seq < size:
                copy.write_row(("main", self.seq, participant(self.seq), row_body(self.seq)))
                self.seq += 1


@attrs.frozen
class AppendLimits:
    bare: Stats
    append: Stats
    add_message: Stats


async def measure_appends(directory: str, s: LimitsSettings) -> dict[int, AppendLimits]:
    """The bare INSERT, ``store.append_message`` and ``add_message``, in alternation, at each size."""
    bare = BareSqlite(os.path.join(directory, "bare.db"))
    out: dict[int, AppendLimits] = {}
    try:
        async with open_runtime(os.path.join(directory, "appends.db")) as runtime:
            manager = await runtime.open_manager("bench", strategy=PassthroughStrategy())
            for size in s.sizes:
                progress(f"appends at {size:,}")
                await grow(runtime, size)
                bare.grow(size)
                await warm(manager)
                series = {"bare": bare.one_round, "append": store_appends(internal_store(runtime)), "add": writes_through(manager)}
                got = await interleave(series, s.writes, s.budget_s)
                out[size] = AppendLimits(got["bare"], got["append"], got["add"])
            await manager.aclose()
    finally:
        bare.close()
    return out


@attrs.frozen
class CompileLimits:
    autobiographical: Stats
    passthrough: Stats
    output: int


async def measure_compiles(directory: str, s: LimitsSettings) -> dict[int, CompileLimits]:
    """At each of ``compile_sizes``: an autobiographical compile after one message and a drain,
    against a passthrough compile of a history as long as the autobiographical output."""
    out: dict[int, CompileLimits] = {}
    for size in s.compile_sizes:
        progress(f"autobiographical compile at {size:,} (building)")
        model = ExtractiveModel()
        async with (
            open_runtime(os.path.join(directory, f"autobiographical-{size}.db"), model=model) as auto_rt,
            open_runtime(os.path.join(directory, f"passthrough-{size}.db")) as pass_rt,
        ):
            auto = await auto_rt.open_manager("bench", strategy=AutobiographicalStrategy(**AUTOBIOGRAPHICAL_OPTIONS))
            await grow(auto_rt, size, batch=2000, after_batch=partial(_drain, auto, model))
            output = len((await auto.compile(**AUTOBIOGRAPHICAL_BUDGET)).messages)
            passthrough = await pass_rt.open_manager("bench", strategy=PassthroughStrategy())
            await grow(pass_rt, output)

            progress(f"autobiographical compile at {size:,} (timing; {output} messages out)")
            got = await interleave(
                {"auto": _compiles_after_one_and_drain(auto, model, size), "pass": compiles_after_one(passthrough, WHOLE)},
                s.compiles,
                s.budget_s,
                block=3,
            )
            out[size] = CompileLimits(got["auto"], got["pass"], output)
            await auto.aclose()
            await passthrough.aclose()
    return out


def _compiles_after_one_and_drain(manager: Any, model: ExtractiveModel, size: int) -> Any:
    """A round: one new message and a drain, untimed; then one timed autobiographical compile."""

    async def one_round(i: int) -> float:
        n = size + i
        await manager.add_message(participant(n), content(n))
        await manager.drain()
        model.requests.clear()
        t0 = time.perf_counter()
        await manager.compile(**AUTOBIOGRAPHICAL_BUDGET)
        return time.perf_counter() - t0

    return one_round


@attrs.frozen
class PostgresLimits:
    bare: Stats
    add_message: Stats
    where: str


async def _postgres_series(url: str, s: LimitsSettings) -> tuple[Stats, Stats]:
    bare = BarePostgres(url)
    try:
        async with open_runtime(url) as runtime:
            manager = await runtime.open_manager("bench", strategy=PassthroughStrategy())
            await grow(runtime, s.sizes[0])
            await warm(manager)
            got = await interleave({"bare": bare.one_round, "add": writes_through(manager)}, s.writes, s.budget_s)
            await manager.aclose()
        return got["bare"], got["add"]
    finally:
        bare.close()


def measure_postgres(s: LimitsSettings) -> PostgresLimits | str:
    """The PostgreSQL pair, or why it could not be measured."""
    reason = _pg_server.why_unavailable()
    if reason is not None:
        return reason
    with _pg_server.server() as (url, where):
        schemas = _pg_server.Schemas(url)
        try:
            progress(f"PostgreSQL at {s.sizes[0]:,}")
            bare, add = anyio.run(partial(_postgres_series, schemas.fresh("limits"), s), backend="trio")
        finally:
            schemas.drop_all()
        return PostgresLimits(bare, add, f"{_pg_server.describe(url)}, {where}")


@attrs.frozen
class LimitsResults:
    settings: LimitsSettings
    python: float
    appends: dict[int, AppendLimits]
    writers: Any
    writers_bare: Stats
    compiles: dict[int, CompileLimits]
    postgres: PostgresLimits | str


def measure(s: LimitsSettings) -> LimitsResults:
    with tempfile.TemporaryDirectory(prefix="asides-limits-") as directory:
        appends = anyio.run(measure_appends, directory, s, backend="trio")
        progress(f"{s.writers} concurrent writers")
        writers = anyio.run(measure_concurrent_writers, directory, s.sizes[0], s.writers, s.per_writer, backend="trio")
        bare = BareSqlite(os.path.join(directory, "bare-writers.db"))
        try:
            bare.grow(s.sizes[0])

            async def bare_series() -> Stats:
                return (await interleave({"bare": bare.one_round}, s.writes, s.budget_s))["bare"]

            writers_bare = anyio.run(bare_series, backend="trio")
        finally:
            bare.close()
        compiles = anyio.run(measure_compiles, directory, s, backend="trio")
    postgres = measure_postgres(s)
    return LimitsResults(s, python_speed(), appends, writers, writers_bare, compiles, postgres)


def goals(r: LimitsResults) -> list[Goal]:
    out: list[Goal] = []
    for size, a in r.appends.items():
        append = a.append.median / a.bare.median
        add = a.add_message.median / a.bare.median
        out.append(Goal(f"append_message ≤ 3× bare INSERT at {size:,}", ratio(a.append.median, a.bare.median), append <= 3))
        out.append(Goal(f"add_message ≤ 4× bare INSERT at {size:,}", ratio(a.add_message.median, a.bare.median), add <= 4))
    out.append(
        Goal(
            f"{r.writers.writers} writers: wall per write ≤ bare INSERT",
            f"{duration(r.writers.per_write)} vs {duration(r.writers_bare.median)}",
            r.writers.per_write <= r.writers_bare.median,
        )
    )
    for size, c in r.compiles.items():
        out.append(
            Goal(
                f"autobiographical compile ≤ 2× passthrough of its output ({c.output}) at {size:,}",
                ratio(c.autobiographical.median, c.passthrough.median),
                c.autobiographical.median <= 2 * c.passthrough.median,
            )
        )
    if len(r.compiles) == 2:
        (small, c1), (large, c2) = sorted(r.compiles.items())
        out.append(
            Goal(
                f"autobiographical compile flat {small:,} → {large:,} (≤ 1.2×)",
                ratio(c2.autobiographical.median, c1.autobiographical.median),
                c2.autobiographical.median <= 1.2 * c1.autobiographical.median,
            )
        )
    if isinstance(r.postgres, PostgresLimits):
        p = r.postgres
        out.append(
            Goal(
                "PostgreSQL add_message ≤ 4× bare psycopg INSERT",
                ratio(p.add_message.median, p.bare.median),
                p.add_message.median <= 4 * p.bare.median,
            )
        )
    else:
        out.append(Goal("PostgreSQL add_message ≤ 4× bare psycopg INSERT", f"skipped: {r.postgres}", None))
    return out


def report(r: LimitsResults) -> None:
    print(f"sum(range(1000)) on this machine: {r.python * 1e6:.2f} µs (best of 5)")
    print()
    rows = []
    for size, a in r.appends.items():
        rows.append([f"bare sqlite3 INSERT at {size:,}", a.bare.cell(), "1×"])
        rows.append([f"store.append_message at {size:,}", a.append.cell(), ratio(a.append.median, a.bare.median)])
        rows.append([f"ContextManager.add_message at {size:,}", a.add_message.cell(), ratio(a.add_message.median, a.bare.median)])
    rows.append(
        [
            f"{r.writers.writers} writers, wall per write at {r.settings.sizes[0]:,}",
            duration(r.writers.per_write),
            ratio(r.writers.per_write, r.writers_bare.median),
        ]
    )
    for size, c in r.compiles.items():
        rows.append([f"passthrough compile of {c.output} messages", c.passthrough.cell(), "1×"])
        rows.append(
            [
                f"autobiographical compile at {size:,} ({c.output} out)",
                c.autobiographical.cell(),
                ratio(c.autobiographical.median, c.passthrough.median),
            ]
        )
    if isinstance(r.postgres, PostgresLimits):
        rows.append(["bare psycopg INSERT (same server, same synchronous_commit)", r.postgres.bare.cell(), "1×"])
        rows.append(["PostgreSQL add_message", r.postgres.add_message.cell(), ratio(r.postgres.add_message.median, r.postgres.bare.median)])
    print_table(["what (median, p90, n)", "time", "against its reference"], rows)
    print()
    print_goals("Goals (issue 22)", goals(r))
    bound = writers_bound(r)
    if bound is not None and r.writers.per_write > r.writers_bare.median:
        print(
            f"  The writers' goal is below what a write's own work costs here: one add_message at {r.settings.sizes[0]:,} costs\n"
            f"  {duration(bound)} more than a bare INSERT (its checks, encoding and model; the same run), and that work is\n"
            f"  neither shared by a group commit nor run in parallel (one interpreter lock): {r.writers.writers} writers cannot\n"
            f"  cost less than it a write, against {duration(r.writers_bare.median)} for the bare INSERT."
        )
        print()


def writers_bound(r: LimitsResults) -> float | None:
    """What one write costs beside its commit, at the writers' history length: ``add_message``
    less the bare INSERT, both medians of the same alternation (``None`` if not measured)."""
    a = r.appends.get(r.settings.sizes[0])
    return None if a is None else a.add_message.median - a.bare.median


def run(quick: bool) -> LimitsResults:
    section("Limits: asides against a bare insert and a passthrough compile")
    results = measure(LimitsSettings.quick() if quick else LimitsSettings.full())
    report(results)
    return results
