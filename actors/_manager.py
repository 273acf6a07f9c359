"""``ContextManager``: the handle through which a host reads, writes and compiles for one
namespace, on one branch, for at most one reader.

Reads are synchronous and served from memory; writes are async and durable when they return.
Everything that touches the namespace (strategy starts, compiles, edits, units of compression)
runs in the namespace actor's turn, so it never overlaps with another manager's work there.

A manager's reader is fixed when it opens: the ``view_reader`` it was given, else the reader its
namespace records, else none. Every call but ``aclose`` checks the namespace's
record first: a manager whose namespace was claimed by a reader it does not compile for
is stale and refused everything with ``ReaderClaimError``; reopen it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from ..store._blocks import ContentBlock, check_content, coerce_content, has_audience
from ..store._errors import MalformedContentError
from ..store._messages import Message, freeze_metadata
from ..store._names import check_participant
from ..store._views import MessageView, ViewFilter
from ..strategies._base import (
    STRATEGY_KEY,
    ContextStrategy,
    StrategyContext,
    StrategyState,
    check_marks_reads,
)
from ..strategies._capabilities import HasEstimator, ShardsMessages
from ..strategies._models import Model
from ..strategies._recorded import record_to_write
from ..strategies._tokens import default_estimate
from ._background import BackgroundWork
from ._branches import BranchMoves
from ._compiled import AssemblyCache
from ._drains import Drain
from ._editing import Editing
from ._errors import (
    ManagerClosedError,
    StrategyNotStartedError,
)
from ._gate import ModelGate
from ._namespace import NamespaceActor
from ._protocol import Claim, StartStrategy
from ._reading import Reading
from ._records import NAMESPACE_RECORDS

if TYPE_CHECKING:
    from ._core import RuntimeCore

__all__ = ["ContextManager", "ContextEntry", "Derivation", "open_context_manager"]

log = logging.getLogger("asides.actors")


@attrs.frozen(slots=True)
class Derivation:
    """Where a derived manager came from: the parent's branch, the child's branch, the sequence
    it was derived at, and the namespace."""

    parent_branch: str
    branch: str
    at_sequence: int
    namespace: str

    def to_json(self) -> dict[str, Any]:
        return {"parent_branch": self.parent_branch, "branch": self.branch, "at_sequence": self.at_sequence, "namespace": self.namespace}

    @classmethod
    def from_json(cls, value: object) -> Derivation | None:
        if not isinstance(value, dict):
            return None
        try:
            return cls(str(value["parent_branch"]), str(value["branch"]), int(value["at_sequence"]), str(value["namespace"]))
        except (KeyError, TypeError, ValueError):
            return None


@attrs.frozen(slots=True)
class ContextEntry:
    """An entry of a namespace's context log."""

    index: int
    content: tuple[ContentBlock, ...]
    source_message_id: str | None = None


class ContextManager(Editing, Reading, BackgroundWork, BranchMoves):
    """A host's handle on one namespace (see the module docstring). Made by
    :meth:`Runtime.manager` / :meth:`Runtime.open_manager`, never directly."""

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
        derivation: Derivation | None = None,
    ) -> None:
        self._core = core
        self._store = core.store
        self._namespace = namespace
        self._strategy = strategy
        self._reader = reader
        self._filter = view_filter
        self._branch = branch
        self._model = model
        self._derivation = derivation
        self._actor: NamespaceActor = core.actor(branch, namespace)
        self._attached: NamespaceActor | None = None  # the actor this manager keeps alive
        self._hold(self._actor)
        self._view = self._make_view(branch)
        self._closed = False
        self._started = False
        self._start_error: BaseException | None = None
        self._epoch = 0
        self._seen_length = 0  # how many of the branch's messages the strategy has been handed
        self._drain: Drain | None = None
        self._shards_messages = False
        self._assembly = AssemblyCache()  # the previous compile's raw part, reused when it can be
        self._answers = 0  # model answers received (drains reset their back-off on one)
        self._erasures_seen = core.store.model.erasure_count  # see _catch_up
        self._last_disclosed: str | None = None  # the way of the last compile recorded (Reading._disclose)

    # -- properties ----------------------------------------------------------------------------

    @property
    def namespace(self) -> str:
        """The namespace (``None``, ``""`` and ``"default"`` are all ``"default"``)."""
        return self._namespace

    @property
    def branch(self) -> str:
        """The branch this manager is bound to."""
        return self._branch

    @property
    def view_reader(self) -> str | None:
        """The reader this manager compiles for, or ``None``."""
        return self._reader

    @property
    def strategy_name(self) -> str:
        """The strategy's name (its ``name``, else its class name), as traces and records say it."""
        return str(getattr(self._strategy, "name", type(self._strategy).__name__))

    @property
    def strategy(self) -> ContextStrategy:
        """The strategy this manager runs (``set_strategy`` replaces it)."""
        return self._strategy

    @property
    def closed(self) -> bool:
        """Whether the manager is closed (every call but ``aclose`` then raises
        ``ManagerClosedError``)."""
        return self._closed

    @property
    def derivation(self) -> Derivation | None:
        """Where a derived manager came from (``derive``, ``Runtime.reopen_derived``), or
        ``None``."""
        return self._derivation

    @property
    def model(self) -> Model | None:
        """The model this manager compresses with: its own, else the runtime's, else none."""
        return self._model if self._model is not None else self._core.model

    def __repr__(self) -> str:
        return f"<ContextManager {self._namespace!r} on {self._branch!r} reader={self._reader!r}>"

    # -- what its drain and model gate ask of it (handed to them as callables) -----------------

    def _count_answer(self) -> None:
        self._answers += 1

    # -- checks --------------------------------------------------------------------------------

    def _check(self, action: str, *, started: bool = True) -> None:
        self._store.raise_if_failed()  # first: after a failed commit every call says so
        if self._closed:
            raise ManagerClosedError(action, self._namespace)
        self._actor.check(self._reader, action)
        if started and self._start_error is not None:
            raise StrategyNotStartedError(action, self._namespace, self._branch, self._start_error)

    def _check_read(self) -> None:
        self._store.raise_if_failed()
        if self._closed:
            raise ManagerClosedError("a read through the view", self._namespace)
        self._actor.check(self._reader, "a read through the view")

    def _make_view(self, branch: str) -> MessageView:
        return MessageView(
            self._store.model,
            branch,
            reader=self._reader,
            view_filter=self._filter,
            check=self._check_read,
            shared=self._core.view_projections,
        )

    def _estimator(self) -> Callable[[Sequence[ContentBlock]], int]:
        return (self._strategy.estimator if isinstance(self._strategy, HasEstimator) else None) or default_estimate

    def _context(
        self, *, preview: bool = False, strategy: ContextStrategy | None = None, view: MessageView | None = None
    ) -> StrategyContext:
        actor = self._actor
        model = self.model
        return StrategyContext(
            view=view or self._view,
            model=ModelGate(
                self,
                actor,
                model,
                self._core.model_policy,
                on_answer=self._count_answer,
                epoch=lambda: self._epoch,
                disclose=self._disclose_request,
            )
            if model is not None
            else None,
            namespace=self._namespace,
            branch=self._branch,
            state=StrategyState(
                self._store,
                self._branch,
                self._namespace,
                keys=NAMESPACE_RECORDS,
                written=lambda: actor.written,
                read_only=preview,
                writer=actor.write_states,
            ),
            reader=self._reader,
            preview=preview,
            mark=self._mark,
            in_flight=lambda: actor.requests_out > 0,
        )

    async def _mark(self, sequence: int) -> None:
        self._check("mark_compression_read")
        await self._actor.raise_floor(sequence, self._reader)

    # -- starting a strategy -------------------------------------------------------------------

    async def _open(self, *, claim: str | None, action: str) -> None:
        """Claim the namespace for ``claim`` (when given), record the strategy (see
        :meth:`_record_strategy`) and start it, in one turn of the namespace actor. Once the
        claim is written the open completes, even if cancelled meanwhile (the cancellation
        reaches the caller at its next checkpoint)."""

        async def in_the_actor() -> None:
            with anyio.CancelScope(shield=True):
                if claim is not None:
                    await self._actor.claim(claim, action)
                await self._record_strategy()
                await self._start(action)

        await self._actor.execute(Claim(), in_the_actor)

    def _abandon(self) -> None:
        """An open that failed: the manager is closed and runs nothing."""
        self._closed = True
        self._detach()
        self._let_go()

    def _hold(self, actor: NamespaceActor) -> None:
        """Bind to ``actor``: it stays while this manager is open (see ``NamespaceActor.attach``);
        the actor held before is let go."""
        actor.attach()
        previous, self._attached = self._attached, actor
        if previous is not None:
            previous.detach()

    def _let_go(self) -> None:
        """The manager closed: its actor may end once nothing else uses it."""
        previous, self._attached = self._attached, None
        if previous is not None:
            previous.detach()

    async def _start(self, action: str) -> None:
        """Attach to the actor and run the strategy's ``initialize`` in the actor's turn."""
        actor = self._actor

        async def in_the_actor() -> None:
            self._check(action, started=False)
            self._shards_messages = isinstance(self._strategy, ShardsMessages)  # checked once, not per write
            self._seen_length = self._store.length(self._branch)
            self._erasures_seen = self._store.model.erasure_count
            await self._strategy.initialize(self._context())

        try:
            await actor.execute(StartStrategy(), in_the_actor)
        except BaseException as exc:
            self._started = False
            self._start_error = exc
            raise
        self._started = True
        self._start_error = None
        self._start_drain()

    async def _record_strategy(self) -> None:
        """Record the strategy and its options under the namespace, so that an operator (``asides
        inspect``, ``asides compile``) sees which strategy it runs, when
        ``strategies._recorded.record_to_write`` says so (one state write). An open and a move
        (``set_strategy`` is one) record it right after their claim, before the strategy starts:
        a start that fails keeps both, as it keeps the claim."""
        if self._store.read_only:
            return
        record = record_to_write(self._store.model, self._branch, self._namespace, self._strategy)
        if record is not None:
            await self._store.set_state(self._branch, f"{self._namespace}/{STRATEGY_KEY}", record)

    async def _catch_up(self) -> StrategyContext | None:
        """Hand the strategy the reader's view of the messages written since it last looked
        (in the actor's turn). A message the reader sees nothing of is not handed over. Returns
        the context the strategy was handed (a compile goes on with it), or ``None`` when there
        was nothing to hand.

        After an erasure (store/_erasure.py) the strategy starts again from the store instead: a
        new view, a new assembly cache, ``initialize`` again, so nothing it kept in memory of an
        erased message (or of a summary made from one) is compiled again; the summaries erased
        with it show as raw messages until a drain writes them again."""
        if self._store.model.erasure_count != self._erasures_seen:
            self._erasures_seen = self._store.model.erasure_count
            self._view = self._make_view(self._branch)
            self._assembly = AssemblyCache()
            self._seen_length = self._store.length(self._branch)
            ctx = self._context()
            await self._strategy.initialize(ctx)
            return ctx
        length = self._store.length(self._branch)
        if length == self._seen_length:
            return None
        new = self._store.messages(self._branch, self._seen_length, length)
        self._seen_length = length
        ctx = self._context()
        for message in new:
            projected = self._view.get(message.id)
            if projected is None:
                continue
            try:
                await self._strategy.on_new_message(projected, ctx)
            except Exception:
                log.exception("strategy %r: on_new_message failed for message %s", getattr(self._strategy, "name", "?"), message.id)
        return ctx

    def _detach(self) -> None:
        """Stop this manager's drain (it ends before the manager moves or closes)."""
        drain, self._drain = self._drain, None
        if drain is not None:
            drain.cancel()

    # -- writes --------------------------------------------------------------------------------

    async def add_message(
        self, participant: str, content: Sequence[ContentBlock | Mapping[str, Any]], *, metadata: Mapping[str, Any] | None = None
    ) -> Message:
        """Append a message to the branch; returns it once durable.

        Refuses (writing nothing) an audience anywhere but on the message's own top-level text,
        thinking and redacted-thinking blocks, naming the path. Every strategy on the
        branch hears of the message, in its reader's view. With a strategy that shards long
        messages the first shard is returned.
        """
        self._check("add_message")
        check_participant(participant)
        blocks = coerce_content(content)
        check_content(blocks, path="content", allow_audience=True)
        if not blocks:
            raise MalformedContentError("content", "a message needs at least one block")
        frozen = freeze_metadata(metadata)
        items: list[tuple[str, tuple[ContentBlock, ...], Mapping[str, Any] | None]] = [(participant, blocks, frozen)]
        strategy = self._strategy
        if self._shards_messages and isinstance(strategy, ShardsMessages) and not has_audience(blocks):
            shards = strategy.shard_message(participant, blocks, frozen)  # an audience block keeps it whole
            if shards:
                items = list(shards)
        await anyio.lowlevel.checkpoint_if_cancelled()  # cancelled before the write: nothing written
        messages = await self._store.append_messages(self._branch, items)
        return messages[0]

    # -- closing -------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the manager: cancel its drain and wait for it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._stop_drain()
            self._core.forget(self)
        finally:
            self._let_go()


async def open_context_manager(
    core: RuntimeCore,
    *,
    namespace: str,
    strategy: ContextStrategy,
    reader: str | None,
    view_filter: ViewFilter | None,
    branch: str,
    model: Model | None,
    claim: str | None,
    action: str,
    derivation: Derivation | None = None,
) -> ContextManager:
    """Make a manager, register it with ``core``, claim its namespace (when ``claim`` names a
    reader) and start its strategy, in one turn of the namespace actor. Refused or failed:
    nothing registered, and the manager holds no actor."""
    check_marks_reads(reader, strategy, action)
    manager = ContextManager(
        core,
        namespace=namespace,
        strategy=strategy,
        reader=reader,
        view_filter=view_filter,
        branch=branch,
        model=model,
        derivation=derivation,
    )
    try:
        core.register(manager)
        await manager._open(claim=claim, action=action)
    except BaseException:
        core.forget(manager)
        manager._abandon()
        raise
    return manager
