"""The unit protocol of ``asides.lowlevel``, through a strategy of a host's own.

A strategy that plans its units as values (``PlansUnits``: ``plan_unit``, ``judge_answer``,
``took``, ``asking``) does no I/O for them; the runtime raises the floor a plan names before its
request leaves, sends the request outside the namespace's turn (compiles go on meanwhile),
writes what the judgement makes, refuses a rejected answer, and throws a stale answer away.
Each test drives the strategy of docs/strategies.md ("Planning units as values") through the
public API alone, on both stores."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from asides import (
    AnswerRejectedError,
    CompiledMessage,
    CompletionRequest,
    NarrowingRefusedError,
    PassthroughStrategy,
    completion_text,
    open_runtime,
    text,
)
from asides.lowlevel import Judgement, PlansUnits, UnitPlan, performs_plans, run_planned_unit
from asides.testing import GatedModel, ScriptedModel


class NotesStrategy:
    """Notes on the reader's view, one per unit: the newest messages not noted yet, sent to the
    model in one request; the answer is kept under ``notes/<sequence>``. ``SKIP`` is rejected
    (the runtime's own checks refuse an empty answer before the strategy judges it)."""

    name = "notes"
    marks_compression_reads = True

    def __init__(self) -> None:
        self.noted = 0  # the sequence the notes cover
        self.seen = 0  # the newest sequence handed to the strategy
        self.out: UnitPlan | None = None
        self.took_calls: list[Any] = []
        self._inner = PassthroughStrategy()

    async def initialize(self, ctx) -> None:
        await self._inner.initialize(ctx)

    async def on_new_message(self, message, ctx) -> None:
        self.seen = max(self.seen, message.sequence)
        await self._inner.on_new_message(message, ctx)

    async def select(self, ctx, budget, options):
        return await self._inner.select(ctx, budget, options)

    def _newer(self, ctx) -> list[Any]:
        return [m for m in ctx.view.get_all() if m.sequence > self.noted]

    def plan_unit(self, ctx, again: UnitPlan | None = None) -> UnitPlan | None:
        newer = self._newer(ctx)
        if not newer or ctx.model is None or self.out is not None:
            return None
        lines = "\n".join(block.text for m in newer for block in m.content)
        return UnitPlan(
            floor=newer[-1].sequence,
            request=CompletionRequest(
                system="Note what matters.",
                messages=[CompiledMessage("user", [text(lines)])],
                source_ids=[m.id for m in newer],
            ),
            describe=f"noting {len(newer)} messages",
            step=newer[-1].sequence,
        )

    def judge_answer(self, ctx, plan: UnitPlan, answer: object) -> Judgement:
        if isinstance(answer, AnswerRejectedError):
            return Judgement(rejection=answer, did_work=False)
        note = completion_text(answer)
        if note == "SKIP":
            return Judgement(rejection=AnswerRejectedError("the note says nothing"), did_work=False)
        return Judgement(records={f"notes/{plan.step}": note}, step=plan.step)

    def took(self, ctx, written: UnitPlan | Judgement) -> None:
        self.took_calls.append(written)
        if isinstance(written, Judgement) and written.step is not None:
            self.noted = written.step

    def asking(self, plan: UnitPlan | None) -> None:
        self.out = plan

    def is_ready(self) -> bool:
        return self.out is None and self.noted >= self.seen

    @performs_plans
    async def tick(self, ctx) -> bool:
        return await run_planned_unit(self, ctx)


class HostTicked(NotesStrategy):
    """The same strategy with no drain: only the host's ``manager.tick()`` runs its units, so a
    test decides when each unit runs."""

    has_background_work = False


def notes(rt, namespace: str = "agents/n") -> dict[str, Any]:
    prefix = f"{namespace}/notes/"
    return {k[len(prefix) :]: v for k, v in rt.store.state_items("main").items() if k.startswith(prefix)}


def test_the_strategy_plans_its_units():
    assert isinstance(NotesStrategy(), PlansUnits)


async def test_a_drain_raises_the_floor_before_a_request_and_writes_what_the_answer_makes(store_path):
    async with open_runtime(store_path) as rt:
        model = ScriptedModel(respond=lambda request: "the note")
        strategy = NotesStrategy()
        manager = await rt.open_manager("agents/n", strategy=strategy, view_reader="ann", model=model)
        await manager.add_message(
            "user", [text("for everyone"), text("for ann and bob", ["ann", "bob"]), text("for bob alone", ["bob"])]
        )
        second = await manager.add_message("user", [text("ann's question")])
        await manager.drain()
        # One unit, or two when the drain woke between the writes: the notes cover both.
        assert max(map(int, notes(rt))) == second.sequence and set(notes(rt).values()) == {"the note"}
        shown = "\n".join(request.messages[0].content[0].text for request in model.requests)
        assert "for everyone" in shown and "for ann and bob" in shown and "ann's question" in shown
        assert "bob alone" not in shown  # compression reads the reader's view only
        assert [type(t) for t in strategy.took_calls] == [Judgement] * len(model.requests)
        assert strategy.out is None and manager.is_ready()
        assert manager.pending_work() is None


async def test_the_floor_covers_what_a_request_showed_before_it_leaves(store_path):
    """Hiding a block from ann is refused on a message a unit read (the floor was raised before
    its request left) and allowed on one no unit read."""
    async with open_runtime(store_path) as rt:
        model = ScriptedModel("the note", "the second note")
        manager = await rt.open_manager("agents/n", strategy=HostTicked(), view_reader="ann", model=model)
        shared = [text("for everyone"), text("for ann and bob", ["ann", "bob"])]
        narrowed = [text("for everyone"), text("for ann and bob", ["bob"])]
        first = await manager.add_message("user", shared)
        assert await manager.tick() is True
        later = await manager.add_message("user", shared)
        with pytest.raises(NarrowingRefusedError, match="compression may have read it"):
            await manager.edit_message(first.id, narrowed)
        await manager.edit_message(later.id, narrowed)
        assert await manager.tick() is True
        assert notes(rt) == {str(first.sequence): "the note", str(later.sequence): "the second note"}
        assert "for ann and bob" not in model.requests[1].messages[0].content[0].text  # the edit hid it from ann
        assert await manager.tick() is False  # nothing newer to note
        assert len(model.requests) == 2


async def test_a_rejected_answer_writes_nothing_and_is_raised(store_path):
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/n", strategy=HostTicked(), view_reader="ann", model=ScriptedModel("SKIP", "a note"))
        await manager.add_message("user", [text("hello")])
        with pytest.raises(AnswerRejectedError, match="the note says nothing"):
            await manager.tick()
        assert notes(rt) == {}
        assert await manager.tick() is True  # asked again, it is answered
        assert list(notes(rt).values()) == ["a note"]


async def test_compiles_go_on_while_the_request_is_out_and_pending_work_names_the_unit(store_path):
    async with open_runtime(store_path) as rt:
        model = GatedModel(ScriptedModel(respond=lambda request: "noted"))
        strategy = HostTicked()
        manager = await rt.open_manager("agents/n", strategy=strategy, view_reader="ann", model=model)
        await manager.add_message("user", [text("one")])
        await manager.add_message("user", [text("two")])
        did: list[bool] = []
        async with anyio.create_task_group() as tg:

            async def tick() -> None:
                did.append(await manager.tick())

            tg.start_soon(tick)
            await model.wait_for_request()
            compiled = await manager.compile()  # the namespace serves while the request is out
            assert [m.content[0].text for m in compiled.messages] == ["one", "two"]
            assert manager.pending_work() == "noting 2 messages"
            model.release()
        assert did == [True]
        assert list(notes(rt).values()) == ["noted"]
        assert manager.pending_work() is None


async def test_an_answer_after_a_close_is_thrown_away(store_path):
    async with open_runtime(store_path) as rt:
        model = GatedModel(ScriptedModel(respond=lambda request: "late"))
        manager = await rt.open_manager("agents/n", strategy=HostTicked(), view_reader="ann", model=model)
        await manager.add_message("user", [text("one")])
        did: list[bool] = []
        async with anyio.create_task_group() as tg:

            async def tick() -> None:
                did.append(await manager.tick())

            tg.start_soon(tick)
            await model.wait_for_request()
            await manager.aclose()
            model.release()
        assert did == [False]
        assert notes(rt) == {}
