"""The unit protocol: a strategy's background work as values that the runtime performs.

A *unit* is one step of a strategy's background work (close a stretch into chunks, compress a
chunk, merge memories, write a topic transition note). A strategy that plans its units
(:class:`PlansUnits`) does no I/O for them: it plans a unit (a :class:`UnitPlan`: what the
narrowing floor must cover, the records to write, the request to send, or none) and judges the
answer to its request (a :class:`Judgement`: the records to write, or a rejection). The runtime
performs every effect in order, in the namespace actor's turn, and sends the request from the
drain's own task, between two commands, so the namespace keeps serving compiles and writes while
a request is out:

1. raise the floor to ``plan.floor``; when the reader's view changed meanwhile and the plan
   sends a request, plan the same unit again (``plan_unit(ctx, again=plan)``) and raise again
   if it shows more, at most :data:`FLOOR_RAISES` times;
2. write ``plan.records``, then hand the plan to ``took`` (the strategy brings its memory up to
   what was written);
3. send ``plan.request`` (``asking`` tells the strategy that it is out, and that it is back);
4. judge the answer (``judge_answer``), write ``judgement.records``, hand it to ``took``, then
   raise ``judgement.rejection`` when there is one.

A strategy written against SPEC 3.3's ``tick(ctx)`` alone runs through one adapter,
:class:`TickedUnits`: its unit is a plan with no floor, no records and no request, whose
``work`` (the ``tick``) runs in the drain's task, its context calls sent to the actor as
commands. :func:`units_of` gives the one object the runtime drives for any strategy.

:func:`perform_plan` and :func:`perform_judgement` are the one place the steps above are
spelled; the runtime hands them effects bound to the actor, and a strategy's own ``tick`` can
hand them ones bound to its context (:class:`ContextEffects`, :func:`run_planned_unit`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import attrs

from ._base import ContextStrategy, StrategyContext
from ._errors import AnswerRejectedError, CompressionError, ModelError
from ._models import CompletionRequest, accepted_text

__all__ = [
    "FLOOR_RAISES",
    "NO_EARLIER_CONTEXT",
    "ContextEffects",
    "Judgement",
    "PlansTransitions",
    "PlansUnits",
    "TickedUnits",
    "UnitEffects",
    "UnitPlan",
    "ask_through",
    "judge_transition",
    "perform_judgement",
    "perform_plan",
    "run_planned_unit",
    "units_of",
]

#: Raises of the floor a unit makes before its request leaves, at most: a plan made again after a
#: raise that shows newer messages than the raise covered raises again.
FLOOR_RAISES = 3

#: The transition note when there is nothing to read.
NO_EARLIER_CONTEXT = "No earlier context."

_NOTHING: Mapping[str, Any] = MappingProxyType({})


@attrs.frozen(eq=False)
class UnitPlan:
    """What one unit asks of the runtime, performed in this order: raise the narrowing floor to
    ``floor`` (``None``: no raise), write ``records`` (keys relative to the namespace), then send
    ``request`` (``None``: the unit ends there) and judge its answer. ``describe`` is the unit in
    words (``compressing messages 470–476``): what ``pending_work()`` says while the request is
    out, and what an error about it names. ``step`` is the strategy's own, opaque to the runtime.

    ``work`` is :class:`TickedUnits`' alone: the strategy's ``tick``, run in the drain's task in
    place of a request."""

    floor: int | None = None
    records: Mapping[str, Any] = _NOTHING
    request: CompletionRequest | None = None
    describe: str = "background work"
    step: Any = None
    work: Callable[[StrategyContext], Awaitable[object]] | None = None


@attrs.frozen(eq=False)
class Judgement:
    """What an answer makes: write ``records``, hand the judgement to the strategy's ``took``,
    then raise ``rejection`` when there is one (an answer the unit's rules refused, counted in
    ``records`` when the strategy counts it). ``did_work``: whether the unit did any work (what
    ``tick()`` returns). ``step`` is the strategy's own."""

    records: Mapping[str, Any] = _NOTHING
    rejection: AnswerRejectedError | None = None
    step: Any = None
    did_work: bool = True


@runtime_checkable
class PlansUnits(Protocol):
    """A strategy whose units the runtime performs (see the module docstring). ``plan_unit`` and
    ``judge_answer`` read the strategy's memory and the context and write nothing; ``took`` and
    ``asking`` change the strategy's memory only."""

    def plan_unit(self, ctx: StrategyContext, again: UnitPlan | None = None) -> UnitPlan | None:
        """The next unit's plan, or ``None`` when there is none now (no model, nothing pending,
        a request already out). With ``again``, the same unit planned again from the view as it
        stands (after a floor raise let newer messages in)."""
        ...

    def judge_answer(self, ctx: StrategyContext, plan: UnitPlan, answer: object) -> Judgement:
        """What ``answer`` makes: the model's return value for ``plan.request``, or the
        ``AnswerRejectedError`` the runtime's checks raised for it."""
        ...

    def took(self, ctx: StrategyContext, written: UnitPlan | Judgement) -> None:
        """The records of ``written`` are written now: take them in (in memory only)."""
        ...

    def asking(self, plan: UnitPlan | None) -> None:
        """``plan``'s request is out now; ``None``: no request is out any more."""
        ...


@runtime_checkable
class PlansTransitions(Protocol):
    """A strategy with a head window whose topic transition note the runtime asks for: a plan
    whose ``floor`` covers what the request shows, judged by :func:`judge_transition`; ``None``
    when there is nothing to read (the note is then :data:`NO_EARLIER_CONTEXT`)."""

    def plan_transition(self, ctx: StrategyContext) -> UnitPlan | None: ...


def judge_transition(answer: object) -> str:
    """The note ``answer`` gives (the model's return value for a transition plan's request, or
    the ``AnswerRejectedError`` raised for it); ``CompressionError`` naming the reason when it is
    rejected, and nothing is written."""
    try:
        if isinstance(answer, AnswerRejectedError):
            raise answer
        return accepted_text(answer)
    except AnswerRejectedError as exc:
        raise CompressionError(f"the model did not write a transition note ({exc.reason}); nothing was written") from exc


class UnitEffects(Protocol):
    """The two effects a plan or a judgement asks for, as whoever performs them offers them."""

    async def raise_floor(self, sequence: int) -> None: ...

    async def write(self, records: Mapping[str, Any]) -> None: ...


async def perform_plan(units: PlansUnits, ctx: StrategyContext, plan: UnitPlan, effects: UnitEffects) -> UnitPlan:
    """Perform ``plan`` up to its request (steps 1 and 2 of the module docstring); returns the
    plan performed, planned again when the view changed under the raise. A raise that fails
    propagates before anything is written."""
    seen = ctx.view.revision
    if plan.floor is not None:
        await effects.raise_floor(plan.floor)
        if plan.request is not None:
            for _ in range(FLOOR_RAISES):
                if ctx.view.revision == seen:
                    break  # the view is as the plan was made from: the plan stands
                seen = ctx.view.revision
                again = units.plan_unit(ctx, again=plan)
                if again is None:
                    break
                covered, plan = plan.floor, again
                if again.floor is None or covered is None or again.floor <= covered:
                    break
                await effects.raise_floor(again.floor)
    if plan.records:
        await effects.write(plan.records)
        units.took(ctx, plan)
    return plan


async def perform_judgement(units: PlansUnits, ctx: StrategyContext, judgement: Judgement, effects: UnitEffects) -> bool:
    """Perform ``judgement`` (step 4 of the module docstring); whether the unit did work."""
    if judgement.records:
        await effects.write(judgement.records)
        units.took(ctx, judgement)
    if judgement.rejection is not None:
        raise judgement.rejection
    return judgement.did_work


class ContextEffects:
    """The effects through a strategy context: ``mark_compression_read`` and state writes (a
    strategy's own ``tick``, run where no runtime performs its plans)."""

    def __init__(self, ctx: StrategyContext) -> None:
        self._ctx = ctx

    async def raise_floor(self, sequence: int) -> None:
        await self._ctx.mark_compression_read(sequence)

    async def write(self, records: Mapping[str, Any]) -> None:
        await self._ctx.state.set_many(records)


async def run_planned_unit(units: PlansUnits, ctx: StrategyContext) -> bool:
    """Run the next unit of ``units`` to its end through ``ctx`` (a planning strategy's own
    ``tick``): plan, perform, ask ``ctx.model``, judge, perform. ``False`` when there is none."""
    plan = units.plan_unit(ctx)
    if plan is None:
        return False
    effects = ContextEffects(ctx)
    plan = await perform_plan(units, ctx, plan, effects)
    if plan.request is None:
        return True
    answer = await ask_through(units, ctx, plan)
    return await perform_judgement(units, ctx, units.judge_answer(ctx, plan, answer), effects)


async def ask_through(units: PlansUnits, ctx: StrategyContext, plan: UnitPlan) -> object:
    """Send ``plan.request`` through ``ctx.model``, telling ``units`` it is out (``asking``) and
    back: the answer, or the ``AnswerRejectedError`` raised for it (to judge); a model error
    propagates naming the unit, and no model at all is ``CompressionError``."""
    assert plan.request is not None
    if ctx.model is None:
        raise CompressionError(f"no compression model is configured for {ctx.namespace} on {ctx.branch}")
    units.asking(plan)
    try:
        return await ctx.model.complete(plan.request)
    except AnswerRejectedError as exc:
        return exc
    except ModelError as exc:
        raise ModelError(f"{plan.describe}: {exc}") from exc
    finally:
        units.asking(None)


class TickedUnits:
    """The one adapter for a strategy written against ``tick(ctx)`` alone: each unit is a plan
    whose ``work`` is the ``tick`` (run in the drain's task, its context calls commands of the
    actor), judged as having done what the ``tick`` returned. Its transition note is the
    strategy's own ``transition_text`` (a :class:`~asides.lowlevel.HasHeadWindow`), run in the
    caller's task the same way."""

    def __init__(self, strategy: ContextStrategy) -> None:
        self.strategy = strategy

    def plan_unit(self, ctx: StrategyContext, again: UnitPlan | None = None) -> UnitPlan | None:
        return UnitPlan(describe="tick", work=self.strategy.tick)

    def judge_answer(self, ctx: StrategyContext, plan: UnitPlan, answer: object) -> Judgement:
        return Judgement(did_work=bool(answer))

    def took(self, ctx: StrategyContext, written: UnitPlan | Judgement) -> None:
        return None

    def asking(self, plan: UnitPlan | None) -> None:
        return None

    def plan_transition(self, ctx: StrategyContext) -> UnitPlan | None:
        transition_text = getattr(self.strategy, "transition_text", None)
        if transition_text is None:
            return None
        return UnitPlan(describe="writing a topic transition note", work=transition_text)


def performs_plans(tick: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a strategy's ``tick`` as the one that performs the strategy's own plans (see
    :func:`units_of`): a subclass that overrides ``tick`` runs its units through it."""
    tick.performs_plans = True  # type: ignore[attr-defined]
    return tick


def units_of(strategy: ContextStrategy) -> PlansUnits:
    """What the runtime drives for ``strategy``: the strategy itself when it plans its units and
    its ``tick`` is the one marked with :func:`performs_plans`; else :class:`TickedUnits` over it
    (every strategy written against SPEC 3.3's ``tick(ctx)``, and a subclass of a planning
    strategy that overrides ``tick``)."""
    tick = getattr(type(strategy), "tick", None)
    if getattr(tick, "performs_plans", False) and isinstance(strategy, PlansUnits):
        return strategy
    return TickedUnits(strategy)
