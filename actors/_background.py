"""A manager's background work: units of compression, readiness, its drain, and the head
window's reset.

:class:`BackgroundWork` is one part of a ``ContextManager``: it holds the manager's binding, and
owns the manager's drain and what its newest unit learnt of the compression lease. Every unit
runs one way (the unit protocol, ``strategies/_units.py``): a :class:`BeginUnit` command plans it
and performs the plan up to its request; the request goes out from the drain's task, holding no
turn (for a strategy written against ``tick(ctx)`` alone, its ``tick`` runs there instead, its
context calls sent as commands); a :class:`CommitUnit` command hands the answer back, judged and
performed by the actor. A head-window reset runs the same way.

On a shared store a unit first takes its namespace's compression lease (:mod:`._lease`) and runs
fenced by it; a process that cannot take it compresses nothing there meanwhile: its drain waits,
and its strategy takes in the holder's records as they arrive.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext

import anyio
import anyio.lowlevel

from ..strategies._capabilities import DescribesPendingWork, HasHeadWindow, ReportsFailedUnits, has_background_work
from ..strategies._errors import CompressionError, ModelError, StrategyCapabilityError
from ..strategies._units import PlansTransitions, PlansUnits, TickedUnits, UnitPlan, units_of
from ._binding import Binding
from ._commands import AnswerStale, BeginHeadReset, BeginUnit, Begun, CatchUp, CommitHeadReset, CommitUnit, NoUnit, ReleaseLease
from ._drains import Drain, DrainTarget
from ._lease import LeaseLost
from ._namespace import NamespaceActor
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
        #: The plan whose request this manager has out now, if any (what ``pending_work`` names).
        self._asking: UnitPlan | None = None

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
        """One unit, the one way (see the module docstring): begun by a command, its request (or
        a ticked strategy's ``tick``) from this task, its answer handed back by a command, even
        to a cancelled drain. A stale answer is no work done; a write refused because the lease
        was lost says whether to look again at once; any other error, once the model has been
        failing (``_model_failing``), gives the lease up first, if the unit ran under it, and
        propagates. With no model, a drain's unit of a planning strategy is not begun at all (it
        could plan nothing); one of a ticked strategy is begun, its catch-up handing the strategy
        the new messages, and finds no work."""
        binding = self._binding
        actor = binding.actor
        units = units_of(binding.strategy)
        if needs_model and binding.model is None and not isinstance(units, TickedUnits):
            return False  # a planned unit needs the model: a drain with none costs the namespace nothing
        begun: Begun | None = None
        try:
            started = await actor.send(BeginUnit(binding, units, needs_model))
            if isinstance(started, NoUnit):
                self._lease_wait = started.lease_wait
                return False
            self._lease_wait = None
            begun = started
            if begun.plan.request is None and begun.plan.work is None:
                return True  # performed whole (a close)
            if begun.plan.request is not None:
                self._asking = begun.plan
            try:
                answer = await self._answer(begun)
            finally:
                self._asking = None
            did = False
            with anyio.CancelScope(shield=True):  # the answer is handed back even to a cancelled drain
                did = await actor.send(CommitUnit(binding, begun, answer))
            return did
        except AnswerStale:
            return False
        except LeaseLost as exc:
            return self._lease_lost(actor, exc)
        except Exception:
            if begun is not None and begun.leased and self._model_failing():
                try:
                    await actor.send(ReleaseLease(if_idle=True))
                except Exception as exc:  # the actor or the store ended: the lease ends with them
                    log.debug("namespace %r on %r: the compression lease was not released (%r)", binding.namespace, binding.branch, exc)
            raise

    async def _answer(self, begun: Begun) -> object:
        """In this task, holding no turn: the answer to ``begun``'s request (unchecked), or what
        its ``work`` returned (a ticked strategy's ``tick`` or ``transition_text``, run with a
        context whose calls are commands, fenced by the lease when the unit holds it). A request
        that fails or is cancelled is handed back as given up (in the actor: no longer out, no
        longer in flight) before its error propagates, a model error naming the unit; so is an
        answer that arrives once this task was cancelled (a move or a close stopped the drain)."""
        binding, plan = self._binding, begun.plan
        if plan.work is not None:
            actor = binding.actor
            with actor.fenced() if begun.leased else nullcontext():  # the lease stays busy until the unit ends
                return await plan.work(binding.context(fenced=begun.leased))
        gate, request = begun.gate, plan.request
        assert gate is not None and request is not None
        try:
            answer = await gate.send(request)
            await anyio.lowlevel.checkpoint_if_cancelled()  # a drain stopped meanwhile hands nothing back
            return answer
        except BaseException as exc:
            await gate.give_up(also=lambda: begun.units.asking(None), failed=not isinstance(exc, anyio.get_cancelled_exc_class()))
            if isinstance(exc, ModelError):
                raise ModelError(f"{plan.describe}: {exc}") from exc
            raise

    def _lease_lost(self, actor: NamespaceActor, exc: LeaseLost) -> bool:
        """A unit's write was refused: the connection's session ended, or the lease was given up,
        meanwhile. Whether to look again at once (the lease was not refused lately)."""
        log.warning("namespace %r on %r: %s", self._binding.namespace, self._binding.branch, exc)
        self._lease_wait = actor.lease_retry_in()
        return self._lease_wait is None

    def _model_failing(self) -> bool:
        """Whether the model has been out (no answer) ``drain_failures`` times in a row (the
        point where drain() raises; rejected answers are no outage): a unit failing then gives
        the lease up, so that a process whose model answers may take over; this one asks again
        after its back-off. (Before that, its retries cost no round trip.)"""
        failure = self._drain.failure if self._drain is not None else None
        return failure is not None and failure.outages >= self._binding.core.model_policy.drain_failures

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
                await actor.send(ReleaseLease(if_idle=False))
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
        if text is None and self._asking is not None:
            text = self._asking.describe  # the unit whose request is out
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
        namespace_failures = _NamespaceFailures()
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
            namespace_failures.check(binding)
            if not waiting:
                drain.poke()
            begun = drain.units_begun  # an outcome counts only from a unit begun after the catch-up above
            back = binding.actor.requests_back.version
            await drain.progress.wait_beyond(progress)
            binding.check("drain")  # the drain may have stopped because the store did
            if drain.last_outcome == "idle" and drain.last_unit > begun:
                actor = binding.actor
                if actor.requests_out == 0:
                    await self._catch_up_now(done=True)
                    return self._raise_if_failed(before)  # the drain found nothing it can do now
                if not drain.in_unit:
                    # Nothing to do here while another manager of the namespace has a request
                    # out: wait until one is back (its outcome counts in namespace_failures), not
                    # poking. (A request of this drain's own next unit is waited for as any unit
                    # is, by its progress, so that drain() never returns while that unit is at work.)
                    await actor.requests_back.wait_beyond(back)
                    binding.check("drain")

    async def _catch_up_now(self, *, done: bool = False) -> bool:
        """Catch the strategy up (a :class:`CatchUp` command); whether it is ready. Ready, or
        ``done`` (``drain()`` returns), it gives the compression lease up, if held and no unit is
        at work, so that the namespace's next work may go to any process."""
        return bool(await self._binding.actor.send(CatchUp(self._binding, done)))

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
        (``ContextManager.reset_head_window``): the way a unit runs (see the module docstring),
        a :class:`BeginHeadReset` command planning the note, its request from this task, and a
        :class:`CommitHeadReset` command judging it and starting the head; a stale answer raises
        ``CompressionError`` and writes nothing."""
        binding = self._binding
        strategy = binding.strategy
        if not isinstance(strategy, HasHeadWindow):
            raise StrategyCapabilityError(f"reset_head_window was refused: strategy {binding.strategy_name!r} has no head window")
        units: PlansUnits = units_of(strategy)
        if not isinstance(units, PlansTransitions):
            units = TickedUnits(strategy)
        actor = binding.actor
        started = await actor.send(BeginHeadReset(binding, units, text))
        if isinstance(started, str):
            return started
        answer = await self._answer(started)
        body = ""
        with anyio.CancelScope(shield=True):  # the answer is handed back even to a cancelled caller
            body = await actor.send(CommitHeadReset(binding, started, answer))
        return body


class _NamespaceFailures:
    """What one ``drain()`` call saw of its namespace's model: the requests of other managers
    of the namespace count too, for the call waits while any request is out. Without them, a
    manager waiting on another whose model never answers would wait for as long as that model
    keeps failing."""

    def __init__(self) -> None:
        self._answered: int | None = None  # the namespace's answers when last looked at
        self._from = 0  # its outages in row when the streak counted here began, less one

    def check(self, binding: Binding) -> None:
        """Raise ``CompressionError`` once the namespace's compression requests failed with no
        answer ``drain_failures`` times in a row during this call (a streak already going when
        it began counts as one), as the manager's own drain's failures do."""
        actor = binding.actor
        in_row = actor.outages_in_row
        if self._answered is None:
            self._from = max(0, in_row - 1)
        elif actor.answered != self._answered:
            self._from = 0  # an answer came since: the streak began after it
        self._answered = actor.answered
        failures = in_row - self._from
        if failures >= binding.core.model_policy.drain_failures:
            raise CompressionError(
                f"the compression model of namespace {binding.namespace!r} on branch {binding.branch!r} failed "
                f"{failures} times in a row, answering no manager of the namespace; the background drains keep retrying"
            )
