"""What the managers of one runtime share, and the runtime's plumbing: its namespace actors,
the branch signals, the supervised tasks, which manager holds which strategy, and the context
log (a part of its own, ``_context_log.ContextLog``, which the managers ask).

``Runtime`` (the public handle, ``_runtime.py``) owns one ``RuntimeCore`` and hands it to the
managers it opens; nothing here is API. A manager asks the core for its namespace's actor and for
the branch signal, and tells it when it opens and closes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

import anyio.abc
import attrs

from ..store._events import BranchCreated, MessagesAppended, MessagesErased, StatesWritten, StoreEvent, StrategyNoted
from ..store._rows import FromElsewhere
from ..store._store import Store
from ..store._views import Projections
from ..strategies._base import check_strategy
from ..strategies._models import Model
from ._context_log import ContextLog
from ._errors import StrategyInUseError
from ._gate import ModelPolicy
from ._namespace import ActorStatistics, NamespaceActor
from ._records import FLOOR_KEY, NAMESPACE_KEYS, READER_KEY, own_record
from ._signals import Signal


class ManagerHandle(Protocol):
    """What the core knows of a manager: the strategy it holds, whether it is closed, and how
    to close it (the runtime closes every manager it opened)."""

    @property
    def strategy(self) -> Any: ...

    @property
    def closed(self) -> bool: ...

    async def aclose(self) -> None: ...


__all__ = ["RuntimeCore", "RuntimeStatistics"]

log = logging.getLogger("asides.actors")

T = TypeVar("T")


@attrs.frozen
class RuntimeStatistics:
    """What a runtime runs now, as ``Runtime.statistics()`` returns it: a snapshot, which does
    not change as the runtime goes on. For measurements and tests. The store's own counts are
    ``Runtime.store.statistics()``."""

    #: Namespace actors running now (``Runtime.running_actors``).
    running_actors: int
    #: Managers open on the runtime (or opening), not yet closed.
    open_managers: int
    #: One snapshot per running actor, ordered by branch, then namespace.
    actors: tuple[ActorStatistics, ...]


class RuntimeCore:
    """The plumbing of one runtime (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        tasks: anyio.abc.TaskGroup,
        model: Model | None,
        model_policy: ModelPolicy,
        *,
        record_disclosures: bool,
    ) -> None:
        self.store = store
        self.model = model
        self.model_policy = model_policy
        #: Whether compiles, previews and compression requests record what they showed.
        self.records_disclosures = record_disclosures
        #: The reader projections the managers' views share: one per branch and reader (views
        #: with no filter), and the projected copies of each branch's messages, shared by
        #: readers who see a message alike (see ``asides.store._views``).
        self.view_projections = Projections(store.model)
        #: The namespaces' context logs (the managers ask it).
        self.context_log = ContextLog(store)
        self._tasks = tasks
        self._actors: dict[tuple[str, str], NamespaceActor] = {}
        self._signals: dict[str, Signal] = {}
        self._managers: set[ManagerHandle] = set()
        #: Which open manager holds each strategy object (by identity): one manager at a time;
        #: and the other way, which strategy each manager holds.
        self._strategy_holders: dict[int, ManagerHandle] = {}
        self._held: dict[ManagerHandle, int] = {}
        self._attachments: dict[type[Any], Any] = {}
        self.closing = False
        self._unlisten = store.add_listener(self._on_store_event)

    # -- actors, signals, tasks ------------------------------------------------------------------

    def actor(self, branch: str, namespace: str) -> NamespaceActor:
        """The namespace actor of ``namespace`` on ``branch``, started (from what the store
        holds) when none runs. It ends by itself once nothing uses it: a caller that keeps it
        across an ``await`` holds it with ``attach()`` first (see ``NamespaceActor``)."""
        key = (branch, namespace)
        actor = self._actors.get(key)
        if actor is None:
            actor = NamespaceActor(self.store, branch, namespace, on_end=self._actor_ended)
            self._actors[key] = actor
            self._tasks.start_soon(actor.run)
        return actor

    def _actor_ended(self, actor: NamespaceActor) -> None:
        """An actor ended (nothing used it): forget it, so that the next use starts a new one."""
        key = (actor.branch, actor.namespace)
        if self._actors.get(key) is actor:
            del self._actors[key]

    @property
    def running_actors(self) -> int:
        """How many namespace actors run now."""
        return len(self._actors)

    def statistics(self) -> RuntimeStatistics:
        """What the runtime runs now (``Runtime.statistics()``)."""
        actors = tuple(self._actors[key].statistics() for key in sorted(self._actors))
        return RuntimeStatistics(running_actors=len(actors), open_managers=len(self._managers), actors=actors)

    def branch_signal(self, branch: str) -> Signal:
        """The signal every write on ``branch`` raises."""
        signal = self._signals.get(branch)
        if signal is None:
            signal = self._signals[branch] = Signal()
        return signal

    def wake_all_branches(self) -> None:
        """Raise every branch's signal: drains look again (after an erasure)."""
        for signal in self._signals.values():
            signal.raise_()

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``fn`` as a supervised task of the runtime's task group."""
        self._tasks.start_soon(fn)

    def attachment(self, cls: type[T]) -> T:
        """The one ``cls()`` of this runtime, made on first ask (``Runtime.attachment``)."""
        found = self._attachments.get(cls)
        if found is None:
            found = self._attachments[cls] = cls()
        return found

    # -- managers and the strategies they hold ---------------------------------------------------

    def check_strategy_free(self, strategy: object, manager: ManagerHandle | None = None) -> None:
        """Refuse a strategy object that another open manager holds: its in-memory state would
        carry one reader's view into another's compiles, and what is no strategy at all
        (``check_strategy``: every path that takes a strategy comes through here)."""
        check_strategy(strategy)
        holder = self._strategy_holders.get(id(strategy))
        if holder is not None and holder is not manager and not holder.closed:
            raise StrategyInUseError(strategy=strategy, holder=repr(holder))

    def hold_strategy(self, strategy: object, manager: ManagerHandle) -> None:
        """Record that ``manager`` holds ``strategy`` (and no longer holds any other)."""
        self.check_strategy_free(strategy, manager)
        self.release_strategy(manager)
        self._strategy_holders[id(strategy)] = manager
        self._held[manager] = id(strategy)

    def release_strategy(self, manager: ManagerHandle) -> None:
        """``manager`` holds no strategy any more (in constant time, however many are open)."""
        key = self._held.pop(manager, None)
        if key is not None and self._strategy_holders.get(key) is manager:
            del self._strategy_holders[key]

    @property
    def open_managers(self) -> int:
        """How many managers are registered (open, or opening)."""
        return len(self._managers)

    def register(self, manager: ManagerHandle) -> None:
        """``manager`` is opening: it holds its strategy, and closes with the runtime."""
        self.hold_strategy(manager.strategy, manager)
        self._managers.add(manager)

    def forget(self, manager: ManagerHandle) -> None:
        """A manager closed (or its open failed): it holds nothing any more."""
        self._managers.discard(manager)
        self.release_strategy(manager)

    # -- what the store tells -------------------------------------------------------------------

    def _on_store_event(self, event: StoreEvent) -> None:
        # Constant time however many managers are open: strategies catch up when they next run.
        branch = event.branch if type(event) is MessagesAppended else self._follow(event)  # an append: only the signal
        signal = self._signals.get(branch) if branch is not None else None
        if signal is not None:
            signal.raise_()

    def _follow(self, event: StoreEvent) -> str | None:
        """Do what ``event`` asks of the actors beside a branch signal; the branch whose signal it
        raises, if any."""
        if isinstance(event, BranchCreated | StrategyNoted):
            return None  # nothing a manager's strategy follows
        if isinstance(event, MessagesErased):
            self.wake_all_branches()  # managers start their strategies again when they next run
            return None
        if isinstance(event, StatesWritten):
            # A reader record or floor written by another process (on a shared store) reaches its
            # actor, as a command: a claim made elsewhere stops drains here as a local claim
            # does (here, only the namespace's own actor writes them, so it knows them already);
            # strategy state another process wrote is listed for the namespace's strategies to
            # take in. A lease record (written by earlier versions, see ._lease) is ignored.
            elsewhere = isinstance(event, FromElsewhere)
            for key in event.keys:
                namespace, _, tail = key.rpartition("/")
                if tail in NAMESPACE_KEYS and namespace:
                    actor = self._actors.get((event.branch, namespace)) if elsewhere else None
                    if actor is not None and tail in (READER_KEY, FLOOR_KEY):
                        actor.store_changed()
                elif elsewhere:
                    self._adopt_written_elsewhere(event.branch, key)
        return event.branch

    def _adopt_written_elsewhere(self, branch: str, key: str) -> None:
        """Hand a strategy-state record another process wrote to its namespace's actor, if it
        runs here. A namespace may hold ``/`` (``agents/ann``), so each ``/`` of the key is tried
        as the end of the namespace (the strategies read only keys under their own kind)."""
        owned = own_record(key)
        if owned is not None and owned[1] not in NAMESPACE_KEYS:
            self.context_log.note_written_elsewhere(branch, key)  # a context-log entry, not strategy state
            return
        cut = key.find("/")
        while cut != -1:
            actor = self._actors.get((branch, key[:cut]))
            if actor is not None:
                actor.store_changed(written_elsewhere=key[cut + 1 :])
            cut = key.find("/", cut + 1)

    # -- closing --------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close every manager and actor, and stop listening to the store."""
        self.closing = True
        for manager in list(self._managers):
            await manager.aclose()
        for actor in list(self._actors.values()):
            actor.close()
        self._unlisten()
