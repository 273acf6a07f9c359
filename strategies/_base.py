"""The strategy protocol and what a strategy is handed and returns.

A strategy decides what of the history a compile holds. The runtime calls it inside its
namespace actor's turn, so calls never overlap for one namespace and branch:

* ``initialize(ctx)`` once when it starts on a branch (open, switch, fork, set_strategy, derive);
* ``on_new_message(message, ctx)`` for every message added on its branch (through any manager),
  in its reader's view, and not at all for a message its reader sees nothing of;
* ``select(ctx, budget, options)`` for a compile or a preview;
* ``tick(ctx)`` for one unit of background work (drains call it in a loop);
* ``is_ready()``: whether no background work remains.

A strategy that makes compression reads must raise the narrowing floor first with
``await ctx.mark_compression_read(sequence)`` and say so with ``marks_compression_reads = True``:
the floor is how the runtime knows which messages compression may already have read, so that an
edit can no longer hide them from the reader; a manager with a reader refuses to start a strategy
that does not say so. Optional capabilities (sharding, summary reads, a head window, ...) are
the small protocols of ``_capabilities``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, Protocol, runtime_checkable

import attrs

from ..store._blocks import ContentBlock, check_content, coerce_content
from ..store._errors import ArgumentTypeError, InvalidArgumentError, MalformedContentError
from ..store._message_ids import MessageIds
from ..store._messages import Message
from ..store._model import MISSING, UNREADABLE
from ..store._names import check_namespace, check_participant
from ..store._views import MessageView
from ._compiled_message import CompiledMessage
from ._errors import StrategyCapabilityError
from ._models import Model

log = logging.getLogger("asides.strategies")


class StateReads(Protocol):
    """The store reads a :class:`StrategyState` makes (a ``StoreReader`` offers them)."""

    def get_state(self, branch: str, key: str, default: Any = None) -> Any: ...

    def state_items(self, branch: str, prefix: str = "") -> dict[str, Any]: ...

    # A store's reads also offer ``state_keys(branch, prefix)``, ``get_states(branch, keys)``,
    # ``state_keys_holding(branch, keys, words)``, ``state_keys_matching(branch, prefix, words)``,
    # ``state_sequences(branch, prefix)``,
    # ``state_sequences_after(branch, prefix, sequence)`` and ``erasures()``, which read no value,
    # the values of some keys at once, narrow keys by the words their values may hold, give the
    # sequence each key's record was written at (or count those written up to a sequence), and
    # list the erasures; an object without them still serves (:meth:`StrategyState.keys`,
    # :meth:`StrategyState.get_many` and :meth:`StrategyState.keys_holding` do without;
    # :meth:`StrategyState.sequences`, :meth:`StrategyState.sequences_after` and
    # :attr:`StrategyState.erasure_count` say ``None``).


__all__ = [
    "CompiledMessage",
    "SourceEntry",
    "SourceKind",
    "Injection",
    "InjectionPosition",
    "MessageInjection",
    "SelectOptions",
    "Selection",
    "StrategyContext",
    "StrategyState",
    "ContextStrategy",
    "UNREADABLE",
    "RecordKeys",
    "STRATEGY_KEY",
    "check_injections",
    "check_budget",
    "check_marks_reads",
    "check_strategy",
]

SourceKind = Literal["raw", "summary", "injection", "repair"]
InjectionPosition = Literal["system", "before_user", "after_user"]


def _content_tuple(value: object) -> tuple[ContentBlock, ...]:
    return coerce_content(value)


def _ids(value: Iterable[str]) -> Sequence[str]:
    return value if isinstance(value, MessageIds) else tuple(value)


def _compiled_messages(value: Iterable[CompiledMessage]) -> tuple[CompiledMessage, ...]:
    return tuple(value)


def _source_entries(value: Iterable[SourceEntry]) -> tuple[SourceEntry, ...]:
    return tuple(value)


def _id_set(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@attrs.frozen(slots=True)
class SourceEntry:
    """Where one compiled message came from (a compile's provenance).

    ``kind``: ``raw`` (a view message), ``summary`` (either half of a recall pair, with
    ``summary_id``), ``injection``, or ``repair`` (a stub the strategy wrote). ``message_ids``
    names the view messages it stands for: a tuple, or a summary's :class:`~asides.MessageIds`
    (which equals the tuple of the same ids).
    """

    kind: SourceKind
    message_ids: Sequence[str] = attrs.field(default=(), converter=_ids)
    summary_id: str | None = None


_POSITIONS = ("system", "before_user", "after_user")


def _check_position(_i: object, _a: object, value: object) -> None:
    if value not in _POSITIONS:
        raise InvalidArgumentError("position", f"an injection's position is 'system', 'before_user' or 'after_user', not {value!r}")


def _check_participant(_i: Any, _a: Any, value: Any) -> None:
    check_participant(value)


@attrs.frozen(slots=True)
class Injection:
    """Content a host injects into one compile: ``system`` content goes to
    ``CompiledContext.system_injections``; ``before_user``/``after_user`` become a message by
    ``system_context:<namespace>`` placed around the last message whose participant is ``user``.

    ``namespace`` is a namespace's name (``None`` and ``""`` are ``"default"``), not a manager:
    anything else is refused with ``InvalidNameError``; an unknown ``position`` with
    ``InvalidArgumentError``.
    """

    namespace: str = attrs.field(converter=check_namespace)
    position: InjectionPosition = attrs.field(validator=_check_position)
    content: tuple[ContentBlock, ...] = attrs.field(converter=_content_tuple)


@attrs.frozen(slots=True)
class MessageInjection:
    """A message placed as the newest entry of one compile, counted against its budget. Its
    ``participant`` is checked like a stored message's."""

    participant: str = attrs.field(validator=_check_participant)
    content: tuple[ContentBlock, ...] = attrs.field(converter=_content_tuple)


def _checked(items: object, kind: type[Injection] | type[MessageInjection], name: str) -> tuple[Any, ...]:
    if isinstance(items, (str, bytes, Injection, MessageInjection)) or not isinstance(items, Sequence):
        raise ArgumentTypeError(name, f"must be a list of {kind.__name__}, not {type(items).__name__}")
    for index, item in enumerate(items):
        if not isinstance(item, kind):
            raise MalformedContentError(f"{name}[{index}]", f"not {kind.__name__}: {type(item).__name__}")
        check_content(item.content, path=f"{name}[{index}].content", allow_audience=False)
        if not item.content:
            raise MalformedContentError(f"{name}[{index}].content", "an injection needs content: no empty message is compiled")
    return tuple(items)


def check_injections(
    injections: Sequence[Injection], message_injections: Sequence[MessageInjection]
) -> tuple[tuple[Injection, ...], tuple[MessageInjection, ...]]:
    """Refuse an audience anywhere in a compile's injections (a compile is for one reader), or an injection with no
    content, naming the place."""
    return _checked(injections, Injection, "injections"), _checked(message_injections, MessageInjection, "message_injections")


def check_budget(max_tokens: object, reserve_for_response: object) -> None:
    """Refuse a compile's or preview's budget arguments unless each is an int of at least 0:
    :class:`ArgumentTypeError` for another type, :class:`InvalidArgumentError` for a negative
    value (both are ``ValueError``), naming the argument. The one place these are checked."""
    for name, value in (("max_tokens", max_tokens), ("reserve_for_response", reserve_for_response)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ArgumentTypeError(name, f"must be an int of at least 0, not {type(value).__name__}")
        if value < 0:
            raise InvalidArgumentError(name, f"must be an int of at least 0, got {value}")


@attrs.frozen(slots=True)
class SelectOptions:
    """What a compile asks of ``select`` beyond the budget."""

    preview: bool = False
    max_tokens: int = 100_000
    reserve_for_response: int = 4_000
    message_injections: tuple[MessageInjection, ...] = ()


@attrs.frozen(slots=True)
class Selection:
    """What ``select`` returns: compiled messages with one source entry each, and the ids of
    raw view messages the compile does not hold whole (truncated or repaired)."""

    messages: tuple[CompiledMessage, ...] = attrs.field(default=(), converter=_compiled_messages)
    sources: tuple[SourceEntry, ...] = attrs.field(default=(), converter=_source_entries)
    incomplete: frozenset[str] = attrs.field(default=frozenset(), converter=_id_set)

    def __attrs_post_init__(self) -> None:
        if len(self.messages) != len(self.sources):
            raise ValueError("a Selection needs exactly one source entry per compiled message")


#: The tail of the key under which a namespace records the strategy it runs (``<namespace>/strategy``,
#: ``strategies._recorded``). The namespace's other own records (reader, floor, lease, context
#: log) and the rule that no strategy key spells one belong to the actors layer
#: (``actors._records``), which hands the rule to every :class:`StrategyState` it makes.
STRATEGY_KEY: Final = "strategy"


class RecordKeys(Protocol):
    """The rule that keeps a namespace's own records apart from its strategy's records, as the
    runtime hands it to a :class:`StrategyState`."""

    def strategy_key(self, namespace: str, key: object) -> str:
        """The full key of a strategy's record ``key`` in ``namespace``; refuses, with
        ``InvalidArgumentError`` at ``key``, one that is no non-empty string or that would spell
        a namespace's own record."""
        ...

    def is_own_record(self, key: str) -> bool:
        """Whether the full key ``key`` is a namespace's own record (no strategy reads it)."""
        ...


class WrittenLog(Protocol):
    """The keys written under a namespace, as the runtime hands them to a
    :class:`StrategyState` (``actors/_written.py``)."""

    @property
    def revision(self) -> int:
        """How many keys were written since the namespace's actor started."""
        ...

    def since(self, revision: int) -> tuple[str, ...]:
        """The keys written since ``revision``, oldest first (see
        :meth:`StrategyState.written_since`)."""
        ...


class StrategyState:
    """A namespace's strategy state records on one branch (``ctx.state``).

    Keys are relative to the namespace (``autobiographical/chunk/12`` is stored as
    ``<namespace>/autobiographical/chunk/12``). Values are JSON. Every write is a state record
    that raises the branch sequence by one. The namespace's reader record, narrowing floor and
    context log are not reachable through here: the runtime, which makes every ``StrategyState``,
    hands it the rule that keeps them apart as ``keys`` (a :class:`RecordKeys`).

    It reads through ``store``, a store's reads (a :class:`~asides.lowlevel.StoreReader` will
    do), and writes only through ``writer``: the runtime's is the namespace actor, so no write
    passes the actor's claim and floor. Made with no writer, it reads only, and a write is
    refused (``InvalidArgumentError``) after its keys are checked.
    """

    def __init__(
        self,
        store: StateReads,
        branch: str,
        namespace: str,
        *,
        keys: RecordKeys,
        written: Callable[[], WrittenLog] | None = None,
        read_only: bool = False,
        writer: Callable[[Mapping[str, Any]], Awaitable[None]] | None = None,
        report: Callable[[str, str], None] | None = None,
    ) -> None:
        self._store = store
        self._branch = branch
        self._namespace = namespace
        self._keys = keys
        self._prefix = f"{namespace}/"
        self._written = written
        self._read_only = read_only
        self._writer = writer
        self._report = report

    @property
    def read_only(self) -> bool:
        """True during a preview: a preview writes nothing."""
        return self._read_only

    def _key(self, key: str) -> str:
        # ``agents/context`` + ``5`` would be context entry 5 of namespace ``agents``: no strategy
        # key may spell a namespace's own record, in any namespace (``RecordKeys``).
        return self._keys.strategy_key(self._namespace, key)

    def get(self, key: str, default: Any = None) -> Any:
        """The record under ``key``; ``default`` when absent; ``UNREADABLE`` when its JSON is
        broken (report it and read it fail-closed)."""
        value = self._store.get_state(self._branch, self._key(key), MISSING)
        return default if value is MISSING else value

    def items(self, prefix: str = "") -> dict[str, Any]:
        """``{key: value}`` for every record whose key starts with ``prefix``; never a
        namespace's own record (this one's or a nested namespace's reader, floor, context log:
        no key :meth:`get` may read)."""
        full = self._prefix + prefix
        cut = len(self._prefix)
        return {k[cut:]: v for k, v in self._store.state_items(self._branch, full).items() if not self._keys.is_own_record(k)}

    def keys(self, prefix: str = "") -> list[str]:
        """The keys :meth:`items` would give, sorted, without reading a value."""
        full = self._prefix + prefix
        cut = len(self._prefix)
        listed = getattr(self._store, "state_keys", None)
        found = listed(self._branch, full) if listed is not None else sorted(self._store.state_items(self._branch, full))
        return [k[cut:] for k in found if not self._keys.is_own_record(k)]

    def keys_holding(self, keys: Iterable[str], words: Sequence[str]) -> list[str]:
        """Those of ``keys`` (in their order) that have a record whose value may hold every one of
        ``words`` (case-folded, as a search's words): a superset, narrowed by the store where it
        can without reading the values it leaves out; every key that has a record otherwise."""
        full = {self._key(key): key for key in keys}
        narrow = getattr(self._store, "state_keys_holding", None)
        if narrow is None:
            present = self.get_many(list(full.values()))
            return [key for key in full.values() if key in present]
        return [full[k] for k in narrow(self._branch, list(full), words)]

    def keys_matching(self, prefix: str, words: Sequence[str]) -> list[str] | None:
        """The keys :meth:`keys` would give under ``prefix`` whose record may hold every one of
        ``words`` (case-folded, as a search's words; a superset), sorted, found by the store's
        search index at the cost of the records that may hold them, without listing the keys;
        ``None`` when the store cannot answer so (list the keys and narrow them with
        :meth:`keys_holding` then)."""
        find = getattr(self._store, "state_keys_matching", None)
        found = find(self._branch, self._prefix + prefix, words) if find is not None else None
        if found is None:
            return None
        cut = len(self._prefix)
        return [k[cut:] for k in found if not self._keys.is_own_record(k)]

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        """``{key: value}`` for each of ``keys`` that has a record (the others left out), in one
        read; a key that spells a namespace's own record is refused, as by :meth:`get`."""
        full = {self._key(key): key for key in keys}
        read = getattr(self._store, "get_states", None)
        if read is None:
            values = {k: self._store.get_state(self._branch, k, MISSING) for k in full}
            return {full[k]: v for k, v in values.items() if v is not MISSING}
        return {full[k]: v for k, v in read(self._branch, list(full)).items()}

    def sequences(self, prefix: str = "") -> dict[str, int] | None:
        """``{key: sequence}`` for the keys :meth:`keys` would give: the branch sequence each
        one's record was written at (records written together count up in the order given);
        reads no value. ``None`` when the store's reads do not say."""
        read = getattr(self._store, "state_sequences", None)
        if read is None:
            return None
        cut = len(self._prefix)
        found = read(self._branch, self._prefix + prefix)
        return {k[cut:]: seq for k, seq in found.items() if not self._keys.is_own_record(k)}

    def sequences_after(self, prefix: str, sequence: int) -> tuple[int, dict[str, int]] | None:
        """How many of the keys :meth:`sequences` would give have their record from at most
        ``sequence``, and ``{key: sequence}`` of those written after it, without a row for
        each of the others where the store can count them; ``None`` when the store's reads do
        not say. The count may include a namespace's own record under ``prefix`` (a nested
        namespace's reader record, say), which no key of the answer is."""
        read = getattr(self._store, "state_sequences_after", None)
        if read is None:
            return None
        cut = len(self._prefix)
        count, after = read(self._branch, self._prefix + prefix, sequence)
        return count, {k[cut:]: seq for k, seq in after.items() if not self._keys.is_own_record(k)}

    @property
    def erasure_count(self) -> int | None:
        """How many erasures the store holds (each may have overwritten records of this
        namespace with ``None``); ``None`` when the store's reads do not say."""
        read = getattr(self._store, "erasures", None)
        return None if read is None else len(read())

    async def set(self, key: str, value: Any) -> None:
        """Write one record (durable on return)."""
        await self.set_many({key: value})

    async def set_many(self, records: Mapping[str, Any]) -> None:
        """Write several records in one commit; each raises the branch sequence by one. A key
        that spells a namespace's own record is refused before anything is written, and so is
        every write of a state made with no writer."""
        if self._read_only:
            raise RuntimeError("a preview writes nothing: select must not write state when options.preview is true")
        if not records:
            return
        for key in records:
            self._key(key)  # refuses a key that ends like a namespace's own record
        if self._writer is None:
            raise InvalidArgumentError(
                f"the strategy state of namespace {self._namespace!r} on branch {self._branch!r}",
                "it was made with no writer, so it reads only; a strategy writes through the context the runtime hands it",
            )
        await self._writer(dict(records))

    def report(self, key: str, problem: str) -> None:
        """Report a malformed record under ``key`` (logged once, with its record id, by the
        runtime's state; logged as is by one made with no ``report``)."""
        full = self._key(key)
        if self._report is not None:
            self._report(full, problem)
        else:
            log.warning("%s on branch %r holds malformed data, read fail-closed: %s", full, self._branch, problem)

    @property
    def revision(self) -> int:
        """How many records were written under this namespace on this branch since the
        namespace's actor started; use with :meth:`written_since` to catch up on writes made by
        another manager's strategy."""
        return self._written().revision if self._written else 0

    def written_since(self, revision: int) -> tuple[str, ...]:
        """Keys (relative) written since ``revision``, oldest first. For a revision older than
        the newest keys the actor holds (1,024 at least), every key of the namespace's records
        written since the actor started, each once: that may hold keys written before
        ``revision`` too, which a strategy reading each key's current value takes in alike."""
        if self._written is None:
            return ()
        return self._written().since(revision)


@attrs.frozen(slots=True)
class StrategyContext:
    """What a strategy is handed on every call.

    ``view`` is the reader's view of the branch (every read checks first that the namespace is
    still claimed for this manager's reader);
    ``model`` the model to compress with, or ``None``; ``state`` the namespace's state records on
    this branch; ``reader`` the reader the manager compiles for (``None``: no reader).
    """

    view: MessageView
    model: Model | None
    namespace: str
    branch: str
    state: StrategyState
    reader: str | None = None
    preview: bool = False
    _mark: Callable[[int], Awaitable[None]] | None = attrs.field(default=None, alias="mark")
    _in_flight: Callable[[], bool] | None = attrs.field(default=None, alias="in_flight")

    async def mark_compression_read(self, sequence: int) -> None:
        """Raise the namespace's narrowing floor to ``sequence`` before a compression read
        (the newest message compression may have read). Never lowers it; writes nothing for a manager with no reader. Raises
        ``FloorUnavailableError`` when the raise cannot be recorded: then make no request."""
        if self._mark is not None:
            await self._mark(sequence)

    @property
    def compression_in_flight(self) -> bool:
        """Whether a compression request of this namespace and branch is out (any manager)."""
        return bool(self._in_flight and self._in_flight())


@runtime_checkable
class ContextStrategy(Protocol):
    """What the runtime needs of a strategy (see the module docstring)."""

    name: str
    marks_compression_reads: bool

    async def initialize(self, ctx: StrategyContext) -> None: ...

    async def on_new_message(self, message: Message, ctx: StrategyContext) -> None: ...

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection: ...

    async def tick(self, ctx: StrategyContext) -> bool: ...

    def is_ready(self) -> bool: ...


#: What every manager calls on its strategy, so what an object must have to be one.
_STRATEGY_METHODS = ("initialize", "on_new_message", "select")


def check_strategy(strategy: object, path: str = "strategy") -> None:
    """Refuse, with ``ArgumentTypeError`` at ``path``, what cannot be a strategy: ``None`` and
    any object without the ``ContextStrategy`` methods every manager calls (``initialize``,
    ``on_new_message``, ``select``), before anything is opened or written."""
    if strategy is None:
        raise ArgumentTypeError(path, "a manager needs a strategy, e.g. PassthroughStrategy()")
    missing = [name for name in _STRATEGY_METHODS if not callable(getattr(strategy, name, None))]
    if missing:
        raise ArgumentTypeError(path, f"a {type(strategy).__name__} is no strategy: it has no {', '.join(missing)} (see ContextStrategy)")


def check_marks_reads(reader: str | None, strategy: ContextStrategy, action: str) -> None:
    """Refuse (``StrategyCapabilityError``) a strategy that does not say it marks its compression
    reads for a manager compiling for ``reader`` (N7), before it is handed anything."""
    if reader is not None and not getattr(strategy, "marks_compression_reads", False):
        raise StrategyCapabilityError(
            f"{action} was refused: strategy {getattr(strategy, 'name', type(strategy).__name__)!r} does not say it "
            f"marks its compression reads (marks_compression_reads), and this manager compiles for reader "
            f"{reader!r}; an edit could then hide a block compression already read"
        )
