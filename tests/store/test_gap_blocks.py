"""Where a branch's records other than messages (edits, states: its gaps) stand among its
messages, on a store that leaves its messages in the database: the open counts them a block of
sequences and reads none; a read that reaches a block reads where that block's gaps stand.

Held against a store holding everything in memory: every branch read back through a cache of a
few messages, with one block of gaps kept at once (so nearly every read reads one), gives the
messages, sequences and places written, over random appends, states, edits and forks at any
point, reopened, then written again and read between each write and its commit."""

from __future__ import annotations

import tempfile
from pathlib import Path
from unittest import mock

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import text
from asides.lowlevel import open_store
from asides.store import _model_parts

# An op: append n messages, set n states, edit the message at a position, fork at a sequence.
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 6)),
        st.tuples(st.just("states"), st.integers(1, 5)),
        st.tuples(st.just("edit"), st.integers(0, 10_000)),
        st.tuples(st.just("fork"), st.integers(0, 10_000)),
    ),
    max_size=30,
)


async def _apply(store, ops, branches: list[str], mark: str) -> None:
    """Apply ``ops`` to ``store``, writing on the newest of ``branches`` (a fork adds one)."""
    for number, (op, value) in enumerate(ops):
        branch = branches[-1]
        length = store.length(branch)
        if op == "append":
            await store.append_messages(branch, [("user", (text(f"{mark}{number}.{i}"),), None) for i in range(value)])
        elif op == "states":
            await store.set_states(branch, {f"{mark}{number}/{i}": i for i in range(value)})
        elif op == "edit" and length:
            position = value % length
            await store.edit_message(branch, store.messages(branch, position, position + 1)[0].id, (text(f"edited {mark}{number}"),))
        elif op == "fork":
            branches.append(f"{mark}side{number}")
            await store.create_branch(branches[-1], branch, at_sequence=value % (store.model.head(branch) + 1))


def _read(store, branches: list[str]) -> dict[str, list[tuple[str, int, str]]]:
    """Every branch's messages by position: id, sequence and text; and each found by its id."""
    found = {}
    for branch in branches:
        messages = [store.messages(branch, i, i + 1)[0] for i in range(store.length(branch))]
        assert messages == store.messages(branch)
        for message in messages:
            assert store.get_message(branch, message.id) == message
        found[branch] = [(m.id, m.sequence, m.content[0].text) for m in messages]
    return found


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(before=OPS, after=OPS)
def test_a_store_read_back_a_block_of_gaps_at_a_time_reads_as_written(before, after):
    async def run(path: str) -> None:
        async with open_store(":memory:") as whole:
            held = ["main"]
            await _apply(whole, before, held, "a")
            with mock.patch.object(_model_parts, "HELD_GAP_BLOCKS", 1):
                async with open_store(path) as store:
                    await _apply(store, before, ["main"], "a")
                async with open_store(path, message_cache=3) as store:
                    assert store.statistics().records_read_at_open <= len(held) - 1 + len(before)  # branch and edit records
                    assert _read(store, held) == _read(whole, held)
                    # Written again, and read whole each time a write is in memory and not yet
                    # committed (a listener hears of it then; what it raises is logged, so kept).
                    reading = list(held)
                    seen: list[object] = []

                    def listen(_event: object) -> None:
                        try:
                            seen.append(_read(store, reading))
                        except Exception as exc:  # noqa: BLE001 - reported below
                            seen.append(exc)

                    remove = store.add_listener(listen)
                    await _apply(store, after, reading, "b")
                    remove()
                    await _apply(whole, after, held, "b")
                    assert reading == held
                    assert not [s for s in seen if isinstance(s, Exception)], seen
                    assert _read(store, held) == _read(whole, held)
                async with open_store(path, read_only=True, message_cache=3) as reopened:
                    assert _read(reopened, held) == _read(whole, held)
                async with open_store(path, read_only=True) as reopened:  # blocks as large as the file's counts
                    assert _read(reopened, held) == _read(whole, held)
            assert _file_counts(path) == _rows_counted(path)

    with tempfile.TemporaryDirectory() as folder:
        trio.run(run, str(Path(folder) / "store.db"))


def _fetch(path: str, query: str) -> list[tuple]:
    """The rows of ``query`` on the store at ``path`` (a file or a PostgreSQL URL), ``{log}`` in it
    naming the log (``log`` in a file, ``asides_log`` on PostgreSQL)."""
    if "://" in path:
        import psycopg

        with psycopg.connect(path) as connection:
            return [tuple(row) for row in connection.execute(query.format(log="asides_log")).fetchall()]
    import sqlite3

    with sqlite3.connect(path) as connection:
        return connection.execute(query.format(log="log")).fetchall()


def _file_counts(path: str) -> list[tuple]:
    """The gaps a store counts a block of ``1 << 14`` sequences (its triggers keep them)."""
    return _fetch(path, "SELECT branch, block, count FROM {log}_gap_blocks ORDER BY 1, 2")


def _rows_counted(path: str) -> list[tuple]:
    """The same, counted from the records themselves."""
    where = "kind NOT IN ('message', 'branch', 'compile', 'disclosure', 'strategy', 'erasure')"
    return _fetch(path, "SELECT branch, seq >> 14, count(*) FROM {log} WHERE " + where + " GROUP BY 1, 2 ORDER BY 1, 2")  # noqa: S608


async def _write_with_states(path: str, length: int) -> None:
    """``length`` messages, two state records after each hundred."""
    async with open_store(path) as store:
        for start in range(0, length, 100):
            await store.append_messages("main", [("user", (text(f"m{i}"),), None) for i in range(start, start + 100)])
            await store.set_states("main", {f"chunk/{start}": {"first": start}, f"seen/{start}": start})


async def test_an_open_counts_the_state_records_and_reads_none_at_two_lengths(tmp_path):
    """Counted, not timed: at 1,000 and at 10,000 messages (20 and 200 state records), the open
    reads no record, and a look at the newest ten and at one message in the middle reads the
    gaps of the blocks they fall in, as many at both lengths."""
    counts = []
    for length in (1000, 10_000):
        path = str(tmp_path / f"{length}.db")
        await _write_with_states(path, length)
        async with open_store(path, message_cache=64) as store:
            assert store.statistics().records_read_at_open == 0
            newest = store.messages("main", length - 10, length)
            assert [m.content[0].text for m in newest] == [f"m{i}" for i in range(length - 10, length)]
            assert newest[-1].sequence == length + 2 * (length // 100 - 1)  # two states after each hundred before it
            middle = store.messages("main", length // 2, length // 2 + 1)[0]
            assert (middle.content[0].text, middle.sequence) == (f"m{length // 2}", length // 2 + 1 + 2 * (length // 200))
            assert store.get_state("main", f"chunk/{length - 100}") == {"first": length - 100}
            stats = store.statistics()
            counts.append((stats.records_read_at_open, stats.gap_blocks_read))
    assert counts[0] == counts[1] == (0, 2)


async def test_a_fork_in_the_middle_of_a_block_sees_its_parent_up_to_the_fork(store_path):
    """A branch forked inside a block of its parent's gaps, reopened with a cache of a few
    messages: its own messages and its parent's up to the fork stand where they were written."""
    async with open_store(store_path) as store:
        for i in range(12):
            await store.append_message("main", "user", (text(f"m{i}"),))
            if i % 3 == 0:
                await store.set_state("main", f"s{i}", i)
        await store.create_branch("side", "main", at_sequence=9)
        for i in range(5):
            await store.set_state("side", f"t{i}", i)
            await store.append_message("side", "user", (text(f"side {i}"),))
        written = {branch: [(m.id, m.sequence) for m in store.messages(branch)] for branch in ("main", "side")}
    async with open_store(store_path, message_cache=3) as store:
        assert store.statistics().records_read_at_open == 1  # the branch record
        for branch in ("main", "side"):
            assert [(m.id, m.sequence) for m in store.messages(branch)] == written[branch]
        assert [m.content[0].text for m in store.messages("side")] == [f"m{i}" for i in range(7)] + [
            f"side {i}" for i in range(5)
        ]


@pytest.mark.sqlite_only("adds a record with sqlite3, as only a file changed outside asides could hold it")
async def test_a_block_whose_gaps_disagree_with_the_count_is_a_store_error(store_path):
    import sqlite3

    from asides import StoreFailedError

    await _write_with_states(store_path, 200)
    async with open_store(store_path, message_cache=8) as store:
        with sqlite3.connect(store_path) as connection:  # m99 (beside the first states) turned into a state record
            connection.execute("UPDATE log SET kind = 'state', ref = 'stray' WHERE id = 100")
        with pytest.raises(StoreFailedError, match="branch 'main' holds 3 records other than messages"):
            store.messages("main", 98, 99)


async def test_the_gap_counts_the_store_keeps_are_the_records_on_every_branch(store_path):
    """An open with blocks as large as the counts the store keeps reads those counts, not a row a
    gap: after states, edits, an erasure, and a fork in the middle of a block and past it, the
    counts are the records', and every branch reopened reads where each message stands."""
    async with open_store(store_path) as store:
        for i in range(40):
            await store.append_message("main", "user", (text(f"m{i}"),))
            if i % 4 == 0:
                await store.set_states("main", {f"s{i}": i, f"t{i}": i})
        await store.edit_message("main", store.messages("main", 3, 4)[0].id, (text("edited"),))
        await store.create_branch("side", "main", at_sequence=20)
        for i in range(6):
            await store.set_state("side", f"u{i}", i)
            await store.append_message("side", "user", (text(f"side {i}"),))
        await store.erase([store.messages("main", 5, 6)[0].id], reason="test", at=0.0)
        written = {branch: [(m.id, m.sequence, m.content) for m in store.messages(branch)] for branch in ("main", "side")}
    assert _file_counts(store_path) == _rows_counted(store_path)
    assert {branch for branch, _block, _count in _file_counts(store_path)} == {"main", "side"}
    async with open_store(store_path, read_only=True) as store:
        assert store.statistics().records_read_at_open == 3  # the branch record, the edit and the erasure
        for branch in ("main", "side"):
            assert [(m.id, m.sequence, m.content) for m in store.messages(branch)] == written[branch]
