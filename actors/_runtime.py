"""The runtime: one store, one task group, the namespace actors and the managers.

``open_runtime`` opens (creating) the store and the runtime's task group. Every background task
(namespace actors, compression drains) lives in that task group, so none outlives the runtime;
leaving the block closes every manager, waits for every drain, flushes the pending commit and
closes the store.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import attrs

from ..store._blocks import content_to_json, decode_stored_content
from ..store._errors import ArgumentTypeError, InvalidArgumentError
from ..store._groups import collapsing
from ..store._messages import Message
from ..store._model import MISSING, BranchInfo
from ..store._names import check_branch, check_optional_reader
from ..store._open import open_store
from ..store._pg_rows import FromElsewhere
from ..store._sqlite import BranchCreated, MessagesErased, SqliteStore, StatesWritten, StoreEvent
from ..store._state_keys import context_index, context_key, context_prefix, namespace_key, own_record
from ..store._views import Projections, ViewFilter, reader_view
from ..strategies._base import NAMESPACE_KEYS, ContextStrategy, check_strategy
from ..strategies._models import Model
from ._errors import StrategyInUseError
from ._gate import ModelPolicy, check_model
from ._manager import ContextEntry, ContextManager, Derivation
from ._namespace import FLOOR_KEY, READER_KEY, NamespaceActor, normalise_namespace
from ._privacy import PrivacyParts, check_retain_for
from ._protocol import Signal

if TYPE_CHECKING:
    from ..integrations.openai_agents import AsidesSession

__all__ = ["Runtime", "open_runtime"]

log = logging.getLogger("asides.actors")


class Runtime(PrivacyParts):
    """A store with its actors and managers. Made by :func:`open_runtime`."""

    def __init__(
        self,
        store: SqliteStore,
        tasks: anyio.abc.TaskGroup,
        model: Model | None,
        model_policy: ModelPolicy | None = None,
        *,
        retain_seconds: float | None = None,
        record_disclosures: bool = True,
    ) -> None:
        self._store = store
        self._retain_seconds = retain_seconds
        #: Whether compiles, previews and compression requests record what they showed.
        self.records_disclosures = record_disclosures
        self._tasks = tasks
        self.model = model
        self.model_policy = model_policy if model_policy is not None else ModelPolicy()
        self._actors: dict[tuple[str, str], NamespaceActor] = {}
        self._signals: dict[str, Signal] = {}
        self._managers: set[ContextManager] = set()
        #: Which open manager holds each strategy object (by identity): one manager at a time.
        self._strategy_holders: dict[int, ContextManager] = {}
        self._copies: dict[str, dict[str, list[str]]] = {}
        self._closing = False
        #: Per-runtime state of the integrations (``asides.integrations``), by integration name.
        self.integrations: dict[str, Any] = {}
        self._projections = Projections(store.model)
        self._unlisten = store.add_listener(self._on_store_event)

    # -- public --------------------------------------------------------------------------------

    @property
    def store(self) -> SqliteStore:
        """The store, for read-only inspection."""
        return self._store

    @property
    def closing(self) -> bool:
        return self._closing

    def list_branches(self) -> tuple[BranchInfo, ...]:
        """Every branch: name, parent, fork sequence and head."""
        return self._store.branches()

    async def open_manager(
        self,
        namespace: str | None = None,
        *,
        strategy: ContextStrategy,
        view_reader: str | None = None,
        view_filter: ViewFilter | None = None,
        branch: str = "main",
        model: Model | None = None,
    ) -> ContextManager:
        """Open a manager of ``namespace`` on ``branch`` (close it with ``await manager.aclose()``
        or by leaving the runtime).

        With ``view_reader``, the namespace is claimed for that reader if unclaimed (one state
        write); an open for another reader than the recorded one is refused with
        ``ReaderClaimError`` naming both, having written and registered nothing.
        With none, the manager compiles for the reader the namespace records, if any (R3).
        """
        self._store.raise_if_failed()  # after a failed commit, every call says so
        if self._closing:
            raise RuntimeError("the runtime is closing; open managers inside its block")
        check_optional_reader(view_reader, "view_reader")
        if view_filter is not None and not callable(view_filter):
            raise ArgumentTypeError("view_filter", "must be a callable taking a Message and returning a bool")
        check_strategy(strategy)
        check_model(model, "open_manager")
        ns = normalise_namespace(namespace)
        self._store.branch_info(check_branch(branch))
        self.check_strategy_free(strategy)
        actor = self.actor(branch, ns)
        reader = actor.resolve_reader(view_reader, "open")
        manager = ContextManager(self, namespace=ns, strategy=strategy, reader=reader, view_filter=view_filter, branch=branch, model=model)
        manager.require_capability(strategy, "open")
        await self.start_manager(manager, claim=view_reader, action="open")
        return manager

    @asynccontextmanager
    async def manager(
        self,
        namespace: str | None = None,
        *,
        strategy: ContextStrategy,
        view_reader: str | None = None,
        view_filter: ViewFilter | None = None,
        branch: str = "main",
        model: Model | None = None,
    ) -> AsyncIterator[ContextManager]:
        """:meth:`open_manager` as an ``async with`` block that closes the manager on exit."""
        opened = await self.open_manager(
            namespace, strategy=strategy, view_reader=view_reader, view_filter=view_filter, branch=branch, model=model
        )
        try:
            yield opened
        finally:
            with anyio.CancelScope(shield=True):
                await opened.aclose()

    async def reopen_derived(self, branch: str, *, strategy: ContextStrategy, view_reader: str | None = None) -> ContextManager:
        """Reopen the manager a ``derive`` made on ``branch``: same namespace, compiling for the
        reader its branch records."""
        self._store.branch_info(check_branch(branch))
        derivation = Derivation.from_json(self._store.model.branch_meta(branch).get("derivation"))
        if derivation is None:
            raise InvalidArgumentError("branch", f"branch {branch!r} was not made by derive, so there is nothing to reopen; use manager()")
        opened = await self.open_manager(derivation.namespace, strategy=strategy, view_reader=view_reader, branch=branch)
        opened.derivation = derivation
        return opened

    async def openai_session(
        self, session_id: str, *, reader: str | None = None, strategy: ContextStrategy | None = None, session_settings: Any = None
    ) -> AsidesSession:
        """An OpenAI Agents SDK session (``Runner.run(..., session=)``) on the conversation
        ``session_id`` of this runtime's store, for ``reader``; it lives as long as the runtime.
        Needs the ``openai-agents`` extra; see ``asides.integrations.openai_agents``."""
        from ..integrations.openai_agents import AsidesSession

        return await AsidesSession.bound_to(self, session_id, reader=reader, strategy=strategy, session_settings=session_settings)

    # -- what managers ask of the runtime ------------------------------------------------------

    def actor(self, branch: str, namespace: str) -> NamespaceActor:
        """The namespace actor of ``namespace`` on ``branch``, started (from what the store
        holds) when none runs. It ends by itself once nothing uses it: a caller that keeps it
        across an ``await`` holds it with ``attach()`` first (see ``NamespaceActor``)."""
        key = (branch, namespace)
        actor = self._actors.get(key)
        if actor is None:
            actor = NamespaceActor(self._store, branch, namespace, on_end=self._actor_ended)
            self._actors[key] = actor
            self._tasks.start_soon(actor.run)
        return actor

    def _actor_ended(self, actor: NamespaceActor) -> None:
        """An actor ended (nothing used it): forget it, so that the next use starts a new one."""
        key = (actor.branch, actor.namespace)
        if self._actors.get(key) is actor:
            del self._actors[key]

    @property
    def view_projections(self) -> Projections:
        """The reader projections the managers' views share: one per branch and reader (views
        with no filter), and the projected copies of each branch's messages, shared by readers
        who see a message alike (see ``asides.store._views``)."""
        return self._projections

    @property
    def running_actors(self) -> int:
        """How many namespace actors run now (each ends once no manager, drain or request of its
        namespace is left)."""
        return len(self._actors)

    def branch_signal(self, branch: str) -> Signal:
        """The signal every write on ``branch`` raises."""
        signal = self._signals.get(branch)
        if signal is None:
            signal = self._signals[branch] = Signal()
        return signal

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``fn`` as a supervised task of the runtime's task group."""
        self._tasks.start_soon(fn)

    def check_strategy_free(self, strategy: object, manager: ContextManager | None = None) -> None:
        """Refuse a strategy object that another open manager holds: its in-memory state would
        carry one reader's view into another's compiles, and what is no strategy at all
        (``check_strategy``: every path that takes a strategy comes through here)."""
        check_strategy(strategy)
        holder = self._strategy_holders.get(id(strategy))
        if holder is not None and holder is not manager and not holder.closed:
            raise StrategyInUseError(strategy=strategy, holder=repr(holder))

    def hold_strategy(self, strategy: object, manager: ContextManager) -> None:
        """Record that ``manager`` holds ``strategy`` (and no longer holds any other)."""
        self.check_strategy_free(strategy, manager)
        self.release_strategy(manager)
        self._strategy_holders[id(strategy)] = manager

    def release_strategy(self, manager: ContextManager) -> None:
        for key, holder in list(self._strategy_holders.items()):
            if holder is manager:
                del self._strategy_holders[key]

    async def start_manager(self, manager: ContextManager, *, claim: str | None, action: str) -> None:
        """Register ``manager``, claim its namespace (when ``claim`` names a reader) and start its
        strategy, in one turn of the namespace actor. Refused or failed: nothing registered."""
        self.hold_strategy(manager.strategy, manager)
        self._managers.add(manager)
        try:
            await manager.open(claim=claim, action=action)
        except BaseException:
            self.forget(manager)
            manager.abandon()
            raise

    def forget(self, manager: ContextManager) -> None:
        """A manager closed: it holds nothing any more."""
        self._managers.discard(manager)
        self.release_strategy(manager)

    def _on_store_event(self, event: StoreEvent) -> None:
        # Constant time however many managers are open: strategies catch up when they next run.
        if isinstance(event, BranchCreated):
            return
        if isinstance(event, MessagesErased):
            self.wake_all_branches()  # managers start their strategies again when they next run
            return
        if isinstance(event, StatesWritten):
            # A reader record or floor written by another process (on a shared store) reaches its
            # actor: a claim made elsewhere stops drains here as a local claim does; strategy
            # state another process wrote is listed for the namespace's strategies to take in.
            # A lease record (written by earlier versions, see ._lease) is ignored.
            elsewhere = isinstance(event, FromElsewhere)
            for key in event.keys:
                namespace, _, tail = key.rpartition("/")
                if tail in NAMESPACE_KEYS and namespace:
                    actor = self._actors.get((event.branch, namespace))
                    if actor is not None and tail in (READER_KEY, FLOOR_KEY):
                        actor.adopt_stored_records()
                elif elsewhere:
                    self._adopt_written_elsewhere(event.branch, key)
        signal = self._signals.get(event.branch)
        if signal is not None:
            signal.raise_()

    def _adopt_written_elsewhere(self, branch: str, key: str) -> None:
        """Hand a strategy-state record another process wrote to its namespace's actor, if it
        runs here. A namespace may hold ``/`` (``agents/ann``), so each ``/`` of the key is tried
        as the end of the namespace (the strategies read only keys under their own kind)."""
        owned = own_record(key)
        if owned is not None and owned[1] not in NAMESPACE_KEYS:
            self._note_context_copy(branch, key)  # a context-log entry, not strategy state
            return
        cut = key.find("/")
        while cut != -1:
            actor = self._actors.get((branch, key[:cut]))
            if actor is not None:
                actor.adopt_written_elsewhere(key[cut + 1 :])
            cut = key.find("/", cut + 1)

    # -- the context log -------------------------------------------------------------

    def _copy_index(self, branch: str) -> dict[str, list[str]]:
        index = self._copies.get(branch)
        if index is None:
            index = {}
            for key in self._store.model.state_keys(branch, ""):
                owned = own_record(key)
                if owned is None or owned[1] in NAMESPACE_KEYS:
                    continue  # not a context-log entry
                value = self._store.model.get_state(branch, key)
                if isinstance(value, dict) and isinstance(value.get("source_message_id"), str):
                    index.setdefault(value["source_message_id"], []).append(key)
            self._copies[branch] = index
        return index

    def _note_context_copy(self, branch: str, key: str) -> None:
        """Index a context-log entry another process wrote, if it copies a message: this
        process's edits of that message rewrite it too."""
        index = self._copies.get(branch)
        if index is None:
            return  # built from the model when first needed
        value = self._store.model.get_state(branch, key)
        if isinstance(value, dict) and isinstance(value.get("source_message_id"), str):
            keys = index.setdefault(value["source_message_id"], [])
            if key not in keys:
                keys.append(key)

    async def write_context_entry(self, branch: str, namespace: str, entry: ContextEntry) -> None:
        key = context_key(namespace, entry.index)
        value = {"content": content_to_json(entry.content), "source_message_id": entry.source_message_id}
        if entry.source_message_id is not None:
            self._copy_index(branch).setdefault(entry.source_message_id, []).append(key)
        await self._store.set_state(branch, key, value)

    def context_entries(self, branch: str, namespace: str) -> tuple[ContextEntry, ...]:
        prefix = context_prefix(namespace)
        entries = []
        for key, value in self._store.model.state_items(branch, prefix).items():
            rest = key[len(prefix) :]
            index = context_index(rest)
            if index is None:
                if rest.isdigit():  # ``²``, ``07``: digits, but no context index (store._state_keys)
                    log.warning("state %r on %r is no context entry (its index is not ASCII decimal); read fail-closed", key, branch)
                continue
            if not isinstance(value, dict):
                continue
            content, problems = decode_stored_content(value.get("content"))
            if problems:
                log.warning("context entry %s on %r is malformed, read fail-closed: %s", key, branch, problems)
            source = value.get("source_message_id")
            entries.append(ContextEntry(index, content, source if isinstance(source, str) else None))
        entries.sort(key=lambda e: e.index)
        return tuple(entries)

    def context_copies(self, branch: str, message_id: str, stored: Message, content: tuple[Any, ...]) -> dict[str, Any]:
        """The rewrites an edit makes to context-log copies of ``message_id`` on ``branch``: each
        as its namespace's reader sees the new content, dropped (``None``) where it sees nothing."""
        rewrites: dict[str, Any] = {}
        edited = attrs.evolve(stored, content=content)
        for key in self._copy_index(branch).get(message_id, ()):
            if self._store.model.get_state(branch, key) in (None, MISSING):
                continue
            owned = own_record(key)
            if owned is None:
                continue
            record = self._store.model.get_state(branch, namespace_key(owned[0], READER_KEY))
            if record is MISSING:
                reader: str | None = None
            elif isinstance(record, str) and record:
                reader = record
            else:
                rewrites[key] = None  # whose view it holds cannot be told: fail closed
                continue
            seen, _ = reader_view(edited, reader)
            rewrites[key] = None if seen is None else {"content": content_to_json(seen.content), "source_message_id": message_id}
        return rewrites

    # -- closing -------------------------------------------------------------------------------

    async def _aclose(self) -> None:
        self._closing = True
        for manager in list(self._managers):
            await manager.aclose()
        for actor in list(self._actors.values()):
            actor.close()
        self._unlisten()


@asynccontextmanager
async def open_runtime(
    path: str = ":memory:",
    *,
    model: Model | None = None,
    read_only: bool = False,
    model_policy: ModelPolicy | None = None,
    synchronous: str = "NORMAL",
    retain_for: datetime.timedelta | None = None,
    record_disclosures: bool = True,
) -> AsyncIterator[Runtime]:
    """Open (creating) the store at ``path`` and a runtime over it for the block.

    With ``read_only``, the store file is opened read-only (see ``open_store``): nothing is
    created or written, it works while another process's runtime holds the file, and every write
    raises ``StoreReadOnlyError``. A manager opened there for a reader on an unclaimed namespace
    compiles for that reader without recording a claim (a preview).

    ``model`` is the default model managers compress with. A second process (or runtime) opening
    the same file is refused with ``StoreLockedError``. Leaving the block closes every manager,
    waits for every drain, flushes the pending commit and closes the store. Works under Trio (the
    reference backend) and asyncio.

    ``synchronous`` is the durability of a commit (``open_store``): ``NORMAL`` (the default)
    survives a crash of the process, ``FULL`` also a power loss (or, on PostgreSQL, a crash of
    the database server), at a cost per commit.

    ``retain_for`` (a ``datetime.timedelta``): messages whose stored timestamp is older than that
    are erased, with the reason ``"retention"``, by a supervised background task (at open, then
    every tenth of the period, at most hourly); ``Runtime.enforce_retention()`` does it at once.

    ``record_disclosures`` (on by default): every compile, preview and compression request
    records which messages it showed, and to whom (``Runtime.disclosures``); ``False`` records
    nothing. A read-only runtime records nothing either (it cannot write), but answers.
    """
    if not isinstance(record_disclosures, bool):
        raise ArgumentTypeError("record_disclosures", f"must be a bool, not {type(record_disclosures).__name__}")
    check_model(model, "open_runtime")
    retain_seconds = check_retain_for(retain_for)
    async with open_store(path, read_only=read_only, synchronous=synchronous) as store, collapsing():
        async with anyio.create_task_group() as tasks:
            runtime = Runtime(store, tasks, model, model_policy, retain_seconds=retain_seconds, record_disclosures=record_disclosures)
            if retain_seconds is not None and not read_only:
                every = min(retain_seconds / 10, 3600.0)
                tasks.start_soon(runtime.run_retention, every)
            try:
                yield runtime
            finally:
                with anyio.CancelScope(shield=True):
                    await runtime._aclose()
                tasks.cancel_scope.cancel()
