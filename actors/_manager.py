"""``ContextManager``: the handle through which a host reads, writes and compiles for one
namespace, on one branch, for at most one reader.

Reads are synchronous and served from memory; writes are async and durable when they return.
Everything that touches the namespace (strategy starts, compiles, edits, units of compression)
runs as a command of the namespace actor, so it never overlaps with another manager's work there.

A manager's reader is fixed when it opens: the ``view_reader`` it was given, else the reader its
namespace records, else none. Every call but ``aclose`` checks the namespace's
record first: a manager whose namespace was claimed by a reader it does not compile for
is stale and refused everything with ``ReaderClaimError``; reopen it.

The handle checks a call's arguments and hands it to the part whose job it is: its binding
(``actors._binding``: what it is bound to, and its strategy's progress), its compiles
(``actors._reading``), its edits and context log (``actors._editing``), its background work
(``actors._background``) and its moves (``actors._branches``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from ..store._arguments import check_int, check_message_id, check_str
from ..store._blocks import ContentBlock, check_content, coerce_content
from ..store._errors import ArgumentTypeError, InvalidArgumentError, MalformedContentError, UnknownMessageError
from ..store._messages import Message
from ..store._names import check_branch
from ..store._pages import MessagePages, stored_pages
from ..store._search import SearchHit
from ..store._views import ViewFilter
from ..strategies._base import ContextStrategy, Injection, MessageInjection, check_marks_reads
from ..strategies._capabilities import FindsSummaries, ReadsSummaries, Summary
from ..strategies._models import Model
from ._background import BackgroundWork
from ._binding import Binding
from ._branches import Moves
from ._compiled import CompiledContext
from ._editing import Edits
from ._reading import Compiles
from ._searching import search
from ._values import ContextEntry, Derivation

if TYPE_CHECKING:
    from ..store._model import LogModel
    from ._core import RuntimeCore

__all__ = ["ContextManager", "ContextEntry", "Derivation", "open_context_manager"]


class ContextManager:
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
        self._derivation = derivation
        self._binding = binding = Binding(
            core, namespace=namespace, strategy=strategy, reader=reader, view_filter=view_filter, branch=branch, model=model
        )
        self._compiles = Compiles(binding)
        self._edits = Edits(binding)
        self._background = BackgroundWork(binding)
        self._moves = Moves(binding, self._background, self)

    # -- properties ----------------------------------------------------------------------------

    @property
    def namespace(self) -> str:
        """The namespace (``None``, ``""`` and ``"default"`` are all ``"default"``)."""
        return self._binding.namespace

    @property
    def branch(self) -> str:
        """The branch this manager is bound to."""
        return self._binding.branch

    @property
    def view_reader(self) -> str | None:
        """The reader this manager compiles for, or ``None``."""
        return self._binding.view_reader

    @property
    def strategy_name(self) -> str:
        """The strategy's name (its ``name``, else its class name), as traces and records say it."""
        return self._binding.strategy_name

    @property
    def strategy(self) -> ContextStrategy:
        """The strategy this manager runs (``set_strategy`` replaces it)."""
        return self._binding.strategy

    @property
    def closed(self) -> bool:
        """Whether the manager is closed (every call but ``aclose`` then raises
        ``ManagerClosedError``)."""
        return self._binding.closed

    @property
    def derivation(self) -> Derivation | None:
        """Where a derived manager came from (``derive``, ``Runtime.reopen_derived``), or
        ``None``."""
        return self._derivation

    @property
    def model(self) -> Model | None:
        """The model this manager compresses with: its own, else the runtime's, else none."""
        return self._binding.model

    def __repr__(self) -> str:
        binding = self._binding
        return f"<ContextManager {binding.namespace!r} on {binding.branch!r} reader={binding.view_reader!r}>"

    # -- reads ---------------------------------------------------------------------------------

    def get_message(self, message_id: str) -> Message | None:
        """The message as stored, or ``None``. An erased message comes back as its tombstone: no
        content, participant ``""``, ``metadata["asides_erased"] = {"at", "reason", "erasure"}``.

        Warning: as stored means with every block, including blocks whose audience leaves out
        this manager's reader. Never pass it to that reader; use :meth:`view_message`.
        """
        binding = self._binding
        binding.check("get_message", started=False)
        return binding.store.get_message(binding.branch, message_id)

    def get_all_messages(self) -> MessagePages:
        """Every message on the branch, as stored, oldest first: a :class:`MessagePages` that
        reads them a page at a time (``len()`` is free; nothing reads the whole history unless
        the caller iterates it). Erased messages are left out (their tombstones:
        ``Runtime.tombstone``). A read after an erasure raises ``ViewChangedError``: ask again.

        Warning: this is the whole log, other readers' private blocks included, even on a manager
        bound to a reader. It is for hosts and operators that need the log itself. To show a
        reader its own view, use :meth:`view_messages` (or :meth:`compile`).
        """
        binding = self._binding
        binding.check("get_all_messages", started=False)
        def check() -> None:
            binding.check("get_all_messages", started=False)

        return stored_pages(binding.store.model, binding.branch, "get_all_messages", check)

    def view_message(self, message_id: str) -> Message | None:
        """The message as this manager's reader sees it (blocks meant for other readers left
        out), or ``None`` when the reader sees nothing of it or there is no such message."""
        self._binding.check("view_message", started=False)
        return self._binding.view.get(message_id)

    def view_messages(self) -> MessagePages:
        """Every message of the branch as this manager's reader sees it, oldest first: a
        :class:`MessagePages` that reads them a page at a time, each read checked as
        :meth:`view_message` is. A read after the reader's positions moved (an erasure, or an
        edit that changed what the reader sees) raises ``ViewChangedError``: ask again."""
        self._binding.check("view_messages", started=False)
        return self._binding.view.pages("view_messages")

    # -- compile -------------------------------------------------------------------------------

    async def compile(
        self,
        *,
        max_tokens: int = 100_000,
        reserve_for_response: int = 4_000,
        injections: Sequence[Injection] = (),
        message_injections: Sequence[MessageInjection] = (),
    ) -> CompiledContext:
        """What this manager's reader is to be sent now.

        Refuses, before the strategy selects anything, an audience in any injection (W2) and a
        negative budget. Writes only the strategy state it must (the windowed anchor when it
        moves) and, when the runtime records disclosures, what it showed and its numbers
        (``Runtime.disclosures``, ``Runtime.compile_records``: no text).
        """
        return await self._compiles.compile("compile", max_tokens, reserve_for_response, injections, message_injections, preview=False)

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
        return await self._compiles.compile(
            "preview_context", max_tokens, reserve_for_response, injections, message_injections, preview=True
        )

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
        binding = self._binding
        binding.check("add_message")
        blocks = _message_content(content)
        items = binding.message_items(participant, blocks, metadata)
        await binding.cancel_point()  # cancelled before the write: nothing written
        if len(items) == 1 and len(items[0]) == 3:  # the message whole, as most are
            return await binding.store.append_message(binding.branch, *items[0])
        messages = await binding.store.append_messages(binding.branch, items)
        return messages[0]

    async def edit_message(self, message_id: str, content: Sequence[ContentBlock | Mapping[str, Any]]) -> Message:
        """Replace a message's content on this branch, keeping its id and sequence.

        Refused, leaving the message unchanged, when it would narrow an audience where the narrowing rules
        say so (``NarrowingRefusedError``), or when the content is malformed (W1). Copies of the
        message in the context logs of namespaces on this branch are rewritten as each
        namespace's reader sees the new content, and dropped where it sees nothing (P2).
        """
        self._binding.check("edit_message")
        return await self._edits.edit_message(message_id, _message_content(content))

    async def append_context_entry(
        self, content: Sequence[ContentBlock | Mapping[str, Any]], *, source_message_id: str | None = None
    ) -> ContextEntry:
        """Append an entry to this namespace's context log on this branch. An audience anywhere
        in it is refused: no view reads one there."""
        binding = self._binding
        binding.check("append_context_entry", started=False)
        blocks = coerce_content(content)
        check_content(blocks, path="content", allow_audience=False)
        if source_message_id is not None:
            check_message_id(source_message_id, "source_message_id")
            if binding.store.get_message(binding.branch, source_message_id) is None:
                raise UnknownMessageError(source_message_id, binding.branch)
        return await self._edits.append_context_entry(blocks, source_message_id)

    def get_context_entries(self) -> tuple[ContextEntry, ...]:
        """This namespace's context log on this branch, oldest first (dropped entries left out)."""
        return self._edits.context_entries()

    # -- background work -----------------------------------------------------------------------

    async def tick(self) -> bool:
        """Run one unit of the strategy's background work; whether it did any."""
        return await self._background.tick()

    def is_ready(self) -> bool:
        """Whether the strategy has no background work left."""
        return self._background.is_ready()

    def pending_work(self) -> str | None:
        """What background work is waiting, in words, and which units failed for good and why
        (``3 stretches could not be compressed: the model's answers were rejected (stop_reason
        'stop' is not 'end_turn')``); ``None`` when ready with nothing failed. Says so when no
        model is configured, and when the model has been failing."""
        return self._background.pending_work()

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
        await self._background.drain()

    async def reset_head_window(self, text: str | None = None) -> str:
        """Append a ``[Topic Transition]`` message holding ``text`` (or a transition summary the
        model writes from this reader's view) and start the head window there."""
        self._binding.check("reset_head_window")
        if text is not None and not isinstance(text, str):
            raise ArgumentTypeError("text", f"reset_head_window takes a string or None, not {type(text).__name__}")
        return await self._background.reset_head_window(text)

    # -- summaries -----------------------------------------------------------------------------

    def search_summaries(self, pattern: str | re.Pattern[str], *, limit: int = 50) -> tuple[Summary, ...]:
        """Summaries matching ``pattern`` (checked like a view read)."""
        self._binding.check("search_summaries", started=False)
        if not isinstance(pattern, (str, re.Pattern)):
            raise ArgumentTypeError("pattern", f"must be a string or a compiled pattern, not {type(pattern).__name__}")
        if check_int(limit, "limit") < 0:  # type: ignore[operator]
            raise InvalidArgumentError("limit", f"must be a non-negative int, got {limit!r}")
        strategy = self._binding.strategy
        found = strategy.search_summaries(pattern, limit=limit) if isinstance(strategy, ReadsSummaries) else ()
        return _not_erased(self._binding.store.model, found)

    async def search(
        self,
        query: str,
        *,
        limit: int = 10,
        kind: str | None = None,
        participant: str | None = None,
        after: float | None = None,
        before: float | None = None,
    ) -> tuple[SearchHit, ...]:
        """What this manager's reader may see that holds every word of ``query``, best first:
        messages as the reader sees them on this branch (a block meant for someone else is never
        matched, counted or shown) and the namespace's memories. A query is words (letters and
        digits; case and punctuation do not count); a hit holds every one. ``score`` is BM25's
        term-frequency and length parts over the reader's own hits (no weight from lines the
        reader cannot see), ties newest first.

        ``kind`` narrows to ``"message"`` or ``"memory"``; ``participant`` (who wrote it) and the
        time range ``after`` <= timestamp < ``before`` (seconds since the epoch) narrow messages
        and leave memories out. A manager with no reader finds no block that has an audience.
        Every message hit returned is recorded as shown to the reader (``disclosures()``,
        ``via="search"``). Refuses a query with no word, ``limit`` outside 1..1000, an unknown
        ``kind`` and ill-typed filters (``InvalidArgumentError`` naming the argument), reading
        and writing nothing.
        """
        return await search(
            self._binding,
            self._memories_holding,
            query,
            limit=limit,
            kind=kind,
            participant=participant,
            after=after,
            before=before,
        )

    def _memories_holding(self, words: Sequence[str]) -> tuple[Summary, ...]:
        """The summaries a search of ``words`` matches against (checked): those the strategy says
        may hold them where it can narrow them, else every one."""
        strategy = self._binding.strategy
        if not isinstance(strategy, FindsSummaries):
            return self.get_summaries_in_range()
        self._binding.check("search", started=False)
        return _not_erased(self._binding.store.model, strategy.summaries_holding(words))

    def get_summaries_in_range(self, start: int | None = None, end: int | None = None) -> tuple[Summary, ...]:
        """Summaries overlapping the sequence range [start, end] (checked)."""
        self._binding.check("get_summaries_in_range", started=False)
        check_int(start, "start", optional=True)
        check_int(end, "end", optional=True)
        strategy = self._binding.strategy
        found = strategy.get_summaries_in_range(start, end) if isinstance(strategy, ReadsSummaries) else ()
        return _not_erased(self._binding.store.model, found)

    def get_summary(self, summary_id: str) -> Summary | None:
        """The summary with that id, or ``None`` (checked)."""
        self._binding.check("get_summary", started=False)
        check_str(summary_id, "summary_id")
        strategy = self._binding.strategy
        found = strategy.get_summary(summary_id) if isinstance(strategy, ReadsSummaries) else None
        return found if found is not None and _not_erased(self._binding.store.model, (found,)) else None

    # -- branches ------------------------------------------------------------------------------

    async def fork(self, name: str) -> None:
        """Make branch ``name`` at this manager's head and move this manager onto it (only this
        one). Refused before the branch is made when the namespace's record names
        another reader, or any reader for a manager with no reader (R1, R2, R4, R7)."""
        self._binding.check("fork")
        await self._moves.fork(check_branch(name))

    async def switch_branch(self, name: str) -> None:
        """Move this manager (only this one) to branch ``name`` and restart its strategy
        there. Refused, leaving the manager where it was, when the namespace records another
        reader there, or any reader for a manager with no reader (R1, R2, R4, R7)."""
        self._binding.check("switch_branch", started=False)
        await self._moves.switch_branch(check_branch(name))

    async def set_strategy(self, strategy: ContextStrategy) -> None:
        """Replace the strategy and start it here. Refused, keeping the old strategy running, when
        this manager may not work here or the new strategy does not mark its compression reads
        under a reader (R1, R2, R4, R7, N7)."""
        self._binding.check("set_strategy", started=False)
        check_marks_reads(self._binding.view_reader, strategy, "set_strategy")
        await self._moves.move(self._binding.branch, strategy, "set_strategy")

    async def derive(self, *, branch: str, strategy: ContextStrategy, at_sequence: int | None = None) -> ContextManager:
        """A new manager of this namespace on a new child branch made from this manager's head (or
        from ``at_sequence``). The child records and compiles for the reader this manager compiles
        for. Refused before the child's branch is written when this manager is closed or
        its strategy failed to start (D4), when the record is not a reader's name (R7), or when
        the strategy does not mark its compression reads under a reader (N7)."""
        binding = self._binding
        binding.check("derive")
        check_marks_reads(binding.view_reader, strategy, "derive")
        derivation = self._moves.derivation(check_branch(branch), strategy, at_sequence)
        await anyio.lowlevel.checkpoint_if_cancelled()
        with anyio.CancelScope(shield=True):  # once the branch is written, the derive completes
            await self._moves.write_derived_branch(derivation, strategy)
            child = await open_context_manager(
                self._core,
                namespace=binding.namespace,
                strategy=strategy,
                reader=binding.view_reader,
                view_filter=binding.view_filter,
                branch=branch,
                model=binding.own_model,
                claim=binding.view_reader,
                action="derive",
                derivation=derivation,
            )
        return child

    # -- opening and closing -------------------------------------------------------------------

    async def _open(self, *, claim: str | None, action: str) -> None:
        """Claim, record and start (``Binding.open``), then start the drain."""
        await self._binding.open(claim=claim, action=action)
        self._background.start_drain()

    def _abandon(self) -> None:
        """An open that failed: the manager is closed and runs nothing."""
        self._binding.close()
        self._background.cancel_drain()
        self._binding.let_go()

    async def aclose(self) -> None:
        """Close the manager: cancel its drain and wait for it. Idempotent."""
        if self._binding.closed:
            return
        self._binding.close()
        try:
            await self._background.stop_drain()
            self._core.forget(self)
        finally:
            self._binding.let_go()


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
    reader) and start its strategy, in one command of the namespace actor. Refused or failed:
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


def _message_content(content: Sequence[ContentBlock | Mapping[str, Any]]) -> tuple[ContentBlock, ...]:
    """A message's content, checked: at least one block, an audience only where a message may
    carry one (``MalformedContentError`` naming the path)."""
    blocks = coerce_content(content)
    check_content(blocks, path="content", allow_audience=True)
    if not blocks:
        raise MalformedContentError("content", "a message needs at least one block")
    return blocks


def _not_erased(model: LogModel, summaries: Iterable[Summary]) -> tuple[Summary, ...]:
    """Leave out summaries made from an erased message: the strategy may hold them in memory
    until it next runs (and starts again, see ``Binding.catch_up``); the store no longer does."""
    if not model.erasure_count:
        return tuple(summaries)
    return tuple(s for s in summaries if not model.any_erased(s.message_ids))
