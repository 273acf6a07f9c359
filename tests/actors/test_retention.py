"""Retention (issue 23): ``retain_for`` erases messages older than that (by their stored
timestamp) with the reason ``"retention"``, in a supervised background task, and
``enforce_retention()`` does it at once. Time runs on Trio's ``MockClock``."""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest
import trio
import trio.testing

from asides.actors import InvalidArgumentError, open_runtime
from asides.store import text
from asides.strategies import PassthroughStrategy
from tests.helpers import eventually, writable_store

DAY = 86_400.0


async def until(predicate: Any) -> None:
    """Let the runtime's tasks, and the store's worker thread, run until ``predicate()`` holds
    (an erasure on SQLite commits in the store's thread), within a generous real-time bound; the
    clock is the mock one."""
    await eventually(predicate, what="the retention pass")


async def test_enforce_retention_erases_old_messages(store_path: str) -> None:
    async with open_runtime(store_path, retain_for=datetime.timedelta(days=30)) as rt:
        m = await rt.open_manager(strategy=PassthroughStrategy())
        now = time.time()
        old, recent = await writable_store(rt).append_messages(
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
        (old,) = await writable_store(rt).append_messages("main", [("user", (text("old"),), None, time.time() - 11 * DAY)])
        kept = await m.add_message("user", [text("new")])
        assert rt.erasures() == ()

        def erased_after_a_period() -> bool:
            # Each look moves the clock on by one period: the background pass that is asleep by
            # then wakes, however long its first pass took on a loaded machine.
            mock_clock.jump(every)
            return len(rt.erasures()) == 1

        await until(erased_after_a_period)
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
