"""``statistics()`` snapshots, in Trio's style (``trio.Lock.statistics()``): ``Store.statistics()``,
``NamespaceActor.statistics()`` and ``Runtime.statistics()`` each return a frozen object of what
is counted now, which does not change as the store, actor or runtime goes on. On both backends.

The counts are asserted exactly where a single process decides them (N writes awaited one after
another are N commits), and as bounds where scheduling decides them (concurrent writers share
commits: fewer commits than writes). Waits end on the condition itself (``helpers.eventually``),
never on a number of scheduler turns.
"""

from __future__ import annotations

import attrs
import pytest
import trio
from helpers import eventually, namespace_actor

from asides import AsidesDeprecationWarning, PassthroughStrategy, open_runtime, text
from asides.lowlevel import ActorStatistics, RuntimeStatistics, StoreStatistics, open_store
from tests.actors.test_compression_readers import blocking_model, memory, write_conversation


def _frozen(snapshot: object, field: str) -> None:
    """``snapshot`` refuses a change of ``field``."""
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        setattr(snapshot, field, 1_000)


# -- the store ----------------------------------------------------------------------------------


async def test_a_store_snapshot_counts_each_commit_and_does_not_change_afterwards(store_path):
    async with open_store(store_path) as store:
        before = store.statistics()
        assert isinstance(before, StoreStatistics)
        _frozen(before, "commits")
        for i in range(5):  # each awaited alone: one commit each
            await store.append_message("main", "user", (text(f"m{i}"),))
        await store.set_state("main", "ns/k", 1)
        after = store.statistics()
        assert after.commits - before.commits == 6
        assert (after.contended_commits, after.caught_up_records) == (0, 0), "one process: nothing contended, nothing caught up"
        # The old counters read the same counts, with a deprecation warning each.
        with pytest.warns(AsidesDeprecationWarning, match=r"Store\.commits is deprecated.*statistics\(\)\.commits"):
            assert store.commits == after.commits
        with pytest.warns(AsidesDeprecationWarning, match=r"Store\.caught_up_records is deprecated"):
            assert store.caught_up_records == after.caught_up_records
    closed = store.statistics()  # a closed store answers what it counted
    assert closed.commits == after.commits


async def test_a_refused_write_commits_nothing(store_path):
    async with open_store(store_path) as store:
        await store.append_message("main", "user", (text("one"),))
        before = store.statistics()

        def refuse() -> None:
            raise LookupError("refused")

        with pytest.raises(LookupError):
            await store.set_state("main", "ns/k", 1, guard=refuse)
        assert store.statistics() == before


async def test_concurrent_writers_share_commits(store_path):
    async with open_store(store_path) as store:
        before = store.statistics().commits

        async def writer(i: int) -> None:
            await store.append_message("main", f"writer{i}", (text(f"w{i}"),))

        async with trio.open_nursery() as nursery:
            for i in range(100):
                nursery.start_soon(writer, i)
        commits = store.statistics().commits - before
        assert store.head("main") == 100
        assert 1 <= commits < 100, "group commit: the writers shared commits"


async def test_a_store_counts_the_records_it_caught_up_with_from_another_writer(store_path):
    async with open_store(store_path) as writer:
        await writer.append_message("main", "user", (text("before the reader opened"),))
        async with open_store(store_path, read_only=True) as reader:
            assert reader.statistics().caught_up_records == 0, "what the open read is replayed, not caught up"
            await writer.append_messages("main", [("user", (text("two"),), None), ("user", (text("three"),), None)])
            await writer.set_state("main", "room/note", {"n": 1})
            await reader.catch_up()
            stats = reader.statistics()
            assert stats.caught_up_records == 3
            assert stats.commits == 0, "a read-only open commits nothing"
            with pytest.warns(AsidesDeprecationWarning):
                assert reader.caught_up_records == 3
        assert writer.statistics().caught_up_records == 0, "its own commits are not caught up with"
        if writer.shared:  # PostgreSQL: the documented attribute reads the snapshot
            assert writer.contended_commits == writer.statistics().contended_commits  # type: ignore[attr-defined]


# -- the namespace actor and the runtime ----------------------------------------------------------


async def test_an_actor_snapshot_counts_the_request_a_gated_model_holds(store_path):
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        gated, _summariser = blocking_model("HELD")
        manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=gated)
        await write_conversation(host, 30)
        await gated.wait_for_request()

        held = namespace_actor(rt, "main", "agents/s").statistics()
        assert isinstance(held, ActorStatistics)
        _frozen(held, "requests_out")
        assert (held.branch, held.namespace) == ("main", "agents/s")
        assert held.requests_out == 1 and held.drains == 1
        assert held.attached >= 1, "its manager is bound to it"
        assert held.claim_generation >= 1, "the open claimed the namespace for ann"
        assert held.commands_run >= 1 and not held.ended
        assert (held.written_elsewhere, held.lease_refusals) == (0, 0)

        runtime = rt.statistics()
        assert isinstance(runtime, RuntimeStatistics)
        _frozen(runtime, "running_actors")
        assert runtime.running_actors == rt.running_actors == len(runtime.actors) == 2
        assert runtime.open_managers == 2
        assert [(a.branch, a.namespace) for a in runtime.actors] == [("main", "agents/s"), ("main", "host")]
        assert runtime.actors[0] == held, "the runtime lists the actor's own snapshot"

        gated.open()
        await manager.drain()
        await eventually(lambda: rt.statistics().actors[0].requests_out == 0, what="the request came back")
        assert held.requests_out == 1, "a snapshot does not follow the actor"

        compiles = namespace_actor(rt, "main", "agents/s").statistics().commands_run
        await manager.compile()
        assert namespace_actor(rt, "main", "agents/s").statistics().commands_run > compiles, "a compile is a command"

        await manager.aclose()
        await host.aclose()
        await eventually(lambda: rt.statistics().running_actors == 0, what="every actor ended")
        assert rt.statistics() == RuntimeStatistics(running_actors=0, open_managers=0, actors=())
