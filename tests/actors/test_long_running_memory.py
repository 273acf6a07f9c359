"""A host that runs for months: what a manager keeps does not grow with the compiles it made.

A manager compiling after every message, with a strategy whose output is bounded (windowed), a
small message cache and a reader who has a private line in every tenth message: once its caches
are warm, the messages alive stay as many (the cache's and the window's: no copy made for the
reader keeps a message the cache let go), and each more message and compile adds a few hundred
bytes at most, of which the store's disclosure record of the one message newly shown (kept to
answer ``Runtime.disclosures``; docs/DESIGN.md, "What grows with what") is the part that stays.
Counted with the garbage collector and ``tracemalloc``, not timed.
"""

from __future__ import annotations

import gc
import tracemalloc

from asides import WindowedPassthroughStrategy, open_runtime, text
from asides.store._messages import Message

#: Messages in the compile window (a budget of 4,400 tokens, messages of about 14): about 300.
BUDGET = 4400


async def test_a_manager_compiling_after_every_message_keeps_no_more_as_the_history_grows(store_path):
    async with open_runtime(store_path, message_cache=64) as runtime:
        manager = await runtime.open_manager("agents/ann", strategy=WindowedPassthroughStrategy(), view_reader="ann")
        written = 0

        async def steps(count: int) -> None:
            nonlocal written
            for _ in range(count):
                line = f"line {written} of a long conversation" if written % 10 else f"line {written}, for ann alone"
                blocks = [text(line)] if written % 10 else [text("to everyone"), text(line, audience=["ann"])]
                await manager.add_message("user", blocks)
                await manager.compile(max_tokens=BUDGET)
                written += 1

        await steps(700)  # past the bounds of the caches of forms, estimates and bodies
        alive = messages_alive()
        tracemalloc.start()
        try:
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            await steps(700)
            gc.collect()
            per_step = (tracemalloc.get_traced_memory()[0] - before) / 700
        finally:
            tracemalloc.stop()
        # Before a reader's copies were let go with their stored message, each message with a
        # private line stayed alive (197 messages alive after 700 steps, 337 after 1,400; now 71
        # and 71).
        assert messages_alive() <= alive + 16, (alive, messages_alive())
        # Measured 2026-12-06 on SQLite: 417 to 435 bytes a step. The objects the garbage
        # collector tracks stay as many; of what grows, the disclosure log's arrays are about 60
        # bytes a record (its objects took about 400), and the rest (strings) was not traced to
        # its owner. Before the copies were let go and the log kept arrays: 977 and 998.
        assert per_step < 700, f"{per_step:.0f} bytes a message and compile"
        await manager.aclose()


def messages_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Message)
