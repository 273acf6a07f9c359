"""The shape of the hot paths, guarded by counting work (never wall-clock time).

A write appends to the log and raises its branch's signal; it runs no strategy, so its work does
not grow with the number of managers or namespaces open, nor with closed ones. Strategies catch up
from their own cursor when they next run (compile, tick, drain): a compile hands its strategy only
the messages new since its last run.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio.testing

from asides import PassthroughStrategy, open_runtime, text
from asides.lowlevel import default_estimate
from tests.helpers import sibling_store, writable_store


class CountingPassthrough(PassthroughStrategy):
    """Passthrough that counts the calls the runtime makes to it."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, int] = {"on_new_message": 0, "select": 0}

    async def on_new_message(self, message: Any, ctx: Any) -> None:
        self.calls["on_new_message"] += 1

    async def select(self, ctx: Any, budget: int, options: Any) -> Any:
        self.calls["select"] += 1
        return await super().select(ctx, budget, options)


async def _work_per_write(open_managers: int, *, close_them: bool, history: int, path: str) -> dict[str, int]:
    """Strategy calls and commits made by 20 ``add_message`` calls, with ``open_managers`` other
    managers open (or opened and closed) on the branch."""
    async with open_runtime(path) as rt:
        writer = await rt.open_manager("writer", strategy=PassthroughStrategy())
        if history:
            await writable_store(rt).append_messages("main", [("user", (text(f"old {i}"),), None) for i in range(history)])
        others = [CountingPassthrough() for _ in range(open_managers)]
        managers = [await rt.open_manager(f"agents/{i}", strategy=s, view_reader=f"r{i}") for i, s in enumerate(others)]
        if close_them:
            for manager in managers:
                await manager.aclose()
        await trio.testing.wait_all_tasks_blocked()
        before_calls = sum(sum(s.calls.values()) for s in others)
        before_commits = rt.store.statistics().commits
        for i in range(20):
            await writer.add_message("user", [text(f"new {i}")])
            await trio.testing.wait_all_tasks_blocked()
        return {
            "strategy_calls": sum(sum(s.calls.values()) for s in others) - before_calls,
            "commits": rt.store.statistics().commits - before_commits,
        }


@pytest.mark.parametrize("history", [0, 2000])
async def test_a_write_runs_no_strategy_however_many_managers_are_open(store_path, history):
    one = await _work_per_write(1, close_them=False, history=history, path=sibling_store(store_path, "one"))
    many = await _work_per_write(50, close_them=False, history=history, path=sibling_store(store_path, "many"))
    closed = await _work_per_write(50, close_them=True, history=history, path=sibling_store(store_path, "closed"))
    assert one == many == closed == {"strategy_calls": 0, "commits": 20}


async def test_a_compile_hands_its_strategy_only_what_is_new(store_path):
    """Pull, not push: the strategy hears of each message once, when it next runs."""
    async with open_runtime(store_path) as rt:
        strategy = CountingPassthrough()
        reader = await rt.open_manager("agents/ann", strategy=strategy, view_reader="ann")
        writer = await rt.open_manager("writer", strategy=PassthroughStrategy())
        for i in range(30):
            await writer.add_message("user", [text(f"m{i}")])
        assert strategy.calls["on_new_message"] == 0, "writes ran no strategy"
        await reader.compile()
        assert strategy.calls == {"on_new_message": 30, "select": 1}
        await writer.add_message("user", [text("one more")])
        await reader.compile()
        assert strategy.calls == {"on_new_message": 31, "select": 2}, "only the new message was handed over"
        await reader.compile()
        assert strategy.calls == {"on_new_message": 31, "select": 3}


class CountingEstimator:
    """A token estimator that counts its calls (the work a compile does per message)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, content: Any) -> int:
        self.calls += 1
        return default_estimate(content)


@pytest.mark.parametrize("reader", [None, "ann"])
async def test_a_compile_after_one_new_message_estimates_only_that_message(store_path, reader):
    """Incremental compiles: after one new message, a passthrough compile of the whole history
    prices only the new message, at 2,000 messages as at 8,000 (one block in 100 is private to bob,
    so the reader view is the filtered one, with a reader and without)."""
    counts = []
    for history in (2000, 8000):
        async with open_runtime(sibling_store(store_path, f"h{history}")) as rt:
            estimator = CountingEstimator()
            manager = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(estimator=estimator), view_reader=reader)
            items = [("user", (text(f"m{i}", audience=["bob"] if i % 100 == 0 else None),), None) for i in range(history)]
            await writable_store(rt).append_messages("main", items)
            await manager.compile(max_tokens=10**9)
            per_compile = []
            for i in range(3):
                await manager.add_message("user", [text(f"new {i}")])
                before = estimator.calls
                compiled = await manager.compile(max_tokens=10**9)
                per_compile.append(estimator.calls - before)
            assert len(compiled.messages) == history + 3 - history // 100  # bob's blocks are hidden
            counts.append(per_compile)
    assert counts[0] == counts[1], counts
    assert max(counts[0]) <= 2, counts


async def test_an_edit_reprices_exactly_the_message_it_changed(store_path):
    """An edit in the middle of a long history: the next compile prices the edited message and
    nothing else (the compiled forms of the others are kept)."""
    async with open_runtime(store_path) as rt:
        estimator = CountingEstimator()
        manager = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(estimator=estimator), view_reader="ann")
        written = await writable_store(rt).append_messages("main", [("user", (text(f"m{i}"),), None) for i in range(3000)])
        await manager.compile(max_tokens=10**9)
        await manager.edit_message(written[1500].id, [text("edited")])
        before = estimator.calls
        compiled = await manager.compile(max_tokens=10**9)
        assert compiled.messages[1500].content == (text("edited"),)
        # the edited message is priced once by the strategy and estimated once for the output
        assert estimator.calls - before == 2
