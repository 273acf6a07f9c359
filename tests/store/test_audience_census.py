"""How many messages of a branch hold a block with an audience, and which readers the audiences
name, as the store's model counts them from its blocks of messages that may name a reader
(``LogModel.audience_census``), held against reading and decoding every message: over random
writes (plain blocks, lines for ann or bob, thinking, tool calls and results with private
content), edits, erasures, forks and reopens with blocks of a few sequences; and the work it
costs at two lengths of history."""

from __future__ import annotations

import tempfile
from typing import Any

import hypothesis.strategies as st
import trio
from hypothesis import HealthCheck, given, settings

from asides import text, tool_result, tool_use
from asides.lowlevel import open_store
from asides.store._blocks import has_audience
from asides.store._seers import named_readers
from tests.store.test_sparse_views import OPS, write_op


def read_whole(model: Any, branch: str) -> tuple[int, frozenset[str]]:
    """The census by reading every message of ``branch``."""
    holding = [m.content for m in model.slice(branch, 0) if has_audience(m.content)]
    return len(holding), frozenset().union(*map(named_readers, holding))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ops=OPS, reopens=st.sets(st.integers(0, 17), max_size=3), cache=st.sampled_from([4, 8, 1000]))
def test_the_census_is_what_reading_every_message_finds(ops, reopens, cache):
    async def run() -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = f"{directory}/census.db"
            branches = ["main"]
            store_cm = open_store(path, message_cache=cache)
            store = await store_cm.__aenter__()
            try:
                for step, op in enumerate(ops):
                    if step in reopens:
                        await store_cm.__aexit__(None, None, None)
                        store_cm = open_store(path, message_cache=cache)
                        store = await store_cm.__aenter__()
                    await write_op(store, branches, op)
                    for branch in branches:
                        assert store.model.audience_census(branch) == read_whole(store.model, branch), (step, branch)
            finally:
                await store_cm.__aexit__(None, None, None)
            async with open_store(path, read_only=True, message_cache=cache) as reopened:
                for branch in branches:
                    assert reopened.model.audience_census(branch) == read_whole(reopened.model, branch), branch

    trio.run(run)


async def _history(path: str, count: int) -> None:
    async with open_store(path) as store:
        await store.append_messages(
            "main",
            [
                ("user", (text(f"m{i}"), *((text(f"for ann {i}", ["ann"]),) if i % 100 == 0 else ())), None)
                for i in range(count)
            ],
        )
        await store.append_message("main", "assistant", (tool_use("t1", "look"), tool_result("t1", [text("for bob", ["bob"])])))


async def test_the_census_of_a_long_branch_decodes_only_what_does_not_say_who_sees_it(tmp_path):
    """2,000 and 8,000 messages, every 100th with a line for ann, and one tool result for bob
    (its body does not say who sees it), opened again: the census decodes that one message and
    reads no block of messages back, at both lengths; after an edit gives the 100th message a
    line for cy, it decodes that one too."""
    for count in (2000, 8000):
        path = str(tmp_path / f"census-{count}.db")
        await _history(path, count)
        async with open_store(path, message_cache=64) as store:
            census = store.model.audience_census("main")
            assert census == (count // 100 + 1, frozenset({"ann", "bob"}))
            statistics = store.statistics()
            assert (statistics.messages_read, statistics.audience_blocks_read) == (1, 1), count
            hundredth = store.model.id_at("main", 100)
            await store.edit_message("main", hundredth, (text("m100"), text("for cy", ["cy"])))
            before = store.statistics().messages_read
            assert store.model.audience_census("main") == (count // 100 + 1, frozenset({"ann", "bob", "cy"}))
            assert store.statistics().messages_read - before <= 2, "the edited message and the tool result"
