"""What one ``ContextManager`` is bound to, and how far its strategy has read: the one owner of
that state.

A binding holds the manager's namespace, reader and view filter (fixed at its open), its branch,
namespace actor, view and strategy (changed together, only by :meth:`Binding.rebind`, in a move),
and its strategy's progress through the branch (how many messages it was handed, whether it
started). The manager's parts (its compiles, edits, background work and moves) each hold the
binding and ask it; none of them keeps a copy of what it holds.

Contracts:

- :meth:`Binding.check` refuses every call of a manager that is closed, whose store stopped, or
  whose namespace's record names a reader it does not compile for (``ReaderClaimError``); with
  ``started`` also one whose strategy failed to start (``StrategyNotStartedError``).
- :meth:`Binding.catch_up`, :meth:`Binding.start` and :meth:`Binding.follow_elsewhere` run in
  the namespace actor's turn (a command's handling): they call the strategy's
  ``on_new_message``, ``initialize`` and ``follow_stored_state``.
- :meth:`Binding.context` builds the one strategy context a piece of work uses.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..store._blocks import ContentBlock, has_audience
from ..store._messages import freeze_metadata
from ..store._scheduling import cancel_point
from ..store._views import MessageView, ViewFilter
from ..strategies._base import ContextStrategy, StrategyContext, StrategyState
from ..strategies._capabilities import FollowsStoredState, HasEstimator, ShardsMessages
from ..strategies._models import Model
from ..strategies._recorded import record_to_write
from ..strategies._tokens import default_estimate
from ._commands import Open, RaiseFloor, WriteStates
from ._errors import ManagerClosedError, StrategyNotStartedError
from ._gate import ModelGate
from ._namespace import NamespaceActor
from ._records import NAMESPACE_RECORDS

if TYPE_CHECKING:
    from ..store._compile_records import CompileRecord
    from ..store._store import Store
    from ._context_log import ContextLog
    from ._core import ManagerHandle, RuntimeCore

__all__ = ["Binding", "MessageItem"]

log = logging.getLogger("asides.actors")

#: One message to append: participant, content, metadata.
MessageItem = tuple[str, tuple[ContentBlock, ...], Mapping[str, Any] | None]


class Binding:
    """A manager's namespace, reader, branch, actor, view and strategy, and its strategy's
    progress (see the module docstring)."""

    def __init__(
        self,
        core: RuntimeCore,
        *,
        namespace: str,
        strategy: ContextStrategy,
        reader: str | None,
        view_filter: ViewFilter | None,
        branch: str,
        model: Model | None,
    ) -> None:
        self.core = core
        self.store: Store = core.store
        #: Fixed at the open.
        self.namespace = namespace
        self.view_reader = reader
        self.view_filter = view_filter
        #: The manager's own model (``None``: the runtime's, see :attr:`model`).
        self.own_model = model
        self._branch = branch
        self._strategy = strategy
        self._actor: NamespaceActor = core.actor(branch, namespace)
        self._held: NamespaceActor | None = None  # the actor this binding keeps alive
        self._hold(self._actor)
        self._view = self._make_view(branch)
        self._closed = False
        self._started = False
        self._start_error: BaseException | None = None
        self._epoch = 0
        self._seen_length = 0  # how many of the branch's messages the strategy has been handed
        self._erasures_seen = core.store.model.erasure_count  # see catch_up
        self._shards_messages = False
        self._answers = 0
        self._followed_elsewhere = 0  # how many records written elsewhere the strategy was handed
        #: The running library's cancel point (see ``store._scheduling``): a write's first step.
        self.cancel_point = cancel_point()

    # -- what it is bound to ---------------------------------------------------------------------

    @property
    def branch(self) -> str:
        return self._branch

    @property
    def actor(self) -> NamespaceActor:
        """The namespace actor of the namespace on the branch."""
        return self._actor

    @property
    def view(self) -> MessageView:
        """The reader's view of the branch: a new object after a move or an erasure, so what a
        compile kept of an older one is stale."""
        return self._view

    @property
    def strategy(self) -> ContextStrategy:
        return self._strategy

    @property
    def strategy_name(self) -> str:
        """The strategy's name (its ``name``, else its class name), as traces and records say it."""
        return str(getattr(self._strategy, "name", type(self._strategy).__name__))

    @property
    def model(self) -> Model | None:
        """The model the manager compresses with: its own, else the runtime's, else none."""
        return self.own_model if self.own_model is not None else self.core.model

    @property
    def context_log(self) -> ContextLog:
        """The runtime's context log (every namespace's entries and copies)."""
        return self.core.context_log

    @property
    def records_disclosures(self) -> bool:
        """Whether the runtime records what each compile and request showed (``disclosures()``)."""
        return self.core.records_disclosures

    @property
    def lease_retry(self) -> float:
        """Seconds before asking again for a compression lease another process holds."""
        return self.core.model_policy.lease_retry

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def started(self) -> bool:
        """Whether the strategy started, and did not fail to."""
        return self._started

    @property
    def epoch(self) -> int:
        """How many times the manager moved (a fork, a switch, a strategy change)."""
        return self._epoch

    @property
    def answers(self) -> int:
        """How many model answers the manager's requests received."""
        return self._answers

    def count_answer(self) -> None:
        self._answers += 1

    # -- checks ------------------------------------------------------------------------------

    def check(self, action: str, *, started: bool = True) -> None:
        """Refuse ``action`` (see the module docstring)."""
        self.store.raise_if_failed()  # first: after a failed commit every call says so
        if self._closed:
            raise ManagerClosedError(action, self.namespace)
        self._actor.check(self.view_reader, action)
        if started and self._start_error is not None:
            raise StrategyNotStartedError(action, self.namespace, self._branch, self._start_error)

    def _check_read(self) -> None:
        self.check("a read through the view", started=False)

    def may_work(self) -> bool:
        """Whether the namespace's claim still lets the manager work here."""
        return not self._closed and self._actor.may_work(self.view_reader)

    # -- what a piece of work uses -----------------------------------------------------------

    def estimator(self) -> Callable[[Sequence[ContentBlock]], int]:
        strategy = self._strategy
        return (strategy.estimator if isinstance(strategy, HasEstimator) else None) or default_estimate

    def context(self, *, preview: bool = False, fenced: bool = False) -> StrategyContext:
        """A strategy context over the view (``preview``: its state read-only). Its calls that
        change what the actor owns (``mark_compression_read``, state writes) and its model's
        steps are the actor's: made in the actor's turn, they call the actor directly; made from
        another task (a strategy's own ``tick``), each is a command, carrying the compression
        lease's fence when ``fenced``."""
        actor = self._actor
        model = self.model

        def writer(records: Mapping[str, Any]) -> Awaitable[None]:
            if actor.holds_turn():
                return actor.write_states(records)
            return actor.send(WriteStates(records, fenced))

        def mark(sequence: int) -> Awaitable[None]:
            if actor.holds_turn():
                return self._mark(sequence)
            return actor.send(RaiseFloor(sequence, self.view_reader, fenced, self))

        return StrategyContext(
            view=self._view,
            model=ModelGate(
                self,
                actor,
                model,
                self.core.model_policy,
                on_answer=self.count_answer,
                epoch=lambda: self._epoch,
                disclose=self.disclose,
            )
            if model is not None
            else None,
            namespace=self.namespace,
            branch=self._branch,
            state=StrategyState(
                self.store,
                self._branch,
                self.namespace,
                keys=NAMESPACE_RECORDS,
                written=lambda: actor.written,
                read_only=preview,
                writer=writer,
                report=self._report_state,
            ),
            reader=self.view_reader,
            preview=preview,
            mark=mark,
            in_flight=lambda: actor.requests_out > 0,
        )

    def _report_state(self, key: str, problem: str) -> None:
        model = self.store.model
        model.report(model.state_record_id(self._branch, key), f"{key}: {problem}")

    async def _mark(self, sequence: int) -> None:
        self.check("mark_compression_read")
        await self._actor.raise_floor(sequence, self.view_reader)

    async def disclose(self, message_ids: Sequence[str], via: str, *, compiled: CompileRecord | None = None) -> None:
        """Record that ``message_ids`` were shown through ``via`` to the manager's reader
        (``Runtime.disclosures``), and ``compiled``, a compile's numbers, when given
        (``Runtime.compile_records``), in one commit, when the runtime records disclosures."""
        if self.core.records_disclosures:
            await self.store.record_disclosure(self.namespace, self.view_reader, self._branch, via, message_ids, compiled=compiled)

    def message_items(self, participant: str, blocks: tuple[ContentBlock, ...], metadata: Mapping[str, Any] | None) -> list[MessageItem]:
        """What one message becomes in the log: itself, or the shards of a strategy that shards
        long messages (a message with an audience block stays whole). The participant and the
        metadata are the store's to check and copy (``check_message_items``): a strategy is handed
        the metadata's read-only copy, and a participant that is no string is not handed to it;
        any other is refused by the store for every shard alike."""
        strategy = self._strategy
        if self._shards_messages and isinstance(strategy, ShardsMessages) and isinstance(participant, str) and not has_audience(blocks):
            shards = strategy.shard_message(participant, blocks, freeze_metadata(metadata))
            if shards:
                return list(shards)
        return [(participant, blocks, metadata)]

    # -- the strategy's progress (in the actor's turn) ----------------------------------------

    async def open(self, *, claim: str | None, action: str) -> None:
        """Claim the namespace for ``claim`` (when given), record the strategy and start it, in
        one command of the namespace actor (``Open``). Once the claim is written the open
        completes, even if cancelled meanwhile (the cancellation reaches the caller at its next
        checkpoint)."""
        await self._actor.send(Open(self, claim, action))

    async def start(self, action: str) -> None:
        """In the actor's turn: run the strategy's ``initialize``; a start that fails leaves
        every later call refused with ``StrategyNotStartedError``."""
        try:
            self.check(action, started=False)
            self._shards_messages = isinstance(self._strategy, ShardsMessages)  # checked once, not per write
            self._seen_length = self.store.length(self._branch)
            self._erasures_seen = self.store.model.erasure_count
            await self._strategy.initialize(self.context())
        except BaseException as exc:
            self._started = False
            self._start_error = exc
            raise
        self._started = True
        self._start_error = None

    def follow_elsewhere(self) -> None:
        """In the actor's turn: hand the strategy the state records other processes wrote since
        it last looked; nothing to do on a store only this process writes."""
        seen = self._actor.written_elsewhere
        if seen != self._followed_elsewhere:
            self._followed_elsewhere = seen
            if isinstance(self._strategy, FollowsStoredState):
                self._strategy.follow_stored_state(self.context())

    async def record_strategy(self) -> None:
        """Record the strategy and its options under the namespace, so that an operator (``asides
        inspect``, ``asides compile``) sees which strategy it runs, when
        ``strategies._recorded.record_to_write`` says so (one strategy note, which takes no
        sequence of the branch). An open and a move
        record it right after their claim, before the strategy starts: a start that fails keeps
        both, as it keeps the claim."""
        if self.store.read_only:
            return
        record = record_to_write(self.store.model, self._branch, self.namespace, self._strategy)
        if record is not None:
            await self.store.note_strategy(self._branch, self.namespace, record)

    async def catch_up(self) -> StrategyContext | None:
        """Hand the strategy the reader's view of the messages written since it last looked
        (in the actor's turn). A message the reader sees nothing of is not handed over. Returns
        the context the strategy was handed (a compile goes on with it), or ``None`` when there
        was nothing to hand.

        After an erasure (store/_erasure.py) the strategy starts again from the store instead: a
        new view, ``initialize`` again, so nothing it kept in memory of an erased message (or of
        a summary made from one) is compiled again; the summaries erased with it show as raw
        messages until a drain writes them again."""
        store = self.store
        if store.model.erasure_count != self._erasures_seen:
            self._erasures_seen = store.model.erasure_count
            self._view = self._make_view(self._branch)
            self._seen_length = store.length(self._branch)
            ctx = self.context()
            await self._strategy.initialize(ctx)
            return ctx
        length = store.length(self._branch)
        if length == self._seen_length:
            return None
        new = store.messages(self._branch, self._seen_length, length)
        self._seen_length = length
        ctx = self.context()
        for message in new:
            projected = self._view.get(message.id)
            if projected is None:
                continue
            try:
                await self._strategy.on_new_message(projected, ctx)
            except Exception:
                log.exception("strategy %r: on_new_message failed for message %s", self.strategy_name, message.id)
        return ctx

    # -- a move, and the end ------------------------------------------------------------------

    def rebind(self, branch: str, actor: NamespaceActor, strategy: ContextStrategy, owner: object) -> None:
        """Bind to ``branch`` (its namespace actor ``actor``) and ``strategy``, not started yet,
        the runtime recording that manager ``owner`` holds the strategy; an answer to a request
        made before is stale from now on (the epoch rose)."""
        self.core.hold_strategy(strategy, cast("ManagerHandle", owner))
        self._epoch += 1
        self._branch = branch
        self._actor = actor
        if not self._closed:  # closed meanwhile: it holds no actor any more
            self._hold(actor)
        self._view = self._make_view(branch)
        self._strategy = strategy
        self._started = False

    def close(self) -> None:
        """The manager closed: every later call is refused."""
        self._closed = True

    def let_go(self) -> None:
        """The manager closed and its drain ended: its actor may end once nothing else uses it."""
        held, self._held = self._held, None
        if held is not None:
            held.detach()

    def _hold(self, actor: NamespaceActor) -> None:
        """Keep ``actor`` alive while bound (see ``NamespaceActor.attach``); let the one held
        before go."""
        actor.attach()
        previous, self._held = self._held, actor
        if previous is not None:
            previous.detach()

    def _make_view(self, branch: str) -> MessageView:
        return MessageView(
            self.store.model,
            branch,
            reader=self.view_reader,
            view_filter=self.view_filter,
            check=self._check_read,
            shared=self.core.view_projections,
        )
