"""A manager's background work: units of compression, readiness, its drain, and the head
window's reset.

:class:`BackgroundWork` is one part of a ``ContextManager``: it holds the manager's binding, and
owns the manager's drain and what its newest unit learnt of the compression lease. A unit of a
built-in strategy is two commands of the namespace actor, planning it and committing its answer,
with the model request sent between them from the drain's task, holding no turn; a strategy
written against ``tick(ctx)`` runs its ``tick`` in the drain's task, a command beginning the
unit and each of its context calls that changes what the actor owns being a command too.

On a shared store a unit first takes its namespace's compression lease (:mod:`._lease`) and runs
fenced by it; a process that cannot take it compresses nothing there meanwhile: its drain waits,
and its strategy takes in the holder's records as they arrive.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from typing import cast

import anyio
import anyio.lowlevel

from ..store._blocks import TextBlock
from ..strategies._autobiographical.plans import NO_EARLIER_CONTEXT, Ask, Close, PlansUnits, TransitionPlan, judge_transition, plans_units
from ..strategies._base import ContextStrategy, StrategyContext
from ..strategies._capabilities import (
    DescribesPendingWork,
    FollowsStoredState,
    HasHeadWindow,
    ReportsFailedUnits,
    has_background_work,
)
from ..strategies._errors import AnswerRejectedError, CompressionError, ModelError, StrategyCapabilityError
from ._binding import Binding
from ._drains import Drain, DrainTarget
from ._gate import AnswerStale, ModelGate
from ._lease import LeaseLost
from ._namespace import NamespaceActor
from ._protocol import HeadReset, Unit
from ._tracing import span

log = logging.getLogger("asides.actors")


__all__ = ["BackgroundWork"]


class BackgroundWork:
    """The background work of one manager (see the module docstring)."""

    def __init__(self, binding: Binding) -> None:
        self._binding = binding
        self._drain: Drain | None = None
        #: Seconds until the namespace's compression lease may be free, when the newest unit found
        #: another process holding it; ``None`` otherwise.
        self._lease_wait: float | None = None
        #: How many records written elsewhere the strategy had been handed (``written_elsewhere``).
        self._followed_elsewhere = 0

    async def _run_unit(self) -> bool:
        """Bring the strategy up to date and run one unit of its background work (when there
        is a model); whether there was one. Runs in the namespace actor's turn."""
        return await self._unit(needs_model=True)

    async def _unit(self, *, needs_model: bool) -> bool:
        binding = self._binding
        with span(
            "drain_unit", namespace=binding.namespace, reader=binding.view_reader, branch=binding.branch, strategy=binding.strategy_name
        ) as traced:
            did = await self._unit_traced(needs_model=needs_model)
            traced.set("did_work", did)
            return did

    async def _unit_traced(self, *, needs_model: bool) -> bool:
        binding = self._binding
        strategy = binding.strategy
        if plans_units(strategy):
            return await self._planned_unit(cast(PlansUnits, strategy), needs_model=needs_model)
        return await self._ticked_unit(strategy, needs_model=needs_model)

    async def _ticked_unit(self, strategy: ContextStrategy, *, needs_model: bool) -> bool:
        """One unit of a strategy that runs its units itself (SPEC 3.3's ``tick(ctx)``): a
        command begins it (catch-up, lease); the ``tick`` runs in this task, outside the actor's,
        and each of its context calls that changes what the actor owns is a command, fenced by
        the lease when the unit holds it; its model request goes out from this task."""
        binding = self._binding
        actor = binding.actor
        leased = await actor.execute(Unit(), lambda: self._begin_unit(needs_model=needs_model))
        if leased is None:
            return False

        async def run() -> bool:
            with actor.fenced() if leased else nullcontext():  # the lease stays busy until the unit ends
                return bool(await strategy.tick(binding.context(fenced=bool(leased))))

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
                    await actor.execute(Unit(), actor.release_lease_if_idle)
                except Exception as exc:  # the actor or the store ended: the lease ends with them
                    log.debug(
                        "namespace %r on %r: the compression lease was not released (%r)",
                        self._binding.namespace,
                        self._binding.branch,
                        exc,
                    )
            raise

    async def _begin_unit(self, *, needs_model: bool) -> bool | None:
        """The start of every unit, in the actor's turn: check the manager, bring the strategy up
        to date, and take the compression lease when the unit may ask the model. ``None`` when
        there is no unit to run (no model or nothing pending with ``needs_model``, or another
        process holds the lease); else whether the unit runs under the lease."""
        binding = self._binding
        binding.check("tick")
        await binding.catch_up()
        self._follow_elsewhere()
        self._lease_wait = None
        if needs_model and (binding.model is None or binding.strategy.is_ready()):
            return None
        leased = binding.model is not None  # a unit that may ask the model compresses under the lease
        if leased:
            self._lease_wait = await binding.actor.take_lease(binding.core.model_policy.lease_retry)
            if self._lease_wait is not None:
                return None  # another process compresses this namespace now
        return leased

    def _lease_lost(self, actor: NamespaceActor, exc: LeaseLost) -> bool:
        """A unit's write was refused: the connection's session ended, or the lease was given up,
        meanwhile. Whether to look again at once (the lease was not refused lately)."""
        log.warning("namespace %r on %r: %s", self._binding.namespace, self._binding.branch, exc)
        self._lease_wait = actor.lease_retry_in()
        return self._lease_wait is None

    def _model_failing(self) -> bool:
        """Whether the model has been out (no answer) ``drain_failures`` times in a row (the
        point where drain() raises; rejected answers are no outage): a unit failing then gives the lease up, so that a process
        whose model answers may take over; this one asks again after its back-off. (Before that,
        its retries cost no round trip.)"""
        failure = self._drain.failure if self._drain is not None else None
        return failure is not None and failure.outages >= self._binding.core.model_policy.drain_failures

    async def _planned_unit(self, strategy: PlansUnits, *, needs_model: bool) -> bool:
        """One unit of a strategy that returns its units as effects (``plans``): the actor plans
        it and performs the plan (the floor, a close's records, the request's disclosure) in one
        command; the request goes out from this task, holding no turn; a second command hands the
        answer back, and the actor throws it away if it is stale (a move, a close, a claim
        change), or judges it and writes what it makes."""
        binding = self._binding
        actor = binding.actor
        leased = False
        if needs_model and binding.model is None:
            return False  # a drain with no model has nothing to do: it costs the namespace nothing

        async def plan() -> tuple[Ask, ModelGate] | bool:
            nonlocal leased
            began = await self._begin_unit(needs_model=needs_model)
            if began is None:
                return False
            leased = began
            with actor.fenced() if leased else nullcontext():
                ctx = binding.context()
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
            answer = await self._send(strategy, step, gate)

            async def commit() -> bool:
                judged = self._answer_back(strategy, gate, step, answer)
                with actor.fenced() if leased else nullcontext():
                    await strategy.commit(binding.context(), step, judged)
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
        strategy.asking(None)
        gate.came_back()
        try:
            gate.check_answer(answer, step.request)
        except AnswerRejectedError as exc:
            return exc
        return answer

    async def _send(self, strategy: PlansUnits, step: Ask | TransitionPlan, gate: ModelGate) -> object:
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
            await gate.give_up(also=lambda: strategy.asking(None))
            if isinstance(exc, ModelError):
                raise ModelError(f"{step.describe}: {exc}") from exc
            raise

    def _follow_elsewhere(self) -> None:
        """Hand the strategy the state records other processes wrote since it last looked (in
        the actor's turn); nothing to do on a store only this process writes."""
        binding = self._binding
        seen = binding.actor.written_elsewhere
        if seen != self._followed_elsewhere:
            self._followed_elsewhere = seen
            if isinstance(binding.strategy, FollowsStoredState):
                binding.strategy.follow_stored_state(binding.context())

    def _drain_started(self) -> NamespaceActor:
        """This manager's drain began: its namespace actor stays until the drain ends (the
        actor returned is the one :meth:`_drain_ended` is given)."""
        actor = self._binding.actor
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
            if not give_up_lease or actor.drains > 1 or not actor.holds_lease:
                return
            try:
                await actor.execute(Unit(), actor.release_lease)
            except Exception as exc:  # the store or the runtime stopped: its session, and the lease, end with it
                log.debug(
                    "namespace %r on %r: the compression lease was not released (%r)", self._binding.namespace, self._binding.branch, exc
                )
        finally:
            actor.drain_finished()

    # -- background work -----------------------------------------------------------------------

    async def tick(self) -> bool:
        """One unit of the strategy's background work, with or without a model; whether it did
        any (``ContextManager.tick``)."""
        self._binding.check("tick")
        return await self._unit(needs_model=False)

    def is_ready(self) -> bool:
        """Whether the strategy has no background work left (``ContextManager.is_ready``)."""
        self._binding.check("is_ready")
        return bool(self._binding.strategy.is_ready())

    def pending_work(self) -> str | None:
        """The pending work and the failed units, in words (``ContextManager.pending_work``)."""
        binding = self._binding
        binding.check("pending_work")
        strategy = binding.strategy
        failed = strategy.describe_failed() if isinstance(strategy, ReportsFailedUnits) else None
        if strategy.is_ready():
            return failed
        text = strategy.pending_work() if isinstance(strategy, DescribesPendingWork) else None
        text = text or "background work pending"
        if binding.model is None:
            text += " (no compression model)"
        elif self._drain is not None and self._drain.failure is not None:
            text += "; " + self._drain.failure.describe()
        elif self._lease_wait is not None:
            text += "; another process compresses this namespace (it holds the compression lease)"
        return text if failed is None else f"{text}; {failed}"

    def _failed_units(self) -> frozenset[str]:
        strategy = self._binding.strategy
        return strategy.failed_units() if isinstance(strategy, ReportsFailedUnits) else frozenset()

    def _raise_if_failed(self, before: frozenset[str]) -> None:
        """``drain()`` is done: raise ``CompressionError`` if units failed for good since
        ``before`` (during the call), naming them and why."""
        binding = self._binding
        failed = self._failed_units() - before
        strategy = binding.strategy
        if failed and isinstance(strategy, ReportsFailedUnits):
            raise CompressionError(
                f"namespace {binding.namespace!r} on branch {binding.branch!r}: {strategy.describe_failed(failed)}; "
                "what they cover renders raw, and they are not asked again"
            )

    async def drain(self) -> None:
        """Wait until the strategy is ready, or raise why it cannot be (``ContextManager.drain``)."""
        binding = self._binding
        binding.check("drain")
        before = self._failed_units()
        start_failures: int | None = None
        while True:
            binding.check("drain")
            if binding.model is None:
                return
            drain = self._drain
            if drain is None or drain.stopped:
                # No drain runs (the strategy has none): work in this task.
                if not await self._run_unit():
                    return self._raise_if_failed(before)
                continue
            progress = drain.progress.version
            if await self._catch_up_now() and binding.actor.requests_out == 0:
                return self._raise_if_failed(before)
            waiting = drain.last_outcome == "waiting"  # another process compresses: its records wake the drain
            failure = drain.failure
            if failure is not None and failure.outages:
                if start_failures is None:
                    start_failures = failure.outages - 1
                if failure.outages - start_failures >= binding.core.model_policy.drain_failures:
                    raise CompressionError(
                        f"the compression model of namespace {binding.namespace!r} on branch {binding.branch!r} failed "
                        f"{failure.outages - start_failures} times in a row (last: {failure.error}); the background drain "
                        "keeps retrying"
                    )
            elif start_failures is None:
                start_failures = 0
            if not waiting:
                drain.poke()
            begun = drain.units_begun  # an outcome counts only from a unit begun after the catch-up above
            await drain.progress.wait_beyond(progress)
            binding.check("drain")  # the drain may have stopped because the store did
            if drain.last_outcome == "idle" and drain.last_unit > begun and binding.actor.requests_out == 0:
                await self._catch_up_now(done=True)
                return self._raise_if_failed(before)  # the drain found nothing it can do now

    async def _catch_up_now(self, *, done: bool = False) -> bool:
        """Catch the strategy up (in the actor's turn); whether it is ready. Ready, or ``done``
        (``drain()`` returns), it gives the compression lease up, if held and no unit is at work,
        so that the namespace's next work may go to any process."""
        binding = self._binding

        async def catch_up() -> bool:
            binding.check("drain")
            await binding.catch_up()
            self._follow_elsewhere()
            ready = bool(binding.strategy.is_ready())
            if ready or done:
                await binding.actor.release_lease_if_idle()
            return ready

        return await binding.actor.execute(Unit(), catch_up)

    def start_drain(self) -> None:
        """Start this manager's drain, if its strategy has background work and none runs."""
        if self._drain is not None and not self._drain.stopped:
            return
        binding = self._binding
        if binding.closed or not binding.started or binding.core.closing:
            return
        if not has_background_work(self._binding.strategy):
            return
        drain = Drain(self._drain_target(), self._binding.core.model_policy)
        self._drain = drain
        self._binding.core.spawn(drain.run)

    def _drain_target(self) -> DrainTarget:
        """What the drain needs of this manager, as callables (it reads them while it runs)."""
        binding = self._binding
        return DrainTarget(
            namespace=self._binding.namespace,
            branch=self._binding.branch,
            branch_signal=self._binding.core.branch_signal(self._binding.branch),
            claim_generation=lambda: self._binding.actor.claim_generation,
            wait_claim_change=lambda generation: self._binding.actor.wait_claim_change(generation),
            recorded_reader=lambda: self._binding.actor.record,
            may_work=self._binding.may_work,
            run_unit=self._run_unit,
            lease_wait=lambda: self._lease_wait,
            answers=lambda: binding.answers,
            started=self._drain_started,
            ended=self._drain_ended,
        )

    async def stop_drain(self) -> None:
        """Stop the manager's drain and wait for it to end."""
        drain, self._drain = self._drain, None
        if drain is not None:
            await drain.stop()

    def cancel_drain(self) -> None:
        """Cancel the manager's drain, not waiting for it (it ends before the manager moves or
        closes)."""
        drain, self._drain = self._drain, None
        if drain is not None:
            drain.cancel()

    # -- the head window -----------------------------------------------------------------

    async def reset_head_window(self, text: str | None) -> str:
        """Start the head window at a new ``[Topic Transition]`` message holding ``text`` (checked
        already, as is the manager), or the note the model writes
        (``ContextManager.reset_head_window``)."""
        binding = self._binding
        strategy = binding.strategy
        if not isinstance(strategy, HasHeadWindow):
            raise StrategyCapabilityError(f"reset_head_window was refused: strategy {binding.strategy_name!r} has no head window")
        if plans_units(strategy):
            return await self._planned_reset(cast(PlansUnits, strategy), text)
        # A strategy's own transition_text runs in this task, its context calls as commands.
        body = text if text is not None else await strategy.transition_text(binding.context())

        async def start() -> None:
            binding.check("reset_head_window")
            await self._start_head_with(body, generated=text is None)

        await binding.actor.execute(HeadReset(), start)
        return body

    async def _start_head_with(self, body: str, *, generated: bool) -> None:
        """In the actor's turn: append the ``[Topic Transition]`` message holding ``body`` (kept
        to this manager's reader when the model wrote it from the reader's view) and start the
        head window there."""
        binding = self._binding
        strategy = cast(HasHeadWindow, binding.strategy)
        block = TextBlock(f"[Topic Transition]\n\n{body}", (binding.view_reader,) if generated and binding.view_reader else None)
        message = await binding.store.append_message(binding.branch, "Context Manager", (block,))
        await strategy.start_head_at(binding.context(), message.sequence)

    async def _planned_reset(self, strategy: PlansUnits, text: str | None) -> str:
        """``reset_head_window`` for a strategy that returns its units as effects: the actor plans
        the note's request and raises the floor in one command; the request goes out from the
        caller's task, holding no turn; a second command throws a stale answer away (raising
        ``AnswerStale``'s reason as ``CompressionError``), judges the note and starts the head."""
        binding = self._binding
        actor = binding.actor

        async def plan() -> tuple[TransitionPlan, ModelGate] | str:
            binding.check("reset_head_window")
            if text is not None:
                await self._start_head_with(text, generated=False)
                return text
            ctx = binding.context()
            step = await strategy.prepare_transition(ctx)
            if step is None:
                await self._start_head_with(NO_EARLIER_CONTEXT, generated=True)
                return NO_EARLIER_CONTEXT
            return step, await self._request_out(strategy, ctx, step)

        planned = await actor.execute(HeadReset(), plan)
        if isinstance(planned, str):
            return planned
        step, gate = planned
        answer = await self._send(strategy, step, gate)

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
