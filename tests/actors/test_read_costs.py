"""Seed row 69: how many reader checks and store reads a write and a compile cost, as a count
(not a time), at 2,000 and 20,000 messages, with no reader and with one.

This file counts calls through internals on purpose (``NamespaceActor.check``, the in-memory
model's reads, the SQLite driver's ``execute``): the behaviour under test *is* how often they
run. Each count must be the same at both history lengths, and a compile and its checks must make
no database query at all (SPEC R5: "the check is an in-memory read of the actor's state, not a
database query"; S3).
"""

from __future__ import annotations

import collections

import pytest

from asides.actors import open_runtime
from asides.actors._namespace import NamespaceActor
from asides.store import text
from asides.store._model import LogModel
from asides.strategies import AutobiographicalStrategy, PassthroughStrategy
from tests.helpers import sibling_store, writable_store

pytestmark = pytest.mark.slow

_READS = ("at", "slice", "get", "id_at", "position_of", "length")


def _row(i: int):
    return [text(f"row {i} " + "word " * 34)]


async def _counts(path: str, monkeypatch, n: int, reader: str | None, strategy, *, record_disclosures: bool = False) -> dict[str, object]:
    counts: collections.Counter[str] = collections.Counter()

    def counting(name, original):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return original(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(NamespaceActor, "check", counting("check", NamespaceActor.check))
    for name in _READS:
        monkeypatch.setattr(LogModel, name, counting(f"read:{name}", getattr(LogModel, name)))
    async with open_runtime(path, record_disclosures=record_disclosures) as rt:
        await writable_store(rt).append_messages("main", [("user", tuple(_row(i)), None) for i in range(n)])
        manager = await rt.open_manager("bench", strategy=strategy, view_reader=reader)
        queries: collections.Counter[str] = collections.Counter()
        execute = writable_store(rt)._journal._driver.execute

        async def counted_execute(sql, params=()):
            queries[sql.split()[0]] += 1
            return await execute(sql, params)

        writable_store(rt)._journal._driver.execute = counted_execute
        await manager.tick()  # a turn queued behind the open's deliveries: they are done
        counts.clear()
        for k in range(50):
            await manager.add_message("user", _row(n + k))
        await manager.tick()  # likewise for the writes' deliveries (no model: tick does no work)
        writes = dict(counts)
        write_queries = dict(queries)
        counts.clear()
        queries.clear()
        if isinstance(strategy, PassthroughStrategy):
            await manager.compile(max_tokens=20_000, reserve_for_response=0)
        compile_counts = dict(counts)
        await rt.store.records()  # the commit a compile's disclosure record joined is done (it reads: SELECT)
        compile_queries = {k: v for k, v in queries.items() if k != "SELECT"}
        await manager.aclose()
    return {"writes": writes, "write_queries": write_queries, "compile": compile_counts, "compile_queries": compile_queries}


@pytest.mark.sqlite_only("counts the queries through the SQLite driver's execute; PostgreSQL's store has another driver")
@pytest.mark.parametrize("reader", [None, "ann"])
@pytest.mark.parametrize(
    "make", [PassthroughStrategy, lambda: AutobiographicalStrategy(head_window_tokens=4000, recent_window_tokens=30000)]
)
async def test_read_time_checks_per_write_and_per_compile_do_not_grow(store_path, monkeypatch, reader, make):
    """Seed row 69: "read-time checks per write and per compile at N=${N}". SPEC A6, R5, S3.

    Count the reader checks and in-memory store reads of 50 writes (and, under Passthrough with a
    fixed budget, of one compile) after 2,000 and after 20,000 messages, with no reader and with
    ann: the counts are the same at both lengths; the writes make one INSERT each and nothing
    else; the compile and its checks make no database query at all. (Autobiographical's compile
    shows its growing pyramid of summaries, so only its writes are counted here.) Disclosures are
    not recorded here; the next test counts them."""
    small = await _counts(store_path, monkeypatch, 2_000, reader, make())
    monkeypatch.undo()
    large = await _counts(sibling_store(store_path, "large"), monkeypatch, 20_000, reader, make())
    assert small["writes"] == large["writes"]
    assert small["writes"]["check"] > 0
    assert small["write_queries"] == large["write_queries"] == {"INSERT": 50}
    assert small["compile"] == large["compile"]
    assert small["compile_queries"] == large["compile_queries"] == {}


@pytest.mark.sqlite_only("counts the queries through the SQLite driver's execute; PostgreSQL's store has another driver")
async def test_a_compile_records_what_is_newly_disclosed_in_one_insert(store_path, monkeypatch):
    """With disclosures recorded (the default, issue 23), a compile after 50 new messages makes
    one INSERT (one record naming what it newly showed), after 2,000 and after 20,000 alike."""
    small = await _counts(store_path, monkeypatch, 2_000, None, PassthroughStrategy(), record_disclosures=True)
    monkeypatch.undo()
    large = await _counts(sibling_store(store_path, "large"), monkeypatch, 20_000, None, PassthroughStrategy(), record_disclosures=True)
    assert small["compile"] == large["compile"]
    assert small["compile_queries"] == large["compile_queries"] == {"INSERT": 1}
