"""The namespace actor: one per (branch, namespace).

It owns the namespace's reader claim (``<namespace>/reader``), its narrowing floor
(``<namespace>/narrowing-floor``), its compression lease (a session lock of a shared
store, written nowhere: see :mod:`._lease`) and its strategy state on its branch. It handles
one command (:mod:`._commands`) at a time, so nothing else touches the namespace meanwhile:

* **Commands** (:meth:`NamespaceActor.send`) are frozen values carrying their arguments and a
  reply slot: opens (claims and strategy starts), compiles and previews, edits, context-log
  entries, moves, the begin and commit of a unit of compression and of a head-window reset,
  lease releases, and a strategy's own context calls made from outside the turn. One dispatch,
  :meth:`NamespaceActor.handle`, at the end of this file, says what each does: it checks,
  changes what the actor owns, then does its I/O. Every strategy call serving them
  (``initialize``, ``on_new_message`` in a catch-up, ``select``, the unit protocol's planning
  and judging) runs in the actor's task, whichever manager or task asked. No command is sent
  from inside another's handling: work in the turn calls the actor directly.
* **Store events** reach it as commands too (:meth:`NamespaceActor.store_changed`): a reader
  record or a floor another process wrote, and the strategy state it wrote. Until the actor has
  followed one, a check made outside its task reads the record as the store holds it.
* **A model request never runs in the actor's task.** Every unit is two commands
  (``strategies/_units.py``): one plans it and performs the plan up to its request, one judges
  the answer and performs what it makes; the request goes out between them from the drain's own
  task (``actors/_background.py``). For a strategy written against SPEC 3.3's ``tick(ctx)``
  alone, its ``tick`` runs there in place of the request, and each of its context calls that
  changes what the actor owns (``mark_compression_read``, state writes, the model request's
  steps) is a command. So the namespace keeps serving compiles, writes, edits and opens while a
  request is out.

Only a command's handling changes the claim, the floor and the strategy state, and the actor
checks that on every such change.

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
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NoReturn, cast

import anyio
import attrs

from ..store._blocks import ContentBlock, TextBlock
from ..store._compile_records import CompileRecord
from ..store._errors import ArgumentTypeError, StoreFailedError, UnknownMessageError
from ..store._messages import Message
from ..store._model import MISSING, UNREADABLE
from ..store._names import check_namespace
from ..store._narrowing import narrowing_of
from ..strategies._capabilities import HasHeadWindow, ReadsSummaries
from ..strategies._errors import AnswerRejectedError, CompressionError, FloorUnavailableError
from ..strategies._units import (
    NO_EARLIER_CONTEXT,
    PlansTransitions,
    PlansUnits,
    UnitPlan,
    judge_transition,
    perform_judgement,
    perform_plan,
)
from ._commands import (
    AnswerStale,
    AppendContextEntry,
    BeginHeadReset,
    BeginUnit,
    Begun,
    CatchUp,
    Command,
    CommitHeadReset,
    CommitUnit,
    Compile,
    Edit,
    Move,
    NoUnit,
    Open,
    RaiseFloor,
    ReleaseLease,
    RequestBack,
    RequestGate,
    RequestGivenUp,
    RequestOut,
    Sender,
    StoreChanged,
    Wake,
    WriteStates,
)
from ._compiled import CompiledContext, assemble
from ._errors import ManagerClosedError, NarrowingRefusedError, ReaderClaimError, ReaderRecordError
from ._lease import CompressionLease, LeaseLost, current_task_id
from ._records import (
    FLOOR_KEY,
    READER_KEY,
    context_index,
    context_prefix,
    is_floor_record,
    is_reader_record,
    own_record,
    reader_keys,
    strategy_state_key,
)
from ._signals import Signal
from ._values import ContextEntry
from ._written import WrittenKeys

if TYPE_CHECKING:
    from ..store._store import Store
    from ..strategies._base import StrategyContext

__all__ = ["ActorStatistics", "NamespaceActor", "UnreadableRecord", "normalise_namespace"]

log = logging.getLogger("asides.actors")

#: Tries of one edit whose context-log rewrites changed before its commit (another process
#: copied the message, or claimed a namespace holding a copy).
EDIT_ATTEMPTS = 5


def normalise_namespace(namespace: str | None) -> str:
    """``None``, ``""`` and ``"default"`` are one namespace, ``"default"``; any other must be a
    well-formed name (``InvalidNameError`` at ``namespace`` otherwise)."""
    return check_namespace(namespace)


class _CopiesMoved(Exception):
    """At an edit's commit, its context-log rewrites differed from the ones it was sent with."""


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
    #: Keys of the namespace's strategy-state records written since the actor started that it
    #: holds (the newest: ``actors/_written.py``), however long it lives.
    written_keys_held: int = 0


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
        self._send, self._receive = anyio.create_memory_object_stream[Command](math.inf)
        self._record: str | None | UnreadableRecord = self._load_record()
        self._floor: int | object = self._load_floor()
        self._claims = Signal()
        #: Strategy-state keys (relative) written under this namespace on this branch, in the
        #: order the actor learnt of them: the newest held, older ones asked of the store.
        self._started_at = store.head(branch)
        self._written = WrittenKeys(self._keys_written_since_start)
        #: Compression requests of this namespace and branch now out (any manager).
        self._requests_out = 0
        #: Of those that came back, the newest ones in a row that failed with no answer.
        self._outages_in_row = 0
        self._answered = 0  # requests of the namespace that came back with an answer
        self._requests_back = Signal()  # raised as each request is no longer out
        self._holder: int | None = None
        self._current: Command | None = None
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
    def outages_in_row(self) -> int:
        """How many of this namespace's compression requests (any manager's) failed in a row
        with no answer at all (the model raised or timed out), up to now: an answer sets it back
        to 0, a cancelled request leaves it as it is."""
        return self._outages_in_row

    @property
    def requests_back(self) -> Signal:
        """Raised as each compression request of the namespace is no longer out (answered,
        failed or cancelled)."""
        return self._requests_back

    @property
    def answered(self) -> int:
        """How many of this namespace's compression requests (any manager's) came back with an
        answer since the actor started."""
        return self._answered

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
            written_keys_held=self._written.held,
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

    def request_finished(self, *, answered: bool, failed: bool) -> None:
        """A request is no longer out: ``answered``, or ``failed`` with no answer (else it was
        cancelled); see :attr:`outages_in_row`."""
        self._requests_out -= 1
        if answered:
            self._outages_in_row = 0
            self._answered += 1
        elif failed:
            self._outages_in_row += 1
        self._requests_back.raise_()
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
    def written(self) -> WrittenKeys:
        """Strategy-state keys (relative to the namespace) written since the actor started, here
        or (on a shared store) by another process, in the order this process learnt of them
        (see ``actors/_written.py``). Read in the actor's turn, it first follows what the store
        told of since."""
        if self._changes and self.holds_turn():
            self.follow_store()
        return self._written

    def _keys_written_since_start(self) -> list[str]:
        """Every strategy-state key (relative) of the namespace whose record on the branch was
        written after the actor started, each once, oldest first (read from the store)."""
        prefix = f"{self.namespace}/"
        _before, after = self.store.state_sequences_after(self.branch, prefix, self._started_at)
        keys = [key for key, _sequence in sorted(after.items(), key=itemgetter(1))]
        return [key[len(prefix) :] for key in keys if (own_record(key) or ("",))[0] != self.namespace]

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
        try:
            self._send.send_nowait(StoreChanged())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # closing: nothing follows the store any more
        self._follow_sent = True

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
                self._written.add((key,))
                self._written_elsewhere += 1
        if records:
            self.adopt_stored_records()

    def _require_turn(self, what: str) -> None:
        if not self.holds_turn():
            raise AssertionError(f"{what} of namespace {self.namespace!r} on branch {self.branch!r} outside the namespace actor's turn")

    def _load_record(self) -> str | None | UnreadableRecord:
        value = self.store.model.get_state(self.branch, self.reader_key)
        if value is MISSING:
            return None
        if is_reader_record(value):
            return value
        self._report("reader record", value)
        return UnreadableRecord(None if value is UNREADABLE else value)

    def adopt_stored_records(self) -> None:
        """Follow the reader record and the narrowing floor as the store holds them now (on a
        shared store another process may have written them): a record only appears (a claim of
        this process still being written is kept), a floor only rises. A changed record raises
        the claim generation, as a claim made here does. Called only in the actor's turn: a
        :class:`StoreChanged` command, or the guard of a write made in it, at that write's commit."""
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
        self._written.add(records)

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

    async def send(self, command: Command) -> Any:
        """Send ``command``: the actor handles it in its own task, in its turn (:meth:`handle`),
        and this returns what the handling returned, or raises what it raised. Refused with an
        ``AssertionError`` from inside a turn: no command nests in another (work in the turn calls
        the actor directly).

        Cancellation: a sender cancelled before the actor takes the command changes nothing. Once
        it is taken, a cancelled sender cancels the handling (its shielded parts, such as a write
        that began, complete), waits for it to end, shielded, and then returns its result if it
        returned, or raises its own cancellation; the actor serves the next command either way.
        Refused (``ManagerClosedError``, or the store's failure) once the actor ended."""
        if self.holds_turn():
            raise AssertionError(f"{command!r} was sent to {self!r} from inside its own turn: no command nests in another")
        reply = command.reply
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled sender asks for nothing
        try:
            self._send.send_nowait(command)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._refuse(command)
        try:
            await reply.granted.wait()
        except BaseException:
            if not reply.taken:
                reply.abandoned = True
                raise
            if reply.scope is not None:
                reply.scope.cancel()
            with anyio.CancelScope(shield=True):
                await reply.granted.wait()
            if reply.completed:
                return reply.result
            raise
        error, reply.error = reply.error, None
        if error is not None:
            try:
                raise error
            finally:
                del error
        if not reply.completed:  # the loop ended before it ran, or while it ran
            self._refuse(command)
        result, reply.result = reply.result, None
        return result

    async def _run_command(self, command: Command) -> None:
        """In the actor's task: handle a command in the turn and keep its outcome. A cancellation
        of the actor's own task (the runtime closing) propagates, the command unanswered but
        woken (its sender is refused)."""
        reply = command.reply
        reply.taken = True
        self._commands_run += 1
        self._holder = current_task_id()
        self._current = command
        if self._changes:
            self.follow_store()
        try:
            with anyio.CancelScope() as scope:
                reply.scope = scope
                try:
                    reply.result = await self.handle(command)
                    reply.completed = True
                except anyio.get_cancelled_exc_class():
                    raise  # the sender's cancel (this scope takes it), or the actor's own
                except BaseException as exc:  # the sender's to raise
                    reply.error = exc
        finally:
            reply.scope = None
            self._holder = None
            self._current = None
            reply.granted.set()

    async def run(self) -> None:
        """The actor's loop: handle one command at a time, until nothing uses the actor any more
        (it ends, see the module docstring), the runtime closes, or its task group is cancelled
        (as when the store stops). Commands still waiting then are refused."""
        async with self._receive:
            try:
                while not self._end_if_idle():
                    try:
                        command = await self._receive.receive()
                    except anyio.EndOfStream:  # the runtime closed the actor
                        break
                    if not command.reply.abandoned:  # else given up by its sender, or a wake-up
                        await self._run_command(command)
                    del command  # the loop keeps nothing of a command (its manager's view) once handled
            finally:
                self._stop()
                while True:
                    try:
                        waiting = self._receive.receive_nowait()
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                    if not waiting.reply.abandoned:
                        waiting.reply.granted.set()  # wakes its sender, which finds the loop ended

    def _refuse(self, command: Command) -> NoReturn:
        """A command sent after the actor's loop ended: the store's failure, if it failed."""
        self.store.raise_if_failed()
        raise ManagerClosedError(command.purpose, self.namespace)

    def close(self) -> None:
        """The runtime closes: the loop ends once the commands already sent are handled."""
        self._send.close()

    # -- what each command does: the one dispatch ------------------------------------------------

    async def handle(self, command: Command) -> Any:
        """Handle ``command`` in the actor's turn (see :mod:`._commands` for what each carries):
        each handler checks, changes what the actor owns, then does its I/O."""
        self._require_turn(command.purpose)
        match command:
            case Open():
                return await self._open(command)
            case Compile():
                return await self._compile(command)
            case Edit():
                return await self._edit(command)
            case AppendContextEntry():
                return await self._append_context_entry(command)
            case Move():
                return await self._move(command)
            case BeginUnit():
                return await self._begin_unit(command)
            case CommitUnit():
                return await self._commit_unit(command)
            case CatchUp():
                return await self._catch_up(command)
            case ReleaseLease():
                return self._release_lease(if_idle=command.if_idle)
            case BeginHeadReset():
                return await self._begin_head_reset(command)
            case CommitHeadReset():
                return await self._commit_head_reset(command)
            case RaiseFloor():
                with self.fenced() if command.fenced else nullcontext():
                    if command.binding is not None:
                        command.binding.check("mark_compression_read")
                    return await self.raise_floor(command.sequence, command.reader)
            case WriteStates():
                with self.fenced() if command.fenced else nullcontext():
                    return await self.write_states(command.records)
            case RequestOut():
                return await command.gate.prepare(command.request)
            case RequestBack():
                return command.gate.came_back()
            case RequestGivenUp():
                return command.gate.given_up(command.also, failed=command.failed)
            case StoreChanged():
                self._follow_sent = False
                return self.follow_store()
        raise AssertionError(f"{self!r} has no handler for {command!r}")

    async def _open(self, command: Open) -> None:
        """Claim, record the strategy, start it. Once the claim is written the open completes,
        even if its sender is cancelled meanwhile."""
        binding = command.binding
        with anyio.CancelScope(shield=True):
            if command.claim is not None:
                await self.claim(command.claim, command.action)
            await binding.record_strategy()
            await binding.start(command.action)

    async def _compile(self, command: Compile) -> CompiledContext:
        """Catch the strategy up, let it select, assemble, and record what the compile showed
        (only what the assembly cache did not reuse from the previous compile of the same way:
        that was recorded then)."""
        binding, options = command.binding, command.options
        binding.check(command.action)
        ctx = await binding.catch_up()  # one context for the compile: the catch-up's when it made one
        if ctx is None or options.preview:  # a preview's state is read-only: it makes its own
            ctx = binding.context(preview=options.preview)
        selection = await binding.strategy.select(ctx, command.budget, options)
        compiled = assemble(
            selection,
            injections=command.injections,
            message_injections=command.message_injections,
            view=binding.view,
            reader=binding.view_reader,
            estimator=command.estimator,
            cache=command.cache,
        )
        if binding.records_disclosures:
            via = "preview" if options.preview else "compile"
            record = None if options.preview else self._compile_record(binding, command, compiled)
            await binding.disclose(command.cache.undisclosed(selection.sources, via), via, compiled=record)
        return compiled

    def _compile_record(self, binding: Sender, command: Compile, compiled: CompiledContext) -> CompileRecord:
        """The numbers of a compile sent (store/_compile_records.py)."""
        strategy = binding.strategy

        def level_of(summary_id: str | None) -> int:
            found = strategy.get_summary(summary_id) if summary_id and isinstance(strategy, ReadsSummaries) else None
            return found.level if found is not None else 0

        parts, cached = command.cache.sent(compiled, command.estimator, level_of)
        options = command.options
        return CompileRecord(
            0,
            self.namespace,
            binding.view_reader,
            self.branch,
            time.time(),
            self.store.model.head(self.branch),
            options.max_tokens,
            options.reserve_for_response,
            compiled.token_estimate,
            len(compiled.messages),
            parts,
            cached,
        )

    async def _edit(self, command: Edit) -> Message:
        """Replace the message's content, refused where it would narrow an audience against the
        narrowing rules (checked again at commit: a shared store may have changed meanwhile),
        rewriting the context-log copies of the message in the same commit."""
        binding, message_id, blocks = command.binding, command.message_id, command.blocks
        store, context_log, branch = binding.store, binding.context_log, binding.branch
        for _attempt in range(EDIT_ATTEMPTS):
            binding.check("edit_message")
            stored = store.get_message(branch, message_id)
            if stored is None:
                raise UnknownMessageError(message_id, branch)
            self._check_narrowing(binding, stored, blocks)
            copies = context_log.rewrites(branch, message_id, stored, blocks)

            def recheck(stored: Message = stored, copies: dict[str, Any] = copies) -> None:
                # At commit, after every earlier commit (on a shared store another process
                # may have raised the floor, claimed a namespace, or copied the message).
                self.adopt_stored_records()
                current = store.get_message(branch, message_id) or stored
                self._check_narrowing(binding, current, blocks)
                if context_log.rewrites(branch, message_id, current, blocks) != copies:
                    raise _CopiesMoved

            try:
                return await store.edit_message(branch, message_id, blocks, states=copies, guard=recheck)
            except _CopiesMoved:
                continue  # nothing was written: compute the rewrites again
        raise StoreFailedError(
            f"editing message {message_id!r} on {branch!r} raced other processes' context-log writes "
            f"{EDIT_ATTEMPTS} times; nothing was written, try again"
        )

    def _check_narrowing(self, binding: Sender, stored: Message, blocks: tuple[ContentBlock, ...]) -> None:
        """Refuse an edit that hides a block from a reader where compression may have read it,
        or from anyone but the manager's own reader (``NarrowingRefusedError``)."""
        narrowing = narrowing_of(stored.content, blocks)
        if not narrowing.hides_anything:
            return
        reader = binding.view_reader

        def refuse(readers: tuple[str, ...], reason: str) -> NoReturn:
            raise NarrowingRefusedError(message_id=stored.id, namespace=self.namespace, branch=self.branch, readers=readers, reason=reason)

        others = tuple(sorted(narrowing.named - ({reader} if reader else set())))
        if reader is None:
            refuse(others, "a manager that compiles for no reader may not hide a block from anyone")
        if narrowing.hides_from_other_than(reader):
            refuse(others, f"only the manager's own reader ({reader!r}) may lose sight of a block through it")
        # Only the own reader loses sight of a block.
        floor = self.floor
        if not isinstance(floor, int):
            refuse((reader,), "the record of what compression has read cannot be read")
        if stored.sequence <= floor:
            refuse((reader,), f"compression may have read it (the narrowing floor is {floor}, the message's sequence {stored.sequence})")
        for namespace, value in reader_keys(self.store.model, self.branch):
            if namespace == self.namespace:
                continue
            if not isinstance(value, str) or not value:
                refuse((reader,), f"namespace {namespace!r} on this branch has a reader record that cannot be read")
            if value == reader:
                refuse(
                    (reader,),
                    f"namespace {namespace!r} on this branch also compiles for {reader!r}, and its compression cannot be seen from here",
                )

    async def _append_context_entry(self, command: AppendContextEntry) -> ContextEntry:
        """Number the entry (the next index of the namespace's context log) and write it."""
        binding = command.binding
        binding.check("append_context_entry", started=False)
        entry = ContextEntry(self.context_next(), command.blocks, command.source_message_id)
        await binding.context_log.write(self.branch, self.namespace, entry)
        return entry

    async def _move(self, command: Move) -> None:
        """Check the record, then (nothing refused from here on: the move completes even if its
        sender is cancelled) rebind the manager here, claim for its reader, record the strategy
        and start it."""
        binding = command.binding
        self.check(binding.view_reader, command.action)  # no checkpoint before the claim below: it cannot fail
        with anyio.CancelScope(shield=True):
            binding.rebind(command.branch, self, command.strategy, command.owner)
            if binding.view_reader is not None:
                await self.claim(binding.view_reader, command.action)
            await binding.record_strategy()
            await binding.start(command.action)

    # -- units (strategies/_units.py), the actor performing every effect ------------------------

    async def _begin_unit(self, command: BeginUnit) -> NoUnit | Begun:
        """Start the unit (:meth:`_unit_start`), plan it and perform the plan up to its request;
        a plan whose ``work`` runs in the drain's task is handed back as it is."""
        binding, units = command.binding, command.units
        started = await self._unit_start(binding, needs_model=command.needs_model)
        if isinstance(started, NoUnit):
            return started
        leased = started
        with self.fenced() if leased else nullcontext():
            ctx = binding.context()
            plan = units.plan_unit(ctx)
            if plan is None:
                return NoUnit()
            if plan.work is not None:
                return Begun(plan, units, None, leased)
            plan = await perform_plan(units, ctx, plan, _ActorEffects(self, binding))
            gate = None if plan.request is None else await self._request_out(units, ctx, plan)
            return Begun(plan, units, gate, leased)

    async def _unit_start(self, binding: Sender, *, needs_model: bool) -> NoUnit | bool:
        """The start of every unit: check the manager, bring the strategy up to date, and take
        the compression lease when the unit may ask the model. :class:`NoUnit` when there is no
        unit to run (no model or nothing pending with ``needs_model``, or another process holds
        the lease); else whether the unit runs under the lease."""
        binding.check("tick")
        await binding.catch_up()
        binding.follow_elsewhere()
        if needs_model and (binding.model is None or binding.strategy.is_ready()):
            return NoUnit()
        leased = binding.model is not None  # a unit that may ask the model compresses under the lease
        if leased:
            held = self.holds_lease
            wait = await self.take_lease(binding.lease_retry)
            if wait is not None:
                return NoUnit(wait)  # another process compresses this namespace now
            if not held:
                # Taken now: the take read what the previous holder wrote; the strategy takes it
                # in before it plans, so it does not plan that work again.
                await binding.catch_up()
                binding.follow_elsewhere()
        return leased

    async def _request_out(self, units: PlansUnits, ctx: StrategyContext, plan: UnitPlan) -> RequestGate:
        """Before a planned request leaves: record what it shows as disclosed, count it as out,
        and let ``pending_work()`` say what it does. Returns the gate it goes through."""
        gate = cast("RequestGate", ctx.model)
        assert gate is not None and plan.request is not None
        await gate.prepare(plan.request)
        units.asking(plan)
        return gate

    def _answer_back(self, begun: Begun, answer: object) -> object:
        """A planned request is back with ``answer``: no longer out; ``AnswerStale`` when it is
        to be thrown away (a move, a close, a claim change); else the answer to judge, or the
        ``AnswerRejectedError`` the gate's size limit makes of it."""
        gate, request = begun.gate, begun.plan.request
        assert gate is not None and request is not None
        begun.units.asking(None)
        gate.came_back()
        try:
            gate.check_answer(answer, request)
        except AnswerRejectedError as exc:
            return exc
        return answer

    async def _commit_unit(self, command: CommitUnit) -> bool:
        """Judge the answer (thrown away when stale) and perform the judgement; whether the unit
        did work. A unit whose ``work`` ran in the drain's task is judged by what it returned."""
        binding, begun = command.binding, command.begun
        units, plan = begun.units, begun.plan
        if begun.gate is None:
            return units.judge_answer(binding.context(), plan, command.answer).did_work
        with self.fenced() if begun.leased else nullcontext():  # the lease stays busy from the answer's return to its records
            answer = self._answer_back(begun, command.answer)
            ctx = binding.context()
            return await perform_judgement(units, ctx, units.judge_answer(ctx, plan, answer), _ActorEffects(self, binding))

    async def _catch_up(self, command: CatchUp) -> bool:
        """Catch the strategy up; whether it is ready. Ready, or ``done``, give the compression
        lease up when no unit is at work, so the namespace's next work may go to any process."""
        binding = command.binding
        binding.check("drain")
        await binding.catch_up()
        binding.follow_elsewhere()
        ready = bool(binding.strategy.is_ready())
        if ready or command.done:
            self._release_lease(if_idle=True)
        return ready

    def _release_lease(self, *, if_idle: bool) -> None:
        """Give the compression lease up, if this process holds it (``if_idle``: and no unit of
        the namespace is at work here: no request out, no fenced unit). Writes nothing."""
        if not if_idle:
            self._lease.release()
        elif self.holds_lease and self._requests_out == 0 and not self._lease.busy:
            self._lease.release()

    async def _begin_head_reset(self, command: BeginHeadReset) -> str | Begun:
        """With text, start the head there. Else plan the note: with nothing to read, start the
        head at ``No earlier context.``; else raise the floor and send the request out (or hand
        back a strategy's own ``transition_text`` to run in the sender's task)."""
        binding, units = command.binding, command.units
        binding.check("reset_head_window")
        if command.text is not None:
            await self._start_head(binding, command.text, generated=False)
            return command.text
        ctx = binding.context()
        plan = cast(PlansTransitions, units).plan_transition(ctx)
        if plan is None:
            await self._start_head(binding, NO_EARLIER_CONTEXT, generated=True)
            return NO_EARLIER_CONTEXT
        if plan.work is not None:
            return Begun(plan, units, None, False)
        plan = await perform_plan(units, ctx, plan, _ActorEffects(self, binding))
        return Begun(plan, units, await self._request_out(units, ctx, plan), False)

    async def _commit_head_reset(self, command: CommitHeadReset) -> str:
        """Judge the note (a stale answer: ``CompressionError``, nothing written) and start the
        head window at a message holding it."""
        binding, begun = command.binding, command.begun
        if begun.gate is None:  # the strategy's own transition_text wrote it
            binding.check("reset_head_window")
            body = str(command.answer)
        else:
            try:
                judged = self._answer_back(begun, command.answer)
            except AnswerStale as exc:
                raise CompressionError(f"reset_head_window: {exc}; nothing was written") from exc
            body = judge_transition(judged)
        await self._start_head(binding, body, generated=True)
        return body

    async def _start_head(self, binding: Sender, body: str, *, generated: bool) -> None:
        """Append the ``[Topic Transition]`` message holding ``body`` (kept to the manager's
        reader when the model wrote it from the reader's view) and start the head window there."""
        strategy = cast(HasHeadWindow, binding.strategy)
        reader = binding.view_reader
        block = TextBlock(f"[Topic Transition]\n\n{body}", (reader,) if generated and reader else None)
        message = await binding.store.append_message(self.branch, "Context Manager", (block,))
        await strategy.start_head_at(binding.context(), message.sequence)


class _ActorEffects:
    """A unit's effects as the actor performs them, in its turn (``strategies._units``)."""

    def __init__(self, actor: NamespaceActor, binding: Sender) -> None:
        self._actor = actor
        self._binding = binding

    async def raise_floor(self, sequence: int) -> None:
        self._binding.check("mark_compression_read")
        await self._actor.raise_floor(sequence, self._binding.view_reader)

    async def write(self, records: Mapping[str, Any]) -> None:
        await self._actor.write_states(records)
