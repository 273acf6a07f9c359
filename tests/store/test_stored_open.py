"""An open that leaves the messages in the database: what it reads, how a store made before its
indexes is read, a long store erased by participant a page at a time, and the summary of who
sees a message read fail-closed when it disagrees with the blocks."""

from __future__ import annotations

import json
import sqlite3

import pytest

from asides import PassthroughStrategy, open_runtime, text, thinking, tool_use
from asides.lowlevel import MessageView, open_store
from asides.store import content_for_reader
from tests.helpers import writable_store


async def _write(path: str, count: int, *, fork_at: int | None = None) -> None:
    async with open_store(path) as store:
        await store.append_messages(
            "main",
            [
                ("ann" if i % 7 == 0 else "user", (text(f"m{i}"), *((text(f"for ann {i}", ["ann"]),) if i % 10 == 0 else ())), None)
                for i in range(count)
            ],
        )
        await store.set_states("main", {"note": {"n": 1}})
        if fork_at is not None:
            await store.create_branch("side", "main", at_sequence=fork_at)
            await store.append_message("side", "user", (text("on the side"),))


async def test_an_open_reads_the_records_other_than_messages_whatever_the_history(store_path):
    await _write(store_path, 400, fork_at=100)
    async with open_store(store_path, message_cache=10) as store:
        opened = store.statistics()
        # the branch record: never a message, nor a state record (counted a block: a gap)
        assert opened.records_read_at_open == 1 and opened.messages_read == 0
        assert store.length("main") == 400 and store.length("side") == 101
        assert [m.content[0].text for m in store.messages("side", 98, 101)] == ["m98", "m99", "on the side"]
        assert store.get_state("main", "note") == {"n": 1}
        ann = MessageView(store.model, "main", reader="ann")
        bob = MessageView(store.model, "main", reader="bob")
        assert ann.length() == bob.length() == 400
        assert [b.text for b in bob.at(10).content] == ["m10"]
        assert [b.text for b in ann.at(10).content] == ["m10", "for ann 10"]
        assert store.statistics().messages_in_memory <= 10


@pytest.mark.sqlite_only("drops the file's indexes with sqlite3 to make a store of an earlier version")
async def test_a_file_made_before_the_indexes_is_read_whole_once_then_never_again(store_path):
    await _write(store_path, 300)
    with sqlite3.connect(store_path) as connection:
        for trigger in ("log_seers_written", "log_seers_rewritten", "log_seers_removed"):
            connection.execute(f"DROP TRIGGER {trigger}")
        for index in ("log_places", "log_open_records", "log_gaps", "log_disclosures"):
            connection.execute(f"DROP INDEX {index}")
        for table in ("log_seers", "log_seers_blocks", "log_gap_blocks"):  # with their own triggers and indexes
            connection.execute(f"DROP TABLE {table}")
        connection.execute("DROP TRIGGER log_gaps_counted")
        connection.execute("DROP TRIGGER log_gaps_uncounted")
        for trigger in ("log_state_keys_counted", "log_state_keys_uncounted"):
            connection.execute(f"DROP TRIGGER {trigger}")
        connection.execute("DROP TABLE log_state_keys")
        connection.execute("DROP INDEX log_state_after")
    async with open_store(store_path, read_only=True) as reader:  # a read-only open makes nothing
        assert reader.statistics().records_read_at_open == 301
        assert [m.content[0].text for m in reader.messages("main", 299, 300)] == ["m299"]
        view = MessageView(reader.model, "main", reader=None)  # its bodies left in the file: a walk back reads ahead
        assert [view.at(i).content[0].text for i in range(298, 198, -1)] == [f"m{i}" for i in range(298, 198, -1)]
        assert reader.statistics().message_queries <= 9
    async with open_store(store_path) as store:  # read whole, and makes them
        assert store.statistics().records_read_at_open == 301
        await store.append_message("main", "user", (text("after"),))
    async with open_store(store_path, read_only=True) as reader:
        assert reader.statistics().records_read_at_open == 0  # the state record is counted, not read
        assert [m.content[0].text for m in reader.messages("main", 299, 301)] == ["m299", "after"]
    with sqlite3.connect(store_path) as connection:  # the counts were made from the log
        assert connection.execute("SELECT branch, block, count FROM log_gap_blocks").fetchall() == [("main", 0, 1)]
        assert connection.execute("SELECT branch, parent, keys FROM log_state_keys").fetchall() == [("main", "", 1)]


async def test_erasing_a_participant_of_a_long_store_walks_it_a_page_at_a_time(store_path):
    await _write(store_path, 2000)
    async with open_runtime(store_path, message_cache=20) as rt:
        manager = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        written = await manager.add_message("ann", [text("ann, after the open")])
        erasure = await rt.erase_participant("ann", reason="asked")
        expected = [str(i + 1) for i in range(2000) if i % 7 == 0] + [written.id]
        assert list(erasure.message_ids) == expected
        assert writable_store(rt).statistics().messages_in_memory <= 20 + 1
        assert all(m.participant != "ann" for m in manager.get_all_messages())


@pytest.mark.sqlite_only("rewrites a stored body with sqlite3, as only a file changed outside asides could hold it")
async def test_a_summary_that_disagrees_with_the_blocks_reads_fail_closed(store_path):
    async with open_store(store_path) as store:
        private = await store.append_message("main", "user", (text("for ann alone", ["ann"]),))
        await store.append_message("main", "user", (text("for everyone"),))
    with sqlite3.connect(store_path) as connection:
        (body,) = connection.execute("SELECT body FROM log WHERE id = ?", (int(private.id),)).fetchone()
        lying = json.loads(body)
        assert lying["seers"] == [False, ["ann"]]
        lying["seers"] = [True, []]  # as if everyone saw something of it
        connection.execute("UPDATE log SET body = ? WHERE id = ?", (json.dumps(lying), int(private.id)))
    async with open_store(store_path, read_only=True) as store:
        bob = MessageView(store.model, "main", reader="bob")
        shown = [block.text for message in bob.get_all() for block in message.content]
        assert "for ann alone" not in " ".join(shown)
        assert shown[-1] == "for everyone"
        ann = MessageView(store.model, "main", reader="ann")
        assert [block.text for block in ann.at(0).content] == ["for ann alone"]


async def test_a_postgres_store_whose_key_counts_ran_an_earlier_function_gets_the_one_of_now(pg_url):
    """A store whose triggers keep the key counts through the function of an earlier version
    (``asides_count_state_keys``, whose lookup of a key's earlier record the planner could make
    read every state record of the branch) is given the function of now by its first writing
    open, the earlier one dropped; the counts stay right through it."""
    import psycopg

    async with open_store(pg_url) as store:
        await store.set_states("main", {"agents/a/k/1": 1, "agents/a/k/2": 2})
    with psycopg.connect(pg_url, autocommit=True) as connection:
        (source,) = connection.execute("SELECT prosrc FROM pg_proc WHERE oid = 'asides_state_key_counts()'::regprocedure").fetchone()
        connection.execute(f"CREATE FUNCTION asides_count_state_keys() RETURNS trigger LANGUAGE plpgsql AS $${source}$$")
        for trigger, when in (("asides_state_keys_written", "AFTER INSERT"), ("asides_state_keys_removed", "AFTER DELETE")):
            row = "NEW" if when == "AFTER INSERT" else "OLD"
            connection.execute(
                f"CREATE OR REPLACE TRIGGER {trigger} {when} ON asides_log FOR EACH ROW WHEN ({row}.kind = 'state') "
                "EXECUTE FUNCTION asides_count_state_keys()"
            )
        connection.execute("DROP FUNCTION asides_state_key_counts()")
    async with open_store(pg_url) as store:
        await store.set_states("main", {"agents/a/k/2": 3, "agents/a/k/3": 4})
        assert store.state_keys("main", "agents/a/k/") == ["agents/a/k/1", "agents/a/k/2", "agents/a/k/3"]
    with psycopg.connect(pg_url, autocommit=True) as connection:
        ours = "SELECT proname FROM pg_proc WHERE proname LIKE 'asides_%state_key%' AND pronamespace = current_schema()::regnamespace"
        functions = {name for (name,) in connection.execute(ours)}
        assert functions == {"asides_state_key_counts"}
        assert connection.execute("SELECT branch, parent, keys FROM asides_log_state_keys").fetchall() == [("main", "agents/a/k/", 3)]


async def test_a_postgres_store_made_before_the_indexes_gets_them_at_its_first_writing_open(pg_url):
    import psycopg

    await _write(pg_url, 300)
    with psycopg.connect(pg_url, autocommit=True) as connection:
        connection.execute("DROP INDEX asides_log_open_records")
        connection.execute("DROP INDEX asides_log_gaps")
        connection.execute("DROP INDEX asides_log_audience")
        for trigger in ("asides_seers_written", "asides_seers_rewritten"):
            connection.execute(f"DROP TRIGGER {trigger} ON asides_log")
        connection.execute("DROP FUNCTION asides_count_seers()")
        connection.execute("DROP TABLE asides_log_seers_blocks")
        for trigger in ("asides_gaps_written", "asides_gaps_removed"):
            connection.execute(f"DROP TRIGGER {trigger} ON asides_log")
        connection.execute("DROP FUNCTION asides_count_gaps()")
        connection.execute("DROP TABLE asides_log_gap_blocks")
        for trigger in ("asides_state_keys_written", "asides_state_keys_removed"):
            connection.execute(f"DROP TRIGGER {trigger} ON asides_log")
        connection.execute("DROP FUNCTION asides_state_key_counts()")
        connection.execute("DROP TABLE asides_log_state_keys")
        connection.execute("DROP INDEX asides_log_state_after")
        connection.execute("DROP FUNCTION asides_seers(text)")
    async with open_store(pg_url, read_only=True) as reader:  # a read-only open makes nothing, reads whole
        assert reader.statistics().records_read_at_open == 301
        bob = MessageView(reader.model, "main", reader="bob")
        assert [b.text for b in bob.at(10).content] == ["m10"]
    async with open_store(pg_url) as store:  # makes them, then reads through them
        assert store.statistics().records_read_at_open == 0  # the state record is counted, not read
        bob = MessageView(store.model, "main", reader="bob")
        ann = MessageView(store.model, "main", reader="ann")
        assert [b.text for b in bob.at(10).content] == ["m10"]
        assert [b.text for b in ann.at(10).content] == ["m10", "for ann 10"]
        assert ann.length() == bob.length() == 300
        with psycopg.connect(pg_url, autocommit=True) as connection:  # the counts were made from the log
            assert connection.execute("SELECT sum(count) FROM asides_log_seers_blocks").fetchone()[0] == 30
            assert connection.execute("SELECT branch, block, count FROM asides_log_gap_blocks").fetchall() == [("main", 0, 1)]
            assert connection.execute("SELECT branch, parent, keys FROM asides_log_state_keys").fetchall() == [("main", "", 1)]


async def test_a_new_store_keeps_no_more_than_its_cache_from_its_first_open(store_path):
    """A host that makes a store and runs for months without reopening it: what it writes leaves
    memory once committed, beyond the cache."""
    async with open_store(store_path, message_cache=10) as store:
        for i in range(100):
            await store.append_message("main", "user", (text(f"m{i}"), *((text("for ann", ["ann"]),) if i % 10 == 0 else ())))
        assert store.statistics().messages_in_memory <= 10
        assert [m.content[0].text for m in store.messages("main", 0, 3)] == ["m0", "m1", "m2"]
        bob = MessageView(store.model, "main", reader="bob")
        assert [[b.text for b in m.content] for m in bob.get_all()[:2]] == [["m0"], ["m1"]]
        assert store.statistics().messages_in_memory <= 10


async def test_what_an_open_and_a_first_view_read_is_the_same_at_two_lengths(tmp_path):
    """Counted, not timed: the records an open reads, and the messages a reader's first look at
    the newest ten reads, at 500 and at 5,000 messages."""
    counts = []
    for length in (500, 5000):
        path = str(tmp_path / f"{length}.db")
        await _write(path, length)
        async with open_store(path, message_cache=50) as store:
            bob = MessageView(store.model, "main", reader="bob")
            assert [m.content[0].text for m in bob.get_tail(10)][-1] == f"m{length - 1}"
            stats = store.statistics()
            counts.append((stats.records_read_at_open, stats.messages_read))
    assert counts[0] == counts[1] == (0, 10)  # the state record counted a block, not read


def _mixed(i: int) -> tuple:
    """Message ``i`` of a history that names readers in every way a body can."""
    if i % 11 == 0:
        return (text(f"for bob {i}", ["bob"]),)  # ann sees nothing of it
    if i % 7 == 0:
        return (text(f"m{i}"), text(f"for ann {i}", ["ann"]))
    if i % 5 == 0:
        return (tool_use(f"c{i}", "f", {"audience": ["x"]}),)  # "audience" as data: no reader named
    if i % 13 == 0:
        return (text(f"m{i}"), thinking(f"t{i}", audience=["ann"]))  # its body says nothing of who sees it: decoded
    return (text(f"m{i}"),)


def _expected(contents: list[tuple], reader: str | None) -> list[str]:
    seen = []
    for content in contents:
        shown = content_for_reader(content, reader)
        if shown:
            seen.append(";".join(_label(b) for b in shown))
    return seen


def _shown(view: MessageView) -> list[str]:
    return [";".join(_label(b) for b in m.content) for m in view.get_all()]


def _label(block: object) -> str:
    return str(getattr(block, "text", None) or getattr(block, "thinking", None) or getattr(block, "id", ""))


@pytest.mark.parametrize("cache", [3, 64, None])
async def test_readers_views_counted_by_block_agree_with_the_messages_after_erasures(store_path, cache):
    """Counted by block at the open (kept in the file by its triggers, or counted from where each
    such message stands with a small cache), read a block at a time: every reader's view is what
    the messages show it, before and after an erasure rewrote some of them, on a fork too."""
    contents = [_mixed(i) for i in range(300)]
    async with open_store(store_path) as store:
        written = await store.append_messages("main", [("user", content, None) for content in contents])
        await store.create_branch("side", "main", at_sequence=150)
        await store.append_message("side", "user", (text("side, for bob", ["bob"]),))
    erased = {7, 11, 14, 100}  # named ann, for bob alone, named ann, "audience" as data
    for round_ in ("before", "after"):
        async with open_store(store_path, message_cache=cache) as store:
            main = [c for i, c in enumerate(contents) if round_ == "before" or i not in erased]
            side = [c for i, c in enumerate(contents[:150]) if round_ == "before" or i not in erased] + [(text("side, for bob", ["bob"]),)]
            for reader in ("ann", "bob", "carol", None):
                assert _shown(MessageView(store.model, "main", reader=reader)) == _expected(main, reader), (round_, reader)
                assert _shown(MessageView(store.model, "side", reader=reader)) == _expected(side, reader), (round_, reader)
            if round_ == "before":
                await store.erase([written[i].id for i in sorted(erased)], reason="test", at=0.0)
    if "://" in store_path:
        return
    with sqlite3.connect(store_path) as connection:  # the file's counts agree with its rows
        counted = connection.execute("SELECT branch, block, seers, count FROM log_seers_blocks ORDER BY 1, 2, 3").fetchall()
        rows = connection.execute("SELECT branch, seq >> 14, seers, count(*) FROM log_seers GROUP BY 1, 2, 3 ORDER BY 1, 2, 3")
        assert counted == rows.fetchall()


async def test_a_postgres_reader_view_takes_in_what_another_process_writes_into_blocks_it_has_not_read(pg_url):
    """Another open (as another process would) writes messages naming readers into blocks this
    open counted but never read, and into new ones; caught up, each reader's view here is what
    the messages show it, read a block of four sequences at a time."""
    contents = [_mixed(i) for i in range(60)]
    async with open_store(pg_url) as first:
        await first.append_messages("main", [("user", content, None) for content in contents[:30]])
    async with open_store(pg_url, message_cache=3) as here:
        views = {reader: MessageView(here.model, "main", reader=reader) for reader in ("ann", "bob", None)}
        for reader, view in views.items():  # counted, not read: the blocks stay in the database
            assert view.length() == len(_expected(contents[:30], reader))
        assert here.statistics().audience_blocks_read <= 3, "at most the blocks with a message to decode (thinking)"
        async with open_store(pg_url) as other:
            for content in contents[30:]:
                await other.append_message("main", "user", content)
        await here.sync()
        for reader, view in views.items():
            assert _shown(view) == _expected(contents, reader), reader
        fresh = MessageView(here.model, "main", reader="ann")
        assert _shown(fresh) == _expected(contents, "ann")


async def test_a_view_in_the_written_order_stays_so_after_an_erasure_but_not_after_an_edit(store_path):
    """``as_written`` holds while nothing was edited or erased; ``in_written_order`` holds after an
    erasure too (it only takes messages out), on the branch and on a fork, reopened as well;
    an edit ends both, and a view filter holds neither."""
    async with open_store(store_path) as store:
        written = await store.append_messages("main", [("user", (text(f"m{i}"),), None) for i in range(6)])
        await store.create_branch("side", "main", at_sequence=store.model.head("main"))

        def views():
            return [MessageView(store.model, branch, reader="ann") for branch in ("main", "side")]

        assert all(v.as_written and v.in_written_order for v in views())
        filtered = MessageView(store.model, "main", reader="ann", view_filter=lambda _m: True)
        assert not filtered.as_written and not filtered.in_written_order
        await store.erase([written[2].id], reason="test", at=0.0)
        assert all(not v.as_written and v.in_written_order for v in views())
    async with open_store(store_path) as store:
        main, side = (MessageView(store.model, branch, reader="ann") for branch in ("main", "side"))
        assert not main.as_written and main.in_written_order and side.in_written_order
        assert [m.content[0].text for m in main.get_all()] == ["m0", "m1", "m3", "m4", "m5"]
        await store.edit_message("main", written[4].id, (text("edited"),))
        assert not main.in_written_order and not side.in_written_order, "an ancestor's edit too"
