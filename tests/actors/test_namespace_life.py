"""A namespace actor's life (issue 19, item 7): an actor with no manager and no work ends, its
task and memory go, and reopening the namespace brings it back from the store.

Counts, never times: tasks are counted by walking Trio's task tree, memory by the interpreter's
allocated blocks (``sys.getallocatedblocks()``) and by counting live ``NamespaceActor`` objects.
The long test measures growth between cycle 1,000 and cycle 10,000, so that what the first
cycles warm up (caches, interned names) is no part of it.

The races: a manager opening while its namespace's actor is ending (either order of the two),
a drain still running when its manager lets go (the actor stays until the drain ends), and a
claim another process writes while no actor of the namespace runs here (PostgreSQL).
"""

from __future__ import annotations

import gc
import sys

import pytest
import trio
import trio.testing
from helpers import abandon, eventually, namespace_actor, writable_store

from asides.actors import NarrowingRefusedError, ReaderClaimError, open_runtime
from asides.actors._namespace import NamespaceActor
from asides.store import text
from asides.strategies._passthrough import PassthroughStrategy
from tests.actors.test_compression_readers import BIG, blocking_model, compiled_text, marker_model, memory, write_conversation

CYCLES = 10_000
WARM = 1_000


def task_count() -> int:
    """Every task of the running Trio run, by walking its task tree from the root."""
    count, stack = 0, [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        count += 1
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)
    return count


def live_actors(rt: object) -> int:
    """Live actor objects of ``rt``'s store (another test's leftovers in this process, such as a
    shared OpenAI Agents host, are not counted)."""
    gc.collect()
    store = writable_store(rt)
    return sum(1 for o in gc.get_objects() if isinstance(o, NamespaceActor) and o.store is store)


async def settle() -> None:
    """Let every task that can run, run (an actor with nothing left to do ends)."""
    await trio.testing.wait_all_tasks_blocked()


@pytest.mark.timeout(300)
async def test_ten_thousand_namespaces_opened_and_closed_leave_the_tasks_and_the_memory_flat(store_path):
    async with open_runtime(store_path) as rt:
        strategy = PassthroughStrategy()
        marks: dict[int, tuple[int, int, int, int]] = {}
        for i in range(1, CYCLES + 1):
            manager = await rt.open_manager(f"conversation-{i}", strategy=strategy)
            await manager.aclose()
            del manager
            if i in (WARM, CYCLES):
                await settle()
                actors = live_actors(rt)
                marks[i] = (task_count(), rt.running_actors, actors, sys.getallocatedblocks())
        (tasks_warm, running_warm, actors_warm, blocks_warm), (tasks_end, running_end, actors_end, blocks_end) = (
            marks[WARM],
            marks[CYCLES],
        )
        assert running_warm == running_end == 0, "no actor runs once its namespace has no manager"
        assert actors_warm == actors_end == 0, "no actor object is left"
        assert tasks_end == tasks_warm, f"tasks grew from {tasks_warm} to {tasks_end}"
        # 9,000 cycles: a leak of one small object a cycle would be 9,000 blocks or more (the
        # leak this fixes was about 100 blocks, 9.6 KB, a namespace).
        growth = blocks_end - blocks_warm
        assert growth < (CYCLES - WARM) // 2, f"{growth} more allocated blocks after {CYCLES - WARM} more namespaces"


async def test_a_namespace_brought_back_keeps_its_claim_its_floor_and_its_strategy_state(store_path):
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        ann = await rt.open_manager("agents/ann", strategy=memory(), view_reader="ann", model=marker_model("ANN"))
        shared = await host.add_message("user", [text("for ann and bob", ["ann", "bob"]), text("for all")])
        await write_conversation(host, 30, private={"ann": 4})
        await ann.drain()
        floor = namespace_actor(rt, "main", "agents/ann").floor
        summaries = [s.id for s in ann.get_summaries_in_range()]
        compiled = compiled_text(await ann.compile(**BIG))
        assert isinstance(floor, int) and floor > shared.sequence and summaries
        await ann.aclose()
        await eventually(lambda: rt.running_actors == 1, what="only the host's namespace has an actor now")

        with pytest.raises(ReaderClaimError) as refused:
            await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="bob")
        assert refused.value.recorded == "ann"
        again = await rt.open_manager("agents/ann", strategy=memory(), model=marker_model("AGAIN"))
        assert again.view_reader == "ann", "the claim came back from the store"
        assert namespace_actor(rt, "main", "agents/ann").floor == floor, "the floor came back from the store"
        assert [s.id for s in again.get_summaries_in_range()] == summaries, "the strategy state came back"
        assert compiled_text(await again.compile(**BIG)) == compiled
        with pytest.raises(NarrowingRefusedError, match="narrowing floor"):
            await again.edit_message(shared.id, [text("for ann and bob", ["bob"]), text("for all")])


async def test_a_manager_opening_while_the_actor_ends_gets_a_running_actor(store_path):
    async with open_runtime(store_path) as rt:
        first = await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        actor = namespace_actor(rt, "main", "agents/x")
        await first.aclose()
        # The actor has been told to look whether it may end, and has not looked yet: this open
        # binds to it first, so it stays.
        second = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
        await settle()
        assert namespace_actor(rt, "main", "agents/x") is actor and not actor.ended
        await second.add_message("user", [text("hello")])
        assert [m.content for m in second.view_messages()] == [(text("hello"),)]
        await second.aclose()
        await eventually(lambda: actor.ended and rt.running_actors == 0, what="the actor ended")
        # Once it ended, an open starts another, from the store.
        third = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
        assert namespace_actor(rt, "main", "agents/x") is not actor and third.view_reader == "ann"
        # Many tasks opening and closing the namespace at once: every one sees the claim.
        readers: list[str | None] = []

        async def cycle() -> None:
            for _ in range(20):
                manager = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
                readers.append(manager.view_reader)
                await trio.sleep(0)
                await manager.aclose()

        await third.aclose()
        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(cycle)
        await eventually(lambda: rt.running_actors == 0, what="every actor ended")
        assert readers == ["ann"] * 160


async def test_an_actor_stays_while_a_drain_of_its_namespace_runs_and_ends_after_it(store_path):
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        blocking, summariser = blocking_model("LATE", shield=True)
        manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=blocking)
        await write_conversation(host, 30)
        await blocking.wait_for_request()
        actor = namespace_actor(rt, "main", "agents/s")
        abandon(manager)  # let go at once, its drain cancelled but still waiting for the shielded request
        await settle()
        assert not actor.ended and namespace_actor(rt, "main", "agents/s") is actor, "the drain still runs: the actor stays"
        blocking.open()
        await eventually(lambda: actor.ended, what="the drain ended: nothing uses the actor")
        assert len(summariser.answers) == 1
        assert rt.running_actors == 1  # the host's


async def test_a_claim_written_elsewhere_while_no_actor_runs_here_is_read_when_one_starts(pg_url):
    async with open_runtime(pg_url) as here, open_runtime(pg_url) as elsewhere:
        nobody = await here.open_manager("agents/x", strategy=PassthroughStrategy())
        await nobody.add_message("user", [text("hello")])
        await nobody.aclose()
        await eventually(lambda: here.running_actors == 0, what="every actor here ended")
        await elsewhere.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        await here.store.sync()
        with pytest.raises(ReaderClaimError) as refused:
            await here.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="bob")
        assert refused.value.recorded == "ann"
        again = await here.open_manager("agents/x", strategy=PassthroughStrategy())
        assert again.view_reader == "ann"


async def test_a_claim_written_elsewhere_while_the_actor_here_ends_is_not_lost(pg_url, deaf):
    async with open_runtime(pg_url) as here, open_runtime(pg_url) as elsewhere:
        first = await here.open_manager("agents/x", strategy=PassthroughStrategy())
        await elsewhere.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        await first.aclose()  # deaf: this runtime has not heard of the claim, and its actor ends
        await settle()
        with pytest.raises(ReaderClaimError) as refused:  # the claim is decided at commit
            await here.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="bob")
        assert refused.value.recorded == "ann"
        assert (await here.open_manager("agents/x", strategy=PassthroughStrategy())).view_reader == "ann"


async def test_an_actor_that_ends_gives_its_compression_lease_up(pg_url):
    """A drain stopped in the middle of a unit (its manager let go while a shielded request is
    out) keeps the namespace's compression lease: the unit may still write under it. Once the
    request is back and nothing uses the actor, the actor ends and gives the lease up, so
    another process may compress the namespace at once."""
    from asides.actors._lease import lease_holders

    async with open_runtime(pg_url) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        blocking, _summariser = blocking_model("LATE", shield=True)
        manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=blocking)
        await write_conversation(host, 30)
        await blocking.wait_for_request()
        actor = namespace_actor(rt, "main", "agents/s")
        abandon(manager)
        await settle()
        assert not actor.ended
        assert await lease_holders(writable_store(rt), [("main", "agents/s")]), "still held while the unit's request is out"
        blocking.open()
        await eventually(lambda: actor.ended, what="the actor ended with its drain")
        await rt.store.sync()  # the release reached the server with the committer's round
        assert await lease_holders(writable_store(rt), [("main", "agents/s")]) == {}, "given up as the actor ended"
