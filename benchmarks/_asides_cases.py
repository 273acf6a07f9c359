"""The asides side of the peers benchmark: each case on its own file-backed store in a directory.

Runs under anyio (the caller picks Trio, the reference backend, or asyncio). History is built
untimed with ``runtime.store.append_messages`` in batches; what is timed goes through the public
API: ``ContextManager.add_message``, ``compile`` and ``drain``, and, for reference only,
the store's own ``append_message`` and ``get_all_messages``.
"""

from __future__ import annotations

import os
import time
from typing import Any

import anyio
import attrs

from asides import (
    AutobiographicalStrategy,
    ContextManager,
    ExtractiveModel,
    PassthroughStrategy,
    Runtime,
    open_runtime,
    open_store,
    text,
)

from ._common import Stats, message_text, participant, quiet_heap, rounds

#: A compile budget that holds the whole history: "full read" means every message compiled.
WHOLE = {"max_tokens": 10**9, "reserve_for_response": 0}
#: The autobiographical case: the options and budget of benchmarks/compression.py.
AUTOBIOGRAPHICAL_OPTIONS = {"target_chunk_tokens": 2000, "head_window_tokens": 4000, "recent_window_tokens": 30000}
AUTOBIOGRAPHICAL_BUDGET = {"max_tokens": 200_000, "reserve_for_response": 0}
READER = "ann"
PRIVATE_EVERY = 100
BUILD_BATCH = 5000
WARMUP = 5
#: Between two timed compiles under writes, the compiling task sleeps this long.
PAUSE = 0.05


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
    store = runtime_or_store.store if isinstance(runtime_or_store, Runtime) else runtime_or_store
    have = store.head("main")
    while have < size:
        count = min(batch, size - have)
        items = [(participant(have + k), content(have + k, private=private), None) for k in range(count)]
        await store.append_messages("main", items)
        have += count
        if after_batch is not None:
            await after_batch()


async def timed_writes(manager: ContextManager, count: int, budget_s: float, *, private: bool = False) -> Stats:
    """``count`` timed ``add_message`` calls, one after the other (after a few untimed ones)."""
    for i in range(WARMUP):
        await manager.add_message(participant(i), content(i, private=private))
    times: list[float] = []
    with quiet_heap():
        for i in rounds(count, budget_s):
            blocks = content(i, private=private)
            t0 = time.perf_counter()
            await manager.add_message(participant(i), blocks)
            times.append(time.perf_counter() - t0)
    return Stats.of(times)


async def timed_compiles(
    manager: ContextManager,
    count: int,
    budget_s: float,
    budget: dict[str, int],
    *,
    drain: bool = False,
    private: bool = False,
    start: int = 0,
) -> Stats:
    """``count`` rounds of: one new message (and a drain, with ``drain``), untimed; then one
    timed ``compile``."""
    times: list[float] = []
    with quiet_heap():
        for i in rounds(count, budget_s):
            await manager.add_message(participant(start + i), content(start + i, private=private))
            if drain:
                await manager.drain()
            t0 = time.perf_counter()
            await manager.compile(**budget)
            times.append(time.perf_counter() - t0)
    return Stats.of(times)


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
    """One store, one passthrough manager, at each size (ascending): ``add_message``, compile of
    the whole history after one new message, ``store.append_message`` (NORMAL, and on a second
    store with ``synchronous=FULL``) and ``get_all_messages``."""
    results: dict[int, MainSeries] = {}
    async with (
        open_runtime(os.path.join(directory, "main.db")) as runtime,
        open_store(os.path.join(directory, "main-full.db"), synchronous="FULL") as full_store,
    ):
        manager = await runtime.open_manager("bench", strategy=PassthroughStrategy())
        for size in sizes:
            await grow(runtime, size)
            await grow(full_store, size)
            add = await timed_writes(manager, writes, budget_s)
            compiled = await timed_compiles(manager, reads, budget_s, WHOLE)
            store_append = await _store_appends(runtime.store, writes, budget_s)
            store_append_full = await _store_appends(full_store, writes, budget_s)
            get_all: list[float] = []
            with quiet_heap():
                for _ in rounds(reads, budget_s):
                    t0 = time.perf_counter()
                    manager.get_all_messages()
                    get_all.append(time.perf_counter() - t0)
            results[size] = MainSeries(add, compiled, store_append, store_append_full, Stats.of(get_all))
        await manager.aclose()
    return results


async def _store_appends(store: Any, count: int, budget_s: float) -> Stats:
    times: list[float] = []
    with quiet_heap():
        for i in rounds(count, budget_s):
            blocks = content(i)
            t0 = time.perf_counter()
            await store.append_message("main", participant(i), blocks)
            times.append(time.perf_counter() - t0)
    return Stats.of(times)


# -- many managers -----------------------------------------------------------------------------


@attrs.frozen
class ManyManagers:
    one: Stats
    many: Stats
    after_close: Stats
    managers: int


async def measure_many_managers(directory: str, size: int, managers: int, writes: int, budget_s: float) -> ManyManagers:
    """``add_message`` through one manager: alone; with ``managers - 1`` more open on the branch
    (passthrough, one namespace each); and after those closed."""
    async with open_runtime(os.path.join(directory, "many.db")) as runtime:
        await grow(runtime, size)
        manager = await runtime.open_manager("bench", strategy=PassthroughStrategy())
        one = await timed_writes(manager, writes, budget_s)
        others = [await runtime.open_manager(f"agent-{k:03d}", strategy=PassthroughStrategy()) for k in range(1, managers)]
        many = await timed_writes(manager, writes, budget_s)
        for other in others:
            await other.aclose()
        after = await timed_writes(manager, writes, budget_s)
        await manager.aclose()
    return ManyManagers(one, many, after, managers)


@attrs.frozen
class ConcurrentWriters:
    per_write: float  # wall time / writes
    call: Stats  # each call's latency
    writers: int
    writes: int


async def measure_concurrent_writers(directory: str, size: int, writers: int, per_writer: int) -> ConcurrentWriters:
    """``writers`` tasks, each with its own manager (one namespace each), doing ``per_writer``
    ``add_message`` calls each, all at once: wall time per write and per-call latency."""
    async with open_runtime(os.path.join(directory, "writers.db")) as runtime:
        await grow(runtime, size)
        managers = [await runtime.open_manager(f"writer-{w:02d}", strategy=PassthroughStrategy()) for w in range(writers)]
        for m in managers:
            for i in range(WARMUP):
                await m.add_message(participant(i), content(i))
        latencies: list[float] = []

        async def write(m: ContextManager) -> None:
            for i in range(per_writer):
                blocks = content(i)
                t0 = time.perf_counter()
                await m.add_message(participant(i), blocks)
                latencies.append(time.perf_counter() - t0)

        with quiet_heap():
            t0 = time.perf_counter()
            async with anyio.create_task_group() as tasks:
                for m in managers:
                    tasks.start_soon(write, m)
            wall = time.perf_counter() - t0
        for m in managers:
            await m.aclose()
    total = writers * per_writer
    return ConcurrentWriters(wall / total, Stats.of(latencies), writers, total)


@attrs.frozen
class CompileUnderWrites:
    compile: Stats
    managers: int
    writes_per_s: float  # achieved, in total


async def measure_compile_under_writes(
    directory: str, size: int, managers: int, rate: float, compiles: int, budget_s: float
) -> CompileUnderWrites:
    """Compiles of the whole history by one manager while ``managers`` managers (that one
    included) each write in their own task, ``rate`` writes per second in total (each writer
    sleeps ``managers / rate`` seconds after each write). The compiling task sleeps ``PAUSE``
    before each compile; the rate achieved is reported (a compile that holds the event loop
    holds the writers too)."""
    async with open_runtime(os.path.join(directory, f"under-writes-{managers}.db")) as runtime:
        await grow(runtime, size)
        manager = await runtime.open_manager("bench", strategy=PassthroughStrategy())
        writers = [manager] + [await runtime.open_manager(f"agent-{k:03d}", strategy=PassthroughStrategy()) for k in range(1, managers)]
        interval = len(writers) / rate
        written = 0

        async def write(m: ContextManager, offset: float) -> None:
            nonlocal written
            await anyio.sleep(offset)
            i = 0
            while True:
                await m.add_message(participant(i), content(i))
                written += 1
                i += 1
                await anyio.sleep(interval)

        times: list[float] = []
        async with anyio.create_task_group() as tasks:
            for k, m in enumerate(writers):
                tasks.start_soon(write, m, interval * k / len(writers))
            await anyio.sleep(min(1.0, interval))
            started, written_before = time.perf_counter(), written
            with quiet_heap():
                for _ in rounds(compiles, budget_s):
                    await anyio.sleep(PAUSE)  # the writers run between compiles, as between an agent's turns
                    t0 = time.perf_counter()
                    await manager.compile(**WHOLE)
                    times.append(time.perf_counter() - t0)
            achieved = (written - written_before) / (time.perf_counter() - started)
            tasks.cancel_scope.cancel()
        for m in writers:
            await m.aclose()
    return CompileUnderWrites(Stats.of(times), managers, achieved)


# -- the autobiographical compile ------------------------------------------------------------------


@attrs.frozen
class AutobiographicalCompile:
    compile: Stats
    size: int
    reader: bool
    build_s: float
    messages_compiled: int


async def measure_autobiographical(directory: str, size: int, *, reader: bool, compiles: int, budget_s: float) -> AutobiographicalCompile:
    """AutobiographicalStrategy with ExtractiveModel, built to ``size`` messages (in batches of
    2,000 with the manager open and a drain after each); then rounds of one new message and a
    drain, untimed, and one timed compile. With ``reader``: ``view_reader='ann'`` and one private
    block per 100 messages."""
    model = ExtractiveModel()
    name = f"autobiographical-{size}-{'reader' if reader else 'none'}.db"
    async with open_runtime(os.path.join(directory, name), model=model) as runtime:
        manager = await runtime.open_manager(
            "bench", strategy=AutobiographicalStrategy(**AUTOBIOGRAPHICAL_OPTIONS), view_reader=READER if reader else None
        )

        async def drain() -> None:
            await manager.drain()
            model.requests.clear()  # the model's request log is not part of what is measured

        t0 = time.perf_counter()
        await grow(runtime, size, private=reader, batch=2000, after_batch=drain)
        build_s = time.perf_counter() - t0
        stats = await timed_compiles(
            manager, compiles, budget_s, AUTOBIOGRAPHICAL_BUDGET, drain=True, private=reader, start=runtime.store.head("main")
        )
        compiled = await manager.compile(**AUTOBIOGRAPHICAL_BUDGET)
        await manager.aclose()
    return AutobiographicalCompile(stats, size, reader, build_s, len(compiled.messages))
