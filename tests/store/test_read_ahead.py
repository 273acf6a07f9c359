"""A read that misses the message cache reads, with the message asked for, the neighbours a walk
one message at a time is about to reach: none for reads out of a walk's way, and, as a walk goes
on, twice as many each time it reaches past them, up to a quarter of the cache and 128. A walk
over ``n`` messages so takes a few queries (``StoreStatistics.message_queries``), not ``n`` (on
PostgreSQL, round trips), whatever the history's length; it reads fewer messages it never
reaches than it reached, and at most 127; and what it reads is what the store holds, as
written."""

from __future__ import annotations

import tempfile
from pathlib import Path

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import AutobiographicalStrategy, text
from asides.lowlevel import MessageView, open_store
from asides.store._model_parts import ReadAhead
from tests.store.test_sparse_views import OPS, READERS, write_ops


async def write_long(path: str, count: int) -> None:
    async with open_store(path) as store:
        for first in range(0, count, 2000):
            await store.append_messages(
                "main",
                [
                    ("user", (text(f"m{i}"), *((text(f"for ann {i}", ["ann"]),) if i % 100 == 0 else ())), None)
                    for i in range(first, min(count, first + 2000))
                ],
            )


async def walk_back(path: str, walked: int, reader: str | None = None) -> tuple[int, int]:
    """Read the newest ``walked`` messages of ``reader``'s view one at a time, newest first: the
    messages read and the queries made."""
    async with open_store(path, read_only=True, message_cache=4000) as store:
        view = MessageView(store.model, "main", reader=reader)
        length = view.length()
        for index in range(length - 1, length - 1 - walked, -1):
            assert view.at(index).content[0].text == f"m{index}"
        statistics = store.statistics()
        return statistics.messages_read, statistics.message_queries


async def test_a_walk_back_from_the_newest_takes_a_few_queries_at_any_length(store_path):
    """600 messages read newest first, one at a time, take 11 queries (1, then 2, 4, ... 128, 128),
    in a history of 2,000 messages as in one of 8,000, for no reader as for a named one; they
    read at most twice the messages reached."""
    await write_long(store_path, 2000)
    short = await walk_back(store_path, 600), await walk_back(store_path, 600, "ann")
    async with open_store(store_path) as store:  # the history grows fourfold
        for first in range(2000, 8000, 2000):
            await store.append_messages("main", [("user", (text(f"m{i}"),), None) for i in range(first, first + 2000)])
    long = await walk_back(store_path, 600), await walk_back(store_path, 600, "ann")
    assert short == long, (short, long)
    for read, queries in long:
        assert queries <= 11 and 600 <= read <= 2 * 600, (read, queries)


async def test_a_walk_forward_reads_ahead_and_reads_out_of_a_walks_way_read_one_message(store_path):
    """Forward as back; and reads that skip (every 7th message) read the one asked each, a query
    each, as do reads that turn back and forth."""
    await write_long(store_path, 3000)
    async with open_store(store_path, read_only=True, message_cache=4000) as store:
        for i in range(1000, 1300):
            assert store.messages("main", i, i + 1)[0].content[0].text == f"m{i}"
        walked = store.statistics()
        assert walked.message_queries <= 10 and 300 <= walked.messages_read <= 600, walked
        for i in range(0, 700, 7):
            assert store.messages("main", i, i + 1)[0].content[0].text == f"m{i}"
        skipped = store.statistics()
        assert skipped.message_queries - walked.message_queries == skipped.messages_read - walked.messages_read == 100
        for i in range(2000, 2100, 2):  # back and forth: 2001, 2000, 2003, 2002, ...
            for j in (i + 1, i):
                assert store.messages("main", j, j + 1)[0].content[0].text == f"m{j}"
        turned = store.statistics()
        assert turned.messages_read - skipped.messages_read <= 100 + 2 * 4, "what a turn reads ahead is never more than one read of two"


async def test_a_small_cache_reads_ahead_a_quarter_of_it_and_keeps_what_it_reads(store_path):
    """With a cache of 16 messages a walk reads ahead at most 4, and nothing read stays beyond
    the cache; with a cache of 3 it reads no neighbour at all."""
    await write_long(store_path, 500)
    for cache, most_ahead in ((16, 4), (3, 1)):
        async with open_store(store_path, read_only=True, message_cache=cache) as store:
            view = MessageView(store.model, "main", reader="ann")
            for index in range(499, 199, -1):
                assert view.at(index).content[0].text == f"m{index}"
                assert store.statistics().messages_in_memory <= cache
            statistics = store.statistics()
            assert statistics.message_queries <= 300 // most_ahead + 3, (cache, statistics)
            assert statistics.messages_read <= 300 + most_ahead, (cache, statistics)


async def test_a_compressing_managers_first_compile_takes_a_few_queries(store_path):
    """A compressing manager's open walks its recent window back from the newest message, and
    its first compile walks the rest, a message at a time: about a query for every 128 of the
    2,000 messages it shows, not one each, reading no message twice."""
    from asides import open_runtime

    await write_long(store_path, 2000)
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/ann", strategy=AutobiographicalStrategy(recent_window_tokens=3_000), view_reader="ann")
        compiled = await manager.compile(max_tokens=200_000)
        statistics = rt.store.statistics()
    assert len(compiled.messages) == 2000
    assert statistics.message_queries <= 2000 // 128 + 16 and statistics.messages_read == 2000, statistics


def test_the_read_ahead_doubles_along_a_walk_and_starts_over_off_it():
    """The pure rule: one position, then two, four, ... in the walk's direction up to the limit;
    a miss anywhere else, or on another branch, reads one position again."""
    ahead = ReadAhead()
    assert ahead.plan("main", 100, 64) == range(100, 101)
    assert ahead.plan("main", 99, 64) == range(98, 100)
    assert ahead.plan("main", 97, 64) == range(94, 98)
    assert ahead.plan("main", 93, 64) == range(86, 94)
    assert ahead.plan("main", 10, 64) == range(10, 11)  # out of the walk's way
    assert ahead.plan("main", 11, 64) == range(11, 13)
    assert ahead.plan("main", 13, 3) == range(13, 16)  # the limit holds
    assert ahead.plan("side", 16, 64) == range(16, 17)  # another branch
    assert ahead.plan("side", 17, 0) == range(17, 18)  # never less than the one asked


READS = st.lists(
    st.one_of(
        st.tuples(st.just("back"), st.integers(0, 200), st.integers(1, 40)),
        st.tuples(st.just("forward"), st.integers(0, 200), st.integers(1, 40)),
        st.tuples(st.just("at"), st.integers(0, 200), st.just(1)),
    ),
    max_size=12,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ops=OPS, reads=READS, cache=st.sampled_from([4, 8, 16, 40]))
def test_walks_over_a_file_read_back_through_a_small_cache_read_as_written(ops, reads, cache):
    """Over random appends (some naming readers), edits, erasures and forks, every reader's view
    of the file reopened with a small cache reads, walked back, forward or read at random, what
    the writer's views read, and keeps at most the cache."""

    async def run(path: str) -> None:
        async with open_store(path) as store:
            model = store.model
            branches = await write_ops(store, ops)
            async with open_store(path, read_only=True, message_cache=cache) as reopened:
                for branch in branches:
                    for reader in READERS:
                        written = MessageView(model, branch, reader=reader)
                        read = MessageView(reopened.model, branch, reader=reader)
                        length = read.length()
                        assert length == written.length()
                        if not length:
                            continue
                        for kind, start, count in reads:
                            start %= length
                            if kind == "back":
                                indexes = range(start, max(-1, start - count), -1)
                            else:
                                indexes = range(start, min(length, start + count))
                            for index in indexes:
                                assert read.at(index) == written.at(index), (branch, reader, kind, index)
                            assert reopened.statistics().messages_in_memory <= cache

    with tempfile.TemporaryDirectory() as folder:
        trio.run(run, str(Path(folder) / "store.db"))
