"""Late answers: a compression answer that comes back after its manager moved is thrown away
(issue 10, item 7).

A manager may fork, switch branch or change strategy while one of its model requests is out;
its namespace may be claimed by another reader, or the manager may close. The answer, when it
comes, was asked for by a manager that is no longer where (or what) it was: it must not be
stored on either branch, nor reach any strategy. Every test holds the request out with
``GatedModel``, makes the move, and only then lets the answer through; then it checks the answer
is nowhere and that a request made *after* the move is answered and stored as usual (so the
manager works, and the discarded answer is the late one only).

Two kinds of request are held:

* a host's own ``tick()``, which nothing cancels: the runtime must notice the move when the
  answer comes back (the check a mutation once removed without any test noticing);
* a background drain's request: the move stops the drain, so the request is abandoned, or, when
  the model does not stop when cancelled (``GatedModel(shield=True)``), answers late.

Sections:
  1. Helpers (a strategy whose ``tick`` asks one request and stores the answer)
  2. A host's own request, out during each move, a claim change and a close
  3. A drain's request, out during each move
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing

from asides import (
    AutobiographicalStrategy,
    CompiledMessage,
    CompletionRequest,
    PassthroughStrategy,
    ReaderClaimError,
    completion_text,
    text,
)
from asides.lowlevel import Selection, SelectOptions, StrategyContext
from asides.testing import GatedModel, open_test_runtime
from tests.helpers import dump

LATE = "LATE-ANSWER written from before the move"

# -- 1. Helpers ---------------------------------------------------------------------------------


class AskOnTick:
    """A host's strategy: passthrough selection; each ``tick`` marks its read, asks the model one
    request holding the view's text, and stores the answer under ``ask-on-tick/answer/<n>``. It
    says it is always ready, so no drain asks anything: only a host's ``tick`` does."""

    name = "ask-on-tick"
    marks_compression_reads = True

    def __init__(self) -> None:
        self.answers: list[str] = []
        self._select = PassthroughStrategy()

    async def initialize(self, ctx: StrategyContext) -> None:
        return None

    async def on_new_message(self, message: Any, ctx: StrategyContext) -> None:
        return None

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        return await self._select.select(ctx, budget, options)

    async def tick(self, ctx: StrategyContext) -> bool:
        messages = ctx.view.get_all()
        await ctx.mark_compression_read(max((m.sequence for m in messages), default=0))
        lines = "\n".join(b.text for m in messages for b in m.content if hasattr(b, "text"))
        assert ctx.model is not None
        completion = await ctx.model.complete(CompletionRequest([CompiledMessage("user", [text(lines or "(nothing)")])], max_tokens=200))
        answer = completion_text(completion)
        self.answers.append(answer)
        await ctx.state.set(f"ask-on-tick/answer/{len(self.answers)}", answer)
        return True

    def is_ready(self) -> bool:
        return True


def memory() -> AutobiographicalStrategy:
    """Small windows, so that a short conversation is compressed into memories."""
    return AutobiographicalStrategy(target_chunk_tokens=20, head_window_tokens=20, recent_window_tokens=40, holdback_chunks=0)


def stored_anywhere(rt: Any, needle: str) -> list[str]:
    """Where the store holds ``needle``: every branch's messages and state records."""
    found = []
    for branch, held in dump(rt.store).items():
        for key, value in held["state"].items():
            if needle in repr(value):
                found.append(f"{branch}: state {key}")
        for message in held["messages"]:
            if needle in repr(message):
                found.append(f"{branch}: message {message[0]}")
    return found


async def compiled_text(manager: Any) -> str:
    compiled = await manager.compile(max_tokens=100_000, reserve_for_response=0)
    return repr(compiled.messages) + repr(manager.get_summaries_in_range())


async def tick_into(manager: Any, outcome: list[Any]) -> None:
    """A host's ``tick()``, its result (or the error it raised) appended to ``outcome``."""
    try:
        outcome.append(await manager.tick())
    except Exception as exc:  # noqa: BLE001 - recorded for the test to judge
        outcome.append(exc)


# -- 2. A host's own request --------------------------------------------------------------------

MOVES = ["fork", "switch_branch", "set_strategy"]


@pytest.mark.parametrize("reader", ["ann", None], ids=["reader", "no-reader"])
@pytest.mark.parametrize("move", MOVES)
async def test_an_answer_to_a_host_tick_that_arrives_after_a_move_is_thrown_away(store_path, move, reader):
    """A host's ``tick()`` has its request out (nothing cancels it) when the manager forks,
    switches branch or changes strategy. The answer then arrives: it reaches neither the old
    strategy nor the new one, nothing holding it is stored on the old branch or the new one, no
    compile shows it, and the ``tick`` reports no work done. The manager works on: its next
    request, made after the move, is answered and stored where the manager now is."""
    async with open_test_runtime(store_path) as rt:
        gate = GatedModel()
        old = AskOnTick()
        manager = await rt.open_manager("agents/s", strategy=old, view_reader=reader, model=gate)
        await manager.add_message("user", [text("a line for the model to read")])
        if move == "switch_branch":
            brancher = await rt.open_manager("setup", strategy=PassthroughStrategy())
            await brancher.fork("elsewhere")  # holds the line too
            await brancher.aclose()
        outcome: list[Any] = []
        new = AskOnTick()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tick_into, manager, outcome)
            await gate.wait_for_request()
            if move == "fork":
                await manager.fork("forked")
            elif move == "switch_branch":
                await manager.switch_branch("elsewhere")
            else:
                await manager.set_strategy(new)
            assert not outcome, "the premise: the request is still out after the move"
            gate.release(LATE)
        assert outcome == [False], "a discarded answer is no work done"
        assert old.answers == [] and new.answers == [], "the late answer reached no strategy"
        assert stored_anywhere(rt, "LATE-ANSWER") == []
        assert "LATE-ANSWER" not in await compiled_text(manager)

        gate.open()
        assert await manager.tick() is True, "a request made after the move is answered"
        current = manager.strategy
        assert len(current.answers) == 1 and "LATE-ANSWER" not in current.answers[0]
        where = stored_anywhere(rt, "a line for the model to read")
        assert any(w.startswith(f"{manager.branch}: state agents/s/ask-on-tick/answer/") for w in where), where
        assert stored_anywhere(rt, "LATE-ANSWER") == []


async def test_an_answer_to_a_host_tick_that_arrives_after_a_claim_is_thrown_away(store_path, caplog):
    """A manager with no reader has its ``tick()`` request out when ann claims the namespace. The
    answer arrives after the claim: it is not stored, the ``tick`` is refused
    (``ReaderClaimError`` naming ann), and the discard is logged."""
    caplog.set_level(logging.WARNING)
    async with open_test_runtime(store_path) as rt:
        gate = GatedModel()
        strategy = AskOnTick()
        stale = await rt.open_manager("agents/s", strategy=strategy, model=gate)
        await stale.add_message("user", [text("a line for the model to read")])
        outcome: list[Any] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tick_into, stale, outcome)
            await gate.wait_for_request()
            await rt.open_manager("agents/s", strategy=PassthroughStrategy(), view_reader="ann")
            before = dump(rt.store)
            gate.release(LATE)
        assert len(outcome) == 1 and isinstance(outcome[0], ReaderClaimError) and "'ann'" in str(outcome[0])
        assert strategy.answers == []
        assert dump(rt.store) == before, "nothing written after the claim"
        assert stored_anywhere(rt, "LATE-ANSWER") == []
        assert any("discarded" in r.getMessage() and "agents/s" in r.getMessage() for r in caplog.records)


async def test_an_answer_to_a_host_tick_that_arrives_after_the_manager_closed_is_thrown_away(store_path):
    """A host's ``tick()`` has its request out when the manager closes. The answer arrives after
    the close: it reaches no strategy and nothing is written; the tick reports no work."""
    async with open_test_runtime(store_path) as rt:
        gate = GatedModel()
        strategy = AskOnTick()
        manager = await rt.open_manager("agents/s", strategy=strategy, view_reader="ann", model=gate)
        await manager.add_message("user", [text("a line for the model to read")])
        outcome: list[Any] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tick_into, manager, outcome)
            await gate.wait_for_request()
            await manager.aclose()
            before = dump(rt.store)
            gate.release(LATE)
        assert outcome == [False]
        assert strategy.answers == []
        assert dump(rt.store) == before, "nothing written after the close"


# -- 3. A drain's request -----------------------------------------------------------------------


async def write_conversation(room: Any, count: int = 12) -> None:
    for number in range(count):
        await room.add_message("user", [text(f"Line {number} of a conversation long enough to compress.")])


def summaries_on(rt: Any, branch: str, namespace: str = "agents/s") -> dict[str, Any]:
    prefix = f"{namespace}/autobiographical/summary/"
    return {k: v for k, v in rt.store.state_items(branch, prefix).items()}


@pytest.mark.parametrize("shield", [False, True], ids=["abandoned", "answers-late"])
@pytest.mark.parametrize("move", MOVES)
async def test_a_drain_answer_out_during_a_move_is_stored_on_neither_branch(store_path, move, shield):
    """A background drain has its first request out when the manager forks, switches branch or
    changes strategy. The move stops the drain: the request is abandoned, or (a model that does
    not stop when cancelled) answers once the move waits for the drain to end. Either way no
    memory is written from it, on the old branch or the new one; the manager then compresses
    where it now is, from requests made after the move."""
    async with open_test_runtime(store_path) as rt:
        if move == "switch_branch":
            brancher = await rt.open_manager("setup", strategy=PassthroughStrategy())
            await brancher.fork("elsewhere")
            await brancher.aclose()
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        gate = GatedModel(shield=shield)
        manager = await rt.open_manager("agents/s", strategy=memory(), view_reader="ann", model=gate)
        await write_conversation(room)
        await gate.wait_for_request()
        first = gate.held[0]

        async def make_the_move() -> None:
            if move == "fork":
                await manager.fork("forked")
            elif move == "switch_branch":
                await manager.switch_branch("elsewhere")
            else:
                await manager.set_strategy(memory())

        async with trio.open_nursery() as nursery:
            commits = rt.store.statistics().commits
            nursery.start_soon(make_the_move)
            # A fork first commits its branch; then the move stops the drain and waits for it.
            while rt.store.statistics().commits < commits + (1 if move == "fork" else 0):
                await trio.testing.wait_all_tasks_blocked(cushion=0.001)
            await trio.testing.wait_all_tasks_blocked()
            if shield:
                assert gate.held and gate.held[0] is first, "the premise: the move waits for the held request"
                gate.release(LATE)
            else:
                assert first in gate.abandoned, "the move abandoned the request"
        assert manager.branch == {"fork": "forked", "switch_branch": "elsewhere", "set_strategy": "main"}[move]
        assert stored_anywhere(rt, "LATE-ANSWER") == []
        if move != "set_strategy":
            assert summaries_on(rt, "main") == {}, "nothing stored on the branch the manager left"

        if move == "switch_branch":  # the other branch holds no conversation: write one there
            elsewhere = await rt.open_manager("room", strategy=PassthroughStrategy(), branch="elsewhere")
            await write_conversation(elsewhere)
        gate.open()
        await manager.drain()
        assert summaries_on(rt, manager.branch), "the manager compresses where it now is"
        assert stored_anywhere(rt, "LATE-ANSWER") == []
        assert "LATE-ANSWER" not in await compiled_text(manager)
