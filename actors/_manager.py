"""``ContextManager``: the handle through which a host reads, writes and compiles for one
namespace, on one branch, for at most one reader (SPEC 3.2).

Reads are synchronous and served from memory; writes are async and durable when they return.
Everything that touches the namespace (strategy starts, compiles, edits, units of compression)
runs in the namespace actor's turn, so it never overlaps with another manager's work there.

A manager's reader is fixed when it opens: the ``view_reader`` it was given, else the reader its
namespace records (SPEC A1, R3), else none. Every call but ``aclose`` checks the namespace's
record first (SPEC R5): a manager whose namespace was claimed by a reader it does not compile for
is stale and refused everything with ``ReaderClaimError``; reopen it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from ..store._blocks import ContentBlock, TextBlock, check_content, coerce_content, has_audience
from ..store._errors import ArgumentTypeError, BranchExistsError, InvalidArgumentError, MalformedContentError, UnknownMessageError
from ..store._messages import Message, freeze_metadata
from ..store._model import MISSING
from ..store._names import check_branch, check_participant
from ..store._narrowing import narrowing_of
from ..store._views import MessageView, ViewFilter
from ..strategies._base import (
    Injection,
    MessageInjection,
    SelectOptions,
    StrategyContext,
    StrategyState,
    check_budget,
    check_injections,
)
from ..strategies._errors import CompressionError, StrategyCapabilityError
from ..strategies._models import Model
from ..strategies._passthrough import NoBackgroundWork
from ..strategies._tokens import default_estimate
from ._compiled import CompiledContext, assemble, injection_cost
from ._drains import Drain
from ._errors import (
    ManagerClosedError,
    NarrowingRefusedError,
    ReaderClaimError,
    ReaderRecordError,
    StrategyNotStartedError,
)
from ._gate import AnswerStale, ModelGate
from ._namespace import NamespaceActor
from ._protocol import Claim, Compile, ContextEntryWrite, Edit, HeadReset, Move, Signal, StartStrategy, Unit

if TYPE_CHECKING:
    from ._runtime import Runtime

__all__ = ["ContextManager", "ContextEntry", "Derivation"]

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
    """An entry of a namespace's context log (SPEC P2)."""

    index: int
    content: tuple[ContentBlock, ...]
    source_message_id: str | None = None


class ContextManager:
    """A host's handle on one namespace (see the module docstring). Made by
    :meth:`Runtime.manager` / :meth:`Runtime.open_manager`, never directly."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        namespace: str,
        strategy: Any,
        reader: str | None,
        view_filter: ViewFilter | None,
        branch: str,
        model: Model | None,
        derivation: Derivation | None = None,
    ) -> None:
        self._runtime = runtime
        self._store = runtime.store
        self._namespace = namespace
        self._strategy = strategy
        self._reader = reader
        self._filter = view_filter
        self._branch = branch
        self._model = model
        self._derivation = derivation
        self._actor: NamespaceActor = runtime.actor(branch, namespace)
        self._view = self._make_view(branch)
        self._closed = False
        self._started = False
        self._start_error: BaseException | None = None
        self._epoch = 0
        self._seen_length = 0  # how many of the branch's messages the strategy has been handed
        self._drain: Drain | None = None
        self._answers = 0  # model answers received (drains reset their back-off on one)

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
        """The reader this manager compiles for, or ``None`` (SPEC A1.5)."""
        return self._reader

    @property
    def strategy(self) -> Any:
        return self._strategy

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def derivation(self) -> Derivation | None:
        """Where a derived manager came from, or ``None``."""
        return self._derivation

    @derivation.setter
    def derivation(self, value: Derivation | None) -> None:
        self._derivation = value

    @property
    def model(self) -> Model | None:
        """The model this manager compresses with: its own, else the runtime's, else none."""
        return self._model if self._model is not None else self._runtime.model

    def __repr__(self) -> str:
        return f"<ContextManager {self._namespace!r} on {self._branch!r} reader={self._reader!r}>"

    # -- what its drain and model gate ask of it ------------------------------------------------

    @property
    def epoch(self) -> int:
        """Raised by one on every move (fork, switch, strategy change)."""
        return self._epoch

    @property
    def branch_signal(self) -> Signal:
        """Raised by every write on this manager's branch."""
        return self._runtime.branch_signal(self._branch)

    @property
    def claim_generation(self) -> int:
        return self._actor.claim_generation

    async def wait_claim_change(self, generation: int) -> None:
        await self._actor.wait_claim_change(generation)

    @property
    def recorded_reader(self) -> object:
        """The reader the namespace records on this branch (``None`` when unclaimed)."""
        return self._actor.record

    def may_work(self) -> bool:
        """Whether the namespace's claim still lets this manager work here."""
        return not self._closed and self._actor.may_work(self._reader)

    @property
    def answers(self) -> int:
        return self._answers

    def _count_answer(self) -> None:
        self._answers += 1

    async def run_unit(self) -> bool:
        """Bring the strategy up to date and run one unit of its background work (when there
        is a model); whether there was one. Runs in the namespace actor's turn."""
        return await self._unit(needs_model=True)

    async def _unit(self, *, needs_model: bool) -> bool:
        async with self._actor.turn(Unit()):
            self._check("tick")
            await self._catch_up()
            if needs_model and (self.model is None or self._strategy.is_ready()):
                return False
            try:
                return bool(await self._strategy.tick(self._context()))
            except AnswerStale:
                return False

    # -- checks --------------------------------------------------------------------------------

    def _check(self, action: str, *, started: bool = True) -> None:
        if self._closed:
            raise ManagerClosedError(action, self._namespace)
        self._actor.check(self._reader, action)
        if started and self._start_error is not None:
            raise StrategyNotStartedError(action, self._namespace, self._branch, self._start_error)

    def _check_read(self) -> None:
        if self._closed:
            raise ManagerClosedError("a read through the view", self._namespace)
        self._actor.check(self._reader, "a read through the view")

    def _make_view(self, branch: str) -> MessageView:
        return MessageView(self._store.model, branch, reader=self._reader, view_filter=self._filter, check=self._check_read)

    def _estimator(self):
        return getattr(self._strategy, "estimator", None) or default_estimate

    def _context(self, *, preview: bool = False, strategy: Any = None, view: MessageView | None = None) -> StrategyContext:
        actor = self._actor
        model = self.model
        return StrategyContext(
            view=view or self._view,
            model=ModelGate(self, actor, model, self._runtime.model_policy, self._count_answer) if model is not None else None,
            namespace=self._namespace,
            branch=self._branch,
            state=StrategyState(
                self._store,
                self._branch,
                self._namespace,
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

    def require_capability(self, strategy: Any, action: str) -> None:
        if self._reader is not None and not getattr(strategy, "marks_compression_reads", False):
            raise StrategyCapabilityError(
                f"{action} was refused: strategy {getattr(strategy, 'name', type(strategy).__name__)!r} does not say it "
                f"marks its compression reads (marks_compression_reads), and this manager compiles for reader "
                f"{self._reader!r}; an edit could then hide a block compression already read"
            )

    async def open(self, *, claim: str | None, action: str) -> None:
        """Claim the namespace for ``claim`` (when given) and start the strategy, in one turn of
        the namespace actor. Once the claim is written the open completes, even if cancelled
        meanwhile (the cancellation reaches the caller at its next checkpoint)."""
        async with self._actor.turn(Claim()):
            with anyio.CancelScope(shield=True):
                if claim is not None:
                    await self._actor.claim(claim, action)
                await self._start(action)

    def abandon(self) -> None:
        """An open that failed: the manager is closed and runs nothing."""
        self._closed = True
        self._detach()

    async def _start(self, action: str) -> None:
        """Attach to the actor and run the strategy's ``initialize`` in the actor's turn."""
        actor = self._actor
        try:
            async with actor.turn(StartStrategy()):
                self._check(action, started=False)
                self._seen_length = self._store.length(self._branch)
                await self._strategy.initialize(self._context())
                if action == "set_strategy":
                    await self._record_strategy()
        except BaseException as exc:
            self._started = False
            self._start_error = exc
            raise
        self._started = True
        self._start_error = None
        self._start_drain()

    async def _record_strategy(self) -> None:
        """Record the strategy's name under the namespace, when it changed, so that an operator
        can see which strategy a namespace runs."""
        if self._store.read_only:
            return
        key = f"{self._namespace}/strategy"
        name = getattr(self._strategy, "name", type(self._strategy).__name__)
        if self._store.get_state(self._branch, key) != name:
            await self._store.set_state(self._branch, key, name)

    async def _catch_up(self) -> None:
        """Hand the strategy the reader's view of the messages written since it last looked
        (in the actor's turn). A message the reader sees nothing of is not handed over."""
        length = self._store.length(self._branch)
        if length == self._seen_length:
            return
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
        thinking and redacted-thinking blocks (SPEC W1), naming the path. Every strategy on the
        branch hears of the message, in its reader's view. With a strategy that shards long
        messages (SPEC C6) the first shard is returned.
        """
        self._check("add_message")
        check_participant(participant)
        blocks = coerce_content(content)
        check_content(blocks, path="content", allow_audience=True)
        if not blocks:
            raise MalformedContentError("content", "a message needs at least one block")
        frozen = freeze_metadata(metadata)
        items: list[tuple[str, tuple[ContentBlock, ...], Mapping[str, Any] | None]] = [(participant, blocks, frozen)]
        shard = getattr(self._strategy, "shard_message", None)
        if shard is not None and not has_audience(blocks):  # SPEC W3: an audience block keeps it whole
            shards = shard(participant, blocks, frozen)
            if shards:
                items = list(shards)
        messages = await self._store.append_messages(self._branch, items)
        return messages[0]

    async def edit_message(self, message_id: str, content: Sequence[ContentBlock | Mapping[str, Any]]) -> Message:
        """Replace a message's content on this branch, keeping its id and sequence.

        Refused, leaving the message unchanged, when it would narrow an audience where SPEC N3-N4
        say so (``NarrowingRefusedError``), or when the content is malformed (W1). Copies of the
        message in the context logs of namespaces on this branch are rewritten as each
        namespace's reader sees the new content, and dropped where it sees nothing (P2).
        """
        self._check("edit_message")
        blocks = coerce_content(content)
        check_content(blocks, path="content", allow_audience=True)
        if not blocks:
            raise MalformedContentError("content", "a message needs at least one block")
        async with self._actor.turn(Edit()):
            self._check("edit_message")
            stored = self._store.get_message(self._branch, message_id)
            if stored is None:
                raise UnknownMessageError(message_id, self._branch)
            self._check_narrowing(stored, blocks)
            copies = self._runtime.context_copies(self._branch, message_id, stored, blocks)

            def recheck() -> None:  # at commit: on a shared store another process may have raised the floor
                self._actor.adopt_stored_records()
                self._check_narrowing(self._store.get_message(self._branch, message_id) or stored, blocks)

            return await self._store.edit_message(self._branch, message_id, blocks, states=copies, guard=recheck)

    def _check_narrowing(self, stored: Message, blocks: tuple[ContentBlock, ...]) -> None:
        """SPEC N1-N5: refuse an edit that hides a block from a reader where compression may have
        read it, or from anyone but the manager's own reader."""
        narrowing = narrowing_of(stored.content, blocks)
        if not narrowing.hides_anything:
            return
        reader = self._reader

        def refuse(readers: tuple[str, ...], reason: str) -> None:
            raise NarrowingRefusedError(
                message_id=stored.id, namespace=self._namespace, branch=self._branch, readers=readers, reason=reason
            )

        others = tuple(sorted(narrowing.named - ({reader} if reader else set())))
        if reader is None:
            refuse(others, "a manager that compiles for no reader may not hide a block from anyone")
        if narrowing.hides_from_other_than(reader):
            refuse(others, f"only the manager's own reader ({reader!r}) may lose sight of a block through it")
        # Only the own reader loses sight of a block.
        floor = self._actor.floor
        if not isinstance(floor, int):
            refuse((reader,), "the record of what compression has read cannot be read")
        if stored.sequence <= floor:  # type: ignore[operator]
            refuse((reader,), f"compression may have read it (the narrowing floor is {floor}, the message's sequence {stored.sequence})")
        for key in self._store.model.state_keys_ending(self._branch, "/reader"):
            namespace = key[: -len("/reader")]
            if namespace == self._namespace:
                continue
            value = self._store.model.get_state(self._branch, key)
            if not isinstance(value, str) or not value:
                refuse((reader,), f"namespace {namespace!r} on this branch has a reader record that cannot be read")
            if value == reader:
                refuse((reader,), f"namespace {namespace!r} on this branch also compiles for {reader!r}, and its compression cannot be seen from here")

    # -- reads ---------------------------------------------------------------------------------

    def get_message(self, message_id: str) -> Message | None:
        """The message as stored (audience fields included), or ``None`` (SPEC A5)."""
        self._check("get_message", started=False)
        return self._store.get_message(self._branch, message_id)

    def get_all_messages(self) -> tuple[Message, ...]:
        """Every message on the branch, as stored (audience fields included; SPEC A5)."""
        self._check("get_all_messages", started=False)
        return tuple(self._store.messages(self._branch))

    # -- compile -------------------------------------------------------------------------------

    async def compile(
        self,
        *,
        max_tokens: int = 100_000,
        reserve_for_response: int = 4_000,
        injections: Sequence[Injection] = (),
        message_injections: Sequence[MessageInjection] = (),
    ) -> CompiledContext:
        """What this manager's reader is to be sent now (SPEC 3.2, A, P1).

        Refuses, before the strategy selects anything, an audience in any injection (W2) and a
        negative budget. Writes only the strategy state it must (the windowed anchor when it
        moves).
        """
        return await self._compile("compile", max_tokens, reserve_for_response, injections, message_injections, preview=False)

    async def preview_context(
        self,
        *,
        max_tokens: int = 100_000,
        reserve_for_response: int = 4_000,
        injections: Sequence[Injection] = (),
        message_injections: Sequence[MessageInjection] = (),
    ) -> CompiledContext:
        """The compile that :meth:`compile` would return now, without writing anything and
        without raising ``OverBudgetError``."""
        return await self._compile("preview_context", max_tokens, reserve_for_response, injections, message_injections, preview=True)

    async def _compile(
        self,
        action: str,
        max_tokens: int,
        reserve_for_response: int,
        injections: Sequence[Injection],
        message_injections: Sequence[MessageInjection],
        *,
        preview: bool,
    ) -> CompiledContext:
        self._check(action)
        check_budget(max_tokens, reserve_for_response)
        checked, checked_messages = check_injections(injections, message_injections)
        estimator = self._estimator()
        budget = max(0, max_tokens - reserve_for_response - injection_cost(checked, checked_messages, estimator))
        options = SelectOptions(
            preview=preview, max_tokens=max_tokens, reserve_for_response=reserve_for_response, message_injections=checked_messages
        )
        await self._store.sync()  # on a shared store: every message committed before this call
        async with self._actor.turn(Compile()):
            self._check(action)
            await self._catch_up()
            selection = await self._strategy.select(self._context(preview=preview), budget, options)
            return assemble(
                selection,
                injections=checked,
                message_injections=checked_messages,
                view=self._view,
                reader=self._reader,
                estimator=estimator,
            )

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
        """What background work is waiting, in words, or ``None`` when ready; says so when no
        model is configured, and when the model has been failing."""
        self._check("pending_work")
        if self._strategy.is_ready():
            return None
        describe = getattr(self._strategy, "pending_work", None)
        text = describe() if describe is not None else None
        text = text or "background work pending"
        if self.model is None:
            text += " (no compression model)"
        elif self._drain is not None and self._drain.failure is not None:
            text += "; " + self._drain.failure.describe()
        return text

    async def drain(self) -> None:
        """Wait until the strategy is ready; return at once when there is no model.

        Raises ``CompressionError``, naming the last error, once the model has failed the
        runtime's ``ModelPolicy.drain_failures`` times in a row during this call (the background
        drain goes on retrying). Raises what refuses the manager (for example
        ``ReaderClaimError`` when another reader claimed the namespace).
        """
        self._check("drain")
        start_failures: int | None = None
        while True:
            self._check("drain")
            if self.model is None:
                return
            drain = self._drain
            if drain is None or drain.stopped:
                # No drain runs (the strategy has none): work in this task.
                if not await self.run_unit():
                    return
                continue
            progress = drain.progress.version
            await self._catch_up_now()
            if self._strategy.is_ready() and self._actor.requests_out == 0:
                return
            failure = drain.failure
            if failure is not None:
                if start_failures is None:
                    start_failures = failure.count - 1
                if failure.count - start_failures >= self._runtime.model_policy.drain_failures:
                    raise CompressionError(
                        f"the compression model of namespace {self._namespace!r} on branch {self._branch!r} failed "
                        f"{failure.count - start_failures} times in a row (last: {failure.error}); the background drain "
                        "keeps retrying"
                    )
            elif start_failures is None:
                start_failures = 0
            drain.poke()
            await drain.progress.wait_beyond(progress)
            if drain.last_outcome == "idle" and self._actor.requests_out == 0:
                return  # the drain found nothing it can do now

    async def _catch_up_now(self) -> None:
        async with self._actor.turn(Unit()):
            self._check("drain")
            await self._catch_up()

    def _start_drain(self) -> None:
        """Start this manager's drain, if its strategy has background work and none runs."""
        if self._drain is not None and not self._drain.stopped:
            return
        if self._closed or not self._started or self._start_error is not None or self._runtime.closing:
            return
        if isinstance(self._strategy, NoBackgroundWork):
            return
        drain = Drain(self, self._runtime.model_policy)
        self._drain = drain
        self._runtime.spawn(drain.run)

    async def _stop_drain(self) -> None:
        drain, self._drain = self._drain, None
        if drain is not None:
            await drain.stop()

    # -- summaries -----------------------------------------------------------------------------

    def search_summaries(self, pattern: str | re.Pattern[str], *, limit: int = 50) -> tuple[Any, ...]:
        """Summaries matching ``pattern`` (checked like a view read, SPEC R8.2)."""
        self._check("search_summaries", started=False)
        if not isinstance(limit, int) or limit < 0:
            raise InvalidArgumentError("limit", f"must be a non-negative int, got {limit!r}")
        method = getattr(self._strategy, "search_summaries", None)
        return tuple(method(pattern, limit=limit)) if method is not None else ()

    def get_summaries_in_range(self, start: int | None = None, end: int | None = None) -> tuple[Any, ...]:
        """Summaries overlapping the sequence range [start, end] (checked, SPEC R8.2)."""
        self._check("get_summaries_in_range", started=False)
        method = getattr(self._strategy, "get_summaries_in_range", None)
        return tuple(method(start, end)) if method is not None else ()

    def get_summary(self, summary_id: str) -> Any:
        """The summary with that id, or ``None`` (checked, SPEC R8.2)."""
        self._check("get_summary", started=False)
        method = getattr(self._strategy, "get_summary", None)
        return method(summary_id) if method is not None else None

    async def reset_head_window(self, text: str | None = None) -> str:
        """Append a ``[Topic Transition]`` message holding ``text`` (or a transition summary the
        model writes from this reader's view) and start the head window there (SPEC C3)."""
        self._check("reset_head_window")
        transition = getattr(self._strategy, "transition_text", None)
        start_head = getattr(self._strategy, "start_head_at", None)
        if transition is None or start_head is None:
            raise StrategyCapabilityError(
                f"reset_head_window was refused: strategy {getattr(self._strategy, 'name', '?')!r} has no head window"
            )
        if text is not None and not isinstance(text, str):
            raise ArgumentTypeError("text", f"reset_head_window takes a string or None, not {type(text).__name__}")
        async with self._actor.turn(HeadReset()):
            self._check("reset_head_window")
            generated = text is None
            body = text if text is not None else await transition(self._context())
            block = TextBlock(f"[Topic Transition]\n\n{body}", (self._reader,) if generated and self._reader else None)
            message = await self._store.append_message(self._branch, "Context Manager", (block,))
            await start_head(self._context(), message.sequence)
        return body

    # -- the context log (SPEC P2) -------------------------------------------------------------

    async def append_context_entry(
        self, content: Sequence[ContentBlock | Mapping[str, Any]], *, source_message_id: str | None = None
    ) -> ContextEntry:
        """Append an entry to this namespace's context log on this branch. An audience anywhere
        in it is refused (SPEC P2, W1): no view reads one there."""
        self._check("append_context_entry", started=False)
        blocks = coerce_content(content)
        check_content(blocks, path="content", allow_audience=False)
        if source_message_id is not None and self._store.get_message(self._branch, source_message_id) is None:
            raise UnknownMessageError(source_message_id, self._branch)
        async with self._actor.turn(ContextEntryWrite()):
            self._check("append_context_entry", started=False)
            index = self._actor.context_next()
            entry = ContextEntry(index, blocks, source_message_id)
            await self._runtime.write_context_entry(self._branch, self._namespace, entry)
        return entry

    def get_context_entries(self) -> tuple[ContextEntry, ...]:
        """This namespace's context log on this branch, oldest first (dropped entries left out)."""
        self._check("get_context_entries", started=False)
        return self._runtime.context_entries(self._branch, self._namespace)

    # -- branches ------------------------------------------------------------------------------

    async def fork(self, name: str) -> None:
        """Make branch ``name`` at this manager's head and move this manager onto it (only this
        one, SPEC D1). Refused before the branch is made when the namespace's record names
        another reader, or any reader for a manager with no reader (R1, R2, R4, R7)."""
        self._check("fork")  # the record check here is the one the child inherits (R4, R7)
        if self._store.has_branch(check_branch(name)):
            raise BranchExistsError(name)
        await anyio.lowlevel.checkpoint_if_cancelled()
        with anyio.CancelScope(shield=True):  # once the branch is written, the fork completes
            await self._store.create_branch(name, self._branch)
            await self._move(name, self._strategy, "fork")

    async def switch_branch(self, name: str) -> None:
        """Move this manager (only this one, SPEC D1) to branch ``name`` and restart its strategy
        there. Refused, leaving the manager where it was, when the namespace records another
        reader there, or any reader for a manager with no reader (R1, R2, R4, R7)."""
        self._check("switch_branch", started=False)
        self._store.branch_info(check_branch(name))
        self._runtime.actor(name, self._namespace).check(self._reader, "switch_branch")
        await self._move(name, self._strategy, "switch_branch")

    async def set_strategy(self, strategy: Any) -> None:
        """Replace the strategy and start it here. Refused, keeping the old strategy running, when
        this manager may not work here or the new strategy does not mark its compression reads
        under a reader (R1, R2, R4, R7, N7)."""
        self._check("set_strategy", started=False)
        self.require_capability(strategy, "set_strategy")
        await self._move(self._branch, strategy, "set_strategy")

    async def _move(self, branch: str, strategy: Any, action: str) -> None:
        """Leave the current branch (cancelling drains; an in-flight answer is discarded), bind to
        ``branch``, claim it if this manager has a reader and it is unclaimed, start ``strategy``.

        The record is checked again, and the claim made, in the target actor's turn and before
        anything is rebound, so a claim that lands while the drain stops still leaves a refused
        call with the manager where it was and its old strategy (SPEC R2). Once anything is
        written the move completes, even if cancelled meanwhile."""
        self._runtime.check_strategy_free(strategy, self)
        await self._stop_drain()
        target = self._runtime.actor(branch, self._namespace)
        moved = False
        try:
            async with target.turn(Move()):
                target.check(self._reader, action)  # no await before the claim below: it cannot fail
                with anyio.CancelScope(shield=True):
                    moved = True
                    self._epoch += 1
                    self._detach()
                    self._branch = branch
                    self._actor = target
                    self._view = self._make_view(branch)
                    self._strategy = strategy
                    self._started = False
                    self._runtime.hold_strategy(strategy, self)
                    if self._reader is not None:
                        await target.claim(self._reader, action)
                    await self._start(action)
        finally:
            if not moved:
                self._start_drain()  # refused or cancelled before anything moved: the old drain resumes

    async def derive(self, *, branch: str, strategy: Any, at_sequence: int | None = None) -> ContextManager:
        """A new manager of this namespace on a new child branch made from this manager's head (or
        from ``at_sequence``). The child records and compiles for the reader this manager compiles
        for (SPEC R9). Refused before the child's branch is written when this manager is closed or
        its strategy failed to start (D4), when the record is not a reader's name (R7), or when
        the strategy does not mark its compression reads under a reader (N7)."""
        self._check("derive")
        self.require_capability(strategy, "derive")
        self._runtime.check_strategy_free(strategy)
        if self._store.has_branch(check_branch(branch)):
            raise BranchExistsError(branch)
        head = self._store.head(self._branch)
        at = head if at_sequence is None else at_sequence
        if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at <= head:
            raise InvalidArgumentError(
                "at_sequence", f"must be between 0 and {head} (the head of {self._branch!r}), got {at_sequence!r}"
            )
        inherited = self._store.model.get_state_at(self._branch, self._actor.reader_key, at)
        if inherited is not MISSING and inherited != self._reader:
            # an earlier record that is not this manager's reader (only foreign data can do this)
            if not isinstance(inherited, str) or not inherited:
                raise ReaderRecordError(namespace=self._namespace, branch=self._branch, record=inherited, action="derive")
            raise ReaderClaimError(
                namespace=self._namespace, branch=self._branch, recorded=inherited, requested=self._reader, action="derive"
            )
        derivation = Derivation(self._branch, branch, at, self._namespace)
        await anyio.lowlevel.checkpoint_if_cancelled()
        with anyio.CancelScope(shield=True):  # once the branch is written, the derive completes
            await self._store.create_branch(branch, self._branch, at, meta={"derivation": derivation.to_json()})
            return await self._start_child(strategy, branch, derivation)

    async def _start_child(self, strategy: Any, branch: str, derivation: Derivation) -> ContextManager:
        child = ContextManager(
            self._runtime,
            namespace=self._namespace,
            strategy=strategy,
            reader=self._reader,
            view_filter=self._filter,
            branch=branch,
            model=self._model,
            derivation=derivation,
        )
        await self._runtime.start_manager(child, claim=self._reader, action="derive")
        return child

    # -- closing -------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the manager: cancel its drain and wait for it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._stop_drain()
        self._runtime.forget(self)
