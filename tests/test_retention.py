"""Retention (issue 23): ``retain_for`` erases messages older than that (by their stored
timestamp) with the reason ``"retention"``, in a supervised background task, and
``enforce_retention()`` does it at once. Time runs on Trio's ``MockClock``."""

from __future__ import annotations

import datetime
import time

import pytest
import trio
import trio.testing

from asides.actors import InvalidArgumentError, open_runtime
from asides.store import text
from asides.strategies import PassthroughStrategy

DAY = 86_400.0


async def until(predicate: object, rounds: int = 5_000) -> None:
    """Let the runtime's tasks, and the store's worker thread, run until ``predicate()`` holds:
    each round hands the processor to other threads for a moment (an erasure on SQLite commits in
    the store's thread), so a loaded machine gets there too; the clock is the mock one."""
    for _ in range(rounds):
        if predicate():  # type: ignore[operator]
            return
        await trio.testing.wait_all_tasks_blocked()
        await trio.to_thread.run_sync(time.sleep, 0.001)
    raise AssertionError("the background task did not get there")


async def test_enforce_retention_erases_old_messages(store_path: str) -> None:
    async with open_runtime(store_path, retain_for=datetime.timedelta(days=30)) as rt:
        m = await rt.open_manager(strategy=PassthroughStrategy())
        now = time.time()
        old, recent = await rt.store.append_messages(
            "main", [("user", (text("very old"),), None, now - 40 * DAY), ("user", (text("recent"),), None, now - DAY)]
        )
        erasure = await rt.enforce_retention()
        assert erasure.message_ids == (old.id,) and erasure.reason == "retention"
        assert [i for e in rt.erasures() for i in e.message_ids] == [old.id]
        assert [x.id for x in m.get_all_messages()] == [recent.id]
        assert (await rt.enforce_retention()).message_ids == ()


async def test_retention_runs_in_the_background(store_path: str, mock_clock: trio.testing.MockClock) -> None:
    retain = datetime.timedelta(days=10)
    every = min(retain.total_seconds() / 10, 3600.0)
    async with open_runtime(store_path, retain_for=retain) as rt:
        m = await rt.open_manager(strategy=PassthroughStrategy())
        await until(lambda: True)
        (old,) = await rt.store.append_messages("main", [("user", (text("old"),), None, time.time() - 11 * DAY)])
        kept = await m.add_message("user", [text("new")])
        assert rt.erasures() == ()
        mock_clock.jump(every)
        await until(lambda: len(rt.erasures()) == 1)
        assert rt.erasures()[0].message_ids == (old.id,) and rt.erasures()[0].reason == "retention"
        assert [x.id for x in m.get_all_messages()] == [kept.id]


async def test_retention_needs_a_period(store_path: str) -> None:
    async with open_runtime(store_path) as rt:
        with pytest.raises(InvalidArgumentError):
            await rt.enforce_retention()
    with pytest.raises(InvalidArgumentError):
        async with open_runtime(store_path, retain_for=datetime.timedelta(0)):
            pass
    with pytest.raises(TypeError):
        async with open_runtime(store_path, retain_for=30):  # type: ignore[arg-type]
            pass
