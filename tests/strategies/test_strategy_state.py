"""``StrategyState`` made by hand: it reads through a store's reads alone (``Runtime.store``, a
``StoreReader``) and, with no writer, refuses every write after checking its keys, writing
nothing. The runtime's own states write through the namespace actor (tests/actors/)."""

from __future__ import annotations

import pytest

from asides import InvalidArgumentError, PassthroughStrategy, open_runtime, text
from asides.actors._records import NAMESPACE_RECORDS
from asides.lowlevel import StrategyState, open_store


async def test_a_state_with_no_writer_reads_through_the_store_reader_and_refuses_writes(store_path):
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/s", strategy=PassthroughStrategy(), view_reader="ann")
        await manager.add_message("user", [text("hello")])
        state = StrategyState(rt.store, "main", "agents/s", keys=NAMESPACE_RECORDS)
        assert state.get("missing", "default") == "default"
        assert state.items() == {}  # the namespace's own reader record is not a strategy's
        before = rt.store.state_items("main")
        head = rt.store.head("main")
        with pytest.raises(ValueError, match="narrowing-floor"):  # the key check comes first
            await state.set("mine/narrowing-floor", 1)
        with pytest.raises(InvalidArgumentError, match="no writer") as info:
            await state.set_many({"notes/1": "a note", "notes/2": "another"})
        assert "'agents/s'" in str(info.value) and "'main'" in str(info.value)
        assert rt.store.state_items("main") == before and rt.store.head("main") == head


class TwoReads:
    """An object with a store's two state reads and nothing else."""

    def __init__(self, records: dict[str, object]) -> None:
        self.records = records

    def get_state(self, branch: str, key: str, default: object = None) -> object:
        return self.records.get(key, default)

    def state_items(self, branch: str, prefix: str = "") -> dict[str, object]:
        return {k: v for k, v in self.records.items() if k.startswith(prefix)}


async def test_keys_and_get_many_read_through_a_store_reader_and_through_two_reads_alike(store_path):
    records = {"agents/s/notes/2": "b", "agents/s/notes/1": "a", "agents/t/notes/1": "other", "agents/s/x/narrowing-floor": 3}
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/s", strategy=PassthroughStrategy(), view_reader="ann")
        await manager.add_message("user", [text("hello")])
        own = StrategyState(rt.store, "main", "agents/s", keys=NAMESPACE_RECORDS)
        assert own.keys() == [] and own.get_many(["notes/1"]) == {}, "the namespace's own reader record is not a strategy's"
        two = StrategyState(TwoReads(records), "main", "agents/s", keys=NAMESPACE_RECORDS)
        assert two.keys() == ["notes/1", "notes/2"], "sorted, and never a namespace's own record"
        assert two.get_many(["notes/2", "notes/9"]) == {"notes/2": "b"}
        with pytest.raises(ValueError, match="narrowing-floor"):
            two.get_many(["mine/narrowing-floor"])


async def test_sequences_give_where_each_record_was_written_and_erasure_count_counts_erasures(store_path):
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/s", strategy=PassthroughStrategy(), view_reader="ann")
        message = await manager.add_message("user", [text("hello")])
    async with open_store(store_path) as store:
        head = store.head("main")
        writes = {"notes/b": 1, "notes/a": 2, "other/c": 3}
        await store.set_states("main", {f"agents/s/{k}": v for k, v in writes.items()})
        await store.set_states("main", {"agents/s/notes/b": 4, "agents/t/notes/a": 5})
        state = StrategyState(store, "main", "agents/s", keys=NAMESPACE_RECORDS)
        read = store.statistics().state_values_read
        assert state.sequences("notes/") == {"notes/b": head + 4, "notes/a": head + 2}, "each key's newest, in the order written"
        assert state.sequences() == {"notes/b": head + 4, "notes/a": head + 2, "other/c": head + 3}, "never the reader record"
        assert store.statistics().state_values_read == read, "no value read"
        assert state.erasure_count == 0
        await store.create_branch("child", "main", head + 3)  # sees notes/a and other/c, not notes/b's versions
        await store.set_states("child", {"agents/s/notes/a": 6})
    async with open_store(store_path) as store:  # read back from the database, on the child as on main
        child = StrategyState(store, "child", "agents/s", keys=NAMESPACE_RECORDS)
        assert child.sequences() == {"notes/b": head + 1, "notes/a": head + 4, "other/c": head + 3}, "its own, then main's to the fork"
        main = StrategyState(store, "main", "agents/s", keys=NAMESPACE_RECORDS)
        assert main.sequences("notes/") == {"notes/b": head + 4, "notes/a": head + 2}
        read = store.statistics().state_versions_read
        assert main.sequences_after("notes/", head + 3) == (1, {"notes/b": head + 4}), "notes/a counted, notes/b given"
        assert store.statistics().state_versions_read - read <= 1, "a row for the key written after alone"
        assert main.sequences_after("notes/", head + 4) == (2, {})
        assert child.sequences_after("notes/", head + 3) == (1, {"notes/a": head + 4}), "on a fork as well"
    async with open_runtime(store_path) as rt:
        await rt.erase([message.id], reason="asked to")
        assert StrategyState(rt.store, "main", "agents/s", keys=NAMESPACE_RECORDS).erasure_count == 1
    two = StrategyState(TwoReads({"agents/s/notes/a": 1}), "main", "agents/s", keys=NAMESPACE_RECORDS)
    assert two.sequences() is None and two.sequences_after("", 0) is None and two.erasure_count is None, "reads that do not say"
