"""``ContextManager.search``: ranked full-text search over what the manager's reader may see,
indexed by the store on both backends.

Held through the public API: what each reader is answered (never a block meant for someone
else, not even in a count, a score or an order), ranking, filters, edits, forks, the
disclosure every hit makes, erasure (never found again, and its words in no store file), bad
arguments (refused, writing nothing), and the build of an index for a store made before it."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import pytest
import trio
from erasure_checks import data_dir, files_holding
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import (
    ArgumentTypeError,
    AsidesError,
    InvalidArgumentError,
    PassthroughStrategy,
    SearchHit,
    open_runtime,
    text,
)
from asides.lowlevel import open_store
from asides.store._search import INDEX_EVERY
from tests.helpers import is_postgres_url, writable_store


async def _managers(rt: Any) -> tuple[Any, Any, Any]:
    host = await rt.open_manager("host", strategy=PassthroughStrategy())
    ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
    bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
    return host, ann, bob


async def test_each_reader_finds_what_it_sees_and_nothing_else(store_path):
    async with open_runtime(store_path) as rt:
        host, ann, bob = await _managers(rt)
        secret = await host.add_message("user", [text("the zebra passport is in the drawer", ["ann"]), text("Zebra talk, for all.")])
        crossing = await host.add_message("carol", [text("a zebra crossing on main street")])
        many = await host.add_message("dave", [text("zebra, zebra, and one more zebra")])
        await host.add_message("user", [text("nothing to see here")])

        found = await ann.search("ZEBRA")
        assert all(isinstance(hit, SearchHit) and hit.kind == "message" for hit in found)
        assert [hit.id for hit in found] == [many.id, secret.id, crossing.id], "more matches in fewer words first"
        assert found[0].score > found[1].score > 0
        assert found[1].text == "the zebra passport is in the drawer\nZebra talk, for all."
        assert (found[2].participant, found[2].sequence) == ("carol", crossing.sequence)
        assert isinstance(found[2].timestamp, float)

        seen_by_bob = await bob.search("zebra")
        assert [hit.id for hit in seen_by_bob] == [many.id, secret.id, crossing.id]
        assert seen_by_bob[1].text == "Zebra talk, for all.", "bob sees the message without ann's line"
        assert await bob.search("passport") == (), "ann's line is never matched for bob"
        assert await host.search("passport drawer") == (), "a manager with no reader finds no block with an audience"
        assert [hit.id for hit in await ann.search("passport drawer")] == [secret.id]
        assert await ann.search("passport giraffe") == (), "a hit holds every word"
        assert [hit.id for hit in await ann.search("zebra", limit=1)] == [many.id]


async def test_filters_narrow_what_is_found(store_path):
    async with open_runtime(store_path) as rt:
        host, ann, _bob = await _managers(rt)
        first = await host.add_message("carol", [text("otter report one")])
        cut = time.time()
        await trio.sleep(0.01)  # a timestamp after ``cut`` (the store's clock is time.time)
        second = await host.add_message("dave", [text("otter report two")])
        assert [h.id for h in await ann.search("otter", participant="carol")] == [first.id]
        assert [h.id for h in await ann.search("otter", after=cut)] == [second.id]
        assert [h.id for h in await ann.search("otter", before=cut)] == [first.id]
        assert await ann.search("otter", kind="memory") == ()
        assert {h.id for h in await ann.search("otter", kind="message")} == {first.id, second.id}


async def test_edits_and_branches_are_searched_as_the_reader_reads_them(store_path):
    async with open_runtime(store_path) as rt:
        host, ann, _bob = await _managers(rt)
        old = await host.add_message("user", [text("the heron flew north")])
        forker = await rt.open_manager("forker", strategy=PassthroughStrategy())
        await forker.fork("side")  # the forker is on the side branch now
        await forker.add_message("user", [text("a heron on the side branch")])
        side = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann", branch="side")
        await host.edit_message(old.id, [text("the crane flew north")])  # on main only

        assert [h.text for h in await ann.search("heron")] == [], "main reads the edit"
        assert [h.id for h in await ann.search("crane")] == [old.id]
        on_side = await side.search("heron")
        assert [h.text for h in on_side] == ["the heron flew north", "a heron on the side branch"]
        assert await side.search("crane") == (), "the child forked before the edit"


async def test_what_the_index_finds_and_what_it_has_not_reached_yet_answer_alike(store_path):
    async with open_runtime(store_path) as rt:
        host, ann, bob = await _managers(rt)
        for i in range(30):
            await host.add_message("user", [text(f"ibis {i}" + (" for ann" if i % 3 else ""), ["ann"] if i % 3 else None)])
        before = (await ann.search("ibis", limit=100), await bob.search("ibis", limit=100))
        assert await writable_store(rt).index_search() >= 30
        assert await writable_store(rt).index_search() == 0, "nothing is indexed twice"
        assert (await ann.search("ibis", limit=100), await bob.search("ibis", limit=100)) == before
        assert len(before[0]) == 30 and len(before[1]) == 10


@pytest.mark.sqlite_only("counts the statements through the SQLite driver's execute")
async def test_the_index_costs_a_write_nothing_and_follows_in_batches(store_path):
    """A write makes its one INSERT and nothing for the index; the indexer indexes at least
    INDEX_EVERY records per batch of two statements, whatever the history."""
    writes = 5 * INDEX_EVERY
    async with open_runtime(store_path) as rt:
        host, _ann, bob = await _managers(rt)
        store = writable_store(rt)
        await store.append_messages("main", [("user", (text(f"old {i}"),), None) for i in range(3000)])
        await store.index_search()
        driver = store._journal._driver
        execute = driver.execute
        statements: list[str] = []

        async def counted(sql, params=()):
            statements.append(sql)
            return await execute(sql, params)

        driver.execute = counted
        for i in range(writes):
            await host.add_message("user", [text(f"new line {i}")])
        await store.index_search()
        ours = [sql for sql in statements if "search" in sql]
        assert len(statements) - len(ours) == writes, "a write makes its one INSERT, and nothing for the index"
        assert 0 < len(ours) <= 2 * (writes // INDEX_EVERY) + 2
        assert [h.text for h in await bob.search("new line 777")] == ["new line 777"]


async def test_an_edit_the_index_has_not_reached_is_searched_as_read(store_path):
    """The edited message was indexed with its old text, the edit not yet: the new text is
    found at once, the old one no longer."""
    async with open_runtime(store_path) as rt:
        host, ann, _bob = await _managers(rt)
        old = await host.add_message("user", [text("the heron flew north")])
        assert await writable_store(rt).index_search() > 0  # the message is in the index, old text and all
        await host.edit_message(old.id, [text("the crane flew north")])  # fewer than INDEX_EVERY wait: not indexed
        assert [h.id for h in await ann.search("crane")] == [old.id]
        assert await ann.search("heron") == ()
        assert await writable_store(rt).index_search() > 0  # and once the edit is indexed, alike
        assert [h.id for h in await ann.search("crane")] == [old.id]
        assert await ann.search("heron") == ()


async def test_every_hit_is_a_disclosure_to_its_reader(store_path):
    async with open_runtime(store_path) as rt:
        host, ann, bob = await _managers(rt)
        line = await host.add_message("user", [text("the lynx is awake")])
        await ann.search("lynx")
        shown = [(d.reader, d.namespace, d.via) for d in rt.disclosures(line.id)]
        assert shown == [("ann", "agents/ann", "search")]
        await bob.search("nothing matches this")
        assert [d.reader for d in rt.disclosures(line.id)] == ["ann"], "no hit, no disclosure"


async def test_an_erased_line_is_never_found_and_its_words_are_in_no_store_file(store_path, request):
    folder = data_dir(store_path, request)
    secret = "quetzalcoatl7731"
    async with open_runtime(store_path) as rt:
        host, ann, _bob = await _managers(rt)
        line = await host.add_message("user", [text(f"the code is {secret}", ["ann"])])
        await host.edit_message(line.id, [text(f"the code is still {secret}", ["ann"])])
        kept = await host.add_message("user", [text("the code is elsewhere")])
        assert await writable_store(rt).index_search() > 0, "the line is in the index, not only in the log"
        assert [h.id for h in await ann.search(secret)] == [line.id]
        assert files_holding(secret, store_path, folder), "the check finds it before the erasure"
        await rt.erase([line.id], reason="asked")
        assert await ann.search(secret) == ()
        assert [h.id for h in await ann.search("code")] == [kept.id]
        assert files_holding(secret, store_path, folder) == [], "an erased word left in a store file (the index included)"


@pytest.mark.parametrize(
    ("call", "where"),
    [
        ({"query": ""}, "query"),
        ({"query": "  ,;  "}, "query"),
        ({"query": 7}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 1001}, "limit"),
        ({"query": "x", "limit": "3"}, "limit"),
        ({"query": "x", "kind": "summary"}, "kind"),
        ({"query": "x", "participant": 3}, "participant"),
        ({"query": "x", "after": "yesterday"}, "after"),
        ({"query": "x", "before": float("nan")}, "before"),
    ],
)
async def test_bad_arguments_are_refused_naming_them_and_write_nothing(store_path, call, where):
    async with open_runtime(store_path) as rt:
        _host, ann, _bob = await _managers(rt)
        await ann.add_message("ann", [text("x marks the spot")])
        before = await rt.store.records()
        with pytest.raises(AsidesError) as raised:
            await ann.search(**call)
        assert isinstance(raised.value, (InvalidArgumentError, ArgumentTypeError))
        assert where in str(raised.value)
        assert await rt.store.records() == before


def _drop_index(path: str) -> None:
    """Make the store as one written before the index was: no index, no triggers."""
    if is_postgres_url(path):
        import psycopg

        with psycopg.connect(path, autocommit=True) as conn:
            conn.execute("DROP TRIGGER asides_search_forget ON asides_log")
            conn.execute("DROP TABLE asides_search")
            conn.execute("DELETE FROM asides_meta WHERE key = 'search_next'")
        return
    with sqlite3.connect(path) as conn:
        for statement in ("DROP TRIGGER search_rewritten", "DROP TABLE search", "DROP TABLE search_build"):
            conn.execute(statement)


async def test_a_store_made_before_the_index_is_indexed_in_the_background(store_path):
    count = 5000  # more than one batch of the build
    async with open_store(store_path) as store:
        rows = [
            ("user", (text(f"line {i} {'walrus' if i % 1000 == 7 else 'seal'}"), text(f"for ann {i} walrus", ["ann"])), None)
            for i in range(count)
        ]
        await store.append_messages("main", rows)
    _drop_index(store_path)
    async with open_runtime(store_path) as rt:
        _host, ann, bob = await _managers(rt)
        # Whether the build is done or not, every search answers in full.
        assert [h.text for h in await bob.search("walrus", limit=10)] == [f"line {i} walrus" for i in (4007, 3007, 2007, 1007, 7)]
        await bob.add_message("bob", [text("a walrus now")])
        assert len(await ann.search("walrus", limit=1000)) == 1000
        assert [h.text for h in await bob.search("walrus")][:2] == ["a walrus now", "line 4007 walrus"]
    async with open_runtime(store_path) as rt:  # the build goes on (or is done); nothing indexed twice
        _host, ann, bob = await _managers(rt)
        assert [h.text for h in await bob.search("walrus")][:2] == ["a walrus now", "line 4007 walrus"]
        assert [h.text for h in await bob.search("4321 seal")] == ["line 4321 seal"], "found once, as it is"


async def test_a_read_only_open_of_a_store_with_no_index_still_answers(tmp_path):
    path = str(tmp_path / "old.db")
    async with open_store(path) as store:
        await store.append_messages("main", [("user", (text(f"line {i} okapi"),), None) for i in range(30)])
    _drop_index(path)
    async with open_runtime(path, read_only=True) as rt:
        reader = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        assert len(await reader.search("okapi", limit=100)) == 30


MARKED = st.lists(st.tuples(st.sampled_from(["ann", "bob", None]), st.sampled_from(["kiwi", "kiwi kiwi", "emu", "kiwi emu"])), max_size=25)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=MARKED, for_bob=MARKED, query=st.sampled_from(["kiwi", "emu", "kiwi emu"]))
def test_a_readers_answer_is_its_own_view_searched_and_nothing_of_another_readers_lines(tmp_path_factory, lines, for_bob, query):
    """Ann's answer is the brute-force search of her own view (same hits, same order); adding
    lines for bob alone changes nothing of it, not a score; no hit holds a line meant for bob."""
    folder = tmp_path_factory.mktemp("search")

    async def answer(extra: bool) -> tuple[SearchHit, ...]:
        async with open_runtime(str(folder / f"s{int(extra)}.db")) as rt:
            host, ann, _bob = await _managers(rt)
            for i, (reader, words) in enumerate(lines):
                await host.add_message("user", [text(f"{words} n{i}", None if reader is None else [reader])])
                if extra:
                    for j, (_r, bob_words) in enumerate(for_bob):
                        await host.add_message("user", [text(f"{bob_words} bobonly{i}x{j}", ["bob"])])
            hits = await ann.search(query, limit=1000)
            seen = [m for m in ann.view_messages()]
            wanted = set(query.split())
            expected = [m.id for m in seen if wanted <= set(m.content[0].text.split())]
            assert sorted(h.id for h in hits) == sorted(expected)
            assert all("bobonly" not in h.text for h in hits)
            return hits

    async def main() -> None:
        plain, crowded = await answer(False), await answer(True)
        assert [(h.text, h.score) for h in plain] == [(h.text, h.score) for h in crowded]

    trio.run(main)
