"""A store's records read, restored and imported a page at a time: ``record_pages`` (every
record, from one snapshot, at most a page held), ``restore_records`` and ``import_messages`` (any
iterable, drawn a page at a time, in one commit), on both backends."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator

import pytest
import trio
from helpers import writable_store

from asides import PassthroughStrategy, open_runtime, text
from asides.lowlevel import open_store
from asides.store import InvalidArgumentError, InvalidNameError, StoreNotEmptyError
from asides.store._rows import RowTuple

BODY = "x" * 2000


def message_rows(count: int) -> Iterator[RowTuple]:
    """``count`` message records of about 2 KB each, made as they are drawn (the source holds none)."""
    for number in range(1, count + 1):
        content = [{"type": "text", "text": f"{number} {BODY}"}]
        body = json.dumps({"participant": "ann", "content": content, "metadata": {}, "timestamp": number}, separators=(",", ":"))
        yield (number, "main", number, "message", None, body)


def fresh(store_path: str, request: pytest.FixtureRequest, name: str) -> str:
    """Another empty store of the same backend as ``store_path``."""
    if store_path.startswith("postgresql://"):
        return str(request.getfixturevalue("pg_cluster").fresh_url())
    return store_path + f".{name}.db"


async def test_pages_hold_at_most_their_size_and_come_from_one_snapshot(store_path):
    async with open_runtime(store_path) as rt:
        store = rt.store  # the runtime's read-only handle reads them too
        manager = await rt.open_manager("agents/ann", strategy=PassthroughStrategy())
        for number in range(25):
            await manager.add_message("ann", [text(f"m{number}")])
        everything = await store.records()
        seen: list[RowTuple] = []
        async with store.record_pages(10) as pages:
            async for page in pages:
                assert 1 <= len(page) <= 10
                seen += page
                if len(seen) == 10:  # a write after the snapshot is not in it, by this process or not
                    await manager.add_message("bob", [text("later")])
        assert seen == everything
        assert len(await store.records()) == len(everything) + 1
        with pytest.raises(ValueError, match="at least one record"):
            async with store.record_pages(0):
                pass


async def test_a_restore_draws_a_page_at_a_time_and_holds_no_more(store_path, request):
    """What a restore holds follows its page, not the backup: four times the records add far
    less than four times the memory (the rows are made as drawn, the store's cache is small)."""
    peaks = []
    for count in (3000, 12000):
        target = fresh(store_path, request, f"n{count}")
        async with open_store(target, message_cache=50) as store:
            tracemalloc.start()
            try:
                await store.restore_records(message_rows(count))
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
            assert store.length("main") == count and store.messages("main", count - 1, count)[0].id == str(count)
    # Holding every row would take four times the first peak (2 KB a record); a page's worth, as much.
    assert peaks[1] < 1.5 * peaks[0], peaks


async def test_a_restore_whose_rows_fail_to_be_drawn_writes_nothing_and_the_store_goes_on(store_path, request):
    def failing() -> Iterator[RowTuple]:
        for row in message_rows(2500):
            if row[0] == 2200:
                raise ValueError("line 2200: cut short")
            yield row

    async with open_store(store_path) as store:
        with pytest.raises(ValueError, match="cut short"):
            await store.restore_records(failing())
        assert await store.records() == [] and store.head("main") == 0
        await store.restore_records(message_rows(2500))  # usable: a refusal stopped nothing
        assert store.length("main") == 2500
        with pytest.raises(StoreNotEmptyError):
            await store.restore_records(message_rows(1))
    async with open_store(store_path) as reopened:
        assert len(await reopened.records()) == 2500


async def test_a_write_during_a_restore_waits_and_follows_it(store_path):
    """Nothing acknowledged is lost, and nothing takes a restored record's id: a write made while
    a restore is drawing its pages commits after it, numbered after its records."""
    drawing = trio.Event()

    def rows() -> Iterator[RowTuple]:
        for row in message_rows(3000):
            if row[0] == 1500:
                drawing.set()
            yield row

    async with open_store(store_path) as store:
        written = []

        async def write_meanwhile() -> None:
            await drawing.wait()
            written.append(await store.append_message("main", "bob", (text("meanwhile"),)))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(write_meanwhile)
            await store.restore_records(rows())
        (message,) = written
        assert (message.id, message.sequence) == ("3001", 3001)
    async with open_store(store_path) as reopened:
        records = await reopened.records()
        assert [r[0] for r in records] == list(range(1, 3002)) and records[-1][3] == "message"


def message_items(count: int, *, failing_at: int | None = None) -> Iterator[tuple[str, tuple, dict, float]]:
    """``count`` messages to append, about 2 KB each, made as they are drawn; raising at
    ``failing_at`` (a file found malformed there)."""
    for number in range(1, count + 1):
        if number == failing_at:
            raise ValueError(f"line {number}: cut short")
        yield ("ann", (text(f"{number} {BODY}"),), {}, float(number))


async def test_an_import_draws_a_page_at_a_time_and_holds_no_more(store_path, request):
    peaks = []
    for count in (3000, 12000):
        target = fresh(store_path, request, f"import{count}")
        async with open_store(target, message_cache=50) as store:
            await store.append_message("main", "host", (text("before"),))
            tracemalloc.start()
            try:
                ids = await store.import_messages("main", message_items(count))
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
            assert (ids.start, len(ids)) == (2, count) and store.length("main") == count + 1
            last = store.messages("main", count, count + 1)[0]
            assert (last.id, last.sequence, last.content[0].text.split(" ")[0]) == (str(count + 1), count + 1, str(count))
    # Holding every message would take four times the first peak (2 KB a message); a page's worth, as much.
    assert peaks[1] < 1.5 * peaks[0], peaks


async def test_an_import_that_fails_to_draw_writes_nothing_and_a_write_meanwhile_follows_it(store_path):
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/ann", strategy=PassthroughStrategy())
        await manager.add_message("host", [text("before")])
        store = writable_store(rt)
        records = await store.records()
        with pytest.raises(ValueError, match="line 1500"):
            await store.import_messages("main", message_items(2000, failing_at=1500))
        assert store.length("main") == 1 and await store.records() == records
        drawing = trio.Event()

        def items() -> Iterator[tuple[str, tuple, dict, float]]:
            for item in message_items(2500):
                if item[3] == 1200:
                    drawing.set()
                yield item

        async def write_meanwhile() -> None:
            await drawing.wait()
            await manager.add_message("bob", [text("meanwhile")])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(write_meanwhile)
            await store.import_messages("main", items())
        seen = manager.view_messages()
        assert len(seen) == 2502 and seen[-1].participant == "bob" and seen[-2].content[0].text.startswith("2500 ")
        compiled = await manager.compile(max_tokens=10_000_000)  # the manager heard of every message
        assert len(compiled.messages) == 2502


async def test_an_import_names_a_refused_item_by_its_place_and_writes_nothing(store_path):
    def items() -> Iterator[tuple]:
        yield from message_items(1500)
        yield ("ann", (text("no metadata"),))  # not (participant, content, metadata[, timestamp])

    async with open_store(store_path) as store:
        with pytest.raises(InvalidArgumentError) as refused:
            await store.import_messages("main", items())
        assert refused.value.path == "items[1500]"
        with pytest.raises(InvalidNameError):
            await store.import_messages("main", [("", (text("x"),), {})])
        assert await store.records() == [] and store.head("main") == 0


async def test_an_import_cancelled_while_it_draws_completes_and_returns(store_path):
    """A cancel that comes while an import draws its items does not cut it short (a write once
    begun completes, as a durable append does): the call returns with every message written,
    and the cancel lands at the caller's next checkpoint. Never a part of it."""
    async with open_store(store_path) as store:
        returned = False
        with trio.CancelScope() as scope:

            def items() -> Iterator[tuple[str, tuple, dict, float]]:
                for item in message_items(2500):
                    if item[3] == 1200:
                        scope.cancel()
                    yield item

            ids = await store.import_messages("main", items())
            returned = True
            await trio.lowlevel.checkpoint()
        assert returned and scope.cancelled_caught and len(ids) == 2500 and store.length("main") == 2500
    async with open_store(store_path) as reopened:
        assert reopened.length("main") == 2500
