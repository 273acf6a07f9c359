"""The namespace actor: one task per (branch, namespace).

It owns the namespace's reader claim (``<namespace>/reader``) and narrowing floor
(``<namespace>/narrowing-floor``) on its branch, serialises everything that touches the
namespace (claims, strategy starts, compiles, edits, floor raises, units of compression) through
its inbox, and delivers new messages to the strategies of the managers attached to it.

Claims are decided from the actor's in-memory record, loaded once from the store: a claim is a
check-and-set with no suspension point between the check and the set, so of any number of racing
opens exactly one claims an unclaimed namespace; the record write follows (one state write). A
claim change bumps the claim generation and is reported to every attached manager, whose drains
stop if the manager no longer may work there (SPEC R10).

The reader check of SPEC R5 (:meth:`NamespaceActor.check`) is an in-memory comparison, never a
database query.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import attrs

from ..store._model import MISSING, UNREADABLE
from ..store._sqlite import SqliteStore
from ..strategies._errors import FloorUnavailableError
from ._errors import ReaderClaimError, ReaderRecordError
from ._protocol import InboxItem, MessageChanged, MessagesAdded, TurnRequest

if TYPE_CHECKING:
    from ._manager import ContextManager

__all__ = ["NamespaceActor", "UnreadableRecord", "normalise_namespace", "READER_KEY", "FLOOR_KEY"]

log = logging.getLogger("asides.actors")
T = TypeVar("T")

READER_KEY = "reader"
FLOOR_KEY = "narrowing-floor"


def normalise_namespace(namespace: str | None) -> str:
    """``None``, ``""`` and ``"default"`` are one namespace, ``"default"``."""
    if namespace is None or namespace == "":
        return "default"
    if not isinstance(namespace, str):
        raise TypeError(f"a namespace is a string, not {type(namespace).__name__}")
    return namespace


@attrs.frozen
class UnreadableRecord:
    """A reader record that is not a reader's name (corrupt or foreign data)."""

    value: Any


class NamespaceActor:
    """Owner of one namespace's reader claim and narrowing floor on one branch."""

    def __init__(self, store: SqliteStore, branch: str, namespace: str) -> None:
        self.store = store
        self.branch = branch
        self.namespace = namespace
        self.reader_key = f"{namespace}/{READER_KEY}"
        self.floor_key = f"{namespace}/{FLOOR_KEY}"
        self._send, self._receive = anyio.create_memory_object_stream[InboxItem](math.inf)
        self.record: str | None | UnreadableRecord = self._load_record()
        self.floor: int | object = self._load_floor()
        self.generation = 0
        self.managers: list[ContextManager] = []
        #: Strategy-state keys (relative) written under this namespace on this branch, in order.
        self.written: list[str] = []
        #: Compression requests of this namespace and branch now out (any manager).
        self.requests_out = 0
        self._holder: int | None = None
        self._current: TurnRequest | None = None
        self._task_id: int | None = None
        self._context_next: int | None = None

    def __repr__(self) -> str:
        return f"<NamespaceActor {self.namespace!r} on {self.branch!r} record={self.record!r}>"

    # -- records -------------------------------------------------------------------------------

    def _load_record(self) -> str | None | UnreadableRecord:
        value = self.store.model.get_state(self.branch, self.reader_key)
        if value is MISSING:
            return None
        if isinstance(value, str) and value:
            return value
        self._report("reader record", value)
        return UnreadableRecord(None if value is UNREADABLE else value)

    def _load_floor(self) -> int | object:
        value = self.store.model.get_state(self.branch, self.floor_key)
        if value is MISSING:
            return 0
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        self._report("narrowing floor", value)
        return UNREADABLE

    def _report(self, what: str, value: object) -> None:
        key = self.reader_key if what == "reader record" else self.floor_key
        model = self.store.model
        model.report(
            model.state_record_id(self.branch, key),
            f"the {what} of namespace {self.namespace!r} on branch {self.branch!r} is {value!r}, which asides cannot read",
        )

    def resolve_reader(self, requested: str | None, action: str) -> str | None:
        """The reader a manager opened with ``requested`` compiles for here (SPEC A1, R1, R3, R7),
        or an error naming both readers. Writes nothing."""
        record = self.record
        if isinstance(record, UnreadableRecord):
            raise ReaderRecordError(namespace=self.namespace, branch=self.branch, record=record.value, action=action)
        if record is None:
            return requested
        if requested is None or requested == record:
            return record
        raise ReaderClaimError(namespace=self.namespace, branch=self.branch, recorded=record, requested=requested, action=action)

    def check(self, reader: str | None, action: str) -> None:
        """SPEC R5: refuse a manager compiling for ``reader`` when the record names another reader,
        or any reader while ``reader`` is ``None``, or is unreadable. In-memory only."""
        record = self.record
        if record is None or record == reader:
            return
        if isinstance(record, UnreadableRecord):
            raise ReaderRecordError(namespace=self.namespace, branch=self.branch, record=record.value, action=action)
        raise ReaderClaimError(namespace=self.namespace, branch=self.branch, recorded=record, requested=reader, action=action)

    def may_work(self, reader: str | None) -> bool:
        record = self.record
        return record is None or record == reader

    def claim_now(self, reader: str, action: str) -> bool:
        """Check-and-set the claim for ``reader`` (no suspension point). Returns whether the
        caller must write the record; raises when another reader holds the namespace."""
        if self.record is None:
            self.record = reader
            self.generation += 1
            for manager in list(self.managers):
                manager._on_claim_changed(self)
            return True
        self.resolve_reader(reader, action)
        return False

    async def claim(self, reader: str, action: str) -> bool:
        """Claim the namespace for ``reader`` if unclaimed (one state write, SPEC R1); refuse if
        another reader holds it. Returns whether this call wrote the claim."""
        if self.claim_now(reader, action):
            await self.store.set_state(self.branch, self.reader_key, reader)
            return True
        return False

    async def raise_floor(self, sequence: int, reader: str | None) -> None:
        """SPEC N2: raise the narrowing floor to ``sequence`` before a compression read. Never
        lowers it; a manager with no reader writes nothing; each rise is one state write."""
        if reader is None:
            return
        if not isinstance(sequence, int) or isinstance(sequence, bool):
            raise TypeError("mark_compression_read takes a message sequence (an int)")
        current = self.floor
        if current is UNREADABLE:
            raise FloorUnavailableError(
                f"the narrowing floor of namespace {self.namespace!r} on branch {self.branch!r} cannot be read, "
                "so no compression read may be recorded; repair the record"
            )
        if sequence <= current:  # type: ignore[operator]
            return
        try:
            await self.store.set_state(self.branch, self.floor_key, sequence)
        except Exception as exc:
            raise FloorUnavailableError(
                f"the narrowing floor of namespace {self.namespace!r} on branch {self.branch!r} could not be "
                f"raised to {sequence} ({exc!r}); no compression read may happen until it can"
            ) from exc
        if isinstance(self.floor, int) and sequence > self.floor:
            self.floor = sequence

    def note_written(self, keys: tuple[str, ...]) -> None:
        self.written.extend(keys)
        for manager in list(self.managers):
            manager._nudge()

    def context_next(self) -> int:
        """The index the next context-log entry of this namespace on this branch takes."""
        if self._context_next is None:
            prefix = f"{self.namespace}/context/"
            indexes = [int(k[len(prefix) :]) for k in self.store.model.state_keys(self.branch, prefix) if k[len(prefix) :].isdigit()]
            self._context_next = max(indexes, default=-1) + 1
        index = self._context_next
        self._context_next += 1
        return index

    # -- turns ---------------------------------------------------------------------------------

    def holds_turn(self) -> bool:
        """Whether the current task holds this actor's turn."""
        return self._holder is not None and self._holder == anyio.get_current_task().id

    async def _acquire(self) -> None:
        me = anyio.get_current_task().id
        request = TurnRequest()
        self._send.send_nowait(request)
        try:
            await request.granted.wait()
        except BaseException:
            request.abandoned = True
            if request.granted.is_set():
                request.released.set()
            raise
        self._holder = me
        self._current = request

    def _release(self) -> None:
        request = self._current
        if request is not None and self._holder == anyio.get_current_task().id:
            self._holder = None
            self._current = None
            request.released.set()

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        """Hold the actor's turn for the block (re-entrant within one task)."""
        if self.holds_turn():
            yield
            return
        await self._acquire()
        try:
            yield
        finally:
            self._release()

    async def outside_turn(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn`` with the turn released (a model request, which may take minutes), then take
        the turn back before returning. Outside any lent turn it just runs ``fn``."""
        if self._current is None or not self.holds_turn():
            return await fn()
        self._release()
        try:
            return await fn()
        finally:
            await self._acquire()

    # -- inbox ---------------------------------------------------------------------------------

    def post(self, item: InboxItem) -> None:
        """Queue an item (never blocks)."""
        try:
            self._send.send_nowait(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def run(self) -> None:
        """The actor's loop: one inbox item at a time, until the runtime closes."""
        self._task_id = anyio.get_current_task().id
        async with self._receive:
            async for item in self._receive:
                try:
                    if isinstance(item, TurnRequest):
                        if item.abandoned:
                            continue
                        item.granted.set()
                        await item.released.wait()
                    elif isinstance(item, MessagesAdded):
                        await self._as_actor(lambda m=item.messages: self._deliver(m))
                    elif isinstance(item, MessageChanged):
                        for manager in list(self.managers):
                            manager._nudge()
                except Exception:  # pragma: no cover - deliveries log their own errors
                    log.exception("namespace actor %r on %r: an inbox item failed", self.namespace, self.branch)

    async def _as_actor(self, fn: Callable[[], Awaitable[None]]) -> None:
        self._holder = self._task_id
        try:
            await fn()
        finally:
            self._holder = None

    async def _deliver(self, messages: tuple[Any, ...]) -> None:
        for manager in list(self.managers):
            await manager._deliver(messages)

    def close(self) -> None:
        self._send.close()
