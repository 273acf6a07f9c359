"""The compression lease: one process at a time compresses a namespace of a shared store.

The lease is a session lock of the store's connection (a PostgreSQL advisory lock,
actors/_lease.py), so nothing about it enters the log, and a holder whose session ends frees it
at once. Several runtimes in one test share one PostgreSQL schema (each has its own store and
connections, as a process has); a child process (tests/pg_worker.py ``hold``) is a holder that
can be killed with ``kill -9``. A waiting process asks again for the lease after
``ModelPolicy.lease_retry`` on the runtime's clock, so most takeover tests run on a frozen
``MockClock`` moved by hand past one retry once the test has seen the waiting process wait, and
count the asks that were refused. A test whose takeover needs many back-offs runs on real time
with short ones instead, waiting on the events themselves within generous bounds: no test counts
clock jumps or scheduler turns while PostgreSQL's I/O runs. The PostgreSQL tests skip, saying why, where PostgreSQL is not available."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing
from pg_checks import Child, execute, rows
from pg_cluster import pg_cluster_fixture, pg_url_fixture  # noqa: F401  (fixtures pg_cluster, pg_url)

from asides import ModelPolicy
from asides.actors import open_runtime
from asides.actors._lease import lease_holders
from asides.actors._records import NAMESPACE_RECORDS  # test-only: the rule the runtime hands a StrategyState
from asides.store import InvalidArgumentError
from asides.strategies._base import StrategyState
from asides.strategies._passthrough import PassthroughStrategy
from tests.actors.test_compression_readers import BIG, all_summary_texts, blocking_model, marker_model, memory, write_conversation
from tests.helpers import writable_store

NAMESPACE = "agents/s"
RETRY = ModelPolicy().lease_retry
REFUSED = "is held by another process"


def state_rows(url: str, prefix: str) -> list[tuple[str, Any]]:
    """``(key, value)`` of every state record under ``prefix``, in commit order."""
    return [(row[4], json.loads(row[5])) for row in rows(url) if row[3] == "state" and row[4].startswith(prefix)]


def lease_records(url: str) -> list[tuple[str, Any]]:
    return [(row[4], row[5]) for row in rows(url) if row[3] == "state" and row[4].endswith("/compression-lease")]


def written_twice(url: str) -> list[str]:
    keys = [key for key, _value in state_rows(url, f"{NAMESPACE}/autobiographical/")]
    return sorted({key for key in keys if keys.count(key) > 1})


def texts(compiled) -> str:
    return " ".join(b.text for m in compiled.messages for b in m.content if hasattr(b, "text"))


def refusals(caplog: pytest.LogCaptureFixture) -> int:
    """How many asks for a lease were refused so far (another session held it)."""
    return sum(1 for record in caplog.records if REFUSED in record.getMessage())


async def holder_of(rt) -> str | None:
    """Who holds the lease of ``NAMESPACE`` on main now, as ``pg_locks`` says (read-only)."""
    return (await lease_holders(writable_store(rt), [("main", NAMESPACE)])).get(("main", NAMESPACE))


async def until(condition: Callable[[], bool]) -> None:
    """Let the other tasks run until ``condition`` holds (no clock involved)."""
    while not condition():
        await trio.testing.wait_all_tasks_blocked()


async def test_a_holder_whose_session_ended_frees_the_lease_at_once_and_its_late_summary_is_refused(pg_url, mock_clock, caplog):
    caplog.set_level(logging.DEBUG, logger="asides.actors")
    async with open_runtime(pg_url) as here, open_runtime(pg_url) as there:
        host = await here.open_manager("host", strategy=PassthroughStrategy())
        blocking, _late = blocking_model("LATE-ANSWER")
        stalled = await here.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=blocking)
        await write_conversation(host, 30)
        await blocking.wait_for_request()  # chunks closed under the lease; a summary request is out
        holder = await holder_of(there)
        assert holder is not None and holder.startswith("server process "), holder

        taker_model = marker_model("TAKEN-OVER")
        taker = await there.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=taker_model)
        await until(lambda: "another process compresses" in (taker.pending_work() or ""))
        assert taker_model.requests == [], "no request while another process holds the lease"
        refused = refusals(caplog)
        assert refused >= 1

        # The holder's session ends, as when its process crashes or its connection is lost: the
        # server frees the lease with it, with no expiry to wait for.
        pid = int(re.match(r"server process (\d+)", holder)[1])
        execute(pg_url, f"SELECT pg_terminate_backend({pid}, 10000)")
        assert await holder_of(there) is None, "freed with the session"
        mock_clock.jump(RETRY)  # the waiting drain's next ask
        await taker.drain()  # took the lease over, took in ``here``'s chunks, compressed them
        assert refusals(caplog) == refused, "the first ask after the session ended got the lease"
        assert taker_model.requests, "the new holder compressed"

        blocking.open()  # the old holder's answer arrives; its store reconnects to commit it
        await stalled.drain()  # its unit ends; its strategy takes in the new holder's records
        assert any("no longer this process's" in r.getMessage() for r in caplog.records), "refused at commit"
        assert len(blocking.requests) == 1
        assert stalled.pending_work() is None, "the refusal is no failure; nothing is left to do"

        assert written_twice(pg_url) == []
        assert lease_records(pg_url) == [], "no lease record entered the log"
        stored = all_summary_texts(there.store)
        assert stored and all(t.startswith("TAKEN-OVER") for t in stored), stored
        shown = texts(await stalled.compile(**BIG))  # the holder's memory, in the process that lost the lease
        assert "TAKEN-OVER" in shown and "LATE-ANSWER" not in shown


@pytest.mark.slow
async def test_a_holder_killed_with_sigkill_frees_the_lease_at_once(pg_url, mock_clock, caplog):
    """A child process holds the lease (its request never ends) and is killed with ``kill -9``:
    the server ends its session and frees the lease, and the waiting process takes it over at
    its first ask after that, going on from the child's records."""
    caplog.set_level(logging.DEBUG, logger="asides.actors")
    child = Child("hold", pg_url)
    try:
        assert await trio.to_thread.run_sync(child.expect) == "HOLDING"
        async with open_runtime(pg_url) as there:
            await there.store.sync()
            holder = await holder_of(there)
            assert holder is not None and f"asides pid {child.process.pid}" in holder, holder
            taker_model = marker_model("TAKEN-OVER")
            taker = await there.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=taker_model)
            await until(lambda: "another process compresses" in (taker.pending_work() or ""))
            refused = refusals(caplog)
            assert refused >= 1 and taker_model.requests == []

            await trio.to_thread.run_sync(child.kill)
            while await holder_of(there) is not None:  # the server ends the session once it sees the socket close
                await trio.to_thread.run_sync(lambda: None)
            mock_clock.jump(RETRY)
            await taker.drain()
            assert refusals(caplog) == refused, "the first ask after the crash got the lease: no expiry to wait for"
            assert taker_model.requests, "the new holder compressed"
            assert written_twice(pg_url) == [], "it went on from the crashed holder's records"
            assert lease_records(pg_url) == []
    finally:
        child.kill()


async def test_a_process_without_the_lease_compresses_nothing_shows_the_holders_memory_and_takes_over_at_release(pg_url, mock_clock):
    async with open_runtime(pg_url) as here, open_runtime(pg_url) as there:
        host = await here.open_manager("host", strategy=PassthroughStrategy())
        here_model = marker_model("HERE")
        holder = await here.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=here_model)
        await write_conversation(host, 30)
        await holder.drain()
        await here.store.sync()  # the store's next round frees the lease on the server (release_session_lock)
        assert await holder_of(here) is None, "given up when there was no work left"
        there_model = marker_model("THERE")
        other = await there.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=there_model)
        await write_conversation(host, 30)
        await holder.drain()
        await there.store.sync()  # ``there`` has seen every message
        await other.drain()  # waits for the holder's records, and is then ready too
        assert there_model.requests == [], "only the lease holder compresses"
        assert other.pending_work() is None
        shown = texts(await other.compile(**BIG))
        assert "HERE#" in shown
        assert [s.id for s in other.get_summaries_in_range()] == [s.id for s in holder.get_summaries_in_range()]

        await holder.aclose()
        await write_conversation(host, 30)
        await there.store.sync()
        mock_clock.jump(RETRY)
        await other.drain()
        assert there_model.requests, "the other process took the released lease"
        assert written_twice(pg_url) == [], "the new holder went on from the old one's records"
        assert lease_records(pg_url) == [], "no lease record entered the log"
        ids = [s.id for s in other.get_summaries_in_range()]
        assert len(ids) == len(set(ids))
        shown = texts(await other.compile(**BIG))
        assert "HERE#" in shown and "THERE#" in shown


class HeldFailures:
    """A model whose every request fails, each held until the test lets them fail (``release``):
    the first request is out, under the holder's lease, for as long as the test needs."""

    def __init__(self) -> None:
        self.calls = 0
        self.asked = trio.Event()
        self.released = trio.Event()

    async def complete(self, request: Any) -> Any:
        self.calls += 1
        self.asked.set()
        await self.released.wait()
        raise RuntimeError("down")


async def test_a_holder_whose_model_keeps_failing_gives_the_lease_up_to_one_whose_model_answers(pg_url):
    """Past ``ModelPolicy.drain_failures`` failures in a row the holder gives the lease up after
    each further failure, so the waiting process, whose model answers, takes over. On real time,
    with short back-offs and retries: the test waits on the events themselves (the holder's
    request out, the taker waiting, the taker's first request), each within a generous bound,
    and counts no clock jump or scheduler turn while PostgreSQL's I/O runs."""
    policy = ModelPolicy(drain_failures=2, first_backoff=0.01, max_backoff=0.05, lease_retry=0.05)
    failing = HeldFailures()
    async with open_runtime(pg_url, model_policy=policy) as here, open_runtime(pg_url, model_policy=policy) as there:
        host = await here.open_manager("host", strategy=PassthroughStrategy())
        await write_conversation(host, 30)
        await here.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=failing)
        with trio.fail_after(60):
            await failing.asked.wait()  # the holder's first request is out, under its lease
        assert await holder_of(there) is not None
        answering = marker_model("ANSWERED")
        taker = await there.open_manager(NAMESPACE, strategy=memory(), view_reader="ann", model=answering)
        with trio.fail_after(60):
            while "another process compresses" not in (taker.pending_work() or ""):
                await trio.sleep(0.01)
        assert answering.requests == [], "no request while the holder keeps the lease"
        failing.released.set()  # from now on every request of the holder fails at once
        with trio.fail_after(60):
            await answering.wait_for_requests(1)
        assert failing.calls > policy.drain_failures, "the lease was kept while fewer failures than that"
        await taker.drain()
        assert all(t.startswith("ANSWERED") for t in all_summary_texts(there.store))
        assert written_twice(pg_url) == []


def test_lease_retry_must_be_a_positive_number():
    for bad in (0, -1, True, "1"):
        with pytest.raises(InvalidArgumentError, match="lease_retry"):
            ModelPolicy(lease_retry=bad)


async def test_a_drain_writes_its_strategys_records_and_nothing_else(store_path):
    """The seed's sequence rules on both backends: a drain raises the branch's sequence by its
    strategy's records and its floor raises alone (each floor raise one write); a drain with no
    reader writes no floor; neither writes anything about the lease."""
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        await write_conversation(host, 40)
        for namespace, reader in (("agents/ann", "ann"), ("agents/nobody", None)):
            # Read before the open: the open's drain may begin its work before open_manager returns.
            head = rt.store.head("main")
            manager = await rt.open_manager(namespace, strategy=memory(), view_reader=reader, model=marker_model())
            await manager.drain()
            written = [row for row in await rt.store.records() if row[1] == "main" and row[2] > head]
            assert rt.store.head("main") == head + len(written), "every sequence the open and the drain took is one of their records"
            assert all(kind == "state" for _i, _b, _s, kind, _r, _body in written), "a drain appends no message"
            opened = [f"{namespace}/reader"] if reader is not None else []  # the strategy's note takes no sequence
            every = [ref for _i, _b, _s, _k, ref, _body in written]
            assert sorted(k for k in every if k in opened) == sorted(opened), "the open wrote its claim, once"
            assert rt.recorded_strategy(namespace).name == memory().name
            keys = [k for k in every if k not in opened]
            assert any("/summary/" in k for k in keys), "the premise: it compressed"
            assert all(k.startswith(f"{namespace}/autobiographical/") or k == f"{namespace}/narrowing-floor" for k in keys), keys
            floors = [json.loads(body) for _i, _b, _s, _k, ref, body in written if ref == f"{namespace}/narrowing-floor"]
            assert floors == sorted(set(floors)), "each floor raise is one write, and it only rises"
            if reader is None:
                assert floors == [], "a drain with no reader writes no floor"
            else:
                assert floors, "the premise: ann's drain raised the floor"
        if store_path.startswith("postgresql://"):
            assert lease_records(store_path) == []
            assert await lease_holders(writable_store(rt), [("main", "agents/ann"), ("main", "agents/nobody")]) == {}, "all given up"


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
        assert await lease_holders(writable_store(rt), [("main", NAMESPACE)]) == {}, "a store file records no holder"
        # the name is the namespace's own: no strategy may write a key that ends like it
        state = StrategyState(writable_store(rt), "main", NAMESPACE, keys=NAMESPACE_RECORDS)
        with pytest.raises(ValueError, match="compression-lease"):
            await state.set("mine/compression-lease", 1)
