"""The namespace is an actor (issue 20, item 1): the strategy calls that serve a namespace's
opens, compiles and catch-ups, and the built-in strategies' planning and commit steps of a
compression unit, run in the actor's own task, whichever manager or caller task asked; another
namespace's run in another task; a model request runs in neither (the drain sends it from its own
task, holding no turn). Checked through the public API, on both backends, by recording the task
of each strategy call."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
import trio

from asides import (
    AutobiographicalStrategy,
    CompiledMessage,
    CompletionRequest,
    ExtractiveModel,
    PassthroughStrategy,
    completion_text,
    open_runtime,
    text,
)
from tests.helpers import writable_store

BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}


class Tasks:
    """Which task made each call, by who made it."""

    def __init__(self) -> None:
        self.by: dict[str, set[int]] = defaultdict(set)

    def note(self, who: str) -> None:
        self.by[who].add(id(trio.lowlevel.current_task()))


class RecordsCoreCalls:
    """Notes the task of each core strategy call (mixed in before the strategy's class)."""

    tasks: Tasks
    who: str

    async def initialize(self, ctx: Any) -> None:
        self.tasks.note(self.who)
        await super().initialize(ctx)  # type: ignore[misc]

    async def on_new_message(self, message: Any, ctx: Any) -> None:
        self.tasks.note(self.who)
        await super().on_new_message(message, ctx)  # type: ignore[misc]

    async def select(self, ctx: Any, budget: int, options: Any) -> Any:
        self.tasks.note(self.who)
        return await super().select(ctx, budget, options)  # type: ignore[misc]


class RecordingPassthrough(RecordsCoreCalls, PassthroughStrategy):
    def __init__(self, tasks: Tasks, who: str) -> None:
        super().__init__()
        self.tasks, self.who = tasks, who


class RecordingAutobiographical(RecordsCoreCalls, AutobiographicalStrategy):
    def __init__(self, tasks: Tasks, who: str) -> None:
        super().__init__(target_chunk_tokens=60, recent_window_tokens=0, head_window_tokens=0)
        self.tasks, self.who = tasks, who

    # The planning and judging steps of a unit (the unit protocol: the actor performs them).

    def plan_unit(self, ctx: Any, again: Any = None) -> Any:
        self.tasks.note(self.who)
        plan = super().plan_unit(ctx, again)
        if plan is not None:
            self.tasks.note("c planned")
        return plan

    def judge_answer(self, ctx: Any, plan: Any, answer: Any) -> Any:
        self.tasks.note(self.who)
        self.tasks.note("c judged")
        return super().judge_answer(ctx, plan, answer)

    def took(self, ctx: Any, written: Any) -> None:
        self.tasks.note(self.who)
        super().took(ctx, written)


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

    assert tasks.by["c planned"] and tasks.by["c judged"], "the premise: units were planned and answers judged"
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


class OldWayNotes(PassthroughStrategy):
    """A host's own strategy written against SPEC 3.3's ``tick(ctx)``: it marks what it reads,
    asks the model through ``ctx.model`` and writes a state record through ``ctx.state``, all
    from its own ``tick``, once."""

    has_background_work = True
    marks_compression_reads = True

    def __init__(self, tasks: Tasks) -> None:
        super().__init__()
        self.tasks = tasks
        self.done = False

    def is_ready(self) -> bool:
        return self.done

    async def select(self, ctx: Any, budget: int, options: Any) -> Any:
        self.tasks.note("select")
        return await super().select(ctx, budget, options)

    async def tick(self, ctx: Any) -> bool:
        if self.done or ctx.model is None or ctx.view.length() < 3:
            return False
        self.tasks.note("tick")
        newest = ctx.view.at(ctx.view.length() - 1)
        await ctx.mark_compression_read(newest.sequence)
        answer = await ctx.model.complete(CompletionRequest((CompiledMessage("user", newest.content),), max_tokens=50))
        await ctx.state.set("old-way/note", completion_text(answer))
        self.done = True
        return True


@pytest.mark.timeout(60)
async def test_a_strategy_written_the_old_way_runs_its_tick_outside_the_actors_task(store_path):
    """SPEC 3.3's ``tick(ctx)`` keeps working unchanged: it runs in the drain's task, not the
    actor's, and its context calls (a floor raise, a model request, a state write) do what they
    did: the floor rose to what it read, and the record is written. The calls that change what
    the actor owns are commands: the floor raise and the state write are made in the actor's
    task (on a store file a listener hears each write in the task that wrote it; a PostgreSQL
    store may tell it from its committer's task)."""
    tasks = Tasks()
    strategy = OldWayNotes(tasks)
    async with open_runtime(store_path) as rt:

        def heard(event: Any) -> None:
            keys = getattr(event, "keys", ())
            if "agents/o/old-way/note" in keys or "agents/o/narrowing-floor" in keys:
                tasks.note("owned writes")

        writable_store(rt).add_listener(heard)
        shared = rt.store.shared
        manager = await rt.open_manager("agents/o", strategy=strategy, view_reader="ann", model=RecordingModel(tasks))
        for number in range(3):
            await manager.add_message("user", [text(f"line {number} for the old way")])
        await manager.drain()
        await manager.compile(**BIG)
        assert rt.store.get_state("main", "agents/o/old-way/note"), "the tick wrote its record"
        assert rt.store.get_state("main", "agents/o/narrowing-floor") == manager.get_all_messages()[-1].sequence
    assert len(tasks.by["tick"]) == 1 and len(tasks.by["select"]) == 1
    assert not tasks.by["tick"] & tasks.by["select"], "the tick ran outside the actor's task"
    assert tasks.by["model"] == tasks.by["tick"], "its model request went out from the tick's own task"
    if not shared:
        assert tasks.by["owned writes"] == tasks.by["select"], "its floor raise and state write ran as commands, in the actor's task"
