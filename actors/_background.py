"""A manager's background work: units of compression, readiness, its drain, and the
summaries its strategy keeps (part of ``ContextManager``).

On a shared store a unit first takes its namespace's compression lease (:mod:`._lease`) and runs
fenced by it; a process that cannot take it compresses nothing there meanwhile: its drain waits,
and its strategy takes in the holder's records as they arrive.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from contextlib import nullcontext
from typing import TYPE_CHECKING, cast

import anyio
import anyio.lowlevel

from ..store._arguments import check_int, check_str
from ..store._blocks import TextBlock
from ..store._errors import ArgumentTypeError, InvalidArgumentError
from ..strategies._autobiographical.plans import NO_EARLIER_CONTEXT, Ask, Close, PlansUnits, TransitionPlan, judge_transition, plans_units
from ..strategies._base import StrategyContext
from ..strategies._capabilities import (
    DescribesPendingWork,
    FollowsStoredState,
    HasHeadWindow,
    ReadsSummaries,
    ReportsFailedUnits,
    Summary,
    has_background_work,
)
from ..strategies._errors import AnswerRejectedError, CompressionError, ModelError, StrategyCapabilityError
from ._drains import Drain, DrainTarget
from ._gate import AnswerStale, ModelGate
from ._lease import LeaseLost
from ._manager_parts import ManagerParts
from ._namespace import NamespaceActor
from ._protocol import HeadReset, Unit
from ._tracing import span

if TYPE_CHECKING:
    pass

log = logging.getLogger("asides.actors")


__all__ = ["BackgroundWork"]


class BackgroundWork(ManagerParts):
    """Background work of a :class:`~asides.actors.ContextManager`."""

    #: Seconds until the namespace's compression lease may be free, when the newest unit found
    #: another process holding it; ``None`` otherwise.
    _lease_wait: float | None = None
    #: How many records written elsewhere the strategy had been handed (``written_elsewhere``).
    _followed_elsewhere = 0

    async def _run_unit(self) -> bool:
        """Bring the strategy up to date and run one unit of its background work (when there
        is a model); whether there was one. Runs in the namespace actor's turn."""
        return await self._unit(needs_model=True)

    async def _unit(self, *, needs_model: bool) -> bool:
        with span("drain_unit", namespace=self._namespace, reader=self._reader, branch=self._branch, strategy=self.strategy_name) as traced:
            did = await self._unit_traced(needs_model=needs_model)
            traced.set("did_work", did)
            return did

    async def _unit_traced(self, *, needs_model: bool) -> bool:
        strategy = self._strategy
        if plans_units(strategy):
            return await self._planned_unit(cast(PlansUnits, strategy), needs_model=needs_model)
        actor = self._actor
        async with actor.turn(Unit()):
            leased = await self._begin_unit(needs_model=needs_model)
            if leased is None:
                return False

            async def run() -> bool:
                with actor.fenced() if leased else nullcontext():
                    return bool(await strategy.tick(self._context()))

            return await self._ended_unit(actor, lambda: bool(leased), run)

    async def _ended_unit(self, actor: NamespaceActor, leased: Callable[[], bool], run: Callable[[], Awaitable[bool]]) -> bool:
        """``run()``, the body of a unit, and what its end means for the drain, whichever way the
        unit runs: a stale answer is no work done; a write refused because the lease was lost
        says whether to look again at once; any other error, once the model has been failing
        (``_model_failing``), gives the lease up first, if the unit ran under it, and propagates."""
        try:
            return await run()
        except AnswerStale:
            return False
        except LeaseLost as exc:
            return self._lease_lost(actor, exc)
        except Exception:
            if leased() and self._model_failing():
                try:
                    await actor.execute(Unit(), self._release_lease_if_idle)  # at once, in a turn held already
                except Exception as exc:  # the actor or the store ended: the lease ends with them
                    log.debug("namespace %r on %r: the compression lease was not released (%r)", self._namespace, self._branch, exc)
            raise

    async def _begin_unit(self, *, needs_model: bool) -> bool | None:
        """The start of every unit, in the actor's turn: check the manager, bring the strategy up
        to date, and take the compression lease when the unit may ask the model. ``None`` when
        there is no unit to run (no model or nothing pending with ``needs_model``, or another
        process holds the lease); else whether the unit runs under the lease."""
        self._check("tick")
        await self._catch_up()
        self._follow_elsewhere()
        self._lease_wait = None
        if needs_model and (self.model is None or self._strategy.is_ready()):
            return None
        leased = self.model is not None  # a unit that may ask the model compresses under the lease
        if leased:
            self._lease_wait = await self._actor.take_lease(self._core.model_policy.lease_retry)
            if self._lease_wait is not None:
                return None  # another process compresses this namespace now
        return leased

    def _lease_lost(self, actor: NamespaceActor, exc: LeaseLost) -> bool:
        """A unit's write was refused: the connection's session ended, or the lease was given up,
        meanwhile. Whether to look again at once (the lease was not refused lately)."""
        log.warning("namespace %r on %r: %s", self._namespace, self._branch, exc)
        self._lease_wait = actor.lease.wait()
        return self._lease_wait is None

    def _model_failing(self) -> bool:
        """Whether the model has failed more than ``drain_failures`` times in a row (past the
        point where drain() raises): a unit failing then gives the lease up, so that a process
        whose model answers may take over; this one asks again after its back-off. (Before that,
        its retries cost no round trip.)"""
        failure = self._drain.failure if self._drain is not None else None
        return failure is not None and failure.count >= self._core.model_policy.drain_failures

    async def _planned_unit(self, strategy: PlansUnits, *, needs_model: bool) -> bool:
        """One unit of a strategy that returns its units as effects (``plans``): the actor plans
        it and performs the plan (the floor, a close's records, the request's disclosure) in one
        command; the request goes out from this task, holding no turn; a second command hands the
        answer back, and the actor throws it away if it is stale (a move, a close, a claim
        change), or judges it and writes what it makes."""
        actor = self._actor
        leased = False
        if needs_model and self.model is None:
            return False  # a drain with no model has nothing to do: it costs the namespace nothing

        async def plan() -> tuple[Ask, ModelGate] | bool:
            nonlocal leased
            began = await self._begin_unit(needs_model=needs_model)
            if began is None:
                return False
            leased = began
            with actor.fenced() if leased else nullcontext():
                ctx = self._context()
                step = strategy.plan_next(ctx)
                if step is None:
                    return False
                step = await strategy.prepare(ctx, step)  # the floor raise; a close's records
                if isinstance(step, Close):
                    return True
                return step, await self._request_out(strategy, ctx, step)

        async def run() -> bool:
            planned = await actor.execute(Unit(), plan)
            if not isinstance(planned, tuple):
                return planned
            step, gate = planned
            answer = await self._send(strategy, actor, step, gate)

            async def commit() -> bool:
                judged = self._answer_back(strategy, gate, step, answer)
                with actor.fenced() if leased else nullcontext():
                    await strategy.commit(self._context(), step, judged)
                return True

            did = False
            with anyio.CancelScope(shield=True):  # the answer is handed back even to a cancelled drain
                did = await actor.execute(Unit(), commit)
            return did

        return await self._ended_unit(actor, lambda: leased, run)

    async def _request_out(self, strategy: PlansUnits, ctx: StrategyContext, step: Ask | TransitionPlan) -> ModelGate:
        """In the actor's turn, before a planned request leaves: record what it shows as
        disclosed, count it as out, and let ``pending_work()`` say what it does. Returns the
        gate it goes through."""
        gate = ctx.model
        assert isinstance(gate, ModelGate)
        await gate.prepare(step.request)
        strategy.asking(step)
        return gate

    def _answer_back(self, strategy: PlansUnits, gate: ModelGate, step: Ask | TransitionPlan, answer: object) -> object:
        """In the actor's turn, once a planned request is back with ``answer``: no longer out;
        ``AnswerStale`` when it is to be thrown away (a move, a close, a claim change); else the
        answer to judge, or the ``AnswerRejectedError`` the gate's size limit makes of it."""
        gate.finished(answered=True)
        strategy.asking(None)
        gate.check_fresh()
        try:
            gate.check_answer(answer, step.request)
        except AnswerRejectedError as exc:
            return exc
        return answer

    async def _send(self, strategy: PlansUnits, actor: NamespaceActor, step: Ask | TransitionPlan, gate: ModelGate) -> object:
        """In this task, holding no turn: send the planned request and return the model's answer
        (unchecked). A request that fails or is cancelled is handed back as given up (in the
        actor: no longer out, no longer in flight) before its error propagates, a model error
        naming the unit; so is an answer that arrives once this task was cancelled (a move or a
        close stopped the drain)."""
        try:
            answer = await gate.send(step.request)
            await anyio.lowlevel.checkpoint_if_cancelled()  # a drain stopped meanwhile hands nothing back
            return answer
        except BaseException as exc:

            async def given_up() -> None:
                gate.finished(answered=False)
                strategy.asking(None)

            with anyio.CancelScope(shield=True):
                try:
                    await actor.execute(Unit(), given_up)
                except Exception:  # the actor ended (the runtime closes): nothing else uses it now
                    await given_up()
            if isinstance(exc, ModelError):
                raise ModelError(f"{step.describe}: {exc}") from exc
            raise

    async def _release_lease_if_idle(self) -> None:
        """Give the compression lease up (in the actor's turn) when this process holds it and no
        unit of the namespace is at work here (``drain()`` found nothing more to do)."""
        actor = self._actor
        lease = actor.lease
        if lease.shared and actor.requests_out == 0 and not lease.busy and lease.held_here():
            await actor.release_lease()

    def _follow_elsewhere(self) -> None:
        """Hand the strategy the state records other processes wrote since it last looked (in
        the actor's turn); nothing to do on a store only this process writes."""
        seen = self._actor.written_elsewhere
        if seen != self._followed_elsewhere:
            self._followed_elsewhere = seen
            if isinstance(self._strategy, FollowsStoredState):
                self._strategy.follow_stored_state(self._context())

    def _drain_started(self) -> NamespaceActor:
        """This manager's drain began: its namespace actor stays until the drain ends (the
        actor returned is the one :meth:`_drain_ended` is given)."""
        actor = self._actor
        actor.drain_began()
        return actor

    async def _drain_ended(self, actor: NamespaceActor, give_up_lease: bool) -> None:
        """This manager's drain ended: when it was the last of its namespace here and
        ``give_up_lease``, give the compression lease up (if held), so another process may
        compress at once. A drain stopped in the middle of a unit (a close or a cancellation)
        writes nothing more; its lease is given up when the namespace's actor ends (once the
        unit's request is back). The actor is let go last, so it cannot end before the lease is
        given up."""
        try:
            if not give_up_lease or actor.drains > 1 or not actor.lease.shared or not actor.lease.held_here():
                return
            try:
                async with actor.turn(Unit()):
                    await actor.release_lease()
            except Exception as exc:  # the store or the runtime stopped: its session, and the lease, end with it
                log.debug("namespace %r on %r: the compression lease was not released (%r)", self._namespace, self._branch, exc)
        finally:
            actor.drain_finished()

    # -- background work -----------------------------------------------------------------------

    async def tick(self) -> bool:
        """Run one unit of the strategy's background work; whether it did any."""
        self._check("tick")
        return await self._unit(needs_model=False)

    def is_ready(self) -> bool:
        """Whether the strategy has no background work left."""
        self._check("is_ready")
        return bool(self._strategy.is_ready())

    def pending_work(self) -> str | None:
        """What background work is waiting, in words, and which units failed for good and why
        (``3 stretches could not be compressed: the model's answers were rejected (stop_reason
        'stop' is not 'end_turn')``); ``None`` when ready with nothing failed. Says so when no
        model is configured, and when the model has been failing."""
        self._check("pending_work")
        strategy = self._strategy
        failed = strategy.describe_failed() if isinstance(strategy, ReportsFailedUnits) else None
        if strategy.is_ready():
            return failed
        text = strategy.pending_work() if isinstance(strategy, DescribesPendingWork) else None
        text = text or "background work pending"
        if self.model is None:
            text += " (no compression model)"
        elif self._drain is not None and self._drain.failure is not None:
            text += "; " + self._drain.failure.describe()
        elif self._lease_wait is not None:
            text += "; another process compresses this namespace (it holds the compression lease)"
        return text if failed is None else f"{text}; {failed}"

    def _failed_units(self) -> frozenset[str]:
        strategy = self._strategy
        return strategy.failed_units() if isinstance(strategy, ReportsFailedUnits) else frozenset()

    def _raise_if_failed(self, before: frozenset[str]) -> None:
        """``drain()`` is done: raise ``CompressionError`` if units failed for good since
        ``before`` (during the call), naming them and why."""
        failed = self._failed_units() - before
        strategy = self._strategy
        if failed and isinstance(strategy, ReportsFailedUnits):
            raise CompressionError(
                f"namespace {self._namespace!r} on branch {self._branch!r}: {strategy.describe_failed(failed)}; "
                "what they cover renders raw, and they are not asked again"
            )

    async def drain(self) -> None:
        """Wait until the strategy is ready; return at once when there is no model. While
        another process holds the namespace's compression lease (a shared store) it waits for
        that process's records (or for the lease to be free, and the drain to take it over).

        Raises ``CompressionError`` naming the reason when a unit it waited on failed for good
        during the call (its answers were rejected up to the attempt limit: it renders raw and is
        never asked again, so a second ``drain()`` finds it no longer pending). Raises
        ``CompressionError``, naming the last error, once the model has failed to answer (it
        raised or timed out) the runtime's ``ModelPolicy.drain_failures`` times in a row during
        this call (the background drain goes on retrying). Raises what refuses the manager (for
        example ``ReaderClaimError`` when another reader claimed the namespace,
        ``StoreFailedError`` once the store stopped).
        """
        self._check("drain")
        before = self._failed_units()
        start_failures: int | None = None
        while True:
            self._check("drain")
            if self.model is None:
                return
            drain = self._drain
            if drain is None or drain.stopped:
                # No drain runs (the strategy has none): work in this task.
                if not await self._run_unit():
                    return self._raise_if_failed(before)
                continue
            progress = drain.progress.version
            if await self._catch_up_now() and self._actor.requests_out == 0:
                return self._raise_if_failed(before)
            waiting = drain.last_outcome == "waiting"  # another process compresses: its records wake the drain
            failure = drain.failure
            if failure is not None and failure.outages:
                if start_failures is None:
                    start_failures = failure.outages - 1
                if failure.outages - start_failures >= self._core.model_policy.drain_failures:
                    raise CompressionError(
                        f"the compression model of namespace {self._namespace!r} on branch {self._branch!r} failed "
                        f"{failure.outages - start_failures} times in a row (last: {failure.error}); the background drain "
                        "keeps retrying"
                    )
            elif start_failures is None:
                start_failures = 0
            if not waiting:
                drain.poke()
            begun = drain.units_begun  # an outcome counts only from a unit begun after the catch-up above
            await drain.progress.wait_beyond(progress)
            self._check("drain")  # the drain may have stopped because the store did
            if drain.last_outcome == "idle" and drain.last_unit > begun and self._actor.requests_out == 0:
                await self._catch_up_now(done=True)
                return self._raise_if_failed(before)  # the drain found nothing it can do now

    async def _catch_up_now(self, *, done: bool = False) -> bool:
        """Catch the strategy up (in the actor's turn); whether it is ready. Ready, or ``done``
        (``drain()`` returns), it gives the compression lease up, if held and no unit is at work,
        so that the namespace's next work may go to any process."""
        async with self._actor.turn(Unit()):
            self._check("drain")
            await self._catch_up()
            self._follow_elsewhere()
            ready = bool(self._strategy.is_ready())
            if ready or done:
                await self._release_lease_if_idle()
            return ready

    def _start_drain(self) -> None:
        """Start this manager's drain, if its strategy has background work and none runs."""
        if self._drain is not None and not self._drain.stopped:
            return
        if self._closed or not self._started or self._start_error is not None or self._core.closing:
            return
        if not has_background_work(self._strategy):
            return
        drain = Drain(self._drain_target(), self._core.model_policy)
        self._drain = drain
        self._core.spawn(drain.run)

    def _may_work(self) -> bool:
        """Whether the namespace's claim still lets this manager work here."""
        return not self._closed and self._actor.may_work(self._reader)

    def _drain_target(self) -> DrainTarget:
        """What the drain needs of this manager, as callables (it reads them while it runs)."""
        return DrainTarget(
            namespace=self._namespace,
            branch=self._branch,
            branch_signal=self._core.branch_signal(self._branch),
            claim_generation=lambda: self._actor.claim_generation,
            wait_claim_change=lambda generation: self._actor.wait_claim_change(generation),
            recorded_reader=lambda: self._actor.record,
            may_work=self._may_work,
            run_unit=self._run_unit,
            lease_wait=lambda: self._lease_wait,
            answers=lambda: self._answers,
            started=self._drain_started,
            ended=self._drain_ended,
        )

    async def _stop_drain(self) -> None:
        drain, self._drain = self._drain, None
        if drain is not None:
            await drain.stop()

    # -- summaries -----------------------------------------------------------------------------

    def search_summaries(self, pattern: str | re.Pattern[str], *, limit: int = 50) -> tuple[Summary, ...]:
        """Summaries matching ``pattern`` (checked like a view read)."""
        self._check("search_summaries", started=False)
        if not isinstance(pattern, (str, re.Pattern)):
            raise ArgumentTypeError("pattern", f"must be a string or a compiled pattern, not {type(pattern).__name__}")
        if check_int(limit, "limit") < 0:  # type: ignore[operator]
            raise InvalidArgumentError("limit", f"must be a non-negative int, got {limit!r}")
        strategy = self._strategy
        return self._not_erased(strategy.search_summaries(pattern, limit=limit)) if isinstance(strategy, ReadsSummaries) else ()

    def get_summaries_in_range(self, start: int | None = None, end: int | None = None) -> tuple[Summary, ...]:
        """Summaries overlapping the sequence range [start, end] (checked)."""
        self._check("get_summaries_in_range", started=False)
        check_int(start, "start", optional=True)
        check_int(end, "end", optional=True)
        strategy = self._strategy
        return self._not_erased(strategy.get_summaries_in_range(start, end)) if isinstance(strategy, ReadsSummaries) else ()

    def get_summary(self, summary_id: str) -> Summary | None:
        """The summary with that id, or ``None`` (checked)."""
        self._check("get_summary", started=False)
        check_str(summary_id, "summary_id")
        strategy = self._strategy
        found = strategy.get_summary(summary_id) if isinstance(strategy, ReadsSummaries) else None
        return found if found is not None and self._not_erased((found,)) else None

    def _not_erased(self, summaries: Iterable[Summary]) -> tuple[Summary, ...]:
        """Leave out summaries made from an erased message: the strategy may hold them in memory
        until it next runs (and starts again, see ``_catch_up``); the store no longer does."""
        model = self._store.model
        if not model.erasure_count:
            return tuple(summaries)
        return tuple(s for s in summaries if not any(model.is_erased(m) for m in s.message_ids))

    async def reset_head_window(self, text: str | None = None) -> str:
        """Append a ``[Topic Transition]`` message holding ``text`` (or a transition summary the
        model writes from this reader's view) and start the head window there."""
        self._check("reset_head_window")
        strategy = self._strategy
        if not isinstance(strategy, HasHeadWindow):
            raise StrategyCapabilityError(
                f"reset_head_window was refused: strategy {getattr(self._strategy, 'name', '?')!r} has no head window"
            )
        if text is not None and not isinstance(text, str):
            raise ArgumentTypeError("text", f"reset_head_window takes a string or None, not {type(text).__name__}")
        if plans_units(strategy):
            return await self._planned_reset(cast(PlansUnits, strategy), text)
        async with self._actor.turn(HeadReset()):
            self._check("reset_head_window")
            body = text if text is not None else await strategy.transition_text(self._context())
            await self._start_head_with(body, generated=text is None)
        return body

    async def _start_head_with(self, body: str, *, generated: bool) -> None:
        """In the actor's turn: append the ``[Topic Transition]`` message holding ``body`` (kept
        to this manager's reader when the model wrote it from the reader's view) and start the
        head window there."""
        strategy = cast(HasHeadWindow, self._strategy)
        block = TextBlock(f"[Topic Transition]\n\n{body}", (self._reader,) if generated and self._reader else None)
        message = await self._store.append_message(self._branch, "Context Manager", (block,))
        await strategy.start_head_at(self._context(), message.sequence)

    async def _planned_reset(self, strategy: PlansUnits, text: str | None) -> str:
        """``reset_head_window`` for a strategy that returns its units as effects: the actor plans
        the note's request and raises the floor in one command; the request goes out from the
        caller's task, holding no turn; a second command throws a stale answer away (raising
        ``AnswerStale``'s reason as ``CompressionError``), judges the note and starts the head."""
        actor = self._actor

        async def plan() -> tuple[TransitionPlan, ModelGate] | str:
            self._check("reset_head_window")
            if text is not None:
                await self._start_head_with(text, generated=False)
                return text
            ctx = self._context()
            step = await strategy.prepare_transition(ctx)
            if step is None:
                await self._start_head_with(NO_EARLIER_CONTEXT, generated=True)
                return NO_EARLIER_CONTEXT
            return step, await self._request_out(strategy, ctx, step)

        planned = await actor.execute(HeadReset(), plan)
        if isinstance(planned, str):
            return planned
        step, gate = planned
        answer = await self._send(strategy, actor, step, gate)

        async def commit() -> str:
            try:
                judged = self._answer_back(strategy, gate, step, answer)
            except AnswerStale as exc:
                raise CompressionError(f"reset_head_window: {exc}; nothing was written") from exc
            body = judge_transition(judged)
            await self._start_head_with(body, generated=True)
            return body

        body = ""
        with anyio.CancelScope(shield=True):  # the answer is handed back even to a cancelled caller
            body = await actor.execute(HeadReset(), commit)
        return body
