"""asides next to its peers, in one process and one run, with ratios and the issue's goals.

    python -m benchmarks peers [--quick]

Per append and per full read at 2,000 and 20,000 messages of 300 bytes of text, each library on
its own file in one temporary directory:

* OpenAI Agents SDK ``SQLiteSession``: ``add_items`` with one item; ``get_items()``;
* LangGraph ``AsyncSqliteSaver``, the conversation kept in a checkpoint: ``aput`` of a checkpoint
  holding one more message; ``aget_tuple``;
* asides: ``ContextManager.add_message`` (one writer, through a manager with
  ``PassthroughStrategy``; this is not a store-level append: it validates the content, runs the
  manager's write path and commits); and a passthrough ``compile`` of the whole history after
  one new message. The store-level ``append_message`` and ``get_all_messages`` are shown below
  it for reference.

The peers run under asyncio (both are asyncio libraries), asides under Trio (its reference
backend; ``--backend asyncio`` to change). Then, on asides alone at the larger size: writes with
200 managers open, with 16 concurrent writers, compiles while 200 managers write, and the
autobiographical compile after one new message and a drain, with and without a reader.
Medians, with the 90th percentile; every series stops early after its time budget (at least
three samples), so a slow build still finishes.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from functools import partial
from typing import Any

import anyio
import attrs

from . import _asides_cases as cases
from ._common import Goal, Stats, count, duration, print_goals, print_table, progress, ratio, section
from ._peer_libraries import AppendAndRead, measure_langgraph, measure_sqlite_session
from ._under_writes import CompileUnderWrites, measure_compile_under_writes


@attrs.frozen
class PeerSettings:
    """How much to measure; ``quick()`` fits the whole run in well under two minutes."""

    sizes: tuple[int, ...] = (2000, 20000)
    appends: int = 300
    reads: int = 30
    langgraph_appends: int = 40
    budget_s: float = 8.0
    managers: int = 200
    writers: int = 16
    per_writer: int = 100
    write_rate: float = 200.0
    compiles_under_writes: int = 15
    autobiographical_sizes: tuple[int, ...] = (20000, 200000)
    autobiographical_compiles: int = 30
    backend: str = "trio"

    @classmethod
    def quick(cls, backend: str = "trio") -> PeerSettings:
        return cls(
            appends=150,
            reads=12,
            langgraph_appends=20,
            budget_s=3.0,
            per_writer=40,
            compiles_under_writes=8,
            autobiographical_sizes=(20000,),
            autobiographical_compiles=12,
            backend=backend,
        )


@attrs.frozen
class PeerResults:
    settings: PeerSettings
    session: dict[int, AppendAndRead]
    langgraph: dict[int, AppendAndRead]
    main: dict[int, cases.MainSeries]
    many: cases.ManyManagers
    concurrent: cases.ConcurrentWriters
    compile_one: CompileUnderWrites
    compile_many: CompileUnderWrites
    autobiographical: dict[tuple[int, bool], cases.AutobiographicalCompile]


async def _peers(directory: str, s: PeerSettings) -> tuple[dict[int, AppendAndRead], dict[int, AppendAndRead]]:
    progress("OpenAI Agents SDK SQLiteSession")
    session = await measure_sqlite_session(directory, s.sizes, s.appends, s.reads, s.budget_s)
    progress("LangGraph AsyncSqliteSaver")
    langgraph = await measure_langgraph(directory, s.sizes, s.langgraph_appends, s.reads, s.budget_s)
    return session, langgraph


async def _asides(directory: str, s: PeerSettings) -> dict[str, Any]:
    big = max(s.sizes)
    out: dict[str, Any] = {}
    progress("asides: add_message and compile")
    out["main"] = await cases.measure_main(directory, s.sizes, s.appends, s.reads, s.budget_s)
    progress(f"asides: {s.managers} managers")
    out["many"] = await cases.measure_many_managers(directory, big, s.managers, s.appends, s.budget_s)
    progress(f"asides: {s.writers} concurrent writers")
    out["concurrent"] = await cases.measure_concurrent_writers(directory, big, s.writers, s.per_writer)
    progress("asides: compiles under writes")
    out["compile_one"], out["compile_many"] = await measure_compile_under_writes(
        directory, big, s.managers, s.managers, s.write_rate, s.compiles_under_writes, s.budget_s
    )
    auto: dict[tuple[int, bool], cases.AutobiographicalCompile] = {}
    for size in s.autobiographical_sizes:
        progress(f"asides: autobiographical at {size:,}, no reader and reader")
        both = await cases.measure_autobiographical(directory, size, s.autobiographical_compiles, s.budget_s)
        for reader, result in both.items():
            auto[(size, reader)] = result
    out["autobiographical"] = auto
    return out


def measure(s: PeerSettings) -> PeerResults:
    """Everything, in this process: the peers under asyncio, then asides under ``s.backend``."""
    with tempfile.TemporaryDirectory(prefix="asides-peers-") as directory:
        session, langgraph = asyncio.run(_peers(directory, s))
        ours = anyio.run(partial(_asides, directory, s), backend=s.backend)
    return PeerResults(s, session, langgraph, **ours)


# -- printing ------------------------------------------------------------------------------------


def _cell(stats: Stats) -> str:
    return f"{duration(stats.median)} (p90 {duration(stats.p90)})"


def print_peers_table(r: PeerResults) -> None:
    sizes = r.settings.sizes
    headers = ["median (p90)"] + [f"append @{count(n)}" for n in sizes] + [f"full read @{count(n)}" for n in sizes]

    def row(name: str, appends: list[Stats], reads: list[Stats]) -> list[str]:
        return [name] + [_cell(a) for a in appends] + [_cell(x) for x in reads]

    ours_append = [r.main[n].add_message for n in sizes]
    ours_read = [r.main[n].compile for n in sizes]
    rows = [
        row("OpenAI Agents SDK SQLiteSession", [r.session[n].append for n in sizes], [r.session[n].read for n in sizes]),
        row("LangGraph AsyncSqliteSaver", [r.langgraph[n].append for n in sizes], [r.langgraph[n].read for n in sizes]),
        row("asides add_message / passthrough compile", ours_append, ours_read),
    ]
    for name, peer in (("SQLiteSession", r.session), ("LangGraph", r.langgraph)):
        rows.append(
            [f"  {name} ÷ asides (>1: asides faster)"]
            + [ratio(peer[n].append.median, a.median) for n, a in zip(sizes, ours_append, strict=True)]
            + [ratio(peer[n].read.median, x.median) for n, x in zip(sizes, ours_read, strict=True)]
        )
    rows.append(
        row("asides store.append_message / get_all_messages", [r.main[n].store_append for n in sizes], [r.main[n].get_all for n in sizes])
    )
    rows.append(["asides store.append_message, synchronous=FULL"] + [_cell(r.main[n].store_append_full) for n in sizes] + ["", ""])
    print_table(headers, rows)
    print(
        "append: one message per call, committed. full read: every message back (asides: a compile of the whole\n"
        "history for one reader, one new message written before each). The last two rows are the store level,\n"
        "below the manager, for reference. Peers commit with SQLite's default synchronous=FULL, asides with NORMAL."
    )
    print()


def print_asides_table(r: PeerResults) -> None:
    big = max(r.settings.sizes)
    m, c = r.many, r.concurrent
    one, many = r.compile_one, r.compile_many
    rows = [
        ["add_message, 1 manager open", _cell(m.one), ""],
        [f"add_message, {m.managers} managers open", _cell(m.many), ratio(m.many.median, m.one.median) + " of 1 manager"],
        [
            f"add_message, after {m.managers - 1} of them closed",
            _cell(m.after_close),
            ratio(m.after_close.median, m.one_again.median) + f" of 1 manager ({duration(m.one_again.median)} alongside)",
        ],
        [
            f"add_message, {c.writers} concurrent writers: wall time / write",
            duration(c.per_write),
            f"call latency {_cell(c.call)}; {c.writes} writes",
        ],
        [
            f"compile (whole history), 1 manager open, {one.writers} tasks writing ({one.writes_per_s:.0f} writes/s)",
            _cell(one.compile),
            "",
        ],
        [
            f"compile (whole history), {many.managers} managers open, {many.writers} tasks writing ({many.writes_per_s:.0f} writes/s)",
            _cell(many.compile),
            ratio(many.compile.median, one.compile.median) + " of 1 manager",
        ],
    ]
    for (size, reader), a in sorted(r.autobiographical.items()):
        label = f"autobiographical compile @{count(size)} after 1 message + drain, " + (
            f"reader, 1 private block per {cases.PRIVATE_EVERY}" if reader else "no reader"
        )
        against = ""
        if reader and (size, False) in r.autobiographical:
            against = ratio(a.compile.median, r.autobiographical[(size, False)].compile.median) + " of no reader"
        rows.append(
            [label, _cell(a.compile), (against + "; " if against else "") + f"{a.messages_compiled} msgs, built in {a.build_s:.0f} s"]
        )
    print_table([f"asides at {big:,} messages", "median (p90)", "against"], rows)
    print()


def goals(r: PeerResults) -> list[Goal]:
    """The goals of the performance issue, each with its measured figure."""
    big = max(r.settings.sizes)
    k = f"{count(big)}"
    ours = r.main[big]
    session, langgraph = r.session[big], r.langgraph[big]
    add = ours.add_message.median
    cmp = ours.compile.median
    out = [
        Goal(
            f"add_message @{k} ≥ 3× cheaper than SQLiteSession.add_items",
            f"{ratio(session.append.median, add)} ({duration(session.append.median)} vs {duration(add)})",
            session.append.median >= 3 * add,
        ),
        Goal(f"add_message @{k} ≤ 250 µs", duration(add), add <= 250e-6),
        Goal(
            f"add_message with {r.many.managers} managers ≤ 1.3× of 1 manager",
            ratio(r.many.many.median, r.many.one.median),
            r.many.many.median <= 1.3 * r.many.one.median,
        ),
        Goal(
            f"add_message, {r.concurrent.writers} concurrent writers ≤ 80 µs per write",
            duration(r.concurrent.per_write),
            r.concurrent.per_write <= 80e-6,
        ),
        Goal(
            f"passthrough compile @{k} ≥ 10× faster than SQLiteSession.get_items",
            f"{ratio(session.read.median, cmp)} ({duration(session.read.median)} vs {duration(cmp)})",
            session.read.median >= 10 * cmp,
        ),
        Goal(
            f"passthrough compile @{k} ≥ 2× faster than LangGraph aget_tuple",
            f"{ratio(langgraph.read.median, cmp)} ({duration(langgraph.read.median)} vs {duration(cmp)})",
            langgraph.read.median >= 2 * cmp,
        ),
    ]
    for size, limit in ((20000, 5e-3), (200000, 10e-3)):
        a = r.autobiographical.get((size, False))
        out.append(
            Goal(
                f"autobiographical compile after 1 message + drain @{count(size)} ≤ {duration(limit)}",
                duration(a.compile.median) if a else "(full mode only)",
                (a.compile.median <= limit) if a else None,
            )
        )
    for size in sorted({s for s, _ in r.autobiographical}):
        plain, reader = r.autobiographical.get((size, False)), r.autobiographical.get((size, True))
        if plain and reader:
            out.append(
                Goal(
                    f"autobiographical @{count(size)} with a reader ≤ 1.1× of no reader",
                    ratio(reader.compile.median, plain.compile.median),
                    reader.compile.median <= 1.1 * plain.compile.median,
                )
            )
    out.append(
        Goal(
            f"compile with {r.compile_many.managers} managers open and writing ≤ 2× of 1 manager",
            ratio(r.compile_many.compile.median, r.compile_one.compile.median),
            r.compile_many.compile.median <= 2 * r.compile_one.compile.median,
        )
    )
    return out


def report(r: PeerResults) -> None:
    s = r.settings
    print(
        f"{max(s.sizes):,} and {min(s.sizes):,} messages of 300 bytes of text; file-backed stores in one temp dir; "
        f"peers under asyncio, asides under {s.backend}."
    )
    print()
    print_peers_table(r)
    print_asides_table(r)
    print_goals("Goals (the performance issue), medians of this run", goals(r))


def run(quick: bool, backend: str = "trio") -> PeerResults:
    """Measure and print; returns the results."""
    settings = PeerSettings.quick(backend) if quick else PeerSettings(backend=backend)
    section(f"Peers: asides next to SQLiteSession and AsyncSqliteSaver ({'quick' if quick else 'full'})")
    sys.stdout.flush()
    results = measure(settings)
    report(results)
    return results


if __name__ == "__main__":
    run("--quick" in sys.argv, "asyncio" if "asyncio" in sys.argv else "trio")
