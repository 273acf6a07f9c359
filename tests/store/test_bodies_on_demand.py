"""A store file's open leaves in the file the body of every message that names no reader, and a
read of such a message reads its body then, keeping at most ``message_cache`` of them decoded.

Held against the store as written: every reader's view of a file reopened with a cache of a few
messages (so nearly every read goes to the file) reads what the writer's own views read, over
random writes, edits, erasures and forks."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings

from asides import ArgumentTypeError, InvalidArgumentError, PassthroughStrategy, StoreFailedError, open_runtime, text
from asides.lowlevel import MessageView, open_store
from tests.helpers import writable_store
from tests.store.test_sparse_views import OPS, READERS, write_ops


async def write_long(path: str, count: int) -> None:
    async with open_store(path) as store:
        await store.append_messages(
            "main",
            [("user", (text(f"m{i}"), *((text(f"for ann {i}", ["ann"]),) if i % 100 == 0 else ())), None) for i in range(count)],
        )


async def test_an_open_of_a_file_reads_no_message_and_reads_each_back_when_asked(tmp_path):
    path = str(tmp_path / "long.db")
    await write_long(path, 3000)
    async with open_store(path, message_cache=50) as store:
        opened = store.statistics()
        assert (opened.records_read_at_open, opened.messages_read, opened.messages_in_memory) == (0, 0, 0)
        assert store.model.length("main") == 3000
        assert [m.content[0].text for m in store.messages("main", 2997, 3000)] == ["m2997", "m2998", "m2999"]
        for i in range(0, 3000, 7):  # one at a time, from the file
            assert store.messages("main", i, i + 1)[0].content[0].text == f"m{i}"
        assert store.statistics().messages_in_memory <= 50, "no more than the cache stays decoded"
        assert len(store.messages("main")) == 3000  # a whole read still reads everything, in batches
        assert store.statistics().messages_in_memory <= 50
        message = await store.append_message("main", "user", (text("new"),))
        assert store.get_message("main", message.id) is message  # what is written stays in memory while cached


async def test_a_runtime_over_a_long_file_compiles_the_newest_reading_only_them(tmp_path):
    path = str(tmp_path / "long.db")
    await write_long(path, 3000)
    async with open_runtime(path, message_cache=100) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        compiled = await ann.compile(max_tokens=2_000, reserve_for_response=0)
        assert compiled.messages[-1].content[0].text == "m2999"
        assert writable_store(rt).statistics().messages_in_memory <= 100


@pytest.mark.parametrize(
    ("value", "error"), [(0, InvalidArgumentError), (-5, InvalidArgumentError), ("10", ArgumentTypeError), (True, ArgumentTypeError)]
)
async def test_a_bad_message_cache_is_refused_before_anything_is_opened(tmp_path, value, error):
    path = tmp_path / "never.db"
    with pytest.raises(error, match="message_cache"):
        async with open_store(str(path), message_cache=value):
            pass  # pragma: no cover
    assert not path.exists()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(ops=OPS)
def test_a_file_read_back_through_a_tiny_cache_reads_as_written(ops):
    async def run(path: str) -> None:
        async with open_store(path) as store:
            model = store.model
            branches = await write_ops(store, ops)
            async with open_store(path, read_only=True, message_cache=3) as reopened:
                for branch in branches:
                    for reader in READERS:
                        written = MessageView(model, branch, reader=reader)
                        read = MessageView(reopened.model, branch, reader=reader)
                        expected = written.get_all()
                        assert [read.at(i) for i in range(read.length())] == list(expected), (branch, reader)
                        assert read.get_all() == expected
                        assert read.hidden_tool_ids() == written.hidden_tool_ids()
                        for position in range(model.length(branch)):
                            message_id = model.id_at(branch, position)
                            assert read.position_of(message_id) == written.position_of(message_id)

    with tempfile.TemporaryDirectory() as folder:
        trio.run(run, str(Path(folder) / "store.db"))


async def test_a_body_the_file_can_no_longer_give_is_a_store_error_naming_it(tmp_path):
    """The file went away under a read-only open: reading a message whose body stayed in it
    raises ``StoreFailedError`` naming the file, not a bare ``sqlite3`` error."""
    path = tmp_path / "gone.db"
    await write_long(str(path), 200)
    async with open_store(str(path), read_only=True) as store:
        for leftover in tmp_path.iterdir():
            leftover.unlink()
        with pytest.raises(StoreFailedError, match="gone.db"):
            store.messages("main", 5, 6)


async def test_a_read_only_open_with_no_writer_refuses_bodies_once_a_writer_changed_the_file(tmp_path):
    """Opened read-only while no writer held it (SQLite's immutable mode), a store whose file a
    writer changed since refuses to read bodies it left there, as its other reads do, rather than
    read pages the writer may have moved."""
    path = str(tmp_path / "changed.db")
    await write_long(path, 200)
    async with open_store(path, read_only=True) as reader:
        assert reader.messages("main", 0, 1)[0].content[0].text == "m0"  # read before any writer came
        await write_long(path, 500)  # a writer opens, appends and closes (its close checkpoints)
        with pytest.raises(StoreFailedError, match="immutable mode"):
            reader.messages("main", 150, 151)


async def test_a_postgres_open_reads_no_message_and_reads_each_back_when_asked(pg_url):
    """As a store file's: the open reads no message, a read of one reads it then (one round trip
    for a batch), and at most ``message_cache`` stay decoded."""
    await write_long(pg_url, 3000)
    async with open_store(pg_url, message_cache=50) as store:
        opened = store.statistics()
        assert (opened.records_read_at_open, opened.messages_read, opened.messages_in_memory) == (0, 0, 0)
        assert [m.content[0].text for m in store.messages("main", 2997, 3000)] == ["m2997", "m2998", "m2999"]
        for i in range(0, 3000, 97):
            assert store.messages("main", i, i + 1)[0].content[0].text == f"m{i}"
        assert store.statistics().messages_in_memory <= 50
        assert [m.content[0].text for m in store.messages("main")] == [f"m{i}" for i in range(3000)]
        message = await store.append_message("main", "user", (text("new"),))
        assert store.get_message("main", message.id) is message
    async with open_store(pg_url, read_only=True, message_cache=5) as reader:
        assert reader.messages("main", 1234, 1235)[0].content[0].text == "m1234"
