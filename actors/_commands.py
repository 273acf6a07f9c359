"""The commands a namespace actor accepts: frozen values carrying their arguments and a reply slot.

A manager's parts check a call's arguments, then send one of these to the namespace's actor
(``NamespaceActor.send``), which handles it in its own task, in its turn, one command at a time
(``NamespaceActor.handle``, the one dispatch), and answers through the command's :class:`Reply`.
What each command does is written in ``actors/_namespace.py``, beside the dispatch. No command
is sent from inside another's handling: work done in the turn calls the actor directly.

What a command needs of the manager that sends it, it carries: the manager's
binding (a :class:`Sender`: its namespace, reader, branch, view and strategy) and the call's
arguments. A command that changes nothing the actor owns still goes through it when
its strategy calls must not interleave with another manager's (a compile's ``select``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import anyio
import attrs

if TYPE_CHECKING:
    from ..store._blocks import ContentBlock
    from ..store._compile_records import CompileRecord
    from ..store._store import Store
    from ..store._views import MessageView
    from ..strategies._base import ContextStrategy, Injection, MessageInjection, SelectOptions, StrategyContext
    from ..strategies._models import Completion, CompletionRequest, Model
    from ..strategies._units import PlansUnits, UnitPlan
    from ._compiled import AssemblyCache
    from ._context_log import ContextLog

__all__ = [
    "AnswerStale",
    "AppendContextEntry",
    "BeginHeadReset",
    "BeginUnit",
    "Begun",
    "CatchUp",
    "Command",
    "CommitHeadReset",
    "CommitUnit",
    "Compile",
    "Edit",
    "Move",
    "NoUnit",
    "Open",
    "RaiseFloor",
    "ReleaseLease",
    "Reply",
    "RequestBack",
    "RequestGate",
    "RequestGivenUp",
    "RequestOut",
    "Sender",
    "StoreChanged",
    "Wake",
    "WriteStates",
]


class AnswerStale(Exception):
    """The answer came back after the manager moved, closed, or the claim changed: thrown away."""


class Sender(Protocol):
    """What the actor needs of the manager that sends a command: its binding
    (``actors/_binding.py``), which holds the manager's namespace, reader, branch, view and
    strategy, and the strategy's progress. ``catch_up``, ``start``, ``follow_elsewhere`` and
    ``rebind`` change that progress; the actor calls them in its turn only."""

    @property
    def namespace(self) -> str: ...
    @property
    def branch(self) -> str: ...
    @property
    def view_reader(self) -> str | None: ...
    @property
    def view(self) -> MessageView: ...
    @property
    def strategy(self) -> ContextStrategy: ...
    @property
    def model(self) -> Model | None: ...
    @property
    def store(self) -> Store: ...
    @property
    def context_log(self) -> ContextLog: ...
    @property
    def records_disclosures(self) -> bool: ...
    @property
    def lease_retry(self) -> float: ...

    def check(self, action: str, *, started: bool = True) -> None: ...
    def context(self, *, preview: bool = False, fenced: bool = False) -> StrategyContext: ...
    async def catch_up(self) -> StrategyContext | None: ...
    async def start(self, action: str) -> None: ...
    def follow_elsewhere(self) -> None: ...
    async def record_strategy(self) -> None: ...
    async def disclose(self, message_ids: Sequence[str], via: str, *, compiled: CompileRecord | None = None) -> None: ...
    def rebind(self, branch: str, actor: Any, strategy: ContextStrategy, owner: object) -> None: ...


class RequestGate(Protocol):
    """What the actor needs of the model gate a request goes through (``actors/_gate.py``):
    its steps in the turn. ``send`` runs outside it."""

    async def prepare(self, request: CompletionRequest) -> None: ...
    def came_back(self) -> None: ...
    def given_up(self, also: Callable[[], None] | None = None, *, failed: bool = False) -> None: ...
    def check_answer(self, completion: object, request: CompletionRequest) -> None: ...
    async def send(self, request: CompletionRequest) -> Completion: ...
    async def give_up(self, also: Callable[[], None] | None = None, *, failed: bool = False) -> None: ...


class Reply:
    """Where the actor answers a command: set ``granted`` once the handling ended, with its
    ``result`` or ``error``. ``abandoned``: the sender gave up before the actor took it (the
    actor skips it); ``taken``: the actor began it (the sender may no longer abandon it);
    ``scope``: the handling's cancel scope while it runs (a cancelled sender cancels it)."""

    __slots__ = ("granted", "abandoned", "taken", "completed", "result", "error", "scope")

    def __init__(self) -> None:
        self.granted = anyio.Event()
        self.abandoned = False
        self.taken = False
        self.completed = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.scope: anyio.CancelScope | None = None


@attrs.frozen(eq=False)
class Command:
    """A command for the actor; each subclass says what it is for (``purpose``, named in the
    ``ManagerClosedError`` of one sent after the actor ended)."""

    purpose: ClassVar[str] = "work"
    reply: Reply = attrs.field(factory=Reply, init=False, repr=False)


# -- opens, compiles, edits, the context log, moves --------------------------------------------


@attrs.frozen(eq=False)
class Open(Command):
    """Claim the namespace for ``claim`` (when given), record the manager's strategy, start it."""

    purpose = "a reader claim"
    binding: Sender
    claim: str | None
    action: str


@attrs.frozen(eq=False)
class Compile(Command):
    """Catch the strategy up, select within ``budget``, assemble with ``cache``, record what it
    showed: a compile, or a preview (``options.preview``: writing nothing of the strategy's)."""

    purpose = "a compile"
    binding: Sender
    action: str
    budget: int
    options: SelectOptions
    injections: Sequence[Injection]
    message_injections: Sequence[MessageInjection]
    estimator: Callable[[Sequence[ContentBlock]], int]
    cache: AssemblyCache


@attrs.frozen(eq=False)
class Edit(Command):
    """Replace message ``message_id``'s content with ``blocks``, under the narrowing rules."""

    purpose = "an edit"
    binding: Sender
    message_id: str
    blocks: tuple[ContentBlock, ...]


@attrs.frozen(eq=False)
class AppendContextEntry(Command):
    """Append an entry holding ``blocks`` to the namespace's context log, numbered by the actor."""

    purpose = "a context-log entry"
    binding: Sender
    blocks: tuple[ContentBlock, ...]
    source_message_id: str | None


@attrs.frozen(eq=False)
class Move(Command):
    """Bind the manager to this actor's branch with ``strategy`` (a fork, a switch or a strategy
    change), claim for its reader, record the strategy and start it. Sent to the target's actor."""

    purpose = "a move (fork, switch or strategy change)"
    binding: Sender
    branch: str
    strategy: ContextStrategy
    owner: object
    action: str


# -- units of background work (strategies/_units.py) -------------------------------------------


@attrs.frozen(eq=False)
class BeginUnit(Command):
    """Check the manager, catch its strategy up, take the compression lease when the unit may ask
    the model, plan the unit and perform the plan up to its request. Answers :class:`NoUnit` or
    :class:`Begun`. ``needs_model``: a drain's unit (none without a model or when ready)."""

    purpose = "a unit of background work"
    binding: Sender
    units: PlansUnits
    needs_model: bool


@attrs.frozen(eq=False)
class CommitUnit(Command):
    """Hand ``answer`` to ``begun``'s request back: thrown away when stale, else judged and what
    it makes written. Answers whether the unit did work."""

    purpose = "a unit of background work"
    binding: Sender
    begun: Begun
    answer: object


@attrs.frozen(eq=False)
class CatchUp(Command):
    """Catch the strategy up; answer whether it is ready. Ready, or ``done``, the compression
    lease is given up when no unit is at work."""

    purpose = "a unit of background work"
    binding: Sender
    done: bool


@attrs.frozen(eq=False)
class ReleaseLease(Command):
    """Give the compression lease up (``if_idle``: only when no unit of the namespace is at work)."""

    purpose = "a compression lease release"
    if_idle: bool


@attrs.frozen(eq=False)
class BeginHeadReset(Command):
    """Start the head window at a ``[Topic Transition]`` message holding ``text``; with no text,
    plan the note's request and perform the plan up to it. Answers the note (done) or :class:`Begun`."""

    purpose = "a head-window reset"
    binding: Sender
    units: PlansUnits
    text: str | None


@attrs.frozen(eq=False)
class CommitHeadReset(Command):
    """Judge the note ``answer`` gives and start the head window at it. Answers the note."""

    purpose = "a head-window reset"
    binding: Sender
    begun: Begun
    answer: object


# -- a strategy's own context calls from outside the turn (a ``tick`` in the drain's task) -----


@attrs.frozen(eq=False)
class RaiseFloor(Command):
    """Raise the narrowing floor to ``sequence`` for ``reader`` (under the lease's fence when
    ``fenced``): ``ctx.mark_compression_read`` from outside the turn. ``binding``: the manager
    whose strategy asks, checked first (``None``: no manager's call, the reader as given)."""

    purpose = "a unit of background work"
    sequence: int
    reader: str | None
    fenced: bool = False
    binding: Sender | None = None


@attrs.frozen(eq=False)
class WriteStates(Command):
    """``ctx.state.set_many(records)`` (under the lease's fence when ``fenced``)."""

    purpose = "a unit of background work"
    records: Mapping[str, Any]
    fenced: bool


@attrs.frozen(eq=False)
class RequestOut(Command):
    """``request`` leaves through ``gate``: checked, disclosed, counted as out."""

    purpose = "a compression request"
    gate: RequestGate
    request: CompletionRequest


@attrs.frozen(eq=False)
class RequestBack(Command):
    """``gate``'s request is back with an answer (``AnswerStale`` when it is to be thrown away)."""

    purpose = "a compression request"
    gate: RequestGate


@attrs.frozen(eq=False)
class RequestGivenUp(Command):
    """``gate``'s request failed (``failed``: with no answer) or was cancelled: no longer out
    (and ``also`` done with it)."""

    purpose = "a compression request"
    gate: RequestGate
    also: Callable[[], None] | None = None
    failed: bool = False


# -- from the store, and the actor's own ------------------------------------------------------


@attrs.frozen(eq=False)
class StoreChanged(Command):
    """The store holds a write touching the namespace (its reader record or floor, or strategy
    state another process wrote): sent by the runtime's store listener, answered to no one."""

    purpose = "following the store"


@attrs.frozen(eq=False)
class Wake(Command):
    """Not a request: it wakes the actor's loop to look whether nothing uses the actor any more
    (skipped as an abandoned command is, and answered to no one)."""

    purpose = "a wake-up"

    def __attrs_post_init__(self) -> None:
        self.reply.abandoned = True


# -- what a unit's begin answers ---------------------------------------------------------------


@attrs.frozen(eq=False)
class NoUnit:
    """There is no unit to run now. ``lease_wait``: seconds until the compression lease may be
    free, when another process holds it; else ``None``."""

    lease_wait: float | None = None


@attrs.frozen(eq=False)
class Begun:
    """A unit performed up to its request: ``plan`` (its ``request`` to send through ``gate``, or
    its ``work`` to run in the drain's task), ``leased`` when it runs under the compression lease."""

    plan: UnitPlan
    units: PlansUnits
    gate: RequestGate | None
    leased: bool
