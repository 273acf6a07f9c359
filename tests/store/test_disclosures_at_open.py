"""An open reads the runs of ids each (namespace, reader, way) was shown, not the disclosure
records: what it reads follows how scattered the ids shown are, never how many compiles showed
them, and an audit after the open (which reads the records from the database) answers as the
process that wrote them did."""

from __future__ import annotations

import json
import sqlite3

import pytest

from asides import PassthroughStrategy, open_runtime, text
from asides.lowlevel import open_store

BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}


async def disclose_one_at_a_time(path: str, count: int, *, to_bob: bool = True) -> list[str]:
    """``count`` messages, then one disclosure record for each: to ann every message (one run
    in all), to bob (unless not ``to_bob``) every other one (a run each)."""
    async with open_store(path) as store:
        messages = await store.append_messages("main", [("user", (text(f"m{i}"),), None) for i in range(count)])
        ids = [m.id for m in messages]
        for i, message_id in enumerate(ids):
            await store.record_disclosure("agents/a", "ann", "main", "compile", [message_id])
            if to_bob and i % 2 == 0:
                await store.record_disclosure("agents/a", "bob", "main", "compile", [message_id])
        return ids


@pytest.mark.parametrize("count", [1_500, 3_000])
async def test_an_open_reads_runs_that_follow_the_ids_scattered_not_the_compiles(store_path: str, count: int) -> None:
    ids = await disclose_one_at_a_time(store_path, count)
    async with open_store(store_path, read_only=True) as store:
        opened = store.statistics()
        assert opened.records_read_at_open == 0, "no disclosure record is read at the open"
        assert opened.disclosure_records_in_memory == 0
        # ann's ids make one run, bob's one run each; the table is merged whenever it holds more
        # than twice that plus 1,024 rows, whatever the number of records (1.5 a message here).
        runs = 1 + count // 2
        assert opened.disclosed_runs_read_at_open <= 2 * runs + 1_024 + 2
    async with open_store(store_path) as store:  # what was shown is known as before: only what is new is recorded
        before = len(await store.records())
        await store.record_disclosure("agents/a", "ann", "main", "compile", ids)
        await store.record_disclosure("agents/a", "bob", "main", "compile", ids[1:4])
        records = await store.records()
        assert len(records) == before + 1, "ann was shown them all: only bob's new ones are recorded"
        assert json.loads(records[-1][5])["ids"] == [int(ids[1]), 1, int(ids[3]), 1]
        read = store.statistics().disclosure_records_read
        (shown,) = [d for d in store.disclosures(ids[-1]) if d.reader == "ann"]
        assert shown.via == "compile"
        assert [d.reader for d in store.disclosures(ids[count // 2])] == ["ann", "bob"]
        assert store.statistics().disclosure_records_read - read <= 2 + 2, "an audit of a message reads the records that name it"
        assert store.disclosures("²") == store.disclosures(str(2**70)) == ()
        assert len(store.disclosures_to("bob")) == count // 2 + (count % 2) + 2


async def test_an_audit_after_the_open_answers_as_the_writer_did(store_path: str) -> None:
    async with open_runtime(store_path, message_cache=4) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        ids = []
        for i in range(30):
            block = text(f"line {i} for bob alone", audience=["bob"]) if i % 3 == 0 else text(f"line {i}")
            ids.append((await ann.add_message("user", [block])).id)
            await (ann if i % 2 else bob).compile(**BIG)
            if i % 5 == 0:
                await ann.preview_context(**BIG)
        await bob.compile(**BIG)
        await ann.search("line")
        by_message = {i: rt.disclosures(i) for i in ids}
        to_reader = {r: rt.disclosures_to(r) for r in ("ann", "bob", None)}
        exported = rt.store.disclosure_records()
    assert all(d.reader != "ann" for i in ids[::3] for d in by_message[i]), "nothing for bob alone was shown to ann"
    assert {d.via for d in to_reader["ann"]} == {"compile", "preview", "search"}
    async with open_runtime(store_path, message_cache=4) as rt:
        opened = rt.store.statistics()
        assert opened.disclosure_records_in_memory == 0
        assert {i: rt.disclosures(i) for i in ids} == by_message
        assert {r: rt.disclosures_to(r) for r in ("ann", "bob", None)} == to_reader
        assert rt.store.disclosure_records() == exported
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.compile(**BIG)
        assert rt.disclosures_to("ann") == to_reader["ann"], "nothing new to ann: nothing recorded"
        new = await ann.add_message("user", [text("one more")])
        await ann.compile(**BIG)
        assert [d.via for d in rt.disclosures(new.id)] == ["compile"], "a record not yet committed is answered from memory"
        assert len(rt.store.disclosure_records()) == len(exported) + 1


async def test_a_host_that_never_reopens_keeps_only_the_records_not_yet_committed(store_path: str) -> None:
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        for i in range(200):
            await ann.add_message("user", [text(f"m{i}")])
            await ann.compile(**BIG)
        await rt.store.sync()
        await ann.add_message("user", [text("one more")])  # a durable write: every compile before it is committed
        assert rt.store.statistics().disclosure_records_in_memory <= 1
        assert len(rt.disclosures_to("ann")) == 200


async def _drop_the_runs_tables(path: str, *, spans_only: bool) -> None:
    if path.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(path, autocommit=True) as connection:
            connection.execute("DROP TABLE asides_log_disclosure_spans")
            if not spans_only:
                connection.execute("DROP TRIGGER asides_disclosed_written ON asides_log")
                connection.execute("DROP FUNCTION asides_note_disclosed()")
                connection.execute("DROP FUNCTION asides_disclosed_runs(text)")
                connection.execute("DROP TABLE asides_log_disclosed")
    else:
        with sqlite3.connect(path) as connection:
            connection.execute("DROP TABLE log_disclosure_spans")
            if not spans_only:
                connection.execute("DROP TRIGGER log_disclosed_written")
                connection.execute("DROP TABLE log_disclosed")


@pytest.mark.parametrize("spans_only", [False, True], ids=["neither-table", "the-runs-alone"])
async def test_a_store_made_before_the_runs_tables_gets_them_filled_from_the_records(store_path: str, spans_only: bool) -> None:
    ids = await disclose_one_at_a_time(store_path, 40)
    await _drop_the_runs_tables(store_path, spans_only=spans_only)
    async with open_store(store_path, read_only=True) as store:  # a read-only open makes nothing: it reads the records
        assert store.statistics().records_read_at_open >= 60
        assert len(store.disclosures_to("bob")) == 20
    async with open_store(store_path) as store:  # makes them, filled from the log
        await store.record_disclosure("agents/a", "bob", "main", "compile", ids[::2])
        assert len(await store.records()) == 40 + 60, "nothing new to record"
    async with open_store(store_path, read_only=True) as store:
        opened = store.statistics()
        assert (opened.records_read_at_open, opened.disclosed_runs_read_at_open) == (0, 60)
        assert len(store.disclosures_to("bob")) == 20 and len(store.disclosures_to("ann")) == 40
        read = store.statistics().disclosure_records_read
        assert [d.reader for d in store.disclosures(ids[2])] == ["ann", "bob"]
        assert store.statistics().disclosure_records_read - read == 2, "the records that name it"


async def test_the_writing_open_that_fills_the_runs_from_the_records_merges_them(store_path: str) -> None:
    ids = await disclose_one_at_a_time(store_path, 1_500, to_bob=False)
    await _drop_the_runs_tables(store_path, spans_only=False)
    async with open_store(store_path):  # fills them, a row a record, then merges them
        pass
    async with open_store(store_path, read_only=True) as store:
        assert store.statistics().disclosed_runs_read_at_open == 1, "ann's 1,500 records: one run"
        assert [d.message_id for d in store.disclosures(ids[700])] == [ids[700]]


async def test_two_processes_recording_at_once_lose_no_run_when_one_merges(pg_url: str) -> None:
    """Two stores on one PostgreSQL store, as two processes: one records every message shown to
    ann, one at a time (its rows merge into one run, so its merges delete what they read, by
    id), while the other records every third shown to bob (a run each) and commits rows
    meanwhile; an open after reads every id either recorded as shown, in fewer rows than
    records."""
    import trio

    async with open_store(pg_url) as first:
        messages = await first.append_messages("main", [("user", (text(f"m{i}"),), None) for i in range(3000)])
    ids = [m.id for m in messages]
    shown = {"ann": ids, "bob": ids[::3]}
    async with open_store(pg_url) as one, open_store(pg_url) as other:

        async def record(store, reader: str) -> None:
            for message_id in shown[reader]:
                await store.record_disclosure("agents/a", reader, "main", "compile", [message_id])
                await trio.lowlevel.checkpoint()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(record, one, "ann")
            nursery.start_soon(record, other, "bob")
    async with open_store(pg_url, read_only=True) as reopened:
        assert reopened.statistics().disclosed_runs_read_at_open < 3000, "ann's rows were merged"
        for reader, expected in shown.items():
            assert [d.message_id for d in reopened.disclosures_to(reader)] == expected
    async with open_store(pg_url) as writer:  # nothing new to either: nothing recorded
        before = len(await writer.records())
        for reader, expected in shown.items():
            await writer.record_disclosure("agents/a", reader, "main", "compile", expected)
        assert len(await writer.records()) == before
        await writer.record_disclosure("agents/a", "bob", "main", "compile", ids[1:2])
        assert len(await writer.records()) == before + 1


@pytest.mark.sqlite_only("a SQLite built without the R*Tree module, stood in for by a module no build has")
async def test_without_the_rtree_module_an_audit_of_one_message_answers_by_a_scan(store_path: str, monkeypatch, caplog) -> None:
    from asides.store import _sqlite

    missing = _sqlite.SPANS_RTREE.replace("USING rtree", "USING no_such_rtree")
    monkeypatch.setattr(_sqlite, "DISCLOSED_TABLE", tuple(missing if s == _sqlite.SPANS_RTREE else s for s in _sqlite.DISCLOSED_TABLE))
    monkeypatch.setattr(_sqlite, "SPANS_RTREE", missing)
    with caplog.at_level("WARNING", logger="asides.store"):
        ids = await disclose_one_at_a_time(store_path, 30)
    assert "no R*Tree module" in caplog.text
    async with open_store(store_path, read_only=True) as store:
        assert store.statistics().records_read_at_open == 0
        assert [d.reader for d in store.disclosures(ids[4])] == ["ann", "bob"]
        assert [d.reader for d in store.disclosures(ids[5])] == ["ann"]


@pytest.mark.sqlite_only("breaks the file's index of disclosure runs with sqlite3, as only a change outside asides could")
async def test_an_audit_that_cannot_read_the_records_says_so(store_path: str) -> None:
    from asides import StoreFailedError

    ids = await disclose_one_at_a_time(store_path, 10)
    async with open_store(store_path) as store:
        with sqlite3.connect(store_path) as connection:
            connection.execute("DROP TABLE log_disclosure_spans")
        with pytest.raises(StoreFailedError, match="the disclosure records .* could not be read"):
            store.disclosures(ids[0])
