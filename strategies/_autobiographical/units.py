"""Running a unit: the effects its plan and its answer ask for, performed through the strategy
context (``plans`` holds the sans-IO core that decides them).

A unit that asks the model runs in three steps: *prepare* (in the namespace actor's turn: raise
the narrowing floor to the newest message the request will show, then plan the request again
from the reader's view as it stands after the raise), *request* (sent by the runtime from the
drain's task, between two commands of the namespace actor), and *commit* (back in the turn: catch up with what
other managers wrote, judge the answer, and write what the judgement says). A close raises the
floor first and writes its chunk records only once the floor rose.

A rejected answer is counted toward its unit's attempt limit (written before it is raised), and
raised as ``AnswerRejectedError`` naming the unit and the reason, so the drain logs it and
retries with back-off; a unit at its limit has failed: it renders raw and is never asked again.
"""

from __future__ import annotations

from .._base import StrategyContext
from .._errors import AnswerRejectedError, CompressionError, ModelError
from .plans import (
    NO_EARLIER_CONTEXT,
    Ask,
    Close,
    Planner,
    Rejected,
    Superseded,
    TransitionPlan,
    judge_answer,
    judge_transition,
    plan_transition,
    plan_unit,
    take_written,
)

__all__ = ["commit", "prepare", "prepare_transition", "run_plan", "transition_text"]

#: Raises of the floor a unit makes before its request leaves, at most: a plan made again after
#: a raise that shows newer messages than the raise covered raises again.
_RAISES = 3


async def run_plan(strategy: Planner, ctx: StrategyContext, plan: Close | Ask) -> None:
    """Run a planned unit to its end (``tick``): :func:`prepare`, the request, :func:`commit`."""
    plan = await prepare(strategy, ctx, plan)
    if isinstance(plan, Ask):
        await commit(strategy, ctx, plan, await _ask(strategy, ctx, plan))


async def prepare(strategy: Planner, ctx: StrategyContext, plan: Close | Ask) -> Close | Ask:
    """Perform what ``plan`` asks before any request: raise the floor; for a close, write its
    records and take them in; for a request, plan it again from the view as it stands after the
    raise when the view changed meanwhile (raising again if it shows more). Returns the plan
    performed, or the request to send. A raise that fails counts as no attempt: it propagates
    before anything is counted."""
    seen = ctx.view.revision
    await ctx.mark_compression_read(plan.floor)
    if isinstance(plan, Close):
        await ctx.state.set_many(plan.records)
        take_written(strategy, plan, ctx.view)
        return plan
    for _ in range(_RAISES):
        if ctx.view.revision == seen:
            break  # the view is as it was planned from: the plan stands
        seen = ctx.view.revision
        again = plan_unit(strategy, ctx.view, plan.unit)
        assert isinstance(again, Ask)
        covered, plan = plan.floor, again
        if again.floor <= covered:
            break
        await ctx.mark_compression_read(again.floor)
    return plan


async def commit(strategy: Planner, ctx: StrategyContext, plan: Ask, answer: object) -> None:
    """Perform what the answer to ``plan``'s request makes, once the strategy took in what other
    managers wrote meanwhile: write the summary, or the counted rejection and then raise it
    (``AnswerRejectedError`` naming the unit and the reason), or nothing."""
    strategy.tracker.catch_up(ctx.state)
    outcome = judge_answer(strategy, plan, answer)
    if isinstance(outcome, Superseded):
        if outcome.error is not None:
            raise outcome.error
        return
    await ctx.state.set_many(outcome.records)
    take_written(strategy, outcome, ctx.view)
    if isinstance(outcome, Rejected):
        raise outcome.error


async def _ask(strategy: Planner, ctx: StrategyContext, plan: Ask | TransitionPlan) -> object:
    """Send the plan's request; the model's answer, or the ``AnswerRejectedError`` the model
    gate raised for it. ``plan.describe`` is what ``pending_work()`` says while it is out, and
    what a model error names."""
    model = ctx.model
    if model is None:
        raise CompressionError(f"no compression model is configured for {ctx.namespace} on {ctx.branch}")
    strategy.asking(plan)
    try:
        return await model.complete(plan.request)
    except AnswerRejectedError as exc:
        return exc
    except ModelError as exc:
        raise ModelError(f"{plan.describe}: {exc}") from exc
    finally:
        strategy.asking(None)


async def prepare_transition(strategy: Planner, ctx: StrategyContext) -> TransitionPlan | None:
    """The request for a transition note from the head and up to three summaries, with the floor
    raised to what it shows; ``None`` when there is nothing to read (the note is then ``No
    earlier context.``). Refused with ``CompressionError`` when there is no model to ask."""
    regions = strategy.tracker.sync(ctx)
    plan = plan_transition(strategy, ctx.view, regions)
    if plan is None:
        return None
    if ctx.model is None:
        raise CompressionError(
            f"reset_head_window() with no text needs a compression model to write the transition note "
            f"(namespace {ctx.namespace} on {ctx.branch}); pass text or configure a model"
        )
    await ctx.mark_compression_read(plan.floor)
    return plan


async def transition_text(strategy: Planner, ctx: StrategyContext) -> str:
    """A transition note written by the model from the head and up to three summaries (raising
    the floor first); ``No earlier context.`` when there is nothing to read. Writes nothing."""
    plan = await prepare_transition(strategy, ctx)
    if plan is None:
        return NO_EARLIER_CONTEXT
    return judge_transition(await _ask(strategy, ctx, plan))
