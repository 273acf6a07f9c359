"""A search of a namespace's memories costs what may match, not how many memories there are: the
store's search index holds the strings of every state record, so the autobiographical memory
asks it for the summary records that may hold the words instead of listing every summary key
and narrowing them. Counted, not timed, on both backends; and answered as the memories read."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from erasure_checks import data_dir, files_holding
from helpers import is_postgres_url, writable_store

from asides import AutobiographicalStrategy, ExtractiveModel, KnowledgeStrategy, PassthroughStrategy, open_runtime, text
from asides.store._search import holds_every, query_words

NS = "agents/ann"


def _strategy() -> AutobiographicalStrategy:
    return AutobiographicalStrategy(target_chunk_tokens=100, head_window_tokens=60, recent_window_tokens=200, merge_threshold=3)


async def _grow(store_path: str, start: int, until: int) -> None:
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0)) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        for i in range(start, until):
            await host.add_message("user", [text(f"message {i:05d} lark{i % 97} " + "x" * 40)])
        m = await rt.open_manager(NS, strategy=_strategy(), view_reader="ann")
        await m.drain()
        await writable_store(rt).index_search()  # every record reached, so that what is read is the index's answer


async def _search(store_path: str, query: str) -> tuple[tuple[int, int], set[str], set[str]]:
    """What one memory search read (state values, state versions), what it found, and the
    memories holding the words, read one by one."""
    async with open_runtime(store_path, message_cache=16) as rt:
        m = await rt.open_manager(NS, strategy=_strategy(), view_reader="ann")
        await m.compile(max_tokens=100_000)
        before = rt.store.statistics()
        hits = await m.search(query, kind="memory", limit=1000)
        after = rt.store.statistics()
        read = (after.state_values_read - before.state_values_read, after.state_versions_read - before.state_versions_read)
        words = query_words(query)
        holding = {s.id for s in m.get_summaries_in_range() if holds_every(s.text, words)}
        return read, {hit.id for hit in hits}, holding


async def test_a_memory_search_reads_what_may_match_not_every_memory(store_path):
    found: dict[int, dict[str, Any]] = {}
    written = 0
    for size in (300, 1200):
        await _grow(store_path, written, size)
        written = size
        found[size] = {query: await _search(store_path, query) for query in ("zzyzx", "lark5", "message")}
    for size, answers in found.items():
        for query, (_read, hits, holding) in answers.items():
            assert hits == holding, (size, query)
    assert found[1200]["message"][1] and len(found[1200]["message"][1]) > 2 * len(found[300]["message"][1])
    assert found[300]["lark5"][1] and found[1200]["lark5"][1]
    # A word no memory holds reads nothing; a word a few memories hold reads those few: as
    # many at 1,200 messages (four times the memories) as at 300, give or take the few.
    assert found[300]["zzyzx"][0] == found[1200]["zzyzx"][0] == (0, 0)
    short, long = found[300]["lark5"][0], found[1200]["lark5"][0]
    assert sum(long) <= sum(short) + 3 * len(found[1200]["lark5"][1]), (short, long)


@pytest.mark.parametrize("kind", [AutobiographicalStrategy, KnowledgeStrategy])
async def test_memories_the_index_has_not_reached_are_found_as_read(store_path, kind):
    """Summaries written after the index's last batch (and, on a store file, before their
    commit) are read from the log, and answered as the memory reads them; the knowledge
    strategy's memories as the autobiographical one's."""
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0)) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        for i in range(120):
            await host.add_message("user", [text(f"message {i:05d} wren{i % 7} " + "x" * 40)])
        strategy = kind(target_chunk_tokens=100, head_window_tokens=60, recent_window_tokens=200, merge_threshold=3)
        m = await rt.open_manager(NS, strategy=strategy, view_reader="ann")
        await m.drain()
        hits = await m.search("wren3", kind="memory", limit=1000)
        holding = {s.id for s in m.get_summaries_in_range() if holds_every(s.text, ("wren3",))}
        assert holding and {hit.id for hit in hits} == holding
        assert await m.search("zzyzx", kind="memory") == ()


def _as_made_before_state_records(path: str) -> None:
    """Make the store's index as one made before it held state records: no state record's row,
    and nothing saying from where it holds them."""
    if is_postgres_url(path):
        import psycopg

        with psycopg.connect(path, autocommit=True) as conn:
            conn.execute("DELETE FROM asides_search WHERE message IS NULL")
            conn.execute("DELETE FROM asides_meta WHERE key = 'search_states_from'")
        return
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM search WHERE message IS NULL")
        conn.execute("DROP TABLE search_states")


async def test_an_index_made_before_it_held_state_records_finds_every_memory_and_is_filled_in(store_path):
    """Until the index holds every state record, a memory search lists the keys (and answers
    in full); a writing open's indexer adds the earlier state records, and then a search reads
    only what may match."""
    await _grow(store_path, 0, 300)
    _as_made_before_state_records(store_path)
    for query in ("lark5", "message", "zzyzx"):
        _read, hits, holding = await _search(store_path, query)
        assert hits == holding, query
    await _grow(store_path, 300, 600)  # its index_search() fills the index in, down to the first record
    for query in ("lark5", "message", "zzyzx"):
        read, hits, holding = await _search(store_path, query)
        assert hits == holding, query
    assert read == (0, 0), "zzyzx: nothing read, as in an index made with them"


async def test_a_memory_of_an_erased_message_is_never_found_and_its_words_are_in_no_store_file(store_path, request):
    folder = data_dir(store_path, request)
    secret = "quetzalcoatl7731"
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0)) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        written = []
        for i in range(60):
            words = f"the code is {secret}" if i == 7 else f"message {i:05d}"
            written.append(await host.add_message("user", [text(words + " " + "x" * 40)]))
        m = await rt.open_manager(NS, strategy=_strategy(), view_reader="ann")
        await m.drain()
        await writable_store(rt).index_search()
        assert {hit.kind for hit in await m.search(secret, kind="memory")} == {"memory"}, "memories hold it, in the index"
        assert files_holding(secret, store_path, folder), "the check finds it before the erasure"
        await rt.erase([written[7].id], reason="asked")
        await m.drain()
        assert await m.search(secret) == ()
        assert await m.search("message", kind="memory"), "the other memories are still found"
    assert files_holding(secret, store_path, folder) == [], "an erased word left in a store file (the index included)"


async def test_each_branch_finds_the_memories_it_reads(store_path):
    """The index holds the records of every branch; a search keeps a key only where its record
    visible on the manager's branch holds the words: a fork finds the memories it shares with
    its parent and its own, and the parent none of the fork's."""
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0)) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        for i in range(80):
            await host.add_message("user", [text(f"message {i:05d} wren{i % 7} " + "x" * 40)])
        m = await rt.open_manager(NS, strategy=_strategy(), view_reader="ann")
        await m.drain()
        await m.fork("side")
        for i in range(80, 160):
            await m.add_message("user", [text(f"message {i:05d} heron{i % 5} wren{i % 7} " + "x" * 40)])
        await m.drain()
        await writable_store(rt).index_search()
        on_main = await rt.open_manager(NS, strategy=_strategy(), view_reader="ann", branch="main")
        for manager, query in [(m, "wren3"), (m, "heron2"), (on_main, "wren3"), (on_main, "heron2")]:
            hits = {hit.id for hit in await manager.search(query, kind="memory", limit=1000)}
            holding = {s.id for s in manager.get_summaries_in_range() if holds_every(s.text, query_words(query))}
            assert hits == holding, (manager.branch, query)
        assert await on_main.search("heron2", kind="memory") == ()
        assert await m.search("heron2", kind="memory")


async def test_a_read_only_open_reads_the_index_a_writer_filled_in_after_it_opened(store_path):
    """A reader that stays open (an inspector, a read-only host) while a writer fills in an index
    made before it held state records searches through the index once it is filled in, without
    being opened again: a word no memory holds reads nothing then."""
    await _grow(store_path, 0, 300)
    _as_made_before_state_records(store_path)
    async with open_runtime(store_path, read_only=True, message_cache=16) as rt:
        m = await rt.open_manager(NS, strategy=_strategy(), view_reader="ann")
        await m.compile(max_tokens=100_000)

        async def read_by(query: str) -> tuple[tuple[int, int], set[str]]:
            before = rt.store.statistics()
            hits = {hit.id for hit in await m.search(query, kind="memory", limit=1000)}
            after = rt.store.statistics()
            return (after.state_values_read - before.state_values_read, after.state_versions_read - before.state_versions_read), hits

        await _grow(store_path, 300, 301)  # a writer beside it fills the index in, down to the first record
        await rt.store.catch_up()
        # Read through the index now: the keys of every memory are not listed (101 of them, as
        # the reader's open found the index) and a word no memory holds reads nothing.
        assert await read_by("zzyzx") == ((0, 0), set())
        holding = {s.id for s in m.get_summaries_in_range() if holds_every(s.text, ("lark5",))}
        assert holding and (await read_by("lark5"))[1] == holding
