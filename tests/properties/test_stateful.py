"""A stateful model of the runtime (Hypothesis ``RuleBasedStateMachine``).

The machine drives a real runtime on a temporary store file, with a reference model beside it:
managers of a few namespaces (for ann, bob, cleo or no reader; passthrough, windowed or
autobiographical with the offline ``ExtractiveModel`` and small chunks, so compression happens),
messages whose text blocks carry random audiences, edits that widen and narrow them, compiles,
ticks and drains, forks, switches, strategy switches, derives, context-log copies, closes, and
closing and reopening the runtime. Every text block holds a unique marker (``M17``), so "did a
block reach someone it is hidden from" is a text search.

A search rule checks every hit the same way (the reader's to see, never erased, disclosed
through ``search``), and that a marker the reader sees is found.

After every step:

* no compile, provenance body, summary read (``search_summaries``, ``get_summaries_in_range``),
  stored strategy record or context-log entry of a namespace holds a marker of a block hidden from
  that namespace's reader (the reader the namespace records on that branch, or none);
* every branch holds exactly the messages the model acknowledged, with their audiences;
* no compile, summary read, stored record (``records()``, checked after each erasure) or context
  entry holds a marker any version of an erased message held (issue 23: ``erase`` is a rule, never
  refused), and every message a compile lists is in ``disclosures`` for that namespace, reader
  and ``"compile"``;
* a reader record never changes once set, and a floor never lowers (a fork or derive starts the
  child at least where the parent was); a floor is written only under a reader;
* a call refused with an ``AsidesError`` left the store exactly as it was (``dump`` before and
  after), and a refused move left the manager where it was;
* the reopen rule checks that the store after a reopen is the store before it (every
  acknowledged message is present, with every record);
* half the managers compress with a :class:`ChaosModel` that raises (also an asyncio
  ``CancelledError`` and ``GeneratorExit``), answers junk, empty or huge texts, or hangs past the
  request timeout, between good answers: none of it may take the runtime down (every later rule
  still works) or change what the invariants above promise.

The model also predicts outcomes where the contract fixes them, so the machine fails both when
the library refuses too much and too little: an open for a reader other than the recorded one is
refused, any other open succeeds; an edit that hides nothing succeeds; one that hides a block
from anyone but the manager's own reader (or any narrowing by a manager with no reader) is
refused with ``NarrowingRefusedError``; a stale manager is refused everything with
``ReaderClaimError``.

How the async runtime is driven from the synchronous machine: each machine owns an
``anyio`` blocking portal, a Trio event loop running in a helper thread for the whole example.
The runtime is entered through ``portal.wrap_async_context_manager``; every rule and invariant
is one ``portal.call`` of an async function. Background drains therefore keep running between
rules, as they would in a host. Before a call whose refusal is compared with ``dump``, the
machine *settles* the runtime (every live manager's ``preview_context`` flushes its actor's
inbox, then ``drain()``; repeated until the store stops changing), so a drain's own write is not
mistaken for the refused call's. Rules drawn with ``settle=False`` skip this and race the drains
(their refusals are not compared).

Errors the library raises on purpose (``AsidesError`` subclasses) are expected refusals, except
``StoreFailedError`` (the store must never stop here); anything else is a bug and fails the run.

Profiles: CI runs ``FAST`` (a modest number of examples). ``ASIDES_STATEFUL=long`` selects the
long profile, at least 10,000 steps; it prints the number of steps and how long they took.

The cancellation rule (a call cancelled at once or after a few checkpoints, so also while its
commit is in flight: "raised Cancelled" must mean "wrote nothing") runs in a second machine,
``CancellingMachine``, so that a cancellation bug does not hide the other invariants.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.from_thread
import attrs
import pytest
import trio
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from asides import (
    AnswerRejectedError,
    AsidesError,
    AutobiographicalStrategy,
    CompressionError,
    ExtractiveModel,
    ManagerClosedError,
    ModelError,
    ModelPolicy,
    NarrowingRefusedError,
    PassthroughStrategy,
    ReaderClaimError,
    StoreFailedError,
    TextBlock,
    WindowedPassthroughStrategy,
    content_for_reader,
    open_runtime,
    text,
)
from asides.store import _model_parts
from asides.store._postgres import is_postgres_url
from asides.strategies._autobiographical import tracking
from tests.helpers import dump, sibling_store, writable_store

MARKER = re.compile(r"\bM\d+\b")
READERS = ("ann", "bob", "cleo")
NAMESPACES = ("agents/x", "agents/y", "agents/z")
AUDIENCES: tuple[tuple[str, ...] | None, ...] = (
    None,
    ("ann",),
    ("bob",),
    ("cleo",),
    ("ann", "bob"),
    ("bob", "cleo"),
    ("ann", "cleo"),
    ("ann", "bob", "cleo"),
)
#: audience indexes as drawn: shared audiences (which an own-reader narrowing can take a name out
#: of) come up more often than their share
AUDIENCE_PICKS = st.sampled_from((0, 0, 1, 2, 3, 4, 4, 5, 5, 6, 6, 7, 7))
KINDS = ("passthrough", "windowed", "autobiographical")
MAX_BRANCHES = 6
BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")
MAX_LIVE = 6

MODE = os.environ.get("ASIDES_STATEFUL", "")
FAST = settings(
    # no shrinking in CI: a failure prints its steps at once (ASIDES_STATEFUL=shrink to minimise)
    phases=tuple(Phase) if MODE in ("long", "shrink") else (Phase.explicit, Phase.reuse, Phase.generate),
    max_examples=40,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
LONG = settings(FAST, max_examples=250, stateful_step_count=50)  # 12,500 steps
PROFILE = LONG if MODE == "long" else FAST


#: what a misbehaving model does with one request (see :class:`ChaosModel`)
BEHAVIOURS = ("answer", "raise", "asyncio-cancelled", "generator-exit", "not-a-completion", "empty", "huge", "hang")
#: short waits, so a failing model is retried within a step; a request that hangs fails quickly
POLICY = ModelPolicy(request_timeout=0.02, first_backoff=0.001, max_backoff=0.01)


# Not an asides.testing model: it misbehaves in ways no public model should offer (junk objects, lone
# surrogates, asyncio's CancelledError under Trio), on purpose.
class ChaosModel:
    """A model that, request by request, follows ``schedule`` (cycled): answers as
    ``ExtractiveModel`` does, raises (``RuntimeError``, an asyncio ``CancelledError`` under Trio,
    ``GeneratorExit``), answers something that is not a ``Completion``, an empty text or a huge
    one, or hangs until the runtime's request timeout. None of it may take the runtime down or
    put anything but the reader's view into a memory."""

    def __init__(self, schedule: list[str]) -> None:
        self.schedule = schedule
        self.inner = ExtractiveModel()
        self.count = 0

    async def complete(self, request: Any) -> Any:
        behaviour = self.schedule[self.count % len(self.schedule)]
        self.count += 1
        if behaviour == "raise":
            raise RuntimeError("model outage (chaos)")
        if behaviour == "asyncio-cancelled":
            raise asyncio.CancelledError()
        if behaviour == "generator-exit":
            raise GeneratorExit()
        if behaviour == "hang":
            await trio.sleep_forever()
        answer = await self.inner.complete(request)
        if behaviour == "not-a-completion":
            return {"text": "a dict, not a Completion"}
        if behaviour == "empty":
            return attrs.evolve(answer, content=(TextBlock("  "),))
        if behaviour == "huge":
            return attrs.evolve(answer, content=(TextBlock("huge " * 200_000),))
        return answer


# -- the reference model --------------------------------------------------------------------------


@attrs.define
class Block:
    marker: str
    audience: tuple[str, ...] | None


@attrs.define
class Slot:
    """A manager the machine opened, and what the model knows of it."""

    manager: Any
    namespace: str
    kind: str
    chaos: bool = False  # compresses with a ChaosModel


def visible_to(audience: tuple[str, ...] | None, reader: str | None) -> bool:
    return audience is None or (reader is not None and reader in audience)


def markers(value: str) -> set[str]:
    return set(MARKER.findall(value))


def snippet_markers(text: str, visible: set[str]) -> set[str]:
    """The markers a search hit's snippet holds. A snippet is cut at any character, with an
    ellipsis where cut, so ``M2…`` may be what is left of ``M23``: a marker the cut ends counts
    as that cut when a marker the reader sees begins with it, else as itself."""
    found: set[str] = set()
    for match in MARKER.finditer(text):
        marker = match.group()
        if text.startswith("…", match.end()) and any(v != marker and v.startswith(marker) for v in visible):
            continue
        found.add(marker)
    return found


def block_text(marker: str) -> str:
    n = int(marker[1:])
    words = " ".join(WORDS[(n + i) % len(WORDS)] for i in range(3 + n % 5))
    return f"{marker} {words}."


def hidden_by(old: list[Block], new: list[Block]) -> tuple[set[str], bool]:
    """Whom an edit hides blocks from, by position (SPEC N1): the named readers it takes out of
    audiences, and whether a block everyone could see got an audience."""
    named: set[str] = set()
    from_everyone = False
    for before, after in zip(old, new, strict=False):
        if after.audience is None:
            continue
        if before.audience is None:
            from_everyone = True
        else:
            named |= set(before.audience) - set(after.audience)
    return named, from_everyone


def compiled_text(compiled: Any) -> str:
    return "\n".join(b.text for m in compiled.messages for b in m.content if isinstance(b, TextBlock))


def single(group: BaseExceptionGroup) -> BaseException:
    """The one exception a nursery wrapped (or the group itself)."""
    while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
        group = group.exceptions[0]  # type: ignore[assignment]
    return group


class Refused(Exception):
    """Internal: an expected refusal, carrying the library's error."""

    def __init__(self, error: AsidesError) -> None:
        super().__init__(repr(error))
        self.error = error


STEPS = {"checks": 0, "examples": 0}


class RuntimeMachine(RuleBasedStateMachine):
    """See the module docstring."""

    #: Where each example's fresh store is: ``None`` for a file in a temporary folder, else a
    #: function naming a fresh store (a PostgreSQL schema; see :func:`_on_backend`).
    fresh_store: Callable[[], str] | None = None

    def __init__(self) -> None:
        super().__init__()
        STEPS["examples"] += 1
        self.directory = tempfile.TemporaryDirectory()
        fresh = type(self).fresh_store
        self.path = fresh() if fresh is not None else os.path.join(self.directory.name, "store.db")
        self._portal_cm = anyio.from_thread.start_blocking_portal("trio")
        self.portal = self._portal_cm.__enter__()
        self._runtime_cm: Any = None
        self.rt: Any = None
        try:
            self._open_runtime()
        except BaseException as exc:
            # No teardown follows a failed __init__: stop the portal's thread here (cancelling
            # what the failed open left running), or the garbage collector would, at some later
            # moment, wait for it forever.
            self._portal_cm.__exit__(type(exc), exc, exc.__traceback__)
            self.directory.cleanup()
            raise
        self.markers = itertools.count()
        self.names = itertools.count()
        self.slots: list[Slot] = []
        #: branch -> message id -> blocks (the acknowledged content, in sequence order)
        self.content: dict[str, dict[str, list[Block]]] = {"main": {}}
        self.parents: dict[str, str | None] = {"main": None}
        #: (branch, namespace) -> the reader record / floor last seen
        self.records: dict[tuple[str, str], str] = {}
        self.floors: dict[tuple[str, str], int] = {}
        self.refusals = 0
        self.successes = 0
        #: message id -> every marker any version of it held (issue 23: erasure takes them all)
        self.history: dict[str, set[str]] = {}
        #: markers of erased messages: none may be reachable again
        self.erased: set[str] = set()

    # -- plumbing -----------------------------------------------------------------------------

    def _open_runtime(self) -> None:
        self._runtime_cm = self.portal.wrap_async_context_manager(open_runtime(self.path, model_policy=POLICY))
        self.rt = self._runtime_cm.__enter__()

    def _close_runtime(self) -> None:
        cm, self._runtime_cm, self.rt = self._runtime_cm, None, None
        if cm is not None:
            cm.__exit__(None, None, None)

    def run(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        return self.portal.call(fn, *args)

    def teardown(self) -> None:
        try:
            if self._runtime_cm is not None:
                self._close_runtime()
        finally:
            self._portal_cm.__exit__(None, None, None)
            self.directory.cleanup()

    def live(self) -> list[Slot]:
        return [s for s in self.slots if not s.manager.closed]

    # The store is read in the event loop's thread only (``*_here``), never beside a drain's write.

    def record_here(self, branch: str, namespace: str) -> str | None:
        value = self.rt.store.get_state(branch, f"{namespace}/reader")
        assert value is None or (isinstance(value, str) and value), (branch, namespace, value)
        return value

    def stale_here(self, slot: Slot) -> bool:
        recorded = self.record_here(slot.manager.branch, slot.namespace)
        return recorded is not None and recorded != slot.manager.view_reader

    def record(self, branch: str, namespace: str) -> str | None:
        return self.portal.call(self.record_here, branch, namespace)

    def stale(self, slot: Slot) -> bool:
        return self.portal.call(self.stale_here, slot)

    def visible(self, branch: str, reader: str | None) -> set[str]:
        return {b.marker for blocks in self.content[branch].values() for b in blocks if visible_to(b.audience, reader)}

    def audiences(self, branch: str) -> dict[str, tuple[str, ...] | None]:
        return {b.marker: b.audience for blocks in self.content[branch].values() for b in blocks}

    def make_strategy(self, kind: str, chunk: int, head: int, recent: int) -> Any:
        if kind == "passthrough":
            return PassthroughStrategy()
        if kind == "windowed":
            return WindowedPassthroughStrategy()
        # no held-back chunk when there is no recent window, so that compression starts early
        return AutobiographicalStrategy(
            target_chunk_tokens=chunk, head_window_tokens=head, recent_window_tokens=recent, holdback_chunks=0 if recent == 0 else None
        )

    def new_blocks(self, audiences: list[int]) -> list[Block]:
        return [Block(f"M{next(self.markers)}", AUDIENCES[a]) for a in audiences]

    @staticmethod
    def as_content(blocks: list[Block]) -> list[Any]:
        return [text(block_text(b.marker), b.audience) for b in blocks]

    def fork_model(self, parent: str, child: str) -> None:
        self.content[child] = {mid: [attrs.evolve(b) for b in blocks] for mid, blocks in self.content[parent].items()}
        self.parents[child] = parent
        for (branch, namespace), value in list(self.records.items()):
            if branch == parent:
                self.records[(child, namespace)] = value
        for (branch, namespace), value in list(self.floors.items()):
            if branch == parent:
                self.floors[(child, namespace)] = value

    async def settle(self) -> None:
        """Wait until no background work changes the store (see the module docstring)."""
        for _ in range(50):
            before = dump(self.rt.store)
            for slot in self.live():
                try:
                    await slot.manager.preview_context(**BIG)
                    await slot.manager.drain()
                except StoreFailedError:
                    raise
                except AsidesError:
                    pass
            if dump(self.rt.store) == before:
                return
        raise AssertionError("the runtime never settled: background work kept writing")

    async def attempt(self, call: Callable[[], Awaitable[Any]], settle: bool, slot: Slot | None = None) -> Any:
        """Run ``call``; an ``AsidesError`` becomes :class:`Refused` after checking (when
        settled) that the store and the manager's place are as they were."""
        if settle:
            await self.settle()
        before = dump(self.rt.store) if settle else None
        place = (slot.manager.branch, slot.manager.strategy) if slot is not None else None
        try:
            result = await call()
        except StoreFailedError:
            raise
        except AsidesError as error:
            self.refusals += 1
            if before is not None:
                assert dump(self.rt.store) == before, f"a refused call changed the store: {error!r}"
            if slot is not None:
                assert (slot.manager.branch, slot.manager.strategy) == place, f"a refused call moved the manager: {error!r}"
            raise Refused(error) from error
        self.successes += 1
        return result

    # -- rules --------------------------------------------------------------------------------

    @rule(
        namespace=st.sampled_from(NAMESPACES),
        reader_pick=st.sampled_from(("own", "own", "own", "other", None)),
        kind=st.sampled_from(KINDS),
        chunk=st.sampled_from((20, 40, 80)),
        head=st.sampled_from((0, 30)),
        recent=st.sampled_from((0, 40)),
        branch_pick=st.integers(0, 20),
        chaos=st.one_of(st.none(), st.lists(st.sampled_from(BEHAVIOURS), min_size=1, max_size=4)),
        settle=st.booleans(),
    )
    def open_manager(self, namespace, reader_pick, kind, chunk, head, recent, branch_pick, chaos, settle):
        """Open a manager. Each namespace has a reader of its own (agents/x: ann, ...), as a host
        gives each agent its namespace; ``other`` opens it for the next reader (refused once the
        namespace records its own), ``None`` for no reader. Half compress with a
        :class:`ChaosModel` (which answers now and then), the others with ``ExtractiveModel``."""
        if not (len(self.live()) < MAX_LIVE):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        own = NAMESPACES.index(namespace)
        reader = None if reader_pick is None else READERS[(own + (reader_pick == "other")) % len(READERS)]
        branches = sorted(self.content)
        branch = branches[branch_pick % len(branches)]
        recorded = self.record(branch, namespace)
        strategy = self.make_strategy(kind, chunk, head, recent)

        async def call() -> Any:
            return await self.rt.open_manager(namespace, strategy=strategy, view_reader=reader, branch=branch, model=model)

        model = ExtractiveModel() if chaos is None else ChaosModel([*chaos, "answer"])  # it answers now and then
        try:
            manager = self.run(self.attempt, call, settle)
        except Refused as refused:
            assert reader is not None and recorded is not None and recorded != reader, f"open refused: {refused}"
            assert isinstance(refused.error, ReaderClaimError), refused
            return
        assert recorded is None or reader is None or recorded == reader, "an open for another reader went through"
        assert manager.view_reader == (reader if reader is not None else recorded)
        assert manager.branch == branch
        self.slots.append(Slot(manager, namespace, kind, chaos is not None))

    @rule(
        pick=st.integers(0, 20),
        batch=st.lists(
            st.tuples(
                st.sampled_from(("user", "assistant", "carol")),
                st.lists(AUDIENCE_PICKS, min_size=1, max_size=3),
            ),
            min_size=1,
            max_size=12,
        ),
        settle=st.booleans(),
    )
    def add_messages(self, pick, batch, settle):
        """Messages through one manager, one call each (a batch so that chunks close)."""
        if not (self.live()):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        for participant, audiences in batch:
            blocks = self.new_blocks(audiences)
            stale = self.stale(slot)

            async def call(blocks: list[Block] = blocks, participant: str = participant) -> Any:
                return await slot.manager.add_message(participant, self.as_content(blocks))

            try:
                message = self.run(self.attempt, call, settle, slot)
            except Refused as refused:
                assert stale and isinstance(refused.error, ReaderClaimError), f"add_message refused: {refused}"
                return
            assert not stale, "a stale manager wrote a message"
            self.content[slot.manager.branch][message.id] = blocks

    @rule(
        pick=st.integers(0, 20),
        edits=st.lists(
            st.tuples(
                st.integers(0, 200),
                st.sampled_from(("random", "widen", "narrow_own", "narrow_own")),
                st.lists(AUDIENCE_PICKS, min_size=1, max_size=3),
                st.booleans(),
            ),
            min_size=1,
            max_size=4,
        ),
        settle=st.booleans(),
    )
    def edit_messages(self, pick, edits, settle):
        """Edits through one manager (see :meth:`edit_one`)."""
        if not (self.live()):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        for message_pick, how, audiences, extra in edits:
            self.edit_one(slot, message_pick, how, audiences, extra, settle)

    def edit_one(self, slot: Slot, message_pick: int, how: str, audiences: list[int], extra: bool, settle: bool) -> None:
        """Change the audiences of a message's blocks in place (same texts), sometimes adding a
        block: at random (widens, narrows, or both), widening every block to everyone, or taking
        the manager's own reader out of every audience that names someone else too (the one
        narrowing the floor decides; the message is drawn among those that have such a block)."""
        branch = slot.manager.branch
        reader = slot.manager.view_reader
        messages = list(self.content[branch])
        if how == "narrow_own":
            messages = [
                mid
                for mid, blocks in self.content[branch].items()
                if any(b.audience is not None and reader in b.audience and len(b.audience) > 1 for b in blocks)
            ] or messages
        if not messages:
            return
        message_id = messages[message_pick % len(messages)]
        old = self.content[branch][message_id]
        if how == "widen":
            new = [Block(b.marker, None) for b in old]
        elif how == "narrow_own":
            new = [
                Block(b.marker, tuple(r for r in b.audience if r != reader))
                if b.audience is not None and reader in b.audience and len(b.audience) > 1
                else Block(b.marker, b.audience)
                for b in old
            ]
        else:
            new = [Block(b.marker, AUDIENCES[audiences[i % len(audiences)]]) for i, b in enumerate(old)]
        if extra:
            new += self.new_blocks([audiences[-1]])
        stale = self.stale(slot)
        named, from_everyone = hidden_by(old, new)
        hides_other = from_everyone or bool(named - {reader}) or (reader is None and bool(named))

        async def call() -> Any:
            return await slot.manager.edit_message(message_id, self.as_content(new))

        try:
            self.run(self.attempt, call, settle, slot)
        except Refused as refused:
            if stale:
                assert isinstance(refused.error, ReaderClaimError), refused
                return
            assert named or from_everyone, f"an edit that hides nothing was refused: {refused}"
            assert isinstance(refused.error, NarrowingRefusedError), refused
            return
        assert not stale, "a stale manager edited a message"
        assert not hides_other, f"an edit hiding a block from someone other than {reader!r} went through"
        self.content[branch][message_id] = new

    @rule(pick=st.integers(0, 20))
    def compile(self, pick):
        if not (self.live()):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        stale = self.stale(slot)

        async def call() -> Any:
            return await slot.manager.compile(**BIG)

        try:
            compiled = self.run(self.attempt, call, True, slot)
        except Refused as refused:
            assert stale and isinstance(refused.error, ReaderClaimError), f"compile refused: {refused}"
            return
        assert not stale, "a stale manager compiled"
        self.check_compile(slot, compiled)

    def check_compile(self, slot: Slot, compiled: Any) -> None:
        branch, reader = slot.manager.branch, slot.manager.view_reader
        visible = self.visible(branch, reader)
        seen = markers(compiled_text(compiled))
        assert not seen & self.erased, f"a compile holds erased {sorted(seen & self.erased)}"
        shown = {mid for e in compiled.provenance.entries for mid in e.message_ids}
        for message_id in shown:
            ways = {(d.namespace, d.reader, d.via) for d in self.run(self._disclosures, message_id)}
            assert (slot.namespace, reader, "compile") in ways, f"compiled message {message_id} is not in the disclosures"
        assert seen <= visible, f"{reader!r}'s compile on {branch!r} holds hidden {sorted(seen - visible)}"
        for message in compiled.messages:
            for block in message.content:
                assert getattr(block, "audience", None) is None, "a compiled block has an audience"
        provenance = compiled.provenance
        for message_id, body in provenance.raw_bodies.items():
            held = markers(" ".join(b.text for b in body if isinstance(b, TextBlock)))
            assert held <= visible, f"provenance body {message_id} holds hidden {sorted(held - visible)}"
            assert all(getattr(b, "audience", None) is None for b in body)
        seeing = {mid for mid, blocks in self.content[branch].items() if any(visible_to(b.audience, reader) for b in blocks)}
        listed = {mid for e in provenance.entries for mid in e.message_ids}
        raw = {mid for e in provenance.entries if e.kind == "raw" for mid in e.message_ids}
        assert raw <= seeing, f"provenance lists messages {sorted(raw - seeing)} the reader sees nothing of"
        if slot.kind in ("passthrough", "windowed"):
            assert seen == visible, f"{reader!r}'s compile lost {sorted(visible - seen)}"
        assert seeing <= listed, f"{reader!r}'s compile covers none of messages {sorted(seeing - listed)}"

    @rule(pick=st.integers(0, 20), number=st.integers(0, 150), word=st.sampled_from((None, *WORDS)))
    def search(self, pick, number, word):
        """A search for a marker (or one of the words every block holds some of): every hit is
        the reader's to see and holds no erased line; a marker the reader sees on the branch is
        found; every message hit is recorded as shown to the reader through ``search``."""
        if not (self.live()):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        stale = self.stale(slot)
        marker = f"M{number}"
        query = marker if word is None else word

        async def call() -> Any:
            return await slot.manager.search(query, limit=1000)

        try:
            hits = self.run(self.attempt, call, True, slot)
        except Refused as refused:
            assert stale and isinstance(refused.error, ReaderClaimError), f"search refused: {refused}"
            return
        assert not stale, "a stale manager searched"
        branch, reader = slot.manager.branch, slot.manager.view_reader
        visible = self.visible(branch, reader)
        held = set().union(*(snippet_markers(hit.text, visible) for hit in hits))
        assert held <= visible, f"{reader!r}'s search on {branch!r} holds hidden {sorted(held - visible)}"
        assert not held & self.erased, f"a search holds erased {sorted(held & self.erased)}"
        found = {hit.id for hit in hits if hit.kind == "message"}
        if word is None and marker in visible and marker not in self.erased:
            holder = {mid for mid, blocks in self.content[branch].items() if any(b.marker == marker for b in blocks)}
            assert holder <= found, f"{reader!r}'s search on {branch!r} missed {marker}"
        for message_id in found:
            ways = {(d.namespace, d.reader, d.via) for d in self.run(self._disclosures, message_id)}
            assert (slot.namespace, reader, "search") in ways, f"search hit {message_id} is not in the disclosures"

    @rule(pick=st.integers(0, 20), drain=st.booleans())
    def tick_or_drain(self, pick, drain):
        if not (self.live()):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        stale = self.stale(slot)

        async def call() -> Any:
            return await (slot.manager.drain() if drain else slot.manager.tick())

        try:
            self.run(self.attempt, call, False, slot)
        except Refused as refused:
            if slot.chaos and isinstance(refused.error, (ModelError, AnswerRejectedError, CompressionError)):
                return  # the host's own unit met the model's failure; a drain() gave up after several
            assert stale and isinstance(refused.error, ReaderClaimError), f"tick/drain refused: {refused}"

    @rule(pick=st.integers(0, 20), settle=st.booleans())
    def fork(self, pick, settle):
        if not (self.live() and len(self.content) < MAX_BRANCHES):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        parent = slot.manager.branch
        name = f"fork-{next(self.names)}"
        stale = self.stale(slot)

        async def call() -> Any:
            return await slot.manager.fork(name)

        try:
            self.run(self.attempt, call, settle, slot)
        except Refused as refused:
            assert stale and isinstance(refused.error, ReaderClaimError), f"fork refused: {refused}"
            return
        assert not stale, "a stale manager forked"
        assert slot.manager.branch == name
        self.fork_model(parent, name)

    @rule(pick=st.integers(0, 20), branch_pick=st.integers(0, 20), settle=st.booleans())
    def switch_branch(self, pick, branch_pick, settle):
        if not (self.live()):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        branches = sorted(self.content)
        target = branches[branch_pick % len(branches)]
        reader = slot.manager.view_reader
        recorded = self.record(target, slot.namespace)
        allowed = not self.stale(slot) and (recorded is None or recorded == reader)

        async def call() -> Any:
            return await slot.manager.switch_branch(target)

        try:
            self.run(self.attempt, call, settle, slot)
        except Refused as refused:
            assert not allowed and isinstance(refused.error, ReaderClaimError), f"switch refused: {refused}"
            return
        assert allowed, f"a switch onto {target!r} recording {recorded!r} went through for {reader!r}"
        assert slot.manager.branch == target

    @rule(
        pick=st.integers(0, 20),
        kind=st.sampled_from(KINDS),
        chunk=st.sampled_from((20, 40, 80)),
        settle=st.booleans(),
    )
    def set_strategy(self, pick, kind, chunk, settle):
        if not (self.live()):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        strategy = self.make_strategy(kind, chunk, 0, 0)
        stale = self.stale(slot)

        async def call() -> Any:
            return await slot.manager.set_strategy(strategy)

        try:
            self.run(self.attempt, call, settle, slot)
        except Refused as refused:
            assert stale and isinstance(refused.error, ReaderClaimError), f"set_strategy refused: {refused}"
            return
        assert not stale, "a stale manager changed strategy"
        assert slot.manager.strategy is strategy
        slot.kind = kind

    @rule(pick=st.integers(0, 20), kind=st.sampled_from(KINDS), settle=st.booleans())
    def derive(self, pick, kind, settle):
        if not (self.live() and len(self.live()) < MAX_LIVE and len(self.content) < MAX_BRANCHES):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        parent = slot.manager.branch
        name = f"derived-{next(self.names)}"
        strategy = self.make_strategy(kind, 40, 0, 0)
        stale = self.stale(slot)
        reader = slot.manager.view_reader

        async def call() -> Any:
            return await slot.manager.derive(branch=name, strategy=strategy)

        try:
            child = self.run(self.attempt, call, settle, slot)
        except Refused as refused:
            assert stale and isinstance(refused.error, ReaderClaimError), f"derive refused: {refused}"
            return
        assert not stale, "a stale manager derived"
        assert child.branch == name and child.view_reader == reader and slot.manager.branch == parent
        self.fork_model(parent, name)
        self.slots.append(Slot(child, slot.namespace, kind, slot.chaos))

    @rule(pick=st.integers(0, 20), message_pick=st.integers(0, 200), note=st.booleans(), settle=st.booleans())
    def append_context_entry(self, pick, message_pick, note, settle):
        """A host copies a message, as its manager's reader sees it, into the context log
        (or writes a note); a later edit rewrites the copy (SPEC P2)."""
        if not (self.live()):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        branch = slot.manager.branch
        messages = list(self.content[branch])
        stale = self.stale(slot)
        source = None if note or not messages else messages[message_pick % len(messages)]

        async def call() -> Any:
            if source is None:
                return await slot.manager.append_context_entry([text("a note")])
            stored = slot.manager.get_message(source)
            seen = content_for_reader(stored.content, slot.manager.view_reader) or (text("nothing seen"),)
            return await slot.manager.append_context_entry(seen, source_message_id=source)

        try:
            self.run(self.attempt, call, settle, slot)
        except Refused as refused:
            assert stale and isinstance(refused.error, ReaderClaimError), f"append_context_entry refused: {refused}"

    @rule(pick=st.integers(0, 20))
    def close_manager(self, pick):
        if not (self.live()):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        self.run(slot.manager.aclose)
        assert slot.manager.closed

        async def refused() -> None:
            with pytest.raises(ManagerClosedError):
                await slot.manager.compile(**BIG)
            with pytest.raises(ManagerClosedError):
                await slot.manager.add_message("user", [text("after close")])

        self.run(refused)

    @rule()
    def reopen(self):
        """Close the runtime (every manager with it) and reopen the file: the store is what it
        was, so every acknowledged write is there."""
        self.run(self.settle)
        before = self.run(self._dump)
        self._close_runtime()
        self.slots.clear()
        self._open_runtime()
        assert self.run(self._dump) == before, "the store after a reopen is not the store before it"

    async def _dump(self) -> Any:
        return dump(self.rt.store)

    async def _disclosures(self, message_id: str) -> Any:
        return self.rt.disclosures(message_id)

    @rule(branch_pick=st.integers(0, 20), message_pick=st.integers(0, 200), settle=st.booleans())
    def erase(self, branch_pick, message_pick, settle):
        """Erase one message (issue 23): never refused, whatever the claims and floors; it leaves
        every branch, and no marker any version of it held is reachable again."""
        if not (any(self.content[b] for b in self.content)):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        branches = sorted(b for b in self.content if self.content[b])
        messages = list(self.content[branches[branch_pick % len(branches)]])
        target = messages[message_pick % len(messages)]
        self._note_history()

        async def call() -> Any:
            return await self.rt.erase([target], reason="stateful")

        erasure = self.run(self.attempt, call, settle)
        assert erasure.message_ids == (target,)
        for blocks in self.content.values():
            blocks.pop(target, None)
        self.erased |= self.history.get(target, set())
        records = json.dumps(self.run(self.rt.store.records))
        assert not markers(records) & self.erased, f"a record still holds erased {sorted(markers(records) & self.erased)}"

    def _note_history(self) -> None:
        for blocks_of in self.content.values():
            for message_id, blocks in blocks_of.items():
                self.history.setdefault(message_id, set()).update(b.marker for b in blocks)

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def holds(self):
        STEPS["checks"] += 1
        self.run(self._check_everything)

    async def _check_everything(self) -> None:
        self._note_history()
        store = writable_store(self.rt)  # the model: is a message erased
        branches = {b.name: b for b in store.branches()}
        assert set(branches) == set(self.content), (sorted(branches), sorted(self.content))
        for name, info in branches.items():
            assert info.parent == self.parents[name]
            # every acknowledged message, with its audiences, and nothing else
            stored = [
                (m.id, [(sorted(markers(b.text)), b.audience) for b in m.content])
                for m in store.messages(name)
                if not store.model.is_erased(m.id)
            ]
            expected = [(mid, [([b.marker], b.audience) for b in blocks]) for mid, blocks in self.content[name].items()]
            assert stored == expected, f"branch {name!r} does not hold what was acknowledged"
            audiences = self.audiences(name)
            for namespace in NAMESPACES:
                recorded = self.record_here(name, namespace)
                key = (name, namespace)
                if key in self.records:
                    assert recorded == self.records[key], f"the reader record of {key} changed"
                elif recorded is not None:
                    self.records[key] = recorded
                floor = store.get_state(name, f"{namespace}/narrowing-floor")
                if floor is not None:
                    assert recorded is not None, f"a floor was written for {key}, which records no reader"
                    assert floor >= self.floors.get(key, 0), f"the floor of {key} lowered"
                    self.floors[key] = floor
                else:
                    assert key not in self.floors, f"the floor of {key} disappeared"
                # nothing the namespace keeps (summaries, chunk records, context log) holds a
                # marker of a block hidden from its reader
                state = json.dumps(store.state_items(name, f"{namespace}/"))
                assert not markers(state) & self.erased, f"{namespace!r} on {name!r} keeps erased {sorted(markers(state) & self.erased)}"
                leaked = {m for m in markers(state) if not visible_to(audiences.get(m, ("nobody",)), recorded)}
                assert not leaked, f"{namespace!r} on {name!r} (reader {recorded!r}) keeps hidden {sorted(leaked)}"
        for slot in self.live():
            manager = slot.manager
            if self.stale_here(slot):
                with pytest.raises(ReaderClaimError):
                    manager.search_summaries(r"[\s\S]")
                continue
            visible = self.visible(manager.branch, manager.view_reader)
            summaries = (*manager.search_summaries(r"[\s\S]", limit=100_000), *manager.get_summaries_in_range())
            held = markers(" ".join(s.text for s in summaries))
            assert held <= visible, f"{manager!r}'s summary reads hold hidden {sorted(held - visible)}"
            assert not held & self.erased, f"{manager!r}'s summary reads hold erased {sorted(held & self.erased)}"
            for entry in manager.get_context_entries():
                held = markers(" ".join(b.text for b in entry.content if isinstance(b, TextBlock)))
                assert held <= visible, f"{manager!r}'s context log holds hidden {sorted(held - visible)}"


class CancellingMachine(RuntimeMachine):
    """The machine plus a rule that cancels a call before it starts, at once or after a few
    checkpoints of another task (so also while its commit is in flight). A call that raised ``Cancelled`` must have written nothing:
    the store (``dump``) and the manager's place are as before. A call that returned despite the
    cancel is acknowledged like any other."""

    @rule(
        op=st.sampled_from(("add", "edit", "open", "fork", "derive", "set_strategy", "switch", "context")),
        pick=st.integers(0, 20),
        audiences=st.lists(AUDIENCE_PICKS, min_size=1, max_size=2),
        checkpoints=st.integers(-1, 4),
    )
    def cancel_midway(self, op, pick, audiences, checkpoints):
        if not (self.live()):
            return  # checked here, not as a precondition: it reads the runtime, whose timing Hypothesis must not see
        slot = self.live()[pick % len(self.live())]
        branch = slot.manager.branch
        messages = list(self.content[branch])
        name = f"cancelled-{next(self.names)}"
        blocks = self.new_blocks(audiences)
        target: str | None = None
        if op == "add":
            call = lambda: slot.manager.add_message("user", self.as_content(blocks))  # noqa: E731
        elif op == "edit":
            if not messages:
                return
            target = messages[pick % len(messages)]
            widened = [Block(b.marker, None) for b in self.content[branch][target]]
            blocks = widened
            call = lambda: slot.manager.edit_message(target, self.as_content(widened))  # noqa: E731
        elif op == "open":
            namespace = NAMESPACES[pick % len(NAMESPACES)]
            reader = READERS[pick % len(READERS)]
            call = lambda: self.rt.open_manager(  # noqa: E731
                namespace, strategy=PassthroughStrategy(), view_reader=reader, branch=branch, model=ExtractiveModel()
            )
        elif op == "fork":
            call = lambda: slot.manager.fork(name)  # noqa: E731
        elif op == "derive":
            call = lambda: slot.manager.derive(branch=name, strategy=PassthroughStrategy())  # noqa: E731
        elif op == "set_strategy":
            strategy = PassthroughStrategy()
            call = lambda: slot.manager.set_strategy(strategy)  # noqa: E731
        elif op == "switch":
            call = lambda: slot.manager.switch_branch(sorted(self.content)[pick % len(self.content)])  # noqa: E731
        else:
            call = lambda: slot.manager.append_context_entry([text("a cancelled note")])  # noqa: E731
        outcome, value = self.run(self._cancelled, call, checkpoints, slot)
        if outcome != "done":
            return
        if op == "add":
            self.content[branch][value.id] = blocks
        elif op == "edit":
            self.content[branch][target] = blocks  # type: ignore[index]
        elif op == "open":
            self.slots.append(Slot(value, NAMESPACES[pick % len(NAMESPACES)], "passthrough"))
        elif op == "fork":
            self.fork_model(branch, name)
        elif op == "derive":
            self.fork_model(branch, name)
            self.slots.append(Slot(value, slot.namespace, "passthrough", slot.chaos))
        elif op == "set_strategy":
            slot.kind = "passthrough"

    async def _cancelled(self, call: Callable[[], Awaitable[Any]], checkpoints: int, slot: Slot) -> tuple[str, Any]:
        await self.settle()
        before = dump(self.rt.store)
        place = (slot.manager.branch, slot.manager.strategy)
        scope = trio.CancelScope()
        result: dict[str, Any] = {}

        async def canceller() -> None:
            for _ in range(checkpoints):
                await trio.lowlevel.checkpoint()
            scope.cancel()

        if checkpoints < 0:
            scope.cancel()  # cancelled before the call starts: it must raise and write nothing
        try:
            async with trio.open_nursery() as nursery:
                if checkpoints >= 0:
                    nursery.start_soon(canceller)
                with scope:
                    result["value"] = await call()
        except BaseExceptionGroup as group:
            error = single(group)
            if isinstance(error, AsidesError) and not isinstance(error, StoreFailedError):
                assert dump(self.rt.store) == before, f"a refused call changed the store: {error!r}"
                return "refused", error
            raise error from None
        if "value" in result:
            return "done", result["value"]
        assert scope.cancelled_caught
        assert dump(self.rt.store) == before, "a call that raised Cancelled wrote to the store"
        assert (slot.manager.branch, slot.manager.strategy) == place, "a call that raised Cancelled moved the manager"
        STEPS["cancelled"] += 1
        return "cancelled", None


#: Audience picks of the tiny-cache machine: most blocks for everyone (``AUDIENCES[0]``).
MOSTLY_PUBLIC = st.sampled_from((0, 0, 0, 0, 1, 2, 4))


class TinyCacheMachine(RuntimeMachine):
    """The machine on a store file opened with a message cache of three: after each reopen (a
    rule), nearly every read of a message written before it reads its body from the file, and
    every invariant above still holds (no leak, no erased text, every acknowledged message)."""

    def _open_runtime(self) -> None:
        self._runtime_cm = self.portal.wrap_async_context_manager(open_runtime(self.path, model_policy=POLICY, message_cache=3))
        self.rt = self._runtime_cm.__enter__()

    @rule(
        pick=st.integers(0, 20),
        batch=st.lists(
            st.tuples(st.sampled_from(("user", "assistant", "carol")), st.lists(MOSTLY_PUBLIC, min_size=1, max_size=3)),
            min_size=1,
            max_size=12,
        ),
        settle=st.booleans(),
    )
    def add_messages(self, pick, batch, settle):
        """As the machine's, with most blocks for everyone: a body that names no reader is the
        one a reopen leaves in the file, so most reads after a reopen page."""
        RuntimeMachine.add_messages(self, pick, batch, settle)


#: Examples per run on PostgreSQL: each opens and reopens runtimes on a fresh schema, so the
#: PostgreSQL half runs fewer examples than SQLite's (the multi-process run of
#: tests/actors/test_postgres_processes.py checks the same invariants across processes).
POSTGRES_EXAMPLES = 10


def _on_backend(machine: type[RuntimeMachine], store_path: str) -> tuple[type[RuntimeMachine], settings]:
    """The machine and settings for ``store_path``'s backend: on SQLite as they are (a file per
    example); on PostgreSQL a subclass whose examples each take a sibling schema, at
    :data:`POSTGRES_EXAMPLES` examples unless the long profile is on."""
    if not is_postgres_url(store_path):
        return machine, PROFILE
    examples = itertools.count()
    on_postgres = type(machine.__name__, (machine,), {"fresh_store": staticmethod(lambda: sibling_store(store_path, f"e{next(examples)}"))})
    return on_postgres, PROFILE if PROFILE is LONG else settings(PROFILE, max_examples=POSTGRES_EXAMPLES)


def _run(machine: type[RuntimeMachine], store_path: str) -> None:
    started = time.monotonic()
    STEPS.update(checks=0, examples=0, cancelled=0)
    machine, profile = _on_backend(machine, store_path)
    run_state_machine_as_test(machine, settings=profile)
    if PROFILE is LONG:
        steps = STEPS["checks"] - STEPS["examples"]  # the invariants also run once before the first step
        took = time.monotonic() - started
        print(f"\n{machine.__name__}: {STEPS['examples']} examples, {steps} steps in {took:.1f} s", file=sys.stderr)


@pytest.mark.timeout(3600 if PROFILE is LONG else 300)
def test_runtime_state_machine(store_path):
    """The machine of the module docstring: leaks, records, floors, refusals, reopens."""
    _run(RuntimeMachine, store_path)


@pytest.mark.sqlite_only("a store file's bodies are read on demand; PostgreSQL's are all held")
@pytest.mark.timeout(3600 if PROFILE is LONG else 300)
def test_runtime_state_machine_with_a_tiny_message_cache(store_path, monkeypatch):
    """The machine with a message cache of three messages, so nearly every read after a
    reopen pages from the file, one block of where the records other than messages stand held at
    once, and a compressing strategy that writes an outline of its memory with every unit, so
    nearly every reopen loads from one: leaks, erasures, records, floors and refusals as above."""
    monkeypatch.setattr(tracking, "OUTLINE_EVERY", 1)
    monkeypatch.setattr(_model_parts, "HELD_GAP_BLOCKS", 1)
    started = time.monotonic()
    STEPS.update(checks=0, examples=0, cancelled=0)
    run_state_machine_as_test(TinyCacheMachine, settings=PROFILE)
    if PROFILE is LONG:
        print(f"\nTinyCacheMachine: {STEPS['examples']} examples in {time.monotonic() - started:.1f} s", file=sys.stderr)


@pytest.mark.timeout(3600 if PROFILE is LONG else 300)
def test_runtime_state_machine_with_cancellation(store_path):
    """The machine with calls cancelled midway: raised ``Cancelled`` means nothing was written.
    A cancel that never lands checks nothing, and how many land in a random run depends on what
    Hypothesis draws and on timing; so the run ends with the rule made once more on a fresh
    machine, a write cancelled before it starts, which must land (and write nothing)."""
    _run(CancellingMachine, store_path)
    machine_class, _profile = _on_backend(CancellingMachine, store_path)
    machine = machine_class()
    try:
        machine.open_manager(
            namespace=NAMESPACES[0], reader_pick="own", kind="passthrough", chunk=20, head=0, recent=0, branch_pick=0, chaos=None,
            settle=True,
        )
        landed = STEPS["cancelled"]
        machine.cancel_midway(op="add", pick=0, audiences=[0], checkpoints=-1)
        assert STEPS["cancelled"] == landed + 1, "a write cancelled before it starts raised Cancelled"
    finally:
        machine.teardown()
