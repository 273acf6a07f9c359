"""``Runtime.store`` reads only; an integration's records go through a narrow, checked handle.

* ``Runtime.store`` is an ``asides.lowlevel.StoreReader``: it has no write member, no listener and
  no ``model`` (each is an ``AttributeError``, and none can be set on it), and each of its reads
  answers as the runtime's store does, refusals included, on both backends.
* ``Runtime.integration_records(prefix)`` writes state records under ``<prefix>/`` only: a key
  outside the prefix, or one that is a namespace's own record (reader, narrowing floor, strategy
  record, context entry), is refused with ``InvalidArgumentError`` and nothing is written; a
  malformed prefix is refused when the handle is asked for.
"""

from __future__ import annotations

import pytest
from helpers import dump, writable_store

from asides import AsidesDeprecationWarning, AsidesError, PassthroughStrategy, UnknownBranchError, open_runtime, text
from asides.lowlevel import IntegrationRecords, StoreReader

#: What the writable store has and the reader must not.
WRITES = (
    "append_message",
    "append_messages",
    "edit_message",
    "set_state",
    "set_states",
    "note_strategy",
    "create_branch",
    "erase",
    "record_disclosure",
    "restore_records",
    "add_listener",
    "model",
)


async def test_runtime_store_has_no_write_member_and_no_model(store_path):
    async with open_runtime(store_path) as rt:
        reader = rt.store
        assert isinstance(reader, StoreReader)
        for name in WRITES:
            assert hasattr(writable_store(rt), name), f"the premise: the store has {name}"
            with pytest.raises(AttributeError):
                getattr(reader, name)
            with pytest.raises(AttributeError):
                setattr(reader, name, None)
        assert not any(name in dir(reader) for name in WRITES)


async def test_reads_answer_as_the_store_does(store_path):
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        first = await ann.add_message("user", [text("hello"), text("for ann", ["ann"])], metadata={"n": 1})
        second = await ann.add_message("ann", [text("hi")])
        await ann.edit_message(second.id, [text("hi, edited")])
        await ann.compile(max_tokens=10_000)
        await ann.fork("side")
        await ann.add_message("user", [text("on the side")])
        await rt.integration_records("my-tool").create_branch("tool", "main", 1, meta={"made": "by a tool"})
        await rt.erase([first.id], reason="asked")
        store, reader = writable_store(rt), rt.store

        assert (reader.path, reader.read_only, reader.shared, reader.closed, reader.failed) == (
            store.path,
            store.read_only,
            store.shared,
            store.closed,
            store.failed,
        )
        assert reader.statistics() == store.statistics()
        with pytest.warns(AsidesDeprecationWarning, match=r"StoreReader\.commits is deprecated"):
            assert reader.commits == store.statistics().commits
        with pytest.warns(AsidesDeprecationWarning, match=r"StoreReader\.caught_up_records is deprecated"):
            assert reader.caught_up_records == store.statistics().caught_up_records
        assert reader.branches() == store.branches() and len(reader.branches()) == 3
        for branch in ("main", "side", "tool"):
            assert reader.has_branch(branch)
            assert reader.branch_info(branch) == store.branch_info(branch)
            assert reader.head(branch) == store.head(branch)
            assert reader.length(branch) == store.length(branch)
            assert reader.messages(branch) == store.messages(branch)
            assert reader.messages(branch, 1, 2) == store.messages(branch, 1, 2)
            assert reader.state_items(branch) == store.state_items(branch)
            assert reader.state_items(branch, "agents/") == store.state_items(branch, "agents/")
            assert reader.may_hold_audience(branch) == store.may_hold_audience(branch)
            assert reader.branch_meta(branch) == store.model.branch_meta(branch)
        assert reader.branch_meta("tool")["made"] == "by a tool"
        assert not reader.has_branch("nowhere")
        assert reader.get_state("main", "agents/ann/reader") == store.get_state("main", "agents/ann/reader") == "ann"
        assert reader.get_state("main", "no/such/key", 7) == 7
        for message_id in (first.id, second.id, "no such id"):
            assert reader.get_message("main", message_id) == store.get_message("main", message_id)
            assert reader.disclosures(message_id) == store.disclosures(message_id)
            assert reader.tombstone(message_id) == store.tombstone(message_id)
        assert reader.tombstone(first.id) is not None and reader.tombstone(second.id) is None
        assert reader.disclosures_to("ann") == store.disclosures_to("ann") and reader.disclosures_to("ann")
        assert reader.erasures() == store.erasures() and len(reader.erasures()) == 1
        await reader.sync()
        assert await reader.records() == await store.records()
        assert await reader.owed_vacuum() is None or store.shared
        reader.raise_if_failed()


async def test_reads_refuse_as_the_store_does(store_path):
    async with open_runtime(store_path) as rt:
        store, reader = writable_store(rt), rt.store
        for read in ("branch_info", "head", "length", "messages", "state_items", "branch_meta"):
            with pytest.raises(UnknownBranchError):
                getattr(reader, read)("nowhere")
        with pytest.raises(UnknownBranchError):
            store.branch_info("nowhere")
        with pytest.raises(AsidesError) as refused:
            reader.get_state("main", 3)  # type: ignore[arg-type]
        with pytest.raises(type(refused.value)):
            store.get_state("main", 3)


async def test_a_read_only_runtime_reads_what_a_writer_wrote(store_path):
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await manager.add_message("user", [text("kept")])
    async with open_runtime(store_path, read_only=True) as rt:
        assert rt.store.read_only
        assert [m.content for m in rt.store.messages("main")] == [(text("kept"),)]
        assert rt.store.get_state("main", "agents/ann/reader") == "ann"


@pytest.mark.parametrize(
    "key",
    [
        "my-tool/reader",  # the reader record of namespace "my-tool"
        "my-tool/agents/x/reader",
        "my-tool/x/narrowing-floor",
        "my-tool/x/strategy",
        "my-tool/x/compression-lease",
        "my-tool/x/context/3",  # entry 3 of namespace "my-tool/x"'s context log
        "agents/ann/reader",  # outside the prefix, and a namespace's own record
        "other/key",  # outside the prefix
        "my-tool",  # the prefix alone
        "my-tool/",  # nothing after the prefix
        "my-toolbox/key",  # a longer segment, not under the prefix
    ],
)
async def test_integration_records_refuse_a_namespace_record_and_keys_outside_the_prefix(store_path, key):
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await manager.add_message("user", [text("hello")])
        records = rt.integration_records("my-tool")
        before = dump(rt.store)
        with pytest.raises(AsidesError) as refused:
            await records.set_states("main", {"my-tool/fine": 1, key: "bob"})
        assert isinstance(refused.value, ValueError) and refused.value.path == "records"
        assert dump(rt.store) == before, "a refused write writes nothing"
        assert rt.store.get_state("main", "agents/ann/reader") == "ann"


async def test_integration_records_write_under_their_prefix(store_path):
    async with open_runtime(store_path) as rt:
        records = rt.integration_records("my-tool/agent")
        assert isinstance(records, IntegrationRecords) and records.prefix == "my-tool/agent"
        head = await records.set_states("main", {"my-tool/agent/session": {"start": 0}, "my-tool/agent/popped/17": True})
        assert head == rt.store.head("main")
        assert rt.store.state_items("main", "my-tool/") == {"my-tool/agent/session": {"start": 0}, "my-tool/agent/popped/17": True}
        info = await records.create_branch("conversation", "main", meta={"session": "s-1"})
        assert info == rt.store.branch_info("conversation") and rt.store.branch_meta("conversation")["session"] == "s-1"
        before = dump(rt.store)
        with pytest.raises(AsidesError):
            await records.set_states("main", {"my-tool/agent/bad": object()})
        with pytest.raises(AsidesError):
            await records.set_states("main", [("my-tool/agent/x", 1)])  # type: ignore[arg-type]
        assert dump(rt.store) == before


@pytest.mark.parametrize("prefix", ["", "/my-tool", "my-tool/", "my//tool", 3, None])
async def test_a_malformed_records_prefix_is_refused(prefix):
    async with open_runtime() as rt:
        with pytest.raises(AsidesError) as refused:
            rt.integration_records(prefix)
        assert refused.value.path == "prefix"
