"""The two peers, measured under asyncio (both are asyncio libraries), on files in a directory.

* OpenAI Agents SDK ``SQLiteSession``: an append is ``add_items([item])`` (one item per call), a
  full read is ``get_items()`` (every row, JSON-decoded).
* LangGraph ``AsyncSqliteSaver`` keeping the conversation in a checkpoint, as a graph with a
  ``messages`` channel does: an append is ``aput`` of a new checkpoint whose message list grew by
  one (the list is kept in memory, as a running graph keeps its state; the saver serializes the
  whole list), a full read is ``aget_tuple`` of the thread's latest checkpoint. The same
  measurement runs ``AsyncPostgresSaver`` in the ``postgres`` part (:func:`measure_checkpointer`).

Items are plain dicts ``{"role": ..., "content": <300-byte text>}`` for both (LangGraph would
serialize LangChain message objects more slowly; dicts are the kinder choice for it). Neither
peer sets ``PRAGMA synchronous``, so both commit with SQLite's default, ``FULL``.
"""

from __future__ import annotations

import os
import time
from contextlib import AbstractAsyncContextManager
from typing import Any

import attrs

from ._common import Stats, message_text, participant, quiet_heap, rounds

#: History is built in calls of this many items (untimed).
BUILD_BATCH = 2000
#: Untimed appends before each timed series (thread pools, connections and caches warm up).
WARMUP = 5


@attrs.frozen
class AppendAndRead:
    """Per-append and per-full-read cost at one history length."""

    append: Stats
    read: Stats


def item(i: int) -> dict[str, str]:
    """The ``i``-th conversation item, as both peers store it."""
    return {"role": participant(i), "content": message_text(i)}


async def measure_sqlite_session(
    directory: str, sizes: tuple[int, ...], appends: int, reads: int, budget_s: float
) -> dict[int, AppendAndRead]:
    """``SQLiteSession`` on ``directory/agents.db``: at each size (ascending), ``appends`` timed
    single-item ``add_items`` calls, then ``reads`` timed ``get_items()``."""
    from agents import SQLiteSession

    session = SQLiteSession("bench", os.path.join(directory, "agents.db"))
    results: dict[int, AppendAndRead] = {}
    have = 0
    try:
        for size in sizes:
            while have < size:
                count = min(BUILD_BATCH, size - have)
                await session.add_items([item(have + k) for k in range(count)])  # type: ignore[misc]
                have += count
            for _ in range(WARMUP):
                await session.add_items([item(have)])  # type: ignore[list-item]
                have += 1
            append_times: list[float] = []
            with quiet_heap():
                for _ in rounds(appends, budget_s):
                    one = [item(have)]
                    t0 = time.perf_counter()
                    await session.add_items(one)  # type: ignore[arg-type]
                    append_times.append(time.perf_counter() - t0)
                    have += 1
            read_times: list[float] = []
            with quiet_heap():
                for _ in rounds(reads, budget_s):
                    t0 = time.perf_counter()
                    got = await session.get_items()
                    read_times.append(time.perf_counter() - t0)
                    assert len(got) == have, (len(got), have)
            results[size] = AppendAndRead(Stats.of(append_times), Stats.of(read_times))
    finally:
        session.close()
    return results


async def measure_langgraph(directory: str, sizes: tuple[int, ...], appends: int, reads: int, budget_s: float) -> dict[int, AppendAndRead]:
    """``AsyncSqliteSaver`` on ``directory/langgraph.db``: see :func:`measure_checkpointer`."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    opening = AsyncSqliteSaver.from_conn_string(os.path.join(directory, "langgraph.db"))
    return await measure_checkpointer(opening, sizes, appends, reads, budget_s)


async def measure_checkpointer(
    opening: AbstractAsyncContextManager[Any], sizes: tuple[int, ...], appends: int, reads: int, budget_s: float
) -> dict[int, AppendAndRead]:
    """A LangGraph checkpoint saver (``opening`` yields it: ``AsyncSqliteSaver`` or
    ``AsyncPostgresSaver``), set up, then at each size (ascending): ``appends`` timed ``aput``
    calls each holding one more message, then ``reads`` timed ``aget_tuple``. The history is
    reached with one untimed ``aput`` (a checkpoint holds the whole list)."""
    from langgraph.checkpoint.base import empty_checkpoint

    thread: Any = {"configurable": {"thread_id": "bench", "checkpoint_ns": ""}}
    messages: list[dict[str, str]] = []
    results: dict[int, AppendAndRead] = {}
    async with opening as saver:
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

        for size in sizes:
            messages.extend(item(i) for i in range(len(messages), size))
            await put()
            for _ in range(WARMUP):
                messages.append(item(len(messages)))
                await put()
            append_times: list[float] = []
            with quiet_heap():
                for _ in rounds(appends, budget_s):
                    messages.append(item(len(messages)))
                    t0 = time.perf_counter()
                    await put()
                    append_times.append(time.perf_counter() - t0)
            read_times: list[float] = []
            with quiet_heap():
                for _ in rounds(reads, budget_s):
                    t0 = time.perf_counter()
                    got = await saver.aget_tuple(thread)
                    read_times.append(time.perf_counter() - t0)
                    assert got is not None and len(got.checkpoint["channel_values"]["messages"]) == len(messages)
            results[size] = AppendAndRead(Stats.of(append_times), Stats.of(read_times))
    return results
