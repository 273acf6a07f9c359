"""The namespace actor: one per (branch, namespace).

It owns the namespace's reader claim (``<namespace>/reader``), its narrowing floor
(``<namespace>/narrowing-floor``), its compression lease (a session lock of a shared
store, written nowhere: see :mod:`._lease`) and its strategy state on its branch. It serves one request
(:mod:`._protocol`) at a time, so nothing else touches the namespace meanwhile:

* **Commands** (:meth:`NamespaceActor.execute`): opens (claims and strategy starts), compiles and
  previews, edits, context-log entries, moves, the steps of a unit of compression and of a
  head-window reset. The actor runs their work in its own task and replies with the outcome, so
  every strategy call serving them (``initialize``, ``on_new_message`` in a catch-up, ``select``,
  the built-in strategies' planning and commit steps) runs in the actor's task, whichever
  manager or task asked.
* **Store events** reach it as commands too (:meth:`NamespaceActor.store_changed`): a reader
  record or a floor another process wrote, and the strategy state it wrote. Until the actor has
  followed one, a check made outside its task reads the record as the store holds it.
* **A model request never runs in the actor's task.** A unit of a strategy that returns its
  units as effects (the built-in compressing strategies) is two commands: one plans it and
  performs the plan, one judges the answer and writes what it makes; the request goes out
  between them from the drain's own task (``actors/_background.py``). A strategy that runs its
  units itself through SPEC 3.3's ``tick(ctx)`` runs its ``tick`` in the drain's task: a command
  begins the unit, and each of its context calls that changes what the actor owns
  (``mark_compression_read``, state writes, the model request's steps) is a command. So the
  namespace keeps serving compiles, writes, edits and opens while a request is out.

Only a command's work changes the claim, the floor and the strategy state, and the actor checks
that on every such change.

A claim change raises the actor's claim *generation* (:attr:`NamespaceActor.claim_generation`):
a drain started under one generation stops when it changes, and an answer it gets afterwards is
thrown away. The reader check of every call (:meth:`NamespaceActor.check`) is an in-memory
comparison, never a database query.

An actor is not on the write path: a write raises its branch's signal and nothing else, so an
actor with no manager attached costs nothing.

**Its life.** The runtime starts an actor when a manager first needs its namespace, and the actor
ends by itself once nothing uses it: no manager bound to it (:meth:`NamespaceActor.attach`), no
drain running, no model request out and no command running or waiting. Its task then ends and its
memory goes; the runtime forgets it in the same step, with no checkpoint between, so an open
that comes later starts a new actor. What the actor holds is read back from the store when it
starts again: the reader claim, the floor and (by the strategies) the strategy state. Anything
that keeps an actor across an ``await`` holds it with :meth:`NamespaceActor.attach` first.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import anyio
import attrs

from ..store._errors import ArgumentTypeError
from ..store._model import MISSING, UNREADABLE
from ..store._names import check_namespace
from ..strategies._errors import FloorUnavailableError
from ._errors import ManagerClosedError, ReaderClaimError, ReaderRecordError
from ._lease import CompressionLease, LeaseLost, current_task_id
from ._protocol import Signal, StoreChanged, TurnRequest, Wake
from ._records import FLOOR_KEY, READER_KEY, context_index, context_prefix, is_floor_record, is_reader_record, strategy_state_key

if TYPE_CHECKING:
    from ..store._store import Store

__all__ = ["ActorStatistics", "NamespaceActor", "UnreadableRecord", "normalise_namespace"]

log = logging.getLogger("asides.actors")
T = TypeVar("T")


def normalise_namespace(namespace: str | None) -> str:
    """``None``, ``""`` and ``"default"`` are one namespace, ``"default"``; any other must be a
    well-formed name (``InvalidNameError`` at ``namespace`` otherwise)."""
    return check_namespace(namespace)


class _Covered(Exception):
    """The store already holds what a claim or floor raise would write (another process wrote
    it): the write is skipped, as a claim of a claimed namespace or a floor that never lowers."""


@attrs.frozen
class ActorStatistics:
    """What one namespace actor holds and counted, as ``NamespaceActor.statistics()`` returns
    it (``Runtime.statistics()`` lists one per running actor): a snapshot, which does not change
    as the actor goes on. For measurements and tests; counts start at 0 when the actor starts,
    and go with it when it ends."""

    branch: str
    namespace: str
    #: Managers bound to the actor, and callers holding it across an ``await``.
    attached: int
    #: Drains of the namespace on the branch running in this process (any manager).
    drains: int
    #: Compression requests of the namespace on the branch out to a model now (any manager).
    requests_out: int
    #: Commands the actor ran in its own task since it started, one turn each (work that a
    #: command's work sends as a command runs in that turn and is not counted again).
    commands_run: int
    #: Raised by one on every change of the namespace's reader claim.
    claim_generation: int
    #: Strategy-state records of the namespace that other processes wrote and the actor followed.
    written_elsewhere: int
    #: Takes of the compression lease refused because another process held it (a shared store).
    lease_refusals: int
    #: Whether the actor has ended (it runs no command any more).
    ended: bool


@attrs.frozen
class UnreadableRecord:
    """A reader record that is not a reader's name (corrupt or foreign data)."""

    value: Any


class NamespaceActor:
    """Owner of one namespace's reader claim, narrowing floor and strategy state on one branch."""

    def __init__(
        self,
        store: Store,
        branch: str,
        namespace: str,
        *,
        on_end: Callable[[NamespaceActor], None] | None = None,
    ) -> None:
        self.store = store
        self.branch = branch
        self.namespace = namespace
        self.reader_key = f"{namespace}/{READER_KEY}"
        self.floor_key = f"{namespace}/{FLOOR_KEY}"
        #: The compression lease (a session lock of a shared store; nothing on a store file).
        self._lease = CompressionLease(store, branch, namespace)
        #: Drains of this namespace and branch running in this process (any manager).
        self._drains = 0
        self._users = 0  # managers bound to the actor, and callers holding it across an await
        self._on_end = on_end  # the runtime forgets the actor (called once, when it ends)
        #: Strategy-state records of this namespace that other processes wrote, followed so far.
        self._written_elsewhere = 0
        #: Store changes told (:meth:`store_changed`) and not yet followed in the actor's task:
        #: ``None`` for the reader record or floor, else a strategy-state key another process wrote.
        self._changes: list[str | None] = []
        self._follow_sent = False  # a StoreChanged command is on its way
        self._send, self._receive = anyio.create_memory_object_stream[TurnRequest](math.inf)
        self._record: str | None | UnreadableRecord = self._load_record()
        self._floor: int | object = self._load_floor()
        self._claims = Signal()
        #: Strategy-state keys (relative) written under this namespace on this branch, in order.
        self._written: list[str] = []
        #: Compression requests of this namespace and branch now out (any manager).
        self._requests_out = 0
        self._holder: int | None = None
        self._current: TurnRequest | None = None
        self._stopped = False  # the loop ended: no command is run any more
        self._context_next: int | None = None
        self._commands_run = 0  # for statistics()

    # -- its life (see the module docstring) -----------------------------------------------------

    @property
    def ended(self) -> bool:
        """Whether the actor's loop has ended (it runs no command any more)."""
        return self._stopped

    @property
    def requests_out(self) -> int:
        """Compression requests of this namespace and branch now out (any manager)."""
        return self._requests_out

    @property
    def drains(self) -> int:
        """Drains of this namespace and branch running in this process (any manager)."""
        return self._drains

    def statistics(self) -> ActorStatistics:
        """What the actor holds and counted now, as one snapshot (:class:`ActorStatistics`).
        Read from any task, in its turn or not; changes nothing (a store change still to be
        followed is not counted in ``written_elsewhere`` until the actor follows it)."""
        return ActorStatistics(
            branch=self.branch,
            namespace=self.namespace,
            attached=self._users,
            drains=self._drains,
            requests_out=self._requests_out,
            commands_run=self._commands_run,
            claim_generation=self._claims.version,
            written_elsewhere=self._written_elsewhere,
            lease_refusals=self._lease.refusals,
            ended=self._stopped,
        )

    def attach(self) -> None:
        """Keep the actor: a manager binds to it, or a caller holds it across an ``await``.
        Each call is undone by one :meth:`detach`."""
        if self._stopped:
            raise AssertionError(f"{self!r} was attached after it ended; ask the runtime for the namespace's actor again")
        self._users += 1

    def detach(self) -> None:
        """Undo one :meth:`attach`; the actor ends once nothing uses it."""
        self._users -= 1
        self._wake_if_idle()

    def drain_began(self) -> None:
        """A drain of this namespace started: the actor stays until it ends (:meth:`drain_finished`)."""
        self._drains += 1

    def drain_finished(self) -> None:
        self._drains -= 1
        self._release_lease_if_unused()
        self._wake_if_idle()

    def request_began(self) -> None:
        """A compression request of this namespace left for the model (see :attr:`requests_out`)."""
        self._requests_out += 1

    def request_finished(self) -> None:
        self._requests_out -= 1
        self._release_lease_if_unused()
        self._wake_if_idle()

    def _release_lease_if_unused(self) -> None:
        """Give the compression lease up once no drain of the namespace runs here, no request is
        out and no unit is at work (a drain stopped by a claim change or a close, once the
        request it left out is back; a host's own ``tick()``), so another process may compress
        the namespace: whatever would use it next takes it again."""
        if self._drains == 0 and self._requests_out == 0 and not self._lease.busy:
            self._lease.release()

    def _idle(self) -> bool:
        return (
            self._users == 0
            and self._drains == 0
            and self._requests_out == 0
            and self._current is None
            and self._receive.statistics().current_buffer_used == 0
        )

    def _wake_if_idle(self) -> None:
        """Make the loop look whether it may end (it looks between turns, and when woken)."""
        if self._users == 0 and self._drains == 0 and self._requests_out == 0 and not self._stopped:
            try:
                self._send.send_nowait(Wake())
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # closing: the loop ends anyway

    def _end_if_idle(self) -> bool:
        """End the actor if nothing uses it: from here on it runs nothing, and the runtime
        forgets it. No checkpoint between the check and the end."""
        if not self._idle():
            return False
        self._stop()
        return True

    def _stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._send.close()
        self._lease.release()  # nothing of this process uses the namespace now: another may compress it
        if self._on_end is not None:
            self._on_end(self)

    def __repr__(self) -> str:
        return f"<NamespaceActor {self.namespace!r} on {self.branch!r} record={self._record!r}>"

    # -- what the actor owns (read by anyone; changed only in a turn) ---------------------------

    @property
    def record(self) -> str | None | UnreadableRecord:
        """The reader the namespace records on this branch, ``None``, or an unreadable record.
        Read outside the actor's task while a store change is still to be followed, it is the
        record as the store holds it (what following the change makes it)."""
        if self._changes and not self.holds_turn():
            stored = self._load_record()
            if stored is not None:
                return stored
        return self._record

    @property
    def floor(self) -> int | object:
        """The narrowing floor (an int), or ``UNREADABLE``; read as :attr:`record` is."""
        if self._changes and not self.holds_turn():
            stored = self._load_floor()
            if isinstance(stored, int) and isinstance(self._floor, int) and stored > self._floor:
                return stored
        return self._floor

    @property
    def written_elsewhere(self) -> int:
        """How many strategy-state records of this namespace other processes wrote, followed (read
        in the actor's turn, it first follows what the store told of since)."""
        if self._changes and self.holds_turn():
            self.follow_store()
        return self._written_elsewhere

    @property
    def claim_generation(self) -> int:
        """Raised by one on every claim change."""
        return self._claims.version

    async def wait_claim_change(self, generation: int) -> None:
        """Return once the claim generation is past ``generation``."""
        await self._claims.wait_beyond(generation)

    @property
    def written(self) -> list[str]:
        """Strategy-state keys (relative to the namespace) written since the actor started, here
        or (on a shared store) by another process, in the order this process learnt of them. Read
        in the actor's turn, it first follows what the store told of since."""
        if self._changes and self.holds_turn():
            self.follow_store()
        return self._written

    def store_changed(self, written_elsewhere: str | None = None) -> None:
        """The store holds a write touching this namespace: its reader record or floor (on a
        shared store another process may have written them), or, with ``written_elsewhere``, a
        strategy-state record of it that another process committed (the key relative to the
        namespace). The actor follows it in its own task (:meth:`follow_store`): at the start of
        its next command, or, when none comes, in a :class:`StoreChanged` command sent now
        without waiting. Nothing is kept once the actor ended (a new one reads the store)."""
        if self._stopped:
            return
        self._changes.append(written_elsewhere)
        if self._follow_sent:
            return
        request = StoreChanged()
        request.work = self._follow_sent_changes
        try:
            self._send.send_nowait(request)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # closing: nothing follows the store any more
        self._follow_sent = True

    async def _follow_sent_changes(self) -> None:
        self._follow_sent = False
        self.follow_store()

    def follow_store(self) -> None:
        """In the actor's turn: follow every change the store told of (:meth:`store_changed`)
        and not yet followed: the reader record and the floor as the store holds them, and the
        records another process wrote listed in :attr:`written`, so that this process's
        strategies take them in before they next compile or compress, as they take in what
        another manager here wrote."""
        self._require_turn("following the store")
        changes, self._changes = self._changes, []
        records = False
        for key in changes:
            if key is None:
                records = True
            else:
                self._written.append(key)
                self._written_elsewhere += 1
        if records:
            self.adopt_stored_records()

    def _require_turn(self, what: str) -> None:
        if not self.holds_turn():
            raise AssertionError(
                f"{what} of namespace {self.namespace!r} on branch {self.branch!r} outside the namespace actor's turn"
            )

    def _load_record(self) -> str | None | UnreadableRecord:
        value = self.store.model.get_state(self.branch, self.reader_key)
        if value is MISSING:
            return None
        if is_reader_record(value):
            return cast(str, value)
        self._report("reader record", value)
        return UnreadableRecord(None if value is UNREADABLE else value)

    def adopt_stored_records(self) -> None:
        """Follow the reader record and the narrowing floor as the store holds them now (on a
        shared store another process may have written them): a record only appears (a claim of
        this process still being written is kept), a floor only rises. A changed record raises
        the claim generation, as a claim made here does. Called only by the actor's own work: a
        :class:`StoreChanged` command, or the guard of a write it sent, at that write's commit."""
        stored = self._load_record()
        if stored is not None and stored != self._record:
            self._record = stored
            self._claims.raise_()
        floor = self._load_floor()
        if isinstance(floor, int) and isinstance(self._floor, int) and floor > self._floor:
            self._floor = floor

    def _load_floor(self) -> int | object:
        value = self.store.model.get_state(self.branch, self.floor_key)
        if value is MISSING:
            return 0
        if is_floor_record(value):
            return cast(int, value)
        self._report("narrowing floor", value)
        return UNREADABLE

    def _report(self, what: str, value: object) -> None:
        key = self.reader_key if what == "reader record" else self.floor_key
        model = self.store.model
        model.report(
            model.state_record_id(self.branch, key),
            f"the {what} of namespace {self.namespace!r} on branch {self.branch!r} is {value!r}, which asides cannot read",
        )

    # -- checks (in memory) ---------------------------------------------------------------------

    def resolve_reader(self, requested: str | None, action: str) -> str | None:
        """The reader a manager opened with ``requested`` compiles for here, or an error naming
        both readers. Writes nothing."""
        record = self.record
        if isinstance(record, UnreadableRecord):
            raise ReaderRecordError(namespace=self.namespace, branch=self.branch, record=record.value, action=action)
        if record is None:
            return requested
        if requested is None or requested == record:
            return record
        raise ReaderClaimError(namespace=self.namespace, branch=self.branch, recorded=record, requested=requested, action=action)

    def check(self, reader: str | None, action: str) -> None:
        """Refuse a manager compiling for ``reader`` when the record names another reader, or any
        reader while ``reader`` is ``None``, or is unreadable. In memory only."""
        record = self.record
        if record is None or record == reader:
            return
        if isinstance(record, UnreadableRecord):
            raise ReaderRecordError(namespace=self.namespace, branch=self.branch, record=record.value, action=action)
        raise ReaderClaimError(namespace=self.namespace, branch=self.branch, recorded=record, requested=reader, action=action)

    def may_work(self, reader: str | None) -> bool:
        """Whether the record lets a manager compiling for ``reader`` work here."""
        record = self.record
        return record is None or record == reader

    # -- changes (in a turn) --------------------------------------------------------------------

    async def claim(self, reader: str, action: str) -> bool:
        """Claim the namespace for ``reader`` if unclaimed (one state write); refuse if another
        reader holds it. Returns whether this call wrote the claim. On a read-only store the claim
        is kept in memory only (a preview writes nothing). Call it in a turn."""
        self._require_turn("a claim")
        if self._record is not None:
            self.resolve_reader(reader, action)
            return False
        # No checkpoint between the check above and the change below.
        self._record = reader
        self._claims.raise_()
        if self.store.read_only:
            return False

        def still_unclaimed() -> None:  # at commit: on a shared store another process may have claimed it
            stored = self.store.model.get_state(self.branch, self.reader_key)
            if stored is MISSING:
                return
            self.adopt_stored_records()
            self.resolve_reader(reader, action)  # another reader's claim: refused
            raise _Covered  # the same reader's: nothing to write

        try:
            await self.store.set_state(self.branch, self.reader_key, reader, guard=still_unclaimed)
        except _Covered:
            return False
        except BaseException:
            if self.store.model.get_state(self.branch, self.reader_key) is MISSING:
                self._record = None  # not written: the claim is not held
                self._claims.raise_()
            self.adopt_stored_records()
            raise
        return True

    async def raise_floor(self, sequence: int, reader: str | None) -> None:
        """Raise the narrowing floor to ``sequence`` before a compression read. Never lowers it;
        a manager with no reader writes nothing; each rise is one state write. Call it in a turn."""
        if reader is None:
            return
        self._require_turn("a floor raise")
        if not isinstance(sequence, int) or isinstance(sequence, bool):
            raise ArgumentTypeError("sequence", f"mark_compression_read takes a message sequence (an int), not {type(sequence).__name__}")
        current = self._floor
        if not isinstance(current, int):
            raise FloorUnavailableError(
                f"the narrowing floor of namespace {self.namespace!r} on branch {self.branch!r} cannot be read, "
                "so no compression read may be recorded; repair the record"
            )
        if sequence <= current:
            return
        fence = self._lease.fence()

        def still_below() -> None:  # at commit: on a shared store another process may have raised it
            if fence is not None:
                fence()  # a unit's raise, once another process took the lease over: refused
            stored = self.store.model.get_state(self.branch, self.floor_key)
            if is_floor_record(stored) and stored >= sequence:
                raise _Covered

        try:
            await self.store.set_state(self.branch, self.floor_key, sequence, guard=still_below)
        except _Covered:
            self.adopt_stored_records()
            return
        except LeaseLost:
            raise
        except Exception as exc:
            raise FloorUnavailableError(
                f"the narrowing floor of namespace {self.namespace!r} on branch {self.branch!r} could not be "
                f"raised to {sequence} ({exc!r}); no compression read may happen until it can"
            ) from exc
        if isinstance(self._floor, int) and sequence > self._floor:
            self._floor = sequence

    async def write_states(self, records: Mapping[str, Any]) -> None:
        """Write strategy-state records (keys relative to the namespace). Call it in a turn. In
        a unit under the compression lease the write is refused (:class:`LeaseLost`, nothing
        written) when another process took the lease over."""
        self._require_turn("a strategy-state write")
        keyed = {strategy_state_key(self.namespace, k): v for k, v in records.items()}
        await self.store.set_states(self.branch, keyed, guard=self._lease.fence())
        self._written.extend(records)

    # -- the compression lease (see ._lease) ----------------------------------------------------

    async def take_lease(self, retry: float) -> float | None:
        """Take the compression lease, or find it held here already; ``None`` once this process
        holds it, else the seconds until it asks again (another process holds it: compress
        nothing meanwhile; a take refused less than ``retry`` seconds ago is not asked again
        before then). One round trip when it asks the server, none when held; nothing is
        written, and nothing is asked on a store only this process writes. Call it in a turn."""
        self._require_turn("a compression lease")
        return await self._lease.take(retry)

    @property
    def holds_lease(self) -> bool:
        """Whether this process holds the namespace's compression lease (a shared store only)."""
        return self._lease.shared and self._lease.held_here()

    def lease_retry_in(self) -> float | None:
        """Seconds until this process asks for the lease again (it was refused lately), or
        ``None`` when it may ask now."""
        return self._lease.wait()

    async def release_lease_if_idle(self) -> None:
        """Give the compression lease up, if this process holds it and no unit of the namespace
        is at work here (no request out, no fenced unit). Call it in a turn."""
        self._require_turn("a compression lease")
        if self.holds_lease and self._requests_out == 0 and not self._lease.busy:
            self._lease.release()

    async def release_lease(self) -> None:
        """Give the compression lease up, if this process holds it (its last drain of the
        namespace stopped, ``drain()`` is done, a unit failed), so another process may compress
        at once. Writes nothing. Call it in a turn."""
        self._require_turn("a compression lease")
        self._lease.release()

    def fenced(self) -> AbstractContextManager[None]:
        """For the block, this task's strategy-state writes and floor raises carry the lease's
        fence: each is refused at commit (:class:`LeaseLost`) unless the store's connection
        still holds the lease. A unit runs in one such block once it holds the lease."""
        return self._fenced_unit()

    @contextmanager
    def _fenced_unit(self) -> Iterator[None]:
        try:
            with self._lease.fenced():
                yield
        finally:
            self._release_lease_if_unused()

    def context_next(self) -> int:
        """The index the next context-log entry of this namespace on this branch takes."""
        self._require_turn("a context-log entry")
        if self._context_next is None:
            prefix = context_prefix(self.namespace)
            keys = self.store.model.state_keys(self.branch, prefix)
            found = (context_index(k[len(prefix) :]) for k in keys)
            indexes = [index for index in found if index is not None]
            self._context_next = max(indexes, default=-1) + 1
        index = self._context_next
        self._context_next += 1
        return index

    # -- turns ----------------------------------------------------------------------------------

    def holds_turn(self) -> bool:
        """Whether the current task holds this actor's turn."""
        return self._holder is not None and self._holder == current_task_id()

    async def _post(self, request: TurnRequest) -> None:
        """Queue ``request`` for the actor's loop; a cancelled caller asks for nothing, and a
        request after the loop ended is refused."""
        await anyio.lowlevel.checkpoint_if_cancelled()
        try:
            self._send.send_nowait(request)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._refuse(request)

    async def execute(self, request: TurnRequest, work: Callable[[], Awaitable[T]]) -> T:
        """Send ``request`` as a command: the actor runs ``work`` in its own task, in its turn,
        and this returns what the work returned, or raises what it raised. Within the turn (the
        work of one command running another) ``work`` runs at once, in the same task.

        Cancellation: a caller cancelled before the actor takes the command changes nothing. Once
        it is taken, a cancelled caller cancels the work (its shielded parts, such as a write
        that began, complete), waits for it to end, shielded, and then returns the work's result
        if it returned, or raises its own cancellation; the actor serves the next command either
        way. Refused (``ManagerClosedError``, or the store's failure) once the actor ended."""
        if self.holds_turn():
            return await work()
        request.work = work
        await self._post(request)
        try:
            await request.granted.wait()
        except BaseException:
            if not request.taken:
                request.abandoned = True
                request.work = None
                raise
            if request.scope is not None:
                request.scope.cancel()
            with anyio.CancelScope(shield=True):
                await request.granted.wait()
            if request.completed:
                return request.result  # type: ignore[no-any-return]
            raise
        reply: T = self._reply(request)
        return reply

    def _reply(self, request: TurnRequest) -> Any:
        """What a command's requester gets once the actor answered it (see :meth:`execute`)."""
        error, request.error = request.error, None
        if error is not None:
            try:
                raise error
            finally:
                del error
        if not request.completed:  # the loop ended before it ran, or while it ran
            self._refuse(request)
        result, request.result = request.result, None
        return result

    async def _run_command(self, request: TurnRequest) -> None:
        """In the actor's task: run a command's work in the turn and keep its outcome. A
        cancellation of the actor's own task (the runtime closing) propagates, the command
        unanswered but woken (its requester is refused)."""
        work, request.work = request.work, None
        assert work is not None
        request.taken = True
        self._commands_run += 1
        self._holder = current_task_id()
        self._current = request
        if self._changes:
            self.follow_store()
        try:
            with anyio.CancelScope() as scope:
                request.scope = scope
                try:
                    request.result = await work()
                    request.completed = True
                except anyio.get_cancelled_exc_class():
                    raise  # the requester's cancel (this scope takes it), or the actor's own
                except BaseException as exc:  # the requester's to raise
                    request.error = exc
        finally:
            request.scope = None
            self._holder = None
            self._current = None
            request.granted.set()

    async def run(self) -> None:
        """The actor's loop: run one command at a time, until nothing uses the actor any more
        (it ends, see the module docstring), the runtime closes, or its task group is cancelled
        (as when the store stops). Requests still waiting then are refused."""
        async with self._receive:
            try:
                while not self._end_if_idle():
                    try:
                        request = await self._receive.receive()
                    except anyio.EndOfStream:  # the runtime closed the actor
                        break
                    if request.abandoned:  # given up by its requester, or a wake-up
                        continue
                    await self._run_command(request)
            finally:
                self._stop()
                while True:
                    try:
                        waiting = self._receive.receive_nowait()
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                    if not waiting.abandoned:
                        waiting.granted.set()  # wakes its requester, which finds the loop ended

    def _refuse(self, request: TurnRequest) -> NoReturn:
        """A turn asked for after the actor's loop ended: the store's failure, if it failed."""
        self.store.raise_if_failed()
        raise ManagerClosedError(request.purpose, self.namespace)

    def close(self) -> None:
        """The runtime closes: the loop ends once the requests already sent are served."""
        self._send.close()
