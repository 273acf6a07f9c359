"""The namespace is an actor (issue 20, item 1): the strategy calls that serve a namespace's
opens, compiles and catch-ups run in the actor's own task, whichever manager or caller task
asked; another namespace's run in another task; a model request runs in neither (the drain that
asks it holds the namespace's turn, never the actor's task). Checked through the public API,
on both backends, by recording the task of each strategy call."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
import trio

from asides import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy, open_runtime, text

BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}


class Tasks:
    """Which task made each call, by who made it."""

    def __init__(self) -> None:
        self.by: dict[str, set[int]] = defaultdict(set)

    def note(self, who: str) -> None:
        self.by[who].add(id(trio.lowlevel.current_task()))


class RecordingPassthrough(PassthroughStrategy):
    def __init__(self, tasks: Tasks, who: str) -> None:
        super().__init__()
        self.tasks, self.who = tasks, who

    async def initialize(self, ctx: Any) -> None:
        self.tasks.note(self.who)
        await super().initialize(ctx)

    async def on_new_message(self, message: Any, ctx: Any) -> None:
        self.tasks.note(self.who)
        await super().on_new_message(message, ctx)

    async def select(self, ctx: Any, budget: int, options: Any) -> Any:
        self.tasks.note(self.who)
        return await super().select(ctx, budget, options)


class RecordingAutobiographical(AutobiographicalStrategy):
    def __init__(self, tasks: Tasks, who: str) -> None:
        super().__init__(target_chunk_tokens=60, recent_window_tokens=0, head_window_tokens=0)
        self.tasks, self.who = tasks, who

    async def select(self, ctx: Any, budget: int, options: Any) -> Any:
        self.tasks.note(self.who)
        return await super().select(ctx, budget, options)


class RecordingModel(ExtractiveModel):
    def __init__(self, tasks: Tasks) -> None:
        super().__init__()
        self.tasks = tasks

    async def complete(self, request: Any) -> Any:
        self.tasks.note("model")
        return await super().complete(request)


@pytest.mark.timeout(60)
async def test_strategy_calls_of_one_namespace_run_in_its_actors_task_and_model_requests_in_neither(store_path):
    tasks = Tasks()
    async with open_runtime(store_path) as rt:
        ann_1 = await rt.open_manager("agents/a", strategy=RecordingPassthrough(tasks, "a"), view_reader="ann")
        ann_2 = await rt.open_manager("agents/a", strategy=RecordingPassthrough(tasks, "a"), view_reader="ann")
        bob = await rt.open_manager("agents/b", strategy=RecordingPassthrough(tasks, "b"), view_reader="bob")
        cleo = await rt.open_manager(
            "agents/c", strategy=RecordingAutobiographical(tasks, "c"), view_reader="cleo", model=RecordingModel(tasks)
        )

        async def caller(manager: Any, number: int) -> None:
            tasks.note("callers")
            await manager.add_message("user", [text(f"line {number} from a caller task, long enough to count as a line")])
            await manager.compile(**BIG)
            await manager.preview_context(**BIG)

        async with trio.open_nursery() as nursery:
            for number, manager in enumerate((ann_1, ann_2, ann_1, ann_2, ann_1, bob, bob)):
                nursery.start_soon(caller, manager, number)
        for number in range(12):
            await cleo.add_message("user", [text(f"cleo's line {number}, which her memory compresses in time")])
        await cleo.compile(**BIG)
        await cleo.drain()
        assert cleo.get_summaries_in_range(), "the premise: a model request was made and answered"
        await cleo.compile(**BIG)
        tasks.note("callers")  # this task called too

    a, b, c = tasks.by["a"], tasks.by["b"], tasks.by["c"]
    assert len(a) == 1, "every strategy call of agents/a ran in one task, whichever of two managers and five tasks asked"
    assert len(b) == 1 and len(c) == 1
    assert len(a | b | c) == 3, "each namespace has a task of its own"
    assert not (a | b | c) & tasks.by["callers"], "no strategy call ran in a caller's task"
    assert tasks.by["model"] and not tasks.by["model"] & (a | b | c), "a model request never runs in an actor's task"


class BlockingOnce(PassthroughStrategy):
    """Its first ``select`` waits until released (or cancelled)."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = trio.Event()
        self.release = trio.Event()
        self.cancelled = False
        self.calls = 0

    async def select(self, ctx: Any, budget: int, options: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            try:
                await self.release.wait()
            except trio.Cancelled:
                self.cancelled = True
                raise
        return await super().select(ctx, budget, options)


@pytest.mark.timeout(60)
async def test_a_caller_that_gives_up_cancels_its_own_work_and_the_actor_serves_the_next(store_path):
    strategy = BlockingOnce()
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/a", strategy=strategy, view_reader="ann")
        await ann.add_message("user", [text("hello")])
        head = rt.store.head("main")
        with trio.CancelScope() as gave_up:

            async def give_up_once_inside() -> None:
                await strategy.entered.wait()
                gave_up.cancel()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(give_up_once_inside)
                await ann.compile(**BIG)
        assert gave_up.cancelled_caught and strategy.cancelled, "the work of the caller that gave up was cancelled"
        assert rt.store.head("main") == head, "the cancelled compile wrote nothing"
        compiled = await ann.compile(**BIG)  # the actor serves the next command
        assert len(compiled.messages) == len(ann.get_all_messages()) == 1
