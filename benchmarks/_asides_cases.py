"""The asides side of the peers benchmark: each case on its own file-backed store in a directory.

Runs under anyio (the caller picks Trio, the reference backend, or asyncio). History is built
untimed with ``append_messages`` on the runtime's store (below the actors) in batches; what is timed goes through the public
API: ``ContextManager.add_message``, ``compile`` and ``drain``, and, for reference only,
the store's own ``append_message`` and ``get_all_messages``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from functools import partial
from typing import Any

import anyio
import attrs

from asides import AutobiographicalStrategy, ContextManager, ExtractiveModel, PassthroughStrategy, Runtime, open_runtime, text
from asides.actors._runtime import internal_store  # the store below the actors, on purpose
from asides.lowlevel import open_store

from ._common import Stats, interleave, message_text, participant, quiet_heap

#: A compile budget that holds the whole history: "full read" means every message compiled.
WHOLE = {"max_tokens": 10**9, "reserve_for_response": 0}
#: The autobiographical case: the options and budget of benchmarks/compression.py.
AUTOBIOGRAPHICAL_OPTIONS = {"target_chunk_tokens": 2000, "head_window_tokens": 4000, "recent_window_tokens": 30000}
AUTOBIOGRAPHICAL_BUDGET = {"max_tokens": 200_000, "reserve_for_response": 0}
READER = "ann"
PRIVATE_EVERY = 100
BUILD_BATCH = 5000
WARMUP = 5


def content(i: int, *, private: bool = False) -> tuple[Any, ...]:
    """Message ``i``'s blocks: 300 bytes of text; with ``private``, one message in every 100 is
    200 public bytes and 100 bytes for ``ann`` only."""
    if private and i % PRIVATE_EVERY == PRIVATE_EVERY // 2:
        body = message_text(i)
        return (text(body[:200]), text(body[200:], audience=[READER]))
    return (text(message_text(i)),)


async def grow(runtime_or_store: Any, size: int, *, private: bool = False, batch: int = BUILD_BATCH, after_batch: Any = None) -> None:
    """Append messages to ``main`` until it holds ``size`` (untimed); ``after_batch`` (an async
    callable) runs after each batch."""
    store = internal_store(runtime_or_store) if isinstance(runtime_or_store, Runtime) else runtime_or_store
    have = store.head("main")
    while have < size:
        count = min(batch, size - have)
        items = [(participant(have + k), content(have + k, private=private), None) for k in range(count)]
        await store.append_messages("main", items)
        have += count
        if after_batch is not None:
            await after_batch()


async def warm(*managers: ContextManager) -> None:
    """A few untimed writes through each manager."""
    for manager in managers:
        for i in range(WARMUP):
            await manager.add_message(participant(i), content(i))


def writes_through(manager: ContextManager) -> Callable[[int], Awaitable[float]]:
    """A round: one timed ``add_message``."""

    async def one_round(i: int) -> float:
        blocks = content(i)
        t0 = time.perf_counter()
        await manager.add_message(participant(i), blocks)
        return time.perf_counter() - t0

    return one_round


def store_appends(store: Any) -> Callable[[int], Awaitable[float]]:
    """A round: one timed store-level ``append_message`` (no manager involved)."""

    async def one_round(i: int) -> float:
        blocks = content(i)
        t0 = time.perf_counter()
        await store.append_message("main", participant(i), blocks)
        return time.perf_counter() - t0

    return one_round


def compiles_after_one(manager: ContextManager, budget: dict[str, int]) -> Callable[[int], Awaitable[float]]:
    """A round: one new message, untimed; then one timed ``compile``."""

    async def one_round(i: int) -> float:
        await manager.add_message(participant(i), content(i))
        t0 = time.perf_counter()
        await manager.compile(**budget)
        return time.perf_counter() - t0

    return one_round


# -- the peers table ---------------------------------------------------------------------------


@attrs.frozen
class MainSeries:
    """At one history length: the manager path, and the store level for reference."""

    add_message: Stats
    compile: Stats
    store_append: Stats
    store_append_full: Stats
    get_all: Stats


async def measure_main(directory: str, sizes: tuple[int, ...], writes: int, reads: int, budget_s: float) -> dict[int, MainSeries]:
    """One store, one passthrough manager, at each size (ascending): ``add_message``,
    ``store.append_message`` and, on a second store opened with ``synchronous=FULL``,
    ``append_message`` (timed in alternation); then a compile of the whole history after one new
    message and ``get_all_messages`` (in alternation)."""
    results: dict[int, MainSeries] = {}
    async with (
        open_runtime(os.path.join(directory, "main.db")) as runtime,
        open_store(os.path.join(directory, "main-full.db"), synchronous="FULL") as full_store,
    ):
        manager = await runtime.open_manager("bench", strategy=PassthroughStrategy())

        async def get_all(i: int) -> float:
            t0 = time.perf_counter()
            manager.get_all_messages()
            return time.perf_counter() - t0

        for size in sizes:
            await grow(runtime, size)
            await grow(full_store, size)
            await warm(manager)
            w = await interleave(
                {"add": writes_through(manager), "store": store_appends(internal_store(runtime)), "full": store_appends(full_store)},
                writes,
                budget_s,
            )
            r = await interleave({"compile": compiles_after_one(manager, WHOLE), "get_all": get_all}, reads, budget_s, block=3)
            results[size] = MainSeries(w["add"], r["compile"], w["store"], w["full"], r["get_all"])
        await manager.aclose()
    return results


# -- many managers -----------------------------------------------------------------------------


@attrs.frozen
class ManyManagers:
    """``add_message`` through one manager of a store with 1 manager open, against one with
    ``managers`` open (timed in alternation); then the same after ``managers - 1`` closed."""

    one: Stats
    many: Stats
    one_again: Stats
    after_close: Stats
    managers: int


async def measure_many_managers(directory: str, size: int, managers: int, writes: int, budget_s: float) -> ManyManagers:
    """Two stores of ``size`` messages: one with a single passthrough manager open, one with
    ``managers`` (one namespace each); ``add_message`` through one manager of each, timed in
    alternation; then ``managers - 1`` close and both are timed again."""
    async with AsyncExitStack() as stack:
        alone = await stack.enter_async_context(open_runtime(os.path.join(directory, "one-manager.db")))
        crowded = await stack.enter_async_context(open_runtime(os.path.join(directory, "many-managers.db")))
        await grow(alone, size)
        await grow(crowded, size)
        single = await alone.open_manager("bench", strategy=PassthroughStrategy())
        first = await crowded.open_manager("bench", strategy=PassthroughStrategy())
        others = [await crowded.open_manager(f"agent-{k:03d}", strategy=PassthroughStrategy()) for k in range(1, managers)]
        await warm(single, first)
        open_ = await interleave({"one": writes_through(single), "many": writes_through(first)}, writes, budget_s)
        for other in others:
            await other.aclose()
        closed = await interleave({"one": writes_through(single), "after": writes_through(first)}, writes, budget_s)
        await single.aclose()
        await first.aclose()
    return ManyManagers(open_["one"], open_["many"], closed["one"], closed["after"], managers)


@attrs.frozen
class ConcurrentWriters:
    per_write: float  # wall time / writes
    call: Stats  # each call's latency
    writers: int
    writes: int
    commits: int = 0  # the store's commits for them

    @property
    def per_second(self) -> float:
        """Writes acknowledged per second, all writers together."""
        return 1 / self.per_write


async def measure_concurrent_writers(directory: str, size: int, writers: int, per_writer: int) -> ConcurrentWriters:
    """:func:`concurrent_writes` on a store file of its own grown to ``size`` messages."""
    async with open_runtime(os.path.join(directory, "writers.db")) as runtime:
        await grow(runtime, size)
        return await concurrent_writes(runtime, writers, per_writer)


async def concurrent_writes(runtime: Runtime, writers: int, per_writer: int) -> ConcurrentWriters:
    """``writers`` tasks on ``runtime``, each with its own manager (one namespace each), doing
    ``per_writer`` ``add_message`` calls each, all at once: wall time per write, per-call latency
    and the store's commits for them. The messages are made before the clock starts, so the wall
    time is the writes' alone."""
    managers = [await runtime.open_manager(f"writer-{w:02d}", strategy=PassthroughStrategy()) for w in range(writers)]
    await warm(*managers)
    latencies: list[float] = []
    messages = [(participant(i), content(i)) for i in range(per_writer)]

    async def write(m: ContextManager) -> None:
        for who, blocks in messages:
            t0 = time.perf_counter()
            await m.add_message(who, blocks)
            latencies.append(time.perf_counter() - t0)

    with quiet_heap():
        commits = runtime.store.statistics().commits
        t0 = time.perf_counter()
        async with anyio.create_task_group() as tasks:
            for m in managers:
                tasks.start_soon(write, m)
        wall = time.perf_counter() - t0
        commits = runtime.store.statistics().commits - commits
    for m in managers:
        await m.aclose()
    total = writers * per_writer
    return ConcurrentWriters(wall / total, Stats.of(latencies), writers, total, commits)


@attrs.frozen
class WriterRounds:
    """One writer and ``many`` writers on one store, each round the same number of writes, the
    rounds alternating (one, many, many, one, ...) so that a change in the machine's load falls on
    both alike."""

    one: tuple[ConcurrentWriters, ...]
    many: tuple[ConcurrentWriters, ...]

    @staticmethod
    def _median(rounds: tuple[ConcurrentWriters, ...]) -> ConcurrentWriters:
        return sorted(rounds, key=lambda r: r.per_write)[len(rounds) // 2]

    @property
    def one_median(self) -> ConcurrentWriters:
        """The round of one writer with the median wall time per write (the upper one of two)."""
        return self._median(self.one)

    @property
    def many_median(self) -> ConcurrentWriters:
        return self._median(self.many)

    def per_write(self, many: bool) -> Stats:
        """The wall time per write of each round, of one writer or of many."""
        return Stats.of([r.per_write for r in (self.many if many else self.one)])

    @property
    def speedup(self) -> float:
        """Many writers' throughput over one writer's: the two medians' wall times per write."""
        return self.per_write(False).median / self.per_write(True).median


async def writer_rounds(runtime: Runtime, writers: int, per_writer: int, rounds: int) -> WriterRounds:
    """``rounds`` rounds each of :func:`concurrent_writes` with one writer doing ``writers *
    per_writer`` writes and with ``writers`` writers doing ``per_writer`` each, on ``runtime``,
    alternating which goes first."""
    one: list[ConcurrentWriters] = []
    many: list[ConcurrentWriters] = []
    total = writers * per_writer
    for r in range(rounds):
        for n in (1, writers) if r % 2 == 0 else (writers, 1):
            if n == 1:
                one.append(await concurrent_writes(runtime, 1, total))
            else:
                many.append(await concurrent_writes(runtime, writers, per_writer))
    return WriterRounds(tuple(one), tuple(many))


# -- the autobiographical compile ------------------------------------------------------------------


@attrs.frozen
class AutobiographicalCompile:
    compile: Stats
    size: int
    reader: bool
    build_s: float
    messages_compiled: int


async def measure_autobiographical(directory: str, size: int, compiles: int, budget_s: float) -> dict[bool, AutobiographicalCompile]:
    """Two stores, AutobiographicalStrategy with ExtractiveModel: one manager compiling for no
    reader, and one with ``view_reader='ann'`` over a history where one message in 100 holds a
    private block for ann. Each is built to ``size`` messages (batches of 2,000 with the manager
    open and a drain after each); then rounds of one new message and a drain, untimed, and one
    timed compile, alternating between the two. Keyed by ``reader``."""
    built: dict[bool, tuple[ContextManager, float]] = {}
    async with AsyncExitStack() as stack:
        for reader in (False, True):
            model = ExtractiveModel()
            name = f"autobiographical-{size}-{'reader' if reader else 'none'}.db"
            runtime = await stack.enter_async_context(open_runtime(os.path.join(directory, name), model=model))
            manager = await runtime.open_manager(
                "bench", strategy=AutobiographicalStrategy(**AUTOBIOGRAPHICAL_OPTIONS), view_reader=READER if reader else None
            )
            t0 = time.perf_counter()
            await grow(runtime, size, private=reader, batch=2000, after_batch=partial(_drain, manager, model))
            built[reader] = (manager, time.perf_counter() - t0)

        def compile_after_one(reader: bool) -> Callable[[int], Awaitable[float]]:
            manager, _ = built[reader]

            async def one_round(i: int) -> float:
                n = size + i
                await manager.add_message(participant(n), content(n, private=reader))
                await manager.drain()
                t0 = time.perf_counter()
                await manager.compile(**AUTOBIOGRAPHICAL_BUDGET)
                return time.perf_counter() - t0

            return one_round

        stats = await interleave({"none": compile_after_one(False), "reader": compile_after_one(True)}, compiles, budget_s, block=3)
        out = {}
        for reader in (False, True):
            manager, build_s = built[reader]
            compiled = await manager.compile(**AUTOBIOGRAPHICAL_BUDGET)
            out[reader] = AutobiographicalCompile(stats["reader" if reader else "none"], size, reader, build_s, len(compiled.messages))
            await manager.aclose()
    return out


async def _drain(manager: ContextManager, model: ExtractiveModel) -> None:
    await manager.drain()
    model.requests.clear()  # the model's request log is not part of what is measured
