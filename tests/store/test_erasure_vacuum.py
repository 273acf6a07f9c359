"""An erasure on PostgreSQL owes a rewrite of the log (``VACUUM FULL``) until it is done: the
owed rewrite is recorded in the erasure's own commit, finished at the next writing open (or by
a later try while an older transaction holds it back), shown by ``asides inspect``, and the
erased bytes are then in no data file of the store. The rewrite is held back deterministically
by a transaction holding a snapshot older than the erasure (as an autovacuum's ``ANALYZE`` or a
long report does), kept waiting for the table's lock by a session holding one, or skipped by
killing the erasing process with ``kill -9`` between its commit and its rewrite.
"""

from __future__ import annotations

import json
import os
import signal
import time
from typing import Any

import pytest
import trio
from erasure_checks import data_dir, files_holding, hold_a_snapshot
from helpers import read_child_line, reaped_child

from asides._cli._main import main
from asides.actors import open_runtime
from asides.store import text
from asides.strategies import PassthroughStrategy

SECRET = "zebra-passport-4471"
HERE = os.path.dirname(os.path.abspath(__file__))
CRASH_WRITER = os.path.join(HERE, "erase_crash_writer.py")

pytestmark = pytest.mark.timeout(90)


async def _erase_a_secret(url: str) -> None:
    """A store at ``url`` holding a message with the secret and one without, then the secret erased."""
    async with open_runtime(url) as rt:
        m = await rt.open_manager(strategy=PassthroughStrategy())
        secret = await m.add_message("user", [text(f"my passport is {SECRET}")])
        await m.add_message("user", [text("and the weather is fine")])
        erasure = await rt.erase([secret.id], reason="asked")
        assert erasure.message_ids == (secret.id,)


async def _owed(url: str) -> Any:
    """What the store at ``url`` owes, asked of a read-only open (which changes nothing)."""
    async with open_runtime(url, read_only=True) as rt:
        return await rt.store.owed_vacuum()


async def test_an_erasure_leaves_no_rewrite_owed_once_it_returns(pg_url, pg_cluster, request):
    folder = data_dir(pg_url, request)
    await _erase_a_secret(pg_url)
    assert await _owed(pg_url) is None
    assert files_holding(SECRET, pg_url, folder) == []


async def test_a_rewrite_held_back_by_an_older_snapshot_is_owed_and_finished_at_the_next_open(pg_url, pg_cluster, monkeypatch, request):
    from asides.store import _pg_vacuum

    folder = data_dir(pg_url, request)
    monkeypatch.setattr(_pg_vacuum, "ERASURE_WAIT_SECONDS", 0.0)
    holder = hold_a_snapshot(pg_cluster.url)
    try:
        await _erase_a_secret(pg_url)
        owed = await _owed(pg_url)
        assert owed is not None and owed.erasures == (1,)
        assert holder.info.backend_pid in owed.blocked_by
        assert owed.since <= time.time()
        assert files_holding(SECRET, pg_url, folder), "the premise: the old row version is still in a data file"
        holder.rollback()
    finally:
        holder.close()
    async with open_runtime(pg_url) as rt:  # nothing holds it back now: the open finishes it
        assert await rt.store.owed_vacuum() is None
        assert files_holding(SECRET, pg_url, folder) == []
        assert [e.number for e in rt.erasures()] == [1]


async def test_an_open_does_not_wait_for_an_older_snapshot_and_the_store_tries_again_until_done(pg_url, pg_cluster, monkeypatch, request):
    """The open leaves the rewrite owed while an older transaction holds it back, and the store
    tries again on its schedule (made short here) until the transaction has ended."""
    from asides.store import _pg_vacuum

    folder = data_dir(pg_url, request)
    monkeypatch.setattr(_pg_vacuum, "ERASURE_WAIT_SECONDS", 0.0)
    holder = hold_a_snapshot(pg_cluster.url)
    try:
        await _erase_a_secret(pg_url)
        monkeypatch.setattr(_pg_vacuum, "VACUUM_RETRY_SECONDS", 0.05)
        async with open_runtime(pg_url) as rt:
            owed = await rt.store.owed_vacuum()
            assert owed is not None and owed.erasures == (1,) and holder.info.backend_pid in owed.blocked_by
            await trio.to_thread.run_sync(holder.rollback)
            deadline = time.monotonic() + 30
            while await rt.store.owed_vacuum() is not None:
                assert time.monotonic() < deadline, "the owed rewrite was not tried again once nothing held it back"
                await trio.sleep(0.05)
            assert files_holding(SECRET, pg_url, folder) == []
    finally:
        holder.close()


async def test_inspect_shows_an_owed_rewrite_and_who_holds_it_back(pg_url, pg_cluster, monkeypatch, capsys):
    from asides.store import _pg_vacuum

    monkeypatch.setattr(_pg_vacuum, "ERASURE_WAIT_SECONDS", 0.0)
    holder = hold_a_snapshot(pg_cluster.url)
    try:
        await _erase_a_secret(pg_url)
        assert await trio.to_thread.run_sync(main, ["inspect", pg_url, "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        (pending,) = report["pending"]
        assert pending["kind"] == "vacuum" and pending["erasures"] == [1]
        # the holder, and any other transaction of the server older than the erasure (on a busy
        # server, another test's connection may still be ending)
        assert holder.info.backend_pid in pending["blocked_by"]
        assert await trio.to_thread.run_sync(main, ["inspect", pg_url]) == 0
        shown = capsys.readouterr().out
        assert "VACUUM FULL" in shown and str(holder.info.backend_pid) in shown
        holder.rollback()
        assert await trio.to_thread.run_sync(main, ["inspect", pg_url, "--json"]) == 0  # read-only: still owed, no longer held back by it
        (pending,) = json.loads(capsys.readouterr().out)["pending"]
        assert pending["erasures"] == [1] and holder.info.backend_pid not in pending["blocked_by"]
    finally:
        holder.close()


async def test_a_rewrite_that_cannot_have_the_tables_lock_in_time_stays_owed(pg_url, pg_cluster, monkeypatch, caplog, request):
    """A session holding a lock on the log (and no snapshot) keeps the rewrite waiting; it gives
    up after its lock timeout, says so, and the debt stays for the next open."""
    import psycopg

    from asides.store import _pg_vacuum

    folder = data_dir(pg_url, request)
    monkeypatch.setattr(_pg_vacuum, "VACUUM_LOCK_TIMEOUT_MS", 200)
    async with open_runtime(pg_url) as rt:
        m = await rt.open_manager(strategy=PassthroughStrategy())
        secret = await m.add_message("user", [text(f"my passport is {SECRET}")])
        locker = psycopg.connect(pg_url)
        try:
            locker.execute("LOCK TABLE asides_log IN ACCESS SHARE MODE")
            with caplog.at_level("WARNING", logger="asides.store"):
                await rt.erase([secret.id], reason="asked")
            assert any("stays owed" in r.getMessage() for r in caplog.records)
            owed = await rt.store.owed_vacuum()
            assert owed is not None and owed.erasures == (1,)
        finally:
            locker.close()
    async with open_runtime(pg_url) as rt:
        assert await rt.store.owed_vacuum() is None
    assert files_holding(SECRET, pg_url, folder) == []


def _wait_for_the_erasure_commit(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as watcher:
        deadline = time.monotonic() + 60
        while not watcher.execute("SELECT count(*) FROM asides_log WHERE kind = 'erasure'").fetchone()[0]:
            assert time.monotonic() < deadline, "no erasure was committed"
            time.sleep(0.01)


@pytest.mark.slow
async def test_kill_9_between_an_erasures_commit_and_its_rewrite_is_finished_at_the_next_open(pg_url, pg_cluster, tmp_path, request):
    """The child (tests/store/erase_crash_writer.py) commits its erasure, then waits for the older
    snapshot held here; it is killed there, before its rewrite."""
    folder = data_dir(pg_url, request)
    stderr_path = str(tmp_path / "child.err")
    holder = hold_a_snapshot(pg_cluster.url)
    try:
        with reaped_child(CRASH_WRITER, pg_url, "50", stderr_path=stderr_path) as proc:
            while read_child_line(proc, stderr_path) != "ERASING":
                pass
            await trio.to_thread.run_sync(_wait_for_the_erasure_commit, pg_url)
            os.kill(proc.pid, signal.SIGKILL)
            assert proc.wait() == -signal.SIGKILL
        owed = await _owed(pg_url)
        assert owed is not None and owed.erasures == (1,)
        assert files_holding("SECRET-", pg_url, folder), "the premise: the erased text is still in a data file"
        holder.rollback()
    finally:
        holder.close()
    async with open_runtime(pg_url) as rt:
        (erasure,) = rt.erasures()
        assert len(erasure.message_ids) == 50
        assert await rt.store.owed_vacuum() is None
        assert files_holding("SECRET-", pg_url, folder) == []
