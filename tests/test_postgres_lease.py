"""The compression lease: one process at a time compresses a namespace of a shared store.

Several runtimes in one test share one PostgreSQL schema (each has its own store and
connections, as a process has). Expiry is measured on the runtime's clock, so the stalled-holder
test runs on a frozen ``MockClock`` and moves it by hand: nothing waits for real time. The last
test shows that on a store file, which one process owns, the lease costs nothing: no record, no
check. The PostgreSQL tests skip, saying why, where PostgreSQL is not available."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing
from pg_checks import rows
from pg_cluster import pg_cluster_fixture, pg_url_fixture  # noqa: F401  (fixtures pg_cluster, pg_url)

from asides.actors import ModelPolicy, open_runtime
from asides.actors._records import NAMESPACE_RECORDS  # test-only: the rule the runtime hands a StrategyState
from asides.strategies._base import StrategyState
from asides.strategies._passthrough import PassthroughStrategy
from tests.test_compression_readers import BIG, all_summary_texts, blocking_model, marker_model, memory, write_conversation

NAMESPACE = "agents/s"
SUMMARIES = f"{NAMESPACE}/autobiographical/summary/"


def state_rows(url: str, prefix: str) -> list[tuple[str, Any]]:
    """``(key, value)`` of every state record under ``prefix``, in commit order."""
    return [(row[4], json.loads(row[5])) for row in rows(url) if row[3] == "state" and row[4].startswith(prefix)]


def leases(url: str) -> list[dict[str, Any]]:
    return [value for _key, value in state_rows(url, f"{NAMESPACE}/compression-lease")]


def written_twice(url: str) -> list[str]:
    keys = [key for key, _value in state_rows(url, f"{NAMESPACE}/autobiographical/")]
    return sorted({key for key in keys if keys.count(key) > 1})


def texts(compiled) -> str:
    return " ".join(b.text for m in compiled.messages for b in m.content if hasattr(b, "text"))


async def until(condition: Callable[[], bool]) -> None:
    """Let the other tasks run until ``condition`` holds (no clock involved)."""
    while not condition():
        await trio.testing.wait_all_tasks_blocked()


async def test_a_stalled_holders_late_summary_is_refused_once_another_process_took_the_lease_over(pg_url, deaf, mock_clock, caplog):
    caplog.set_level(logging.WARNING, logger="asides.actors")
    # ``here`` holds its lease for 30 s while its request is out for longer: what every other
    # process sees of a holder that stalled (no renewal, no release).
    stalling = ModelPolicy(compression_lease=30)
    async with open_runtime(pg_url, model_policy=stalling) as here, open_runtime(pg_url) as there:
        host = await here.open_manager("host", strategy=PassthroughStrategy())
        blocking, _late = blocking_model("LATE-ANSWER")
        stalled = await here.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=blocking)
        await write_conversation(host, 30)
        await blocking.wait_for_request()  # chunks closed under the lease; a summary request is out
        assert leases(pg_url)[-1]["holder"] == here.lease_holder

        taker_model = marker_model("TAKEN-OVER")
        taker = await there.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=taker_model)
        await until(lambda: "another process compresses" in (taker.pending_work() or ""))
        assert taker_model.requests == [], "no request while another process holds the lease"

        mock_clock.jump(31)  # the lease expires, as ``there`` counts it
        with trio.fail_after(60):
            await taker.drain()  # took the lease over, took in ``here``'s chunks, compressed them
        holders = [lease["holder"] for lease in leases(pg_url)]
        assert holders[-2:] == [there.lease_holder, None], "taken over, and given up once the work was done"
        assert taker_model.requests, "the new holder compressed"

        blocking.open()  # the stalled holder's answer arrives; it has heard nothing of the takeover
        await stalled.drain()  # its unit ends; its strategy takes in the new holder's records
        assert any("no longer this process's" in r.getMessage() for r in caplog.records), "refused at commit"
        assert len(blocking.requests) == 1
        assert stalled.pending_work() is None, "the refusal is no failure; nothing is left to do"

        assert written_twice(pg_url) == []
        stored = all_summary_texts(there.store)
        assert stored and all(t.startswith("TAKEN-OVER") for t in stored), stored
        shown = texts(await stalled.compile(**BIG))  # the holder's memory, in the process that lost the lease
        assert "TAKEN-OVER" in shown and "LATE-ANSWER" not in shown


async def test_a_process_without_the_lease_compresses_nothing_shows_the_holders_memory_and_takes_over_at_release(pg_url):
    async with open_runtime(pg_url) as here, open_runtime(pg_url) as there:
        host = await here.open_manager("host", strategy=PassthroughStrategy())
        here_model = marker_model("HERE")
        holder = await here.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=here_model)
        await write_conversation(host, 30)
        await holder.drain()
        there_model = marker_model("THERE")
        other = await there.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=there_model)
        await write_conversation(host, 30)
        with trio.fail_after(60):
            await holder.drain()
            await there.store.sync()  # ``there`` has seen every message
            await other.drain()  # waits for the holder's records, and is then ready too
        assert there_model.requests == [], "only the lease holder compresses"
        assert other.pending_work() is None
        shown = texts(await other.compile(**BIG))
        assert "HERE#" in shown
        assert [s.id for s in other.get_summaries_in_range()] == [s.id for s in holder.get_summaries_in_range()]

        assert [lease["holder"] for lease in leases(pg_url)] == [here.lease_holder, None, here.lease_holder, None], (
            "held while there was work, given up when there was none"
        )
        await holder.aclose()
        await write_conversation(host, 30)
        await there.store.sync()
        with trio.fail_after(60):
            await other.drain()
        assert there_model.requests, "the other process took the released lease at once"
        assert [lease["holder"] for lease in leases(pg_url)][-2:] == [there.lease_holder, None]
        assert written_twice(pg_url) == [], "the new holder went on from the old one's records"
        ids = [s.id for s in other.get_summaries_in_range()]
        assert len(ids) == len(set(ids))
        shown = texts(await other.compile(**BIG))
        assert "HERE#" in shown and "THERE#" in shown


async def test_on_a_store_file_the_lease_costs_nothing(tmp_path):
    path = str(tmp_path / "one-process.db")
    async with open_runtime(path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        manager = await rt.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=marker_model())
        await write_conversation(host, 30)
        await manager.drain()
        assert manager.get_summaries_in_range(), "compression works as before"
        assert "another process" not in (manager.pending_work() or ""), "no other process holds a lease"
        assert rt.store.get_state("main", f"{NAMESPACE}/compression-lease") is None, "no lease record"
        # the name is the namespace's own: no strategy may write a key that ends like it
        state = StrategyState(rt.store, "main", NAMESPACE, keys=NAMESPACE_RECORDS)
        with pytest.raises(ValueError, match="compression-lease"):
            await state.set("mine/compression-lease", 1)
