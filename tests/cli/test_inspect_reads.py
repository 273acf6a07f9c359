"""What the store report of ``asides inspect`` (which ``asides serve`` answers with too) reads.
Its counts of the messages with an audience, of the readers the audiences name and of the
messages each namespace's reader sees come from the store's blocks of messages that may name a
reader, never from reading every message: the report of a longer history reads no more
messages, and its counts are right (an erased message is in no reader's view)."""

from __future__ import annotations

import json

import trio
from helpers import sibling_store, writable_store

from asides._cli._main import main
from asides._inspection._report import describe_store
from asides.actors import open_runtime
from asides.store import text
from asides.strategies import PassthroughStrategy


async def _build(path: str, count: int) -> None:
    """``count`` messages on main: every 100th a line for ann alone, every 100th (shifted by 50)
    one for bob alone; the namespaces of ann and of bob; the first message for ann erased."""
    async with open_runtime(path) as rt:
        for reader in ("ann", "bob"):
            await rt.open_manager(f"agents/{reader}", strategy=PassthroughStrategy(), view_reader=reader)
        store = writable_store(rt)
        for first in range(0, count, 1000):
            items = []
            for i in range(first, first + 1000):
                if i % 100 in (0, 50):
                    who = "ann" if i % 100 == 0 else "bob"
                    items.append(("user", (text(f"for {who} {i}", [who]),), None))
                else:
                    items.append(("user", (text(f"line {i}"),), None))
            await store.append_messages("main", items)
        await rt.erase([store.model.id_at("main", 0)], reason="test")


def _counts(report: dict) -> tuple[int, int, dict[str, int]]:
    branch = report["branches"][0]
    return branch["messages"], branch["messages_with_audience"], {n["namespace"]: n["visible_messages"] for n in branch["namespaces"]}


async def test_the_report_reads_no_more_messages_for_a_longer_history(store_path):
    read = {}
    for count in (2000, 8000):
        path = store_path if count == 2000 else sibling_store(store_path, "longer")
        await _build(path, count)
        async with open_runtime(path, read_only=True) as rt:
            report = describe_store(rt, path)
            statistics = rt.store.statistics()
            read[count] = (statistics.messages_read, statistics.audience_blocks_read)
        lines = count // 100  # for ann, and as many for bob
        assert _counts(report) == (
            count,
            2 * lines - 1,  # the erased one holds no audience now
            {"agents/ann": count - lines - 1, "agents/bob": count - lines},
        )
    assert read[2000] == read[8000], read
    assert read[8000][0] <= 1, "the erased message alone"


def test_asides_inspect_reports_the_counts(capsys, tmp_path):
    path = str(tmp_path / "report.db")
    trio.run(_build, path, 2000)
    assert main(["inspect", path, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert _counts(report) == (2000, 39, {"agents/ann": 1979, "agents/bob": 1980})


async def test_kept_counts_follow_a_reader_named_after_they_first_counted(store_path):
    """Counts kept across writes (as ``asides serve`` keeps them): cy, named by no audience,
    sees what a view for no reader sees; once a line for cy alone is written, cy's count takes
    it in and ann's does not, and the census names cy."""
    from asides._inspection._report import MessageCounts

    async with open_runtime(store_path) as rt:
        store = writable_store(rt)
        await store.append_messages("main", [("user", (text("hello"),), None), ("user", (text("for ann", ["ann"]),), None)])
        counts = MessageCounts(store)
        assert (counts.visible("main", "cy"), counts.visible("main", "ann"), counts.readers_named("main")) == (1, 2, {"ann"})
        await store.append_message("main", "user", (text("for cy", ["cy"]),))
        assert (counts.visible("main", "cy"), counts.visible("main", "ann")) == (2, 2)
        assert (counts.with_audience("main"), counts.readers_named("main")) == (2, {"ann", "cy"})
