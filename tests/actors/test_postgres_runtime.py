"""Runtimes sharing one PostgreSQL store: the guarantees that must hold across processes, with
several runtimes in one test (each has its own store and connections, as a process has).

Where a test must show the database deciding, not the notifications, it turns the listeners off
(``deaf``): a runtime then learns of the others' commits only when it commits or compiles.
Skipped, saying why, where PostgreSQL is not available."""

from __future__ import annotations

import pytest
import trio
import trio.testing
from helpers import make_deaf, namespace_actor, writable_store
from pg_checks import rows

from asides.actors import NarrowingRefusedError, ReaderClaimError, open_runtime
from asides.actors._commands import RaiseFloor
from asides.store import text
from asides.strategies._passthrough import PassthroughStrategy
from tests.actors.test_compression_readers import all_summary_texts, blocking_model, marker_model, memory, write_conversation


def reader_rows(url: str, key: str) -> list[str]:
    return [row[5] for row in rows(url) if row[3] == "state" and row[4] == key]


def compiled_texts(compiled) -> list[str]:
    return [b.text for m in compiled.messages for b in m.content]


# -- racing opens ------------------------------------------------------------------------------


@pytest.mark.parametrize("hearing", [True, False], ids=["listening", "deaf"])
async def test_racing_opens_in_several_runtimes_make_exactly_one_claim(pg_url, monkeypatch, hearing):
    if not hearing:
        make_deaf(monkeypatch)
    runtimes = 4
    outcomes: dict[str, object] = {}

    async def one(index: int, ready: trio.Event) -> None:
        async with open_runtime(pg_url) as rt:
            await ready.wait()
            reader = f"reader-{index}"
            try:
                await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader=reader)
                outcomes[reader] = "claimed"
            except ReaderClaimError as exc:
                outcomes[reader] = exc

    ready = trio.Event()
    async with trio.open_nursery() as nursery:
        for index in range(runtimes):
            nursery.start_soon(one, index, ready)
        await trio.testing.wait_all_tasks_blocked(0.2)
        ready.set()
    winners = [reader for reader, outcome in outcomes.items() if outcome == "claimed"]
    assert len(winners) == 1, outcomes
    losers = [outcome for outcome in outcomes.values() if outcome != "claimed"]
    assert all(isinstance(exc, ReaderClaimError) and exc.recorded == winners[0] for exc in losers)
    assert reader_rows(pg_url, "agents/x/reader") == [f'"{winners[0]}"']  # the losers wrote nothing


# -- claims made elsewhere -----------------------------------------------------------------------


async def test_a_claim_made_elsewhere_stops_the_drain_here_and_its_late_answer_is_thrown_away(pg_url):
    async with open_runtime(pg_url) as here, open_runtime(pg_url) as elsewhere:
        host = await here.open_manager("host", strategy=PassthroughStrategy())
        blocking, _summariser = blocking_model("STALE-ANSWER", shield=True)
        stale = await here.open_manager("agents/s", strategy=memory(), model=blocking)
        await write_conversation(host, 30, private={"ann": 3})
        await blocking.wait_for_request()
        actor = namespace_actor(here, "main", "agents/s")
        generation = actor.claim_generation
        ann = await elsewhere.open_manager("agents/s", strategy=memory(), view_reader="ann", model=marker_model("ANN-SUMMARY"))
        with trio.fail_after(30):
            await actor.wait_claim_change(generation)  # heard through the notification
        assert actor.record == "ann"
        blocking.open()
        await trio.testing.wait_all_tasks_blocked(0.05)
        await here.store.sync()
        await ann.drain()
        await elsewhere.store.sync()
        assert len(blocking.requests) == 1, "the stale manager asked its model nothing more"
        assert not any("STALE-ANSWER" in t for t in all_summary_texts(elsewhere.store)), "no summary from the late answer"
        with pytest.raises(ReaderClaimError):
            await stale.compile()


async def test_a_claim_made_elsewhere_refuses_a_stale_compile_even_unheard(pg_url, deaf):
    async with open_runtime(pg_url) as here, open_runtime(pg_url) as elsewhere:
        nobody = await here.open_manager("agents/x", strategy=PassthroughStrategy())
        await nobody.add_message("user", [text("hello")])
        await nobody.compile()
        await elsewhere.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        with pytest.raises(ReaderClaimError) as info:
            await nobody.compile()  # the compile catches up first, and adopts the claim
        assert info.value.recorded == "ann"


# -- the narrowing floor -------------------------------------------------------------------------

SHARED = [text("for ann and bob", ["ann", "bob"]), text("for all")]
NARROWED = [text("for ann and bob", ["bob"]), text("for all")]


async def test_a_floor_raised_elsewhere_before_an_edit_commits_refuses_it(pg_url, deaf):
    async with open_runtime(pg_url) as here, open_runtime(pg_url) as elsewhere:
        ann = await here.open_manager("agents/s", strategy=PassthroughStrategy(), view_reader="ann")
        message = await ann.add_message("user", SHARED)
        # Another process's actor records a compression read past the message; this runtime,
        # deaf, still holds floor 0 when the edit is checked, and learns of the raise at commit.
        await writable_store(elsewhere).set_state("main", "agents/s/narrowing-floor", message.sequence + 1)
        assert namespace_actor(here, "main", "agents/s").floor == 0
        with pytest.raises(NarrowingRefusedError, match="narrowing floor"):
            await ann.edit_message(message.id, NARROWED)
        assert here.store.get_message("main", message.id).content == message.content
        assert namespace_actor(here, "main", "agents/s").floor == message.sequence + 1
    async with open_runtime(pg_url) as reopened:
        assert reopened.store.get_message("main", message.id).content == message.content
        assert writable_store(reopened).model.edit_count("main") == 0


async def test_an_edit_committed_before_a_floor_raise_elsewhere_stands(pg_url, deaf):
    async with open_runtime(pg_url) as here, open_runtime(pg_url) as elsewhere:
        ann = await here.open_manager("agents/s", strategy=PassthroughStrategy(), view_reader="ann")
        message = await ann.add_message("user", SHARED)
        edited = await ann.edit_message(message.id, NARROWED)
        await writable_store(elsewhere).set_state("main", "agents/s/narrowing-floor", message.sequence + 1)
        await elsewhere.store.sync()
        assert elsewhere.store.get_message("main", message.id) == edited


async def test_a_floor_raise_never_lowers_the_floor_another_runtime_raised(pg_url, deaf):
    async with open_runtime(pg_url) as first, open_runtime(pg_url) as second:
        writer = await first.open_manager("host", strategy=PassthroughStrategy())
        for i in range(10):
            await writer.add_message("user", [text(f"m{i}")])
        for rt in (first, second):  # a manager keeps each runtime's actor of the namespace running
            await rt.open_manager("agents/s", strategy=PassthroughStrategy())
        high, low = (namespace_actor(rt, "main", "agents/s") for rt in (first, second))

        async def raise_to(actor, sequence: int) -> None:
            await actor.send(RaiseFloor(sequence, "ann"))

        await raise_to(high, 9)
        assert low.floor == 0  # deaf: it has not heard of the raise to 9
        await raise_to(low, 7)  # checked at commit against 9: writes nothing
        assert low.floor == 9
        async with trio.open_nursery() as nursery:  # and racing, in any order
            for sequence in (10, 4, 8, 2):
                nursery.start_soon(raise_to, (high, low)[sequence % 3 % 2], sequence)
        for rt in (first, second):
            await rt.store.sync()
            assert rt.store.get_state("main", "agents/s/narrowing-floor") == 10
        floors = [int(v) for v in reader_rows(pg_url, "agents/s/narrowing-floor")]
        assert floors == sorted(set(floors)), "every write raised the stored floor"


# -- seeing other runtimes' writes ------------------------------------------------------------------


async def test_a_compile_sees_every_message_committed_before_it_started(pg_url, deaf):
    async with open_runtime(pg_url) as here, open_runtime(pg_url) as elsewhere:
        mine = await here.open_manager("agents/a", strategy=PassthroughStrategy(), view_reader="ann")
        theirs = await elsewhere.open_manager("agents/b", strategy=PassthroughStrategy(), view_reader="bob")
        await theirs.add_message("bob", [text("from elsewhere")])
        first = await mine.compile()
        assert compiled_texts(first) == ["from elsewhere"]
        message = await theirs.add_message("bob", [text("second")])
        await theirs.edit_message(message.id, [text("second, edited")])
        assert compiled_texts(await mine.compile()) == ["from elsewhere", "second, edited"]
        assert len(mine.get_all_messages()) == 2  # the synchronous read answers what this runtime has seen
