"""Supervised compression drains.

A drain is a task in the runtime's task group, one per open manager whose strategy has
background work. It brings the strategy up to date with the branch and runs one unit of work at
a time (each in the namespace actor's turn, the model request outside it) until there is none;
then it waits for the branch's next write. It stops when the manager closes or moves, when the
runtime closes, when the store stops after a failed commit, and when the namespace actor reports
a claim change that leaves the manager stale (its cancel scope is cancelled, so a pending request
is abandoned).

A unit that fails is logged at WARNING with the unit and the reason. A failure with no answer
(an outage: the model raised, timed out, or raised a cancellation no scope of the runtime
delivered, or the unit's own code raised) is retried with back-off: 1 s doubling to 5 min, each
wait scaled by a random factor in [0.5, 1]; only an accepted answer from the model, or finding
nothing left to do, starts it again at the first step. A rejected answer is no outage: the model
answered. It counts toward its unit's attempt limit (the strategy's); the drain asks again after
``ModelPolicy.rejection_pause`` (no pause by default), and the rejection that reaches the limit
fails the unit for good and the drain goes on to the next unit after the same pause. So a model
that rejects every answer fails every unit after exactly its attempt limit of requests, with no
wait that grows, and the back-off an outage built up is neither used nor grown by rejections.
Failures never take the runtime down; the runtime's own cancellation always propagates.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import attrs

from ..strategies._errors import AnswerRejectedError, CompressionError, ModelError
from ._errors import ManagerClosedError, ReaderClaimError, ReaderRecordError, StoreFailedError, StrategyNotStartedError
from ._gate import ModelPolicy, describe_error, is_own_cancellation
from ._signals import Signal

__all__ = ["Drain", "DrainTarget", "ModelFailure"]

log = logging.getLogger("asides.drains")

#: Seconds an ended drain may spend giving up its namespace's compression lease.
LEASE_RELEASE_SECONDS = 10.0


@attrs.frozen
class ModelFailure:
    """The model has been failing: since when (wall clock), the last error, and when the next
    try is due (on the runtime's clock). ``outages`` counts the failures in a row that were no
    answer at all (the model raised or timed out), not a rejected answer: rejections are bounded
    by their unit's attempt limit."""

    since: float
    error: str
    next_try: float
    outages: int = 0

    def describe(self) -> str:
        wait = max(0.0, self.next_try - anyio.current_time())
        since = time.strftime("%H:%M:%S", time.localtime(self.since))
        return f"model failing since {since} ({self.error}), next try in {wait:.0f} s"


@attrs.frozen
class DrainTarget:
    """What a drain needs of the manager it works for, handed to it by the manager when it starts
    the drain: the namespace and branch, the branch's signal, and callables the drain calls."""

    namespace: str
    branch: str
    #: Raised by every write on the branch.
    branch_signal: Signal
    #: The namespace's claim generation now, and a wait until it differs from a given one.
    claim_generation: Callable[[], int]
    wait_claim_change: Callable[[int], Awaitable[None]]
    #: The reader the namespace records on the branch (``None`` when unclaimed), for the log.
    recorded_reader: Callable[[], object]
    #: Whether the namespace's claim still lets the manager work here.
    may_work: Callable[[], bool]
    #: Catch up and run one unit of work; whether there was one. Raises what the unit raised.
    run_unit: Callable[[], Awaitable[bool]]
    #: After a unit that did nothing: seconds until it asks again for the namespace's
    #: compression lease, which another process holds (``None``: no other process holds it).
    lease_wait: Callable[[], float | None]
    #: How many answers the model has given the manager.
    answers: Callable[[], int]
    #: The drain began; returns what ``ended`` is to be given (the drain keeps its namespace's
    #: actor alive meanwhile).
    started: Callable[[], Any]
    #: The drain's loop ended; with ``give_up_lease`` (it was neither stopped in the middle of a
    #: unit nor failing) the compression lease is given up, if this was the last drain of the
    #: namespace here.
    ended: Callable[[Any, bool], Awaitable[None]]


class Drain:
    """One manager's drain: the loop, its failure record and a progress signal."""

    def __init__(self, target: DrainTarget, policy: ModelPolicy) -> None:
        self._target = target
        self._policy = policy
        self._random = random.Random()
        self.progress = Signal()
        self.failure: ModelFailure | None = None
        #: What the newest unit did: ``"did"`` work, found nothing (``"idle"``), ``"failed"``, or
        #: found another process compressing the namespace (``"waiting"`` for its lease).
        self.last_outcome = "idle"
        #: Units begun so far, and the number of the one whose outcome ``last_outcome`` is (0:
        #: none yet), so that a caller waiting for an outcome can tell one of a unit begun after
        #: it looked from one begun before.
        self.units_begun = 0
        self.last_unit = 0
        self.stopped = False
        self._scope: anyio.CancelScope | None = None
        self._done = anyio.Event()
        self._in_unit = False  # a unit is running (a drain stopped in one writes nothing more)

    @property
    def in_unit(self) -> bool:
        """Whether a unit of this drain is running now (begun and not yet ended)."""
        return self._in_unit

    def poke(self) -> None:
        """Make the drain look for work now (it wakes with every drain of its branch)."""
        self._target.branch_signal.raise_()

    def cancel(self) -> None:
        """Stop the drain (a pending request is abandoned)."""
        self.stopped = True
        if self._scope is not None:
            self._scope.cancel()

    async def stop(self) -> None:
        """Stop the drain and wait until its task has ended."""
        self.cancel()
        if self._scope is not None:
            await self._done.wait()

    async def run(self) -> None:
        """The drain task's body (started by the manager in the runtime's task group)."""
        target = self._target
        if self.stopped:  # stopped before its task began: it touches nothing
            self._done.set()
            self.progress.raise_()
            return
        started = target.started()
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(self._watch_claim, scope)
                    await self._loop()
                    tasks.cancel_scope.cancel()
        finally:
            self.stopped = True
            with anyio.CancelScope(shield=True), anyio.move_on_after(LEASE_RELEASE_SECONDS):
                await target.ended(started, not self._in_unit and self.failure is None)
            self._done.set()
            self.progress.raise_()
            log.debug("drain of namespace %r on %r ended", target.namespace, target.branch)

    async def _watch_claim(self, scope: anyio.CancelScope) -> None:
        target = self._target
        while True:
            generation = target.claim_generation()
            await target.wait_claim_change(generation)
            if not target.may_work():
                log.warning(
                    "namespace %r on branch %r was claimed by %r; the drain of a manager that does not compile for that reader stops",
                    target.namespace,
                    target.branch,
                    target.recorded_reader(),
                )
                scope.cancel()
                return

    async def _one_unit(self) -> bool:
        """``run_unit``, noted while it runs: a drain cancelled in the middle of one keeps the note."""
        self._in_unit = True
        try:
            did = await self._target.run_unit()
        except Exception:
            self._in_unit = False
            raise
        except anyio.get_cancelled_exc_class() as exc:
            if is_own_cancellation(exc):
                raise  # the drain is being stopped: the note stays
            # A cancellation no scope of the runtime delivered (the strategy's own code raised
            # it): that unit's failure, like any other exception.
            self._in_unit = False
            raise CompressionError(f"the unit raised a {type(exc).__name__} that no scope of the runtime delivered") from exc
        self._in_unit = False
        return did

    async def _loop(self) -> None:
        target, policy = self._target, self._policy
        backoff = policy.first_backoff
        while True:
            version = target.branch_signal.version
            answered = target.answers()
            self.units_begun += 1
            unit = self.units_begun
            try:
                did = await self._one_unit()
            except (ReaderClaimError, ReaderRecordError) as exc:
                log.warning("drain of namespace %r on %r stopped: %s", target.namespace, target.branch, exc)
                return
            except (ManagerClosedError, StrategyNotStartedError):
                return
            except StoreFailedError as exc:  # the store stopped: nothing more can be written
                log.error("drain of namespace %r on %r stopped: %s", target.namespace, target.branch, exc)
                return
            except Exception as exc:
                rejected = isinstance(exc, AnswerRejectedError)
                if rejected:
                    # An answer came and was rejected: the model is up. The unit's attempt limit
                    # bounds its requests, so it is asked again after the fixed pause, and the
                    # back-off of an outage neither applies nor grows.
                    wait = policy.rejection_pause
                else:
                    if target.answers() != answered:
                        backoff = policy.first_backoff
                    wait = backoff * (0.5 + 0.5 * self._random.random())
                    backoff = min(backoff * 2, policy.max_backoff)
                previous = self.failure
                self.failure = ModelFailure(
                    since=previous.since if previous is not None else time.time(),
                    error=describe_error(exc) if isinstance(exc, ModelError | AnswerRejectedError) else repr(exc),
                    next_try=anyio.current_time() + wait,
                    outages=(previous.outages if previous is not None else 0) + (0 if rejected else 1),
                )
                log.warning(
                    "drain of namespace %r on %r: a unit failed (%s); %s %.1f s",
                    target.namespace,
                    target.branch,
                    self.failure.error,
                    "the next unit in" if isinstance(exc, AnswerRejectedError) and exc.unit_failed else "it stays pending, retrying in",
                    wait,
                )
                self.last_outcome, self.last_unit = "failed", unit
                self.progress.raise_()
                await anyio.sleep(wait)
                continue
            lease_wait = None if did else target.lease_wait()
            if target.answers() != answered or (not did and lease_wait is None):
                # The model answered (it is healthy again), or nothing is left to do here (the
                # units that failed for good are reported by the strategy, not as a failing model).
                backoff = policy.first_backoff
                self.failure = None
            self.last_outcome = "did" if did else "idle" if lease_wait is None else "waiting"
            self.last_unit = unit
            self.progress.raise_()
            if not did:
                # Waiting for another process's lease: its records are writes on the branch and
                # wake the drain (to follow them); its release or end is asked about at the retry.
                with anyio.move_on_after(math.inf if lease_wait is None else lease_wait):
                    await target.branch_signal.wait_beyond(version)
