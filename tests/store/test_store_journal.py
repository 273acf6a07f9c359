"""One store over a small journal (issue 20, item 5): the store class holds the model, the write
checks and the listener rule; a journal (SQLite, PostgreSQL) only numbers, commits, applies and
catches up. Both backends behave the same through the one class, and a journal of a few lines
(a list in memory, as httpcore's mock backend) is enough to drive it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import pytest

from asides import text
from asides.lowlevel import open_store
from asides.store import BranchExistsError, StoreFailedError
from asides.store._events import MessagesAppended, StatesWritten, StoreEvent
from asides.store._model import LogModel
from asides.store._rows import PendingRow, RowTuple, apply_rows, number_rows
from asides.store._store import Store


class Refused(Exception):
    pass


def _refuse() -> None:
    raise Refused("no")


# -- both backends, through the public API ------------------------------------------------------


async def test_both_stores_are_the_one_store_and_a_refusing_guard_writes_nothing(store_path):
    async with open_store(store_path) as store:
        assert isinstance(store, Store)
        await store.append_message("main", "ann", (text("hello"),))
        head, records = store.head("main"), await store.records()
        with pytest.raises(Refused):
            await store.set_state("main", "k", 1, guard=_refuse)
        with pytest.raises(Refused):
            await store.edit_message("main", "1", (text("changed"),), guard=_refuse)
        assert (store.head("main"), await store.records()) == (head, records)
        assert store.get_message("main", "1").content == (text("hello"),)  # type: ignore[union-attr]
        assert await store.set_state("main", "k", 2, guard=lambda: None) == head + 1
    async with open_store(store_path) as reopened:
        assert reopened.get_state("main", "k") == 2 and reopened.head("main") == head + 1


async def test_both_stores_keep_the_one_listener_rule(store_path, caplog):
    """A listener's exception is logged, the listeners after it still hear the event, and the
    write stands in memory and on disk."""
    heard: list[StoreEvent] = []

    def failing(event: StoreEvent) -> None:
        raise RuntimeError("listener broke")

    async with open_store(store_path) as store:
        store.add_listener(failing)
        store.add_listener(heard.append)
        with caplog.at_level(logging.ERROR, logger="asides.store"):
            (message,) = await store.append_messages("main", [("ann", (text("kept"),), None)])
        assert [type(e) for e in heard] == [MessagesAppended] and heard[0].messages == (message,)  # type: ignore[attr-defined]
        assert "listener broke" in caplog.text
    async with open_store(store_path) as reopened:
        assert [m.content for m in reopened.messages("main")] == [(text("kept"),)]


# -- a journal in memory ------------------------------------------------------------------------


class ListJournal:
    """A journal that keeps its records in a list: the whole interface, and nothing else. It
    orders writes itself (one process), so it applies each write where it is handed over."""

    shared = False
    read_only = False

    def __init__(self, model: LogModel, records: list[RowTuple] | None = None) -> None:
        self.path = "list:"
        self.commits = 0
        self.contended_commits = 0
        self.caught_up_records = 0
        self.failure: BaseException | None = None
        self.closed = False
        self.records_ = records if records is not None else []
        self._model = model
        self._tell: Callable[[StoreEvent], None] = lambda event: None

    async def replay(self) -> None:
        self._model.replay(self.records_)

    @asynccontextmanager
    async def serving(self, tell: Callable[[StoreEvent], None]) -> AsyncIterator[None]:
        self._tell = tell
        try:
            yield
        finally:
            self.closed = True

    async def close(self) -> None:
        self.closed = True

    async def commit(
        self, rows: list[PendingRow], *, guard: Callable[[], None] | None = None, recheck: Any = None, durable: bool = True
    ) -> range:
        if recheck is not None:
            recheck(self._model)
        if guard is not None:
            guard()
        first = self._model.next_id
        numbered, encoded = number_rows(self._model, first, (rows,))
        events = apply_rows(self._model, numbered, encoded=encoded)
        self.records_.extend(numbered)
        self.commits += 1
        for event in events:
            self._tell(event)
        return range(first, first + len(numbered))

    async def erase(self, message_ids: Sequence[str], reason: str, at: float) -> Any:
        raise NotImplementedError  # this journal cannot overwrite records

    async def restore(self, pages: Iterable[Sequence[RowTuple]]) -> None:
        drawn = [row for page in pages for row in page]  # every page drawn before any is kept
        self._model.replay(drawn)
        self.records_.extend(drawn)

    async def catch_up(self) -> int:
        return 0

    async def sync(self) -> None:
        return None

    async def append_pages(self, branch: str, pages: Iterable[Sequence[PendingRow]]) -> range:
        drawn = [row for page in pages for row in page]  # every page drawn before any is kept
        first = self._model.next_id
        numbered, _encoded = number_rows(self._model, first, (drawn,))
        for event in apply_rows(self._model, numbered):
            self._tell(event)
        self.records_.extend(numbered)
        self.commits += 1
        return range(first, first + len(numbered))

    @asynccontextmanager
    async def record_pages(self, size: int) -> AsyncIterator[Callable[[], Awaitable[list[RowTuple]]]]:
        pages = iter([self.records_[start : start + size] for start in range(0, len(self.records_), size)])

        async def next_page() -> list[RowTuple]:
            return next(pages, [])

        yield next_page

    async def compact_disclosed(self) -> tuple[int, int]:
        return 0, 0  # it keeps no runs beside its records


@asynccontextmanager
async def list_store(records: list[RowTuple] | None = None) -> AsyncIterator[tuple[Store, ListJournal]]:
    model = LogModel()
    journal = ListJournal(model, records)
    await journal.replay()
    store = Store(journal, model)
    async with store._serving():
        yield store, journal


async def test_a_journal_in_a_list_drives_the_one_store():
    heard: list[StoreEvent] = []
    async with list_store() as (store, journal):
        store.add_listener(heard.append)
        assert not store.shared and store.path == "list:"
        first, second = await store.append_messages("main", [("ann", (text("one"),), None), ("bob", (text("two"),), {"k": 1})])
        assert (first.id, first.sequence, second.sequence, second.metadata) == ("1", 1, 2, {"k": 1})
        branch = await store.create_branch("side", "main", 1, meta={"why": "test"})
        assert branch.fork_sequence == 1
        with pytest.raises(BranchExistsError):
            await store.create_branch("side", "main")
        await store.edit_message("main", "2", (text("two, edited"),), states={"ns/x": [1]})
        with pytest.raises(Refused):
            await store.set_state("main", "ns/x", 2, guard=_refuse)
        assert store.get_state("main", "ns/x") == [1] and store.statistics().commits == 3
        assert [type(e).__name__ for e in heard] == ["MessagesAppended", "BranchCreated", "MessageEdited", "StatesWritten"]
        assert isinstance(heard[-1], StatesWritten) and heard[-1].keys == ("ns/x",)
        records = await store.records()
    assert store.closed
    # What the journal holds is what a reopen reads, and the store answers the same from it.
    async with list_store(records) as (again, _):
        assert [m.content for m in again.messages("main")] == [(text("one"),), (text("two, edited"),)]
        assert again.branch_info("side").fork_sequence == 1 and again.get_state("main", "ns/x") == [1]
    # The same writes through a store file keep the same records, ids and sequences.
    async with open_store(":memory:") as sqlite:
        await sqlite.restore_records(records)
        assert await sqlite.records() == records


async def test_a_stopped_journal_stops_the_store():
    async with list_store() as (store, journal):
        journal.failure = OSError("disk gone")
        with pytest.raises(StoreFailedError, match="reopen it"):
            store.head("main")
        with pytest.raises(StoreFailedError):
            await store.append_message("main", "ann", (text("lost"),))
        assert journal.records_ == []
