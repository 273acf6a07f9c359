"""``python -m benchmarks limits``: asides against what the machine itself can do, in one run.

The goals of this part are ratios to a physical reference measured in the same process, in
alternation, so that they carry between machines:

- a store-level ``append_message`` at most 3× a bare ``sqlite3`` autocommit INSERT of the same
  row (the same 300-byte text, encoded as the store encodes it; WAL, ``synchronous=NORMAL``, on the
  event loop's thread), and ``ContextManager.add_message`` (passthrough) at most 4×, at two
  history lengths (the store grown in bulk, then its search index caught up, as a store that
  has run a while has it; the indexer's catch-up of a bulk growth is not a write's cost);
- 16 concurrent writers (a task and a manager each, ``add_message`` in a loop) against one writer
  doing as many writes on the same store, in alternating rounds: on the default store (WAL,
  ``synchronous=NORMAL``) the wall time per write at most one writer's; on a store opened with
  ``synchronous="FULL"`` (every commit waits for the disk) at least 4× one writer's throughput
  (group commit shares a commit, and its wait, among the writes queued meanwhile). This replaces
  issue 22's goal of a wall time per write at most one bare INSERT, which no interpreter meets:
  a write's own Python work, which no commit shares and one interpreter lock runs one at a time,
  costs more than the whole bare INSERT;
- an autobiographical compile after one new message and a drain at most 2× a passthrough compile of
  a history as long as its output, and flat between the two history lengths (at most 1.2×);
- on PostgreSQL, where a server can be had, ``add_message`` at most 4× a bare psycopg INSERT of the
  same row on the same server (autocommit, with the ``synchronous_commit`` asides' store commits
  with by default: the server's own, ``on`` unless configured otherwise); and 16 writers at least
  4× one writer's throughput, both committing with ``synchronous_commit`` on (the server's default;
  a server configured ``off`` is turned ``on`` for the store's session with ``synchronous="FULL"``,
  and a server run with ``fsync`` off, which no session can change, is named in the output).

The machine's ``sum(range(1000))`` time is printed beside the figures so readers can compare
machines. ``--quick`` measures appends at 2,000 and 20,000 messages, the compile at 20,000, and
5 rounds of each count of writers at 2,000 (2,000 writes a round on the default store, a whole
number of the periods of its background work, ``STORE_PERIOD``; 640 where commits wait for the disk;
about 20 s on an idle 2-core machine); the full run appends at 2,000 and 200,000, compiles at
20,000 and 200,000, and runs 9 rounds of writers (1,600 writes; about 8 minutes, most of them
building the 200,000-message autobiographical history).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import tempfile
import textwrap
import time
from functools import partial
from typing import Any

import anyio
import attrs

from asides import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy, open_runtime
from asides.actors._runtime import internal_store
from asides.store._drivers import CHECKPOINT_ROWS
from asides.store._search import INDEX_EVERY

from . import _pg_server
from ._asides_cases import (
    AUTOBIOGRAPHICAL_BUDGET,
    AUTOBIOGRAPHICAL_OPTIONS,
    WHOLE,
    WriterRounds,
    _drain,
    compiles_after_one,
    content,
    grow,
    store_appends,
    warm,
    writer_rounds,
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

#: The writes after which the default store has done each piece of its periodic background
#: work once (a batch of the search indexer every ``INDEX_EVERY`` records, a checkpoint of the
#: write-ahead log every ``CHECKPOINT_ROWS`` rows), which stalls the writes that meet it for
#: some milliseconds. A round of any other size meets one of them, or two, or none, and a
#: median of rounds then compares rounds that paid for different amounts of it; rounds of a
#: whole number of periods pay alike (docs/benchmarks.md, "Rounds that pay alike").
STORE_PERIOD = math.lcm(INDEX_EVERY, CHECKPOINT_ROWS)


@attrs.frozen
class LimitsSettings:
    sizes: tuple[int, int]
    writes: int
    compiles: int
    budget_s: float
    compile_sizes: tuple[int, ...] = (20_000,)
    writers: int = 16
    #: The writes of a round on the default store, all writers together: a whole number of the
    #: periods of its background work (:data:`STORE_PERIOD`), so every round bears as much of it.
    normal_writes: int = STORE_PERIOD
    #: The writes of a round on the stores whose commits wait for the disk (``synchronous="FULL"``
    #: and PostgreSQL), all writers together, and the rounds of one writer and of many each.
    durable_writes: int = 640
    writer_rounds: int = 5

    @classmethod
    def quick(cls) -> LimitsSettings:
        return cls(sizes=(2000, 20_000), writes=300, compiles=15, budget_s=4.0)

    @classmethod
    def full(cls) -> LimitsSettings:
        return cls(
            sizes=(2000, 200_000),
            writes=1000,
            compiles=40,
            budget_s=10.0,
            compile_sizes=(20_000, 200_000),
            durable_writes=1600,
            writer_rounds=9,
        )

    @property
    def durable_per_writer(self) -> int:
        return max(1, self.durable_writes // self.writers)

    @property
    def per_writer(self) -> int:
        """Each writer's writes in a round on the default store."""
        return max(1, self.normal_writes // self.writers)


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
                # As a store that has run a while is: its search index caught up with the bulk
                # growth (else the indexer's batches, in the store's thread, fall on the writes).
                await internal_store(runtime).index_search()
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
class PgDurability:
    """How durable the writers' store on PostgreSQL commits: the server's ``fsync`` and
    ``synchronous_commit``, the store's ``synchronous`` (``None``: the server's default, or
    ``"FULL"`` where the server's is ``off``) and the ``synchronous_commit`` of its session."""

    fsync: str
    server: str
    synchronous: str | None
    session: str

    @classmethod
    def of(cls, url: str) -> PgDurability:
        import psycopg

        from asides.store._pg_driver import set_durability

        with psycopg.connect(url, autocommit=True) as conn:
            fsync = str(conn.execute("SHOW fsync").fetchone()[0])
            server = str(conn.execute("SHOW synchronous_commit").fetchone()[0])
            synchronous = "FULL" if server == "off" else None  # "FULL" turns a configured off on, for the session
            set_durability(conn, url, synchronous)  # the store's own rule
            session = str(conn.execute("SHOW synchronous_commit").fetchone()[0])
        return cls(fsync, server, synchronous, session)

    @property
    def label(self) -> str:
        how = "the server's default" if self.synchronous is None else f'the server\'s is {self.server}; synchronous="FULL"'
        return f"synchronous_commit={self.session} ({how})"

    def caveats(self) -> list[str]:
        """What keeps the writers' commits from waiting for the server's disk, if anything."""
        out = []
        if self.fsync != "on":
            out.append(
                f"the server runs with fsync={self.fsync}, which no session can change: its commits never wait for the disk, so the\n"
                "  writers' goal on PostgreSQL measures group commit without the wait it is meant to share"
            )
        if self.session == "off":
            out.append("the URL's options set synchronous_commit=off, which asides follows: the writers' commits do not wait for the disk")
        return out


@attrs.frozen
class PostgresLimits:
    bare: Stats
    add_message: Stats
    where: str
    writers: WriterRounds
    durability: PgDurability


async def _postgres_series(url: str, writers_url: str, durability: PgDurability, s: LimitsSettings) -> tuple[Stats, Stats, WriterRounds]:
    bare = BarePostgres(url)
    try:
        async with open_runtime(url) as runtime:
            manager = await runtime.open_manager("bench", strategy=PassthroughStrategy())
            await grow(runtime, s.sizes[0])
            await warm(manager)
            got = await interleave({"bare": bare.one_round, "add": writes_through(manager)}, s.writes, s.budget_s)
            await manager.aclose()
    finally:
        bare.close()
    progress(f"PostgreSQL: 1 and {s.writers} writers at {s.sizes[0]:,}, {durability.label}")
    async with open_runtime(writers_url, synchronous=durability.synchronous) as runtime:
        await grow(runtime, s.sizes[0])
        writers = await writer_rounds(runtime, s.writers, s.durable_per_writer, s.writer_rounds)
    return got["bare"], got["add"], writers


def measure_postgres(s: LimitsSettings) -> PostgresLimits | str:
    """The PostgreSQL pair and writers, or why they could not be measured."""
    reason = _pg_server.why_unavailable()
    if reason is not None:
        return reason
    with _pg_server.server() as (url, where):
        schemas = _pg_server.Schemas(url)
        try:
            progress(f"PostgreSQL at {s.sizes[0]:,}")
            durability = PgDurability.of(url)
            pair = partial(_postgres_series, schemas.fresh("limits"), schemas.fresh("limits_writers"), durability, s)
            bare, add, writers = anyio.run(pair, backend="trio")
        finally:
            schemas.drop_all()
        return PostgresLimits(bare, add, f"{_pg_server.describe(url)}, {where}", writers, durability)


@attrs.frozen
class LimitsResults:
    settings: LimitsSettings
    python: float
    appends: dict[int, AppendLimits]
    writers: WriterRounds  # the default store: WAL, synchronous=NORMAL
    writers_full: WriterRounds  # synchronous="FULL"
    compiles: dict[int, CompileLimits]
    postgres: PostgresLimits | str
    filesystem: str = "?"  # of the store files' directory


async def measure_writers(directory: str, s: LimitsSettings) -> tuple[WriterRounds, WriterRounds]:
    """One writer and ``writers`` writers in alternating rounds on two store files grown to
    ``sizes[0]``: the default one (``normal_writes`` writes a round) and one opened with
    ``synchronous="FULL"`` (``durable_writes`` a round)."""
    progress(f"1 and {s.writers} writers at {s.sizes[0]:,}, synchronous=NORMAL")
    async with open_runtime(os.path.join(directory, "writers.db")) as runtime:
        await grow(runtime, s.sizes[0])
        normal = await writer_rounds(runtime, s.writers, s.per_writer, s.writer_rounds)
    progress(f'1 and {s.writers} writers at {s.sizes[0]:,}, synchronous="FULL"')
    async with open_runtime(os.path.join(directory, "writers-full.db"), synchronous="FULL") as runtime:
        await grow(runtime, s.sizes[0])
        full = await writer_rounds(runtime, s.writers, s.durable_per_writer, s.writer_rounds)
    return normal, full


def filesystem(path: str) -> str:
    """The type of the file system ``path`` is on (``ext4``, ``tmpfs``, ...), from /proc/mounts."""
    best, kind = "", "?"
    try:
        with open("/proc/mounts") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) >= 3:
                    point = fields[1]
                    inside = path == point or path.startswith(point.rstrip("/") + "/")
                    if inside and len(point) >= len(best):
                        best, kind = point, fields[2]
    except OSError:
        pass
    return kind


def measure(s: LimitsSettings) -> LimitsResults:
    with tempfile.TemporaryDirectory(prefix="asides-limits-") as directory:
        appends = anyio.run(measure_appends, directory, s, backend="trio")
        writers, writers_full = anyio.run(measure_writers, directory, s, backend="trio")
        compiles = anyio.run(measure_compiles, directory, s, backend="trio")
        where = f"{filesystem(os.path.realpath(directory))} ({os.path.dirname(directory)})"
    postgres = measure_postgres(s)
    return LimitsResults(s, python_speed(), appends, writers, writers_full, compiles, postgres, where)


#: The writers' goal where commits wait for the disk: this many times one writer's throughput.
SPEEDUP = 4


def _throughput(w: WriterRounds) -> str:
    """``4.97× (12000/s vs 2415/s)``: many writers' throughput over one writer's."""
    one, many = w.per_write(False).median, w.per_write(True).median
    return f"{ratio(one, many)} ({1 / many:.0f}/s vs {1 / one:.0f}/s)"


def writers_goals(r: LimitsResults) -> list[Goal]:
    """The writers' goals on SQLite (the one that replaced issue 22's)."""
    n = r.settings.writers
    one, many = r.writers.per_write(False).median, r.writers.per_write(True).median
    return [
        Goal(
            f"{n} writers: wall per write ≤ 1 writer's add_message (synchronous=NORMAL)",
            f"{ratio(many, one)} ({duration(many)} vs {duration(one)})",
            many <= one,
        ),
        Goal(
            f'{n} writers ≥ {SPEEDUP}× 1 writer\'s throughput, synchronous="FULL"',
            _throughput(r.writers_full),
            r.writers_full.speedup >= SPEEDUP,
        ),
    ]


def postgres_writers_goal(r: LimitsResults) -> Goal:
    what = f"PostgreSQL: {r.settings.writers} writers ≥ {SPEEDUP}× 1 writer's throughput, synchronous_commit=on"
    if not isinstance(r.postgres, PostgresLimits):
        return Goal(what, f"skipped: {r.postgres}", None)
    return Goal(what, _throughput(r.postgres.writers), r.postgres.writers.speedup >= SPEEDUP)


def goals(r: LimitsResults) -> list[Goal]:
    out: list[Goal] = []
    for size, a in r.appends.items():
        append = a.append.median / a.bare.median
        add = a.add_message.median / a.bare.median
        out.append(Goal(f"append_message ≤ 3× bare INSERT at {size:,}", ratio(a.append.median, a.bare.median), append <= 3))
        out.append(Goal(f"add_message ≤ 4× bare INSERT at {size:,}", ratio(a.add_message.median, a.bare.median), add <= 4))
    out += writers_goals(r)
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
    out.append(postgres_writers_goal(r))
    return out


def writer_rows(w: WriterRounds, where: str, writers: int) -> list[list[str]]:
    """Two rows: one writer (the reference) and ``writers`` writers, each with the writes and the
    store's commits of its median round; the second's ratio is its wall time per write to one
    writer's, with the throughput's ratio beside it."""
    one, many = w.one_median, w.many_median
    slower = ratio(w.per_write(True).median, w.per_write(False).median)
    return [
        [f"1 writer, {where} ({one.writes} writes, {one.commits} commits)", w.per_write(False).cell(), "1×"],
        [
            f"{writers} writers, {where} ({many.writes} writes, {many.commits} commits)",
            w.per_write(True).cell(),
            f"{slower} (throughput {ratio(w.per_write(False).median, w.per_write(True).median)})",
        ],
    ]


def report(r: LimitsResults) -> None:
    s = r.settings
    print(f"sum(range(1000)) on this machine: {r.python * 1e6:.2f} µs (best of 5)")
    print()
    rows = []
    for size, a in r.appends.items():
        rows.append([f"bare sqlite3 INSERT at {size:,}", a.bare.cell(), "1×"])
        rows.append([f"store.append_message at {size:,}", a.append.cell(), ratio(a.append.median, a.bare.median)])
        rows.append([f"ContextManager.add_message at {size:,}", a.add_message.cell(), ratio(a.add_message.median, a.bare.median)])
    rows += writer_rows(r.writers, "synchronous=NORMAL", s.writers)
    rows += writer_rows(r.writers_full, 'synchronous="FULL"', s.writers)
    for size, c in r.compiles.items():
        rows.append([f"passthrough compile of {c.output} messages", c.passthrough.cell(), "1×"])
        rows.append(
            [
                f"autobiographical compile at {size:,} ({c.output} out)",
                c.autobiographical.cell(),
                ratio(c.autobiographical.median, c.passthrough.median),
            ]
        )
    pg = r.postgres if isinstance(r.postgres, PostgresLimits) else None
    if pg is not None:
        rows.append(["bare psycopg INSERT (same server, same synchronous_commit)", pg.bare.cell(), "1×"])
        rows.append(["PostgreSQL add_message", pg.add_message.cell(), ratio(pg.add_message.median, pg.bare.median)])
        rows += writer_rows(pg.writers, f"PostgreSQL, synchronous_commit={pg.durability.session}", s.writers)
    print_table(["what (median, p90, n)", "time", "against its reference"], rows)
    notes = [
        f"Writers, at {s.sizes[0]:,} messages: time is the wall time per write of a round (median of n rounds, alternating one",
        f"writer and {s.writers}); each writer a task with a manager of its own awaiting add_message in a loop, all starting",
        f"together; one writer does as many writes as all {s.writers} together; commits: the store's, in the median round.",
        f"Store files on {r.filesystem}.",
    ]
    print("\n".join(notes))
    if pg is not None:
        print(f"PostgreSQL: {pg.where}; the writers' store: {pg.durability.label}.")
        for caveat in pg.durability.caveats():
            print(f"  Note: {caveat}.")
    print()
    print_goals("Goals (issue 22, with the writers' goals that replaced its own)", goals(r))
    explained = writers_explained(r)
    for paragraph in explained:
        print(textwrap.fill(paragraph, width=118, initial_indent="  ", subsequent_indent="  "))
    if explained:
        print()


def _commit_share(w: WriterRounds) -> tuple[float, float]:
    """Wall time per commit of one writer's and of many writers' median rounds."""
    one, many = w.one_median, w.many_median
    return one.per_write * one.writes / max(1, one.commits), many.per_write * many.writes / max(1, many.commits)


def writers_explained(r: LimitsResults) -> list[str]:
    """For each writers' goal not met, a paragraph: where the time goes, from this run's own figures."""
    out: list[str] = []
    s = r.settings
    normal, full = (g.met for g in writers_goals(r))
    pg = postgres_writers_goal(r).met
    if normal is False:
        w = r.writers
        one, many = w.one_median, w.many_median
        a = r.appends.get(s.sizes[0])
        saved = "" if a is None else f" (a whole bare INSERT, its commit included, is {duration(a.bare.median)} here)"
        out.append(
            f"Not met on synchronous=NORMAL: {s.writers} writers shared {many.commits} commits among {many.writes} writes where one "
            f"writer made {one.commits}, yet each write cost {duration(many.per_write)} against {duration(one.per_write)}. A commit "
            f"that waits for no disk costs little to share{saved}; what {s.writers} tasks add (switches between them, waiting on "
            "a shared commit and waking for it) costs more than that, and one interpreter lock runs every write's own work one at "
            "a time."
        )
    for met, w, where in ((full, r.writers_full, 'synchronous="FULL"'), (pg, getattr(r.postgres, "writers", None), "PostgreSQL")):
        if met is False and w is not None:
            one_commit, many_commit = _commit_share(w)
            many = w.many_median
            shared = many.writes / max(1, many.commits)
            out.append(
                f"Not met on {where}: one writer's commit takes {duration(one_commit)} of wall time, its write included; "
                f"{s.writers} writers made {many.commits} commits for {many.writes} writes ({shared:.1f} a commit), "
                f"{duration(many_commit)} of wall time a commit, where {SPEEDUP}× one writer's throughput needs at most "
                f"{duration(one_commit * shared / SPEEDUP)}."
            )
    return out


def run(quick: bool) -> LimitsResults:
    section("Limits: asides against a bare insert and a passthrough compile")
    results = measure(LimitsSettings.quick() if quick else LimitsSettings.full())
    report(results)
    return results
