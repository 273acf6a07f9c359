"""How many keys under a prefix were last written at or before a sequence, and which after it
(``Store.state_sequences_after``), on a store reopened so that it answers from the database: the
counts of keys a parent the store keeps, and the records written after the sequence.

Held against a store holding everything in memory, over random writes of keys under nested
prefixes, keys that only look like them, rewrites and messages between, on both backends; and
the counts a store file keeps agree with its records after a fork and an erasure."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import text
from asides.lowlevel import open_store

KEYS = ("n/a", "n/b", "n/c/d", "n/c/e", "n/", "n0", "nx/a", "m/a", "m/b/c", "a")
PREFIXES = ("n/", "n/c/", "m/", "m/b/", "nx/", "n", "zz/")
WRITES = st.lists(
    st.one_of(
        st.lists(st.sampled_from(KEYS), min_size=1, max_size=4, unique=True),
        st.integers(1, 3),  # that many messages
    ),
    min_size=1,
    max_size=12,
)
#: Keys written again after the store is reopened.
MORE = st.lists(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True), max_size=3)


async def _apply(store, writes, mark: str) -> None:
    for number, write in enumerate(writes):
        if isinstance(write, int):
            await store.append_messages("main", [("user", (text(f"{mark}{number}.{i}"),), None) for i in range(write)])
        else:
            await store.set_states("main", {key: f"{mark}{number}" for key in write})


def _expected(store, prefix: str, sequence: int) -> tuple[int, dict[str, int]]:
    found = store.state_sequences("main", prefix)
    return sum(1 for seq in found.values() if seq <= sequence), {k: seq for k, seq in found.items() if seq > sequence}


async def _check(url: str, writes, more) -> None:
    async with open_store(":memory:") as whole:
        await _apply(whole, writes, "a")
        await _apply(whole, more, "b")
        async with open_store(url) as store:
            await _apply(store, writes, "a")
        async with open_store(url) as store:  # reopened: its keys are in the database alone
            await _apply(store, more, "b")
            for prefix in PREFIXES:
                for sequence in range(whole.model.head("main") + 2):
                    assert store.state_sequences_after("main", prefix, sequence) == _expected(whole, prefix, sequence), (prefix, sequence)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(writes=WRITES, more=MORE)
def test_a_store_counts_the_keys_under_a_prefix_as_its_records_say_on_sqlite(writes, more):
    with tempfile.TemporaryDirectory() as folder:
        trio.run(_check, str(Path(folder) / "store.db"), writes, more)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(writes=WRITES, more=MORE)
def test_a_store_counts_the_keys_under_a_prefix_as_its_records_say_on_postgres(pg_cluster, writes, more):
    trio.run(_check, pg_cluster.fresh_url(), writes, more)


@pytest.mark.sqlite_only("reads the file's own tables with sqlite3")
async def test_the_key_counts_a_file_keeps_are_its_records_after_a_fork_and_an_erasure(store_path):
    async with open_store(store_path) as store:
        message = await store.append_message("main", "user", (text("hello"),))
        await store.set_states("main", {"ns/chunk/1": 1, "ns/chunk/2": 2, "ns/summary/a": "a", "top": 0})
        await store.set_states("main", {"ns/chunk/1": 10, "ns/chunk/3": 3})
        await store.create_branch("side", "main", at_sequence=store.model.head("main"))
        await store.set_states("side", {"ns/chunk/1": 11, "ns/chunk/4": 4})
        await store.erase([message.id], reason="test", at=0.0)
        assert store.state_sequences_after("main", "ns/chunk/", 0) == (0, store.state_sequences("main", "ns/chunk/"))
    with sqlite3.connect(store_path) as connection:
        kept = connection.execute("SELECT branch, parent, keys FROM log_state_keys ORDER BY 1, 2").fetchall()
        parent = "rtrim(ref, replace(ref, '/', ''))"
        query = f"SELECT branch, {parent}, count(DISTINCT ref) FROM log WHERE kind = 'state' GROUP BY 1, 2 ORDER BY 1, 2"  # noqa: S608
        counted = connection.execute(query).fetchall()
    assert kept == counted == [("main", "", 1), ("main", "ns/chunk/", 3), ("main", "ns/summary/", 1), ("side", "ns/chunk/", 2)]
