"""The model boundary: how a strategy's compression request reaches the model and comes back.

A strategy sees the model through :class:`ModelGate` (``ctx.model``). A request leaves the
namespace actor's turn while it is out; it is bounded by a timeout; whatever the model raises
(an ``Exception``, or a ``BaseException`` that is not the runtime's own cancellation, such as an
``asyncio.CancelledError`` from an asyncio library under Trio, or ``GeneratorExit``) fails that
unit only, as a :class:`ModelError`. ``KeyboardInterrupt`` and ``SystemExit`` still propagate.
An answer is checked before a strategy may see it, by the one rule every answer follows
(``accepted_text``: a stop reason other than ``end_turn``, no text, not a ``Completion``, too
long, ... raise :class:`AnswerRejectedError` naming the reason), and thrown away when the manager
moved, closed, or the namespace's claim changed while it was out.

A cancellation exception from the model is the runtime's (and propagates) only when a scope
enclosing the request was cancelled (:func:`is_own_cancellation`); any other, a stray
``trio.Cancelled`` included, fails the unit as a :class:`ModelError`.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import attrs
import sniffio

from .._deprecate import warn_deprecated
from ..store._errors import ArgumentTypeError, InvalidArgumentError
from ..strategies._errors import ModelError
from ..strategies._models import Completion, CompletionRequest, Model, accepted_text
from ._commands import AnswerStale, RequestBack, RequestGivenUp, RequestOut
from ._tracing import span

if TYPE_CHECKING:
    from ._namespace import NamespaceActor

__all__ = ["ModelGate", "ModelPolicy", "check_model", "is_own_cancellation"]

log = logging.getLogger("asides.actors")


@attrs.frozen
class ModelPolicy:
    """How the runtime treats a compression model.

    ``request_timeout``: seconds a request may take before it fails (the unit is retried with
    back-off). ``answer_limit_factor``: an answer longer than this many times the request's
    ``max_tokens`` (estimated tokens) is rejected. ``drain_failures``: consecutive model failures
    during one ``drain()`` call after which it raises ``CompressionError`` (the background drain
    keeps retrying). ``first_backoff`` / ``max_backoff``: seconds between retries, doubling, each
    wait scaled by a random factor in [0.5, 1] so namespaces that fail together do not retry in
    lockstep. ``rejection_pause``: seconds the drain waits after an answer that was rejected
    before it asks again (that unit, or the next once the unit reached its attempt limit);
    ``0`` by default, at once. A rejection is no outage: its unit's attempt limit bounds it, and
    it neither waits for nor grows the back-off.

    ``lease_retry`` (a shared store only): seconds a process waits, after finding another
    process holding a namespace's compression lease, before it asks for the lease again
    (docs/postgres.md); a holder that gives it up or crashes is noticed within that time. Each
    ask is one round trip to the database, made only while the namespace has work waiting here.

    ``compression_lease`` is deprecated and has no effect: it was the length of a lease record,
    and the lease is now a session lock of the store's connection, which has no length (a
    crashed holder frees it at once). Giving it warns (``AsidesDeprecationWarning``); it stays
    accepted, in its old place among the positional arguments.
    """

    request_timeout: float = 300.0
    answer_limit_factor: float = 4.0
    drain_failures: int = 5
    first_backoff: float = 1.0
    max_backoff: float = 300.0
    compression_lease: float | None = None
    lease_retry: float = 1.0
    rejection_pause: float = 0.0

    def __attrs_post_init__(self) -> None:
        if self.compression_lease is not None:
            warn_deprecated(
                "asides.ModelPolicy.compression_lease",
                "0.2.0",
                instead=None,
                because="it has no effect, since the compression lease is a session lock of the store's connection, freed at once "
                "when its holder ends (docs/postgres.md); lease_retry sets how often a waiting process asks for it",
                stacklevel=3,
            )
        for name in ("request_timeout", "answer_limit_factor", "first_backoff", "max_backoff", "lease_retry"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
                raise InvalidArgumentError(f"ModelPolicy.{name}", f"must be a positive number, got {value!r}")
        pause = self.rejection_pause
        if not isinstance(pause, int | float) or isinstance(pause, bool) or not 0 <= pause < math.inf:
            raise InvalidArgumentError("ModelPolicy.rejection_pause", f"must be a number of seconds, 0 or more, got {pause!r}")
        if not isinstance(self.drain_failures, int) or self.drain_failures < 1:
            raise InvalidArgumentError("ModelPolicy.drain_failures", f"must be an int of at least 1, got {self.drain_failures!r}")


def check_model(model: object, where: str) -> None:
    """Refuse, with a clear error, a model object that has no ``complete`` method."""
    if model is not None and not callable(getattr(model, "complete", None)):
        raise ArgumentTypeError(
            "model",
            f"{where}: the model must be an object with an async complete(request) method "
            f"(for example ExtractiveModel() or AnthropicModel()); got {model!r}",
        )


def is_own_cancellation(exc: BaseException) -> bool:
    """Whether ``exc`` is a cancellation that a scope enclosing the caller delivered (the
    runtime's, or the host's: it must propagate), not a stray cancellation exception some
    library raised.

    A cancellation exception counts as delivered only while a scope that encloses the caller,
    and is not hidden behind a shield, is cancelled (``current_effective_deadline()`` is then
    ``-inf``), or, under asyncio, while the task has a cancellation request pending
    (``Task.cancelling()``). Any other one (a ``trio.Cancelled`` kept from an earlier call and
    raised again, an asyncio library's own ``CancelledError`` under Trio) is the raiser's fault.
    Call it where the exception arrived, before any checkpoint."""
    if not isinstance(exc, anyio.get_cancelled_exc_class()):
        return False
    if anyio.current_effective_deadline() == -math.inf:
        return True
    if sniffio.current_async_library() == "asyncio":
        task = asyncio.current_task()
        return task is not None and task.cancelling() > 0
    return False


def describe_error(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class GateOwner(Protocol):
    """What the gate needs of the manager it serves."""

    @property
    def namespace(self) -> str: ...

    @property
    def branch(self) -> str: ...

    @property
    def view_reader(self) -> str | None: ...

    @property
    def closed(self) -> bool: ...

    @property
    def strategy_name(self) -> str: ...


class ModelGate:
    """The model as a strategy sees it (``ctx.model``)."""

    def __init__(
        self,
        owner: GateOwner,
        actor: NamespaceActor,
        model: Model,
        policy: ModelPolicy,
        *,
        on_answer: Callable[[], None],
        epoch: Callable[[], int],
        disclose: Callable[[Sequence[str], str], Awaitable[None]],
    ) -> None:
        """``epoch``: the owner's move count now (raised by one on every fork, switch and strategy
        change); ``disclose`` records that message ids were shown through a way (here: to the
        model provider, before the request is sent)."""
        self._owner = owner
        self._actor = actor
        self._model = model
        self._policy = policy
        self._current_epoch = epoch
        self._epoch = epoch()
        self._generation = actor.claim_generation
        self._on_answer = on_answer
        self._disclose = disclose

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    async def _ask(self, request: CompletionRequest) -> Completion:
        timeout = self._policy.request_timeout
        try:
            with anyio.fail_after(timeout):
                return await self._model.complete(request)
        except TimeoutError:
            raise ModelError(f"the model gave no answer within {timeout:g} s") from None
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            if is_own_cancellation(exc):
                raise
            raise ModelError(f"the model failed ({describe_error(exc)})") from exc

    @contextmanager
    def _traced(self, request: CompletionRequest) -> Iterator[None]:
        """The ``model_request`` span of ``request`` (docs/tracing.md), for the block."""
        owner = self._owner
        with span(
            "model_request", namespace=owner.namespace, reader=owner.view_reader, branch=owner.branch, strategy=owner.strategy_name
        ) as traced:
            traced.set("messages", len(request.messages))
            traced.set("tokens", request.max_tokens)
            traced.set("sources", len(request.source_ids))
            yield

    async def complete(self, request: CompletionRequest) -> Completion:
        with self._traced(request):
            return await self._complete(request)

    async def _complete(self, request: CompletionRequest) -> Completion:
        """The request in the same steps as a planned unit's: :meth:`prepare` in the actor's turn
        (a :class:`RequestOut` command from outside it), :meth:`send` from this task, then
        :meth:`came_back` in the turn (stale: ``AnswerStale``), and the answer checked. Asked in
        the actor's own task (a strategy calling the model while it compiles or starts), every
        step runs there, the request too, and the namespace waits meanwhile (no built-in strategy
        asks the model there)."""
        actor = self._actor
        if actor.holds_turn():
            await self.prepare(request)
        else:
            await actor.send(RequestOut(self, request))
        try:
            completion = await self._ask(request)
        except BaseException as exc:
            await self.give_up(failed=not isinstance(exc, anyio.get_cancelled_exc_class()))
            raise
        if actor.holds_turn():
            self.came_back()
        else:
            await actor.send(RequestBack(self))
        self.check_answer(completion, request)
        return completion

    # -- a request in steps ---------------------------------------------------------------------
    #
    # ``prepare``, ``came_back``, ``given_up``, ``check_fresh`` and ``check_answer`` run in the
    # namespace actor's turn; ``send`` runs in the drain's (or the caller's) task, with no turn held.

    async def prepare(self, request: CompletionRequest) -> None:
        """Before ``request`` leaves: refuse it when the claim no longer lets the manager read
        (``ReaderClaimError``), record what it shows as disclosed to the provider, and count it
        as out (the namespace's ``requests_out``)."""
        owner, actor = self._owner, self._actor
        actor.check(owner.view_reader, "a compression request")
        await self._disclose(request.source_ids, "compression")  # recorded before it is sent
        actor.request_began()

    async def send(self, request: CompletionRequest) -> Completion:
        """The request alone, bounded by the policy's timeout: the model's answer, unchecked, or
        ``ModelError`` (see the module docstring). Call it between :meth:`prepare` and
        :meth:`finished`, holding no turn."""
        with self._traced(request):
            return await self._ask(request)

    def finished(self, *, answered: bool, failed: bool = False) -> None:
        """The request is back (``answered``: with an answer) or given up (``failed``: with no
        answer, else cancelled): no longer out."""
        self._actor.request_finished(answered=answered, failed=failed)
        if answered:
            self._on_answer()

    def came_back(self) -> None:
        """In the actor's turn: the request is back with an answer, so no longer out; raises
        :class:`AnswerStale` when the answer is to be thrown away (:meth:`check_fresh`)."""
        self.finished(answered=True)
        self.check_fresh()

    def given_up(self, also: Callable[[], None] | None = None, *, failed: bool = False) -> None:
        """In the actor's turn: the request failed (``failed``: with no answer) or was cancelled,
        so no longer out (and ``also`` done with it)."""
        self.finished(answered=False, failed=failed)
        if also is not None:
            also()

    async def give_up(self, also: Callable[[], None] | None = None, *, failed: bool = False) -> None:
        """:meth:`given_up`, as the actor's (a :class:`RequestGivenUp` command from outside its
        turn), shielded; when the actor ended (the runtime closes) nothing else uses it now, and
        this task does it itself."""
        with anyio.CancelScope(shield=True):
            if self._actor.holds_turn():
                return self.given_up(also, failed=failed)
            try:
                await self._actor.send(RequestGivenUp(self, also, failed))
            except Exception:
                self.given_up(also, failed=failed)

    def check_fresh(self) -> None:
        """Raise :class:`AnswerStale` when the answer is to be thrown away: the manager moved or
        closed, or the namespace's claim changed (``ReaderClaimError`` when the new claim no
        longer lets the manager read), while the request was out."""
        owner, actor = self._owner, self._actor
        if self._current_epoch() != self._epoch:
            raise AnswerStale("the manager moved while the request was out; its answer is discarded")
        if owner.closed:
            raise AnswerStale("the manager closed while the request was out; its answer is discarded")
        if actor.claim_generation != self._generation:
            log.warning(
                "discarded a compression answer for namespace %r on branch %r: the namespace was claimed (now %r) "
                "while the request was out",
                owner.namespace,
                owner.branch,
                actor.record,
            )
            actor.check(owner.view_reader, "storing a compression result")
            raise AnswerStale("the namespace's claim changed while the request was out; its answer is discarded")

    def check_answer(self, completion: object, request: CompletionRequest) -> None:
        """The one rule for an answer (:func:`~asides.strategies._models.accepted_text`), with
        the policy's size limit: ``AnswerRejectedError`` naming the reason."""
        accepted_text(completion, max_tokens=request.max_tokens, limit_factor=self._policy.answer_limit_factor)
