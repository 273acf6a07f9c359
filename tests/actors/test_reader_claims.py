"""A namespace's reader record and the claims on it (SPEC 0, 1 D1/D4, 3.2, A1, R1-R10, E, F).

Seed rows 18, 19, 21, 22, 25, 26, 27, 28, 30, 31, 32, 33 and 70 of ``seed/TESTS.md``, one test
each, titled verbatim in the docstring with their SPEC ids, then the parts of A1, R5, R6 and N7
the seed does not test, and a Hypothesis property (a claim never changes hands).

Adaptations to SPEC D1 (each manager is bound to its own branch; no store-wide cursor): where the
seed switched the store under a manager, the record comes from another manager on that branch, or
from a record seeded into the file before the runtime opens it (``tests.helpers.seed_records``).
Each test that needed one says which it chose.

Sections:
  1. Helpers (a recording strategy, store helpers)
  2. Seed rows
  3. R5: a stale manager is refused every call but ``aclose``
  4. A1: an empty ``view_reader``
  5. R6: racing opens
  6. N7 at open
  7. A claim never changes hands (Hypothesis)
  8. R2 when a claim lands while a move waits for its drain
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides.actors import (
    ManagerClosedError,
    ReaderClaimError,
    ReaderRecordError,
    StrategyCapabilityError,
    StrategyNotStartedError,
    open_runtime,
)
from asides.store import text
from asides.strategies._base import CompiledMessage
from asides.strategies._models import CompletionRequest
from asides.strategies._passthrough import PassthroughStrategy
from tests.helpers import dump, eventually, namespace_actor, raw_rows, seed_records, sibling_store

# -- 1. Helpers ---------------------------------------------------------------------------------


class Recording:
    """A host's own strategy: passthrough selection, every call recorded.

    ``fail`` makes the next ``initialize`` raise; ``gate`` (an ``anyio.Event``) holds
    ``initialize`` until it is set, setting ``entered`` first; ``views`` keeps each ``ctx.view``
    ``select`` was handed (as a strategy may)."""

    name = "recording"

    def __init__(self, *, marks: bool = True, gate: anyio.Event | None = None) -> None:
        self.marks_compression_reads = marks
        self.calls: list[tuple[Any, ...]] = []
        self.fail = False
        self.gate = gate
        self.entered = anyio.Event()
        self.views: list[Any] = []
        self._inner = PassthroughStrategy()

    async def initialize(self, ctx) -> None:
        self.calls.append(("initialize", ctx.branch))
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise RuntimeError("boom: the strategy failed to start")

    async def on_new_message(self, message, ctx) -> None:
        self.calls.append(("on_new_message", message.id))

    async def select(self, ctx, budget, options):
        self.calls.append(("select",))
        self.views.append(ctx.view)
        return await self._inner.select(ctx, budget, options)

    async def tick(self, ctx) -> bool:
        self.calls.append(("tick",))
        return False

    def is_ready(self) -> bool:
        return True


def reader_records(store, branch: str = "main") -> dict[str, Any]:
    """Every ``<namespace>/reader`` record on ``branch``."""
    return {k: v for k, v in store.state_items(branch).items() if k.endswith("/reader")}


def raw_reader_rows(path: str, key: str) -> list[tuple[str, str]]:
    """``(branch, body)`` of every persisted state row under ``key`` (the store must be closed)."""
    return [(branch, body) for _, branch, _, kind, ref, body in raw_rows(path) if kind == "state" and ref == key]


def texts(compiled) -> list[str]:
    return [b.text for m in compiled.messages for b in m.content]


async def make_branch(rt, name: str) -> None:
    """Make branch ``name`` off main's head through a throwaway manager of another namespace (so
    the namespaces under test record nothing there)."""
    helper = await rt.open_manager("setup/brancher", strategy=PassthroughStrategy(), branch="main")
    await helper.fork(name)
    await helper.aclose()


PRIVATE = [text("[for ann]", ["ann"]), text("[for bob]", ["bob"]), text("Hello, both.")]


# -- 2. Seed rows -------------------------------------------------------------------------------


async def test_row18_second_reader_refused_while_first_strategy_starts(store_path):
    """ "refuses a second reader opening while the first one's strategy is still starting"

    Seed row 18; SPEC R6, R1, R2. ann's open is held inside its strategy's ``initialize`` on an
    ``anyio.Event``; meanwhile an open of the same namespace for bob raises ``ReaderClaimError`` at
    once (ann's open still blocked), naming both, and leaves nothing behind: the dump is equal,
    bob's strategy was handed nothing, and the file holds one reader record only."""
    async with open_runtime(store_path) as rt:
        gate = anyio.Event()
        slow = Recording(gate=gate)
        opened: dict[str, Any] = {}

        async def open_ann() -> None:
            opened["ann"] = await rt.open_manager("agents/x", strategy=slow, view_reader="ann")

        async with anyio.create_task_group() as tg:
            tg.start_soon(open_ann)
            await slow.entered.wait()
            before = dump(rt.store)
            bob_strategy = Recording()
            with pytest.raises(ReaderClaimError) as info:
                await rt.open_manager("agents/x", strategy=bob_strategy, view_reader="bob")
            assert not gate.is_set() and "ann" not in opened  # ann's strategy is still starting
            assert info.value.recorded == "ann" and info.value.requested == "bob"
            assert "'ann'" in str(info.value) and "'bob'" in str(info.value)
            assert dump(rt.store) == before
            assert bob_strategy.calls == []
            gate.set()
        ann = opened["ann"]
        assert ann.view_reader == "ann"
        assert reader_records(rt.store) == {"agents/x/reader": "ann"}
        await ann.add_message("user", [text("after")])
        assert bob_strategy.calls == []
    assert raw_reader_rows(store_path, "agents/x/reader") == [("main", '"ann"')]


async def test_row19_refused_open_registers_and_writes_nothing(store_path):
    """ "refuses another reader before registering anything, auxiliary slots included"

    Seed row 19; SPEC R1, R2, 3.3.1, E. A refused open (bob, after ann's claim) writes no record,
    does not raise the sequence (head and dump unchanged) and subscribes nothing: a message added
    afterwards reaches ann's strategy but bob's strategy is never called at all. ("Auxiliary
    slots" exist only in the TypeScript original.) The same holds through ``rt.manager``."""
    async with open_runtime(store_path) as rt:
        ann_strategy = Recording()
        ann = await rt.open_manager("agents/x", strategy=ann_strategy, view_reader="ann")
        head, before = rt.store.head("main"), dump(rt.store)
        bob_strategy = Recording()
        with pytest.raises(ReaderClaimError):
            await rt.open_manager("agents/x", strategy=bob_strategy, view_reader="bob")
        with pytest.raises(ReaderClaimError):
            async with rt.manager("agents/x", strategy=bob_strategy, view_reader="bob"):
                pytest.fail("the block must not run")  # pragma: no cover
        assert rt.store.head("main") == head
        assert dump(rt.store) == before
        message = await ann.add_message("user", [text("hi")])
        assert message.sequence == head + 1  # nothing else took a sequence
        # On PostgreSQL the strategy hears of it at commit, after the call returned.
        await eventually(lambda: ("on_new_message", message.id) in ann_strategy.calls, what="ann's strategy heard of the message")
        assert bob_strategy.calls == []


async def test_row21_set_strategy_refused_where_namespace_compiles_for_another_reader(store_path):
    """ "refuses setStrategy on a branch whose namespace compiles for another reader"

    Seed row 21; SPEC R1, R2, R4, R5, D1. Adaptation: with no store cursor (D1) a manager that
    compiles for a reader can never stand on a branch whose record names another reader (its open,
    switch and fork are refused first, shown at the end), so the seed's "store switched under the
    manager" becomes "another manager on that branch claimed the namespace": a manager opened
    with no reader (it compiles for no one, so bob is another reader to it) has
    ``set_strategy`` refused with ``ReaderClaimError`` naming bob, its old strategy kept (the new
    one is handed nothing) and nothing written."""
    async with open_runtime(store_path) as rt:
        await make_branch(rt, "other")  # before any claim: x records nothing there
        old = Recording()
        nobody = await rt.open_manager("agents/x", strategy=old)
        bob = await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="bob")
        before = dump(rt.store)
        new = Recording()
        with pytest.raises(ReaderClaimError) as info:
            await nobody.set_strategy(new)
        assert info.value.recorded == "bob" and info.value.requested is None
        assert nobody.strategy is old
        assert new.calls == []
        assert dump(rt.store) == before
        # A manager for ann cannot get onto bob's branch at all.
        with pytest.raises(ReaderClaimError):
            await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        ann = await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann", branch="other")
        with pytest.raises(ReaderClaimError):
            await ann.switch_branch("main")
        assert ann.branch == "other"
        await bob.aclose()


@pytest.mark.parametrize(("first", "second"), [("", None), (None, "")])
async def test_row22_empty_and_omitted_namespace_share_record_and_context_log(store_path, first, second):
    """ "keeps one record for an empty namespace and an omitted one, which share a context log"

    Seed row 22; SPEC 0 (glossary), R1, P2. A claim through ``namespace=""`` is seen through
    ``None`` and vice versa: another reader is refused there, a no-reader open compiles for the
    claimant, and a context entry appended through one is read through the other."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager(first, strategy=PassthroughStrategy(), view_reader="ann")
        assert ann.namespace == "default"
        with pytest.raises(ReaderClaimError) as info:
            await rt.open_manager(second, strategy=PassthroughStrategy(), view_reader="bob")
        assert info.value.namespace == "default"
        other = await rt.open_manager(second, strategy=PassthroughStrategy())
        assert other.namespace == "default" and other.view_reader == "ann"
        assert reader_records(rt.store) == {"default/reader": "ann"}
        await ann.append_context_entry([text("a note")])
        await other.append_context_entry([text("another note")])
        for manager in (ann, other):
            assert [e.content[0].text for e in manager.get_context_entries()] == ["a note", "another note"]


@pytest.mark.parametrize(("first", "second"), [(None, "default"), ("default", None)])
async def test_row26_omitted_namespace_and_default_share_record(store_path, first, second):
    """ "keeps one record for an omitted namespace and 'default'"

    Seed row 26; SPEC 0 (glossary), R1. ``None`` and ``"default"`` are one namespace: a claim
    through one refuses bob through the other, and a no-reader open there compiles for ann."""
    async with open_runtime(store_path) as rt:
        await rt.open_manager(first, strategy=PassthroughStrategy(), view_reader="ann")
        with pytest.raises(ReaderClaimError):
            await rt.open_manager(second, strategy=PassthroughStrategy(), view_reader="bob")
        other = await rt.open_manager(second, strategy=PassthroughStrategy())
        assert other.view_reader == "ann"
        assert reader_records(rt.store) == {"default/reader": "ann"}


async def test_row25_fork_set_strategy_switch_refused_on_unreadable_record(store_path):
    """ "refuses a fork, a setStrategy and a switch on a record that isn't a reader's name, naming it as such"

    Seed row 25; SPEC R7, R2, E. Records are seeded into the files (foreign data).
    (a) Namespace x records ``42`` on main: an open for ann is refused with ``ReaderRecordError``
    naming the record as not a reader's name, writing nothing.
    (b) Another store, where branch b records ``42`` for x and main records nothing: ann's
    manager on main is refused ``switch_branch("b")``, staying on main with its strategy,
    writing nothing.
    (c) Adaptation: under D1 and SPEC F (the actor loads a record once), a live manager's own
    record can only "become" unreadable inside its actor; no public write makes one, and every
    door onto such a record (open, switch) is refused first. So (c) sets the actor's in-memory
    record to the unreadable 42 (white-box) and checks the fork and set_strategy guards: each is
    refused with ``ReaderRecordError`` naming the record, no branch is made, the strategy is
    kept, the branch is unchanged and nothing is written."""
    # (a)
    first = store_path
    seed_records(first, [("main", "state", "x/reader", 42)])
    async with open_runtime(first) as rt:
        before = dump(rt.store)
        strategy = Recording()
        with pytest.raises(ReaderRecordError) as info:
            await rt.open_manager("x", strategy=strategy, view_reader="ann")
        assert info.value.record == 42 and info.value.branch == "main"
        assert "42" in str(info.value) and "not a reader's name" in str(info.value)
        assert strategy.calls == []
        assert dump(rt.store) == before
    # (b)
    second = sibling_store(store_path, "b")
    async with open_runtime(second) as rt:
        await make_branch(rt, "b")
    seed_records(second, [("b", "state", "x/reader", 42)])
    async with open_runtime(second) as rt:
        strategy = Recording()
        ann = await rt.open_manager("x", strategy=strategy, view_reader="ann")
        before = dump(rt.store)
        with pytest.raises(ReaderRecordError) as info:
            await ann.switch_branch("b")
        assert info.value.record == 42 and info.value.branch == "b"
        assert "not a reader's name" in str(info.value)
        assert ann.branch == "main" and ann.strategy is strategy
        assert dump(rt.store) == before
        # (c) white-box: the record of ann's own branch becomes unreadable in its actor
        from asides.actors._namespace import UnreadableRecord

        namespace_actor(rt, ann.branch, ann.namespace)._record = UnreadableRecord(42)
        branches = rt.list_branches()
        with pytest.raises(ReaderRecordError) as info:
            await ann.fork("c")
        assert info.value.record == 42 and "not a reader's name" in str(info.value)
        assert rt.list_branches() == branches
        new = Recording()
        with pytest.raises(ReaderRecordError):
            await ann.set_strategy(new)
        assert ann.strategy is strategy and new.calls == []
        assert ann.branch == "main"
        assert dump(rt.store) == before


async def _assert_not_started(rt, manager) -> None:
    """Every call that needs a started strategy raises StrategyNotStartedError; a fork or
    derive makes no branch (D4)."""
    branches = rt.list_branches()
    for call in (
        lambda: manager.compile(),
        lambda: manager.preview_context(),
        lambda: manager.tick(),
        lambda: manager.add_message("user", [text("x")]),
        lambda: manager.fork("never"),
        lambda: manager.derive(branch="never-derived", strategy=PassthroughStrategy()),
    ):
        with pytest.raises(StrategyNotStartedError):
            await call()
    assert rt.list_branches() == branches


async def test_row27_failed_start_keeps_the_claim_an_open_a_switch_or_a_fork_wrote(store_path):
    """ "keeps the claim a switch or a fork wrote when the strategy then fails to start there"

    Seed row 27; SPEC R8.1, R1, R2, D4 (SPEC R8.1 settles the seed's open question: the claim
    is kept). A strategy whose ``initialize`` raises:
    (open) ann's open fails with the strategy's error and keeps the claim written before the
    start: bob is still refused there, and a later open for ann writes nothing new;
    (switch, fork) ann's manager moves, by ``switch_branch`` to an unclaimed branch and later by
    ``fork``, and the strategy fails to start there: the move raises the strategy's error, the
    manager is on the new branch, the claim the move wrote there is kept (bob refused there), and
    every call needing a started strategy raises ``StrategyNotStartedError`` (a fork or derive
    making no branch) until ``set_strategy`` succeeds."""
    async with open_runtime(store_path) as rt:
        await make_branch(rt, "b")
        # (open)
        failing = Recording()
        failing.fail = True
        with pytest.raises(RuntimeError, match="boom"):
            await rt.open_manager("agents/x", strategy=failing, view_reader="ann")
        assert rt.store.get_state("main", "agents/x/reader") == "ann"
        head = rt.store.head("main")
        with pytest.raises(ReaderClaimError):
            await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="bob")
        strategy = Recording()
        ann = await rt.open_manager("agents/x", strategy=strategy, view_reader="ann")
        assert ann.view_reader == "ann" and rt.store.head("main") == head
        await ann.add_message("user", [text("hello")])
        # (switch), then (fork)
        assert rt.store.get_state("b", "agents/x/reader") is None
        for move, target in (("switch", "b"), ("fork", "c")):
            strategy.fail = True
            with pytest.raises(RuntimeError, match="boom"):
                if move == "switch":
                    await ann.switch_branch(target)
                else:
                    await ann.fork(target)
            assert ann.branch == target
            assert rt.store.get_state(target, "agents/x/reader") == "ann"
            with pytest.raises(ReaderClaimError):
                await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="bob", branch=target)
            await _assert_not_started(rt, ann)
            strategy = Recording()
            await ann.set_strategy(strategy)
            assert ann.branch == target and ann.strategy is strategy
            await ann.compile()
            await ann.add_message("user", [text(f"back after the {move}")])
            assert rt.store.get_state(target, "agents/x/reader") == "ann"


async def test_row28_records_reader_refuses_another_no_reader_compiles_for_it(store_path):
    """ "records a namespace's reader and refuses another, while an open with no reader compiles for the namespace's"

    Seed row 28; SPEC R1, R3, A1, A1.5. ann's open records ann (one state write); bob's open is
    refused naming both; an open with no reader answers ``view_reader == "ann"`` and compiles
    ann's view (her block, the plain block, not bob's; no audience on any compiled block)."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        assert rt.store.head("main") == 1
        assert rt.store.get_state("main", "agents/x/reader") == "ann"
        with pytest.raises(ReaderClaimError) as info:
            await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="bob")
        message = str(info.value)
        assert "'ann'" in message and "'bob'" in message and "namespace of its own" in message
        nobody = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
        assert nobody.view_reader == "ann"
        await ann.add_message("user", PRIVATE)
        compiled = await nobody.compile()
        assert texts(compiled) == ["[for ann]", "Hello, both."]
        assert all(b.audience is None for m in compiled.messages for b in m.content)
        assert texts(await ann.compile()) == texts(compiled)


async def test_row30_no_reader_manager_refused_switch_fork_set_strategy_where_recorded(store_path):
    """ "refuses a manager that compiles for no reader a switch, fork or setStrategy where its namespace records one"

    Seed row 30; SPEC R4, R2, D1. Adaptation (D1): the record comes from another manager on that
    branch. A manager opened with no reader on an unclaimed namespace is refused a switch to a
    branch where ann's manager claimed the namespace (staying where it was); and, once ann claims
    its own branch, a fork (refused before its branch exists) and a set_strategy (old strategy
    kept). Each error names ann and says the manager compiles for no reader."""
    async with open_runtime(store_path) as rt:
        await make_branch(rt, "b")
        old = Recording()
        nobody = await rt.open_manager("agents/x", strategy=old)
        assert nobody.view_reader is None
        await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann", branch="b")
        before = dump(rt.store)
        with pytest.raises(ReaderClaimError) as info:
            await nobody.switch_branch("b")
        assert info.value.recorded == "ann" and info.value.requested is None and info.value.branch == "b"
        assert nobody.branch == "main" and nobody.strategy is old
        assert dump(rt.store) == before
        # ann claims main too: the no-reader manager now stands where its namespace records one.
        await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        before, branches = dump(rt.store), rt.list_branches()
        with pytest.raises(ReaderClaimError) as info:
            await nobody.fork("c")
        assert "'ann'" in str(info.value) and "no reader" in str(info.value)
        assert rt.list_branches() == branches
        new = Recording()
        with pytest.raises(ReaderClaimError):
            await nobody.set_strategy(new)
        assert nobody.strategy is old and new.calls == []
        assert nobody.branch == "main"
        assert dump(rt.store) == before


async def test_row31_stale_no_reader_manager_refused_compile_preview_tick_edit(store_path):
    """ "refuses a compile, preview, tick or edit once the namespace records a reader the manager doesn't compile for"

    Seed row 31; SPEC R5, E, D1. Adaptation (D1): the seed's second case (a store switched under
    the manager) is the same as the first here: a manager opened with no reader before ann's
    manager claimed the namespace. Its compile, preview, tick and edit are each refused with
    ``ReaderClaimError`` naming ann and saying it compiles for no reader; the edit leaves the
    message unchanged and nothing is written."""
    async with open_runtime(store_path) as rt:
        nobody = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
        message = await nobody.add_message("user", [text("hello")])
        await nobody.compile()  # answered before the claim
        await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        before = dump(rt.store)
        for call in (
            lambda: nobody.compile(),
            lambda: nobody.preview_context(),
            lambda: nobody.tick(),
            lambda: nobody.edit_message(message.id, [text("changed")]),
        ):
            with pytest.raises(ReaderClaimError) as info:
                await call()
            assert "'ann'" in str(info.value) and "no reader" in str(info.value)
            assert info.value.recorded == "ann" and info.value.requested is None
        assert rt.store.get_message("main", message.id) == message
        assert dump(rt.store) == before


async def test_row32_stale_compile_refused_before_host_select_runs(store_path):
    """ "refuses a compile before a host strategy's select runs, once the namespace records a reader the manager doesn't compile for"

    Seed row 32; SPEC R5, F. A host's own strategy under a no-reader manager: its ``select`` runs
    for the compile before ann's claim, and never again once the claim lands (compile and preview
    refused); nothing is written."""
    async with open_runtime(store_path) as rt:
        strategy = Recording()
        nobody = await rt.open_manager("agents/x", strategy=strategy)
        await nobody.add_message("user", [text("hello")])
        await nobody.compile()
        assert strategy.calls.count(("select",)) == 1
        await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        before = dump(rt.store)
        with pytest.raises(ReaderClaimError):
            await nobody.compile()
        with pytest.raises(ReaderClaimError):
            await nobody.preview_context()
        assert strategy.calls.count(("select",)) == 1
        assert dump(rt.store) == before


async def test_row33_every_read_through_kept_view_refused_after_claim(store_path):
    """ "refuses every read through a view its strategy holds, once the namespace records a reader the manager doesn't compile for"

    Seed row 33; SPEC R5, S3, 3.3 (``StrategyContext.view``'s six reads). A strategy keeps
    ``ctx.view`` from its ``select`` under a no-reader manager: ``get_all``, ``get``,
    ``sequence_of``, ``get_from``, ``get_tail`` and ``length`` each answer before ann's claim and
    each raises ``ReaderClaimError`` after it."""
    async with open_runtime(store_path) as rt:
        strategy = Recording()
        nobody = await rt.open_manager("agents/x", strategy=strategy)
        message = await nobody.add_message("user", [text("hello")])
        await nobody.compile()
        (view,) = strategy.views
        reads = {
            "get_all": lambda: view.get_all(),
            "get": lambda: view.get(message.id),
            "sequence_of": lambda: view.sequence_of(message.id),
            "get_from": lambda: view.get_from(0),
            "get_tail": lambda: view.get_tail(1),
            "length": lambda: view.length(),
        }
        answers = {name: read() for name, read in reads.items()}
        assert [m.id for m in answers["get_all"]] == [message.id]
        assert answers["get"].id == message.id
        assert answers["sequence_of"] == message.sequence
        assert [m.id for m in answers["get_from"]] == [message.id]
        assert [m.id for m in answers["get_tail"]] == [message.id]
        assert answers["length"] == 1
        await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        for _name, read in reads.items():
            with pytest.raises(ReaderClaimError):
                read()


@pytest.mark.parametrize(
    ("ann_reader", "bob_reader", "expected"),
    [(None, None, 1), ("ann", None, 2), ("ann", "bob", 3)],
    ids=["none", "ann only", "both"],
)
async def test_row70_sequence_after_two_opens(store_path, ann_reader, bob_reader, expected):
    """`sequence after two opens: ${arm}` (the zz-seq-probe; arms "none", "ann only", "both")

    Seed row 70; SPEC 0 (glossary: sequence), R1, 3.3.1. Two managers over one fresh store, in
    agents/ann and agents/bob, with PassthroughStrategy. The first message's sequence is 1 with no
    readers, 2 with ann's claim only, 3 with both (the seed's 1/2/3): a claim is exactly one
    write, an open that claims nothing writes nothing. Each arm has a store of its own."""
    path = store_path
    async with open_runtime(path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader=ann_reader)
        await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader=bob_reader)
        assert rt.store.head("main") == expected - 1
        message = await ann.add_message("user", [text("Hello, both.")])
        assert message.sequence == expected
        assert ann.get_all_messages()[-1].sequence == expected
    async with open_runtime(path) as rt:  # and so it stays
        assert rt.store.messages("main")[-1].sequence == expected


# -- 3. R5: a stale manager is refused every call but aclose ------------------------------------


async def test_stale_manager_refused_every_call_but_aclose(store_path):
    """A stale manager is refused every call but ``aclose``.

    SPEC R5, R8.2, E, D1. A manager opened with no reader before ann's manager claimed the
    namespace: reads (``get_message``, ``get_all_messages``, ``get_context_entries``,
    ``is_ready``, ``pending_work``), writes (``add_message``, ``append_context_entry``),
    ``compile``, ``preview_context``, ``tick``, ``drain``, ``edit_message``, ``fork``,
    ``switch_branch``, ``set_strategy``, ``derive``, ``reset_head_window`` and the three summary
    reads each raise ``ReaderClaimError``, and nothing is written (no branch made). ``aclose``
    works; afterwards calls raise ``ManagerClosedError``."""
    async with open_runtime(store_path) as rt:
        await make_branch(rt, "b")
        nobody = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
        message = await nobody.add_message("user", [text("hello")])
        await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        before = dump(rt.store)
        sync_calls = {
            "get_message": lambda: nobody.get_message(message.id),
            "get_all_messages": lambda: nobody.get_all_messages(),
            "get_context_entries": lambda: nobody.get_context_entries(),
            "is_ready": lambda: nobody.is_ready(),
            "pending_work": lambda: nobody.pending_work(),
            "search_summaries": lambda: nobody.search_summaries("hello"),
            "get_summaries_in_range": lambda: nobody.get_summaries_in_range(),
            "get_summary": lambda: nobody.get_summary("L1-1"),
        }
        async_calls = {
            "add_message": lambda: nobody.add_message("user", [text("more")]),
            "append_context_entry": lambda: nobody.append_context_entry([text("note")]),
            "compile": lambda: nobody.compile(),
            "preview_context": lambda: nobody.preview_context(),
            "tick": lambda: nobody.tick(),
            "drain": lambda: nobody.drain(),
            "edit_message": lambda: nobody.edit_message(message.id, [text("changed")]),
            "fork": lambda: nobody.fork("c"),
            "switch_branch": lambda: nobody.switch_branch("b"),
            "set_strategy": lambda: nobody.set_strategy(PassthroughStrategy()),
            "derive": lambda: nobody.derive(branch="d", strategy=PassthroughStrategy()),
            "reset_head_window": lambda: nobody.reset_head_window("topic"),
        }
        for _name, call in sync_calls.items():
            with pytest.raises(ReaderClaimError, match="ann"):
                call()
        for _name, call in async_calls.items():
            with pytest.raises(ReaderClaimError, match="ann"):
                await call()
        assert dump(rt.store) == before
        assert nobody.branch == "main"
        await nobody.aclose()
        assert nobody.closed
        await nobody.aclose()  # idempotent
        with pytest.raises(ManagerClosedError):
            nobody.get_all_messages()
        with pytest.raises(ManagerClosedError):
            await nobody.compile()


# -- 4. A1: an empty view_reader ----------------------------------------------------------------


async def test_empty_view_reader_refused_writing_nothing(store_path):
    """``view_reader=""`` is refused (``ValueError``), writing and registering nothing.

    SPEC A1, R2, E. The namespace stays unclaimed: a later open for bob claims it."""
    async with open_runtime(store_path) as rt:
        before = dump(rt.store)
        strategy = Recording()
        with pytest.raises(ValueError, match="view_reader"):
            await rt.open_manager("agents/x", strategy=strategy, view_reader="")
        assert dump(rt.store) == before
        assert strategy.calls == []
        bob = await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="bob")
        assert bob.view_reader == "bob"


# -- 5. R6: racing opens ------------------------------------------------------------------------

RACERS = 50


async def _race(rt, readers: list[str]) -> tuple[list[Any], list[ReaderClaimError]]:
    won: list[Any] = []
    refused: list[ReaderClaimError] = []

    async def one(reader: str) -> None:
        try:
            won.append(await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader=reader))
        except ReaderClaimError as exc:
            refused.append(exc)

    async with trio.open_nursery() as nursery:
        for reader in readers:
            nursery.start_soon(one, reader)
    return won, refused


async def test_racing_opens_exactly_one_claims(store_path):
    """Racing opens: exactly one of 50 concurrent opens with distinct readers claims.

    SPEC R6, R1, R2. 50 opens of one unclaimed namespace, started together in a Trio nursery: one
    wins, the other 49 raise ``ReaderClaimError`` naming the winner; the head rose by exactly one
    and the file holds exactly one reader record. Then the same race on the claimed namespace,
    with 50 other readers: every one is refused and nothing is written."""
    readers = [f"reader-{i}" for i in range(RACERS)]
    async with open_runtime(store_path) as rt:
        head = rt.store.head("main")
        won, refused = await _race(rt, readers)
        assert len(won) == 1 and len(refused) == RACERS - 1
        winner = won[0].view_reader
        assert winner in readers
        assert all(exc.recorded == winner for exc in refused)
        assert sorted([winner] + [exc.requested for exc in refused]) == sorted(readers)
        assert rt.store.head("main") == head + 1
        assert reader_records(rt.store) == {"agents/x/reader": winner}
        before = dump(rt.store)
        won, refused = await _race(rt, [f"late-{i}" for i in range(RACERS)])
        assert won == [] and len(refused) == RACERS
        assert all(exc.recorded == winner for exc in refused)
        assert dump(rt.store) == before
    assert raw_reader_rows(store_path, "agents/x/reader") == [("main", f'"{winner}"')]


# -- 6. N7 at open ------------------------------------------------------------------------------


async def test_open_refuses_strategy_that_does_not_mark_reads_under_a_reader(store_path):
    """A strategy with ``marks_compression_reads = False`` is refused at open under a reader.

    SPEC N7, R2, E (seed row 63's open case). ``StrategyCapabilityError`` is raised before the
    strategy is handed anything (no call at all) and nothing is written (no claim); a manager
    with no reader runs the same kind of strategy."""
    async with open_runtime(store_path) as rt:
        before = dump(rt.store)
        unmarked = Recording(marks=False)
        with pytest.raises(StrategyCapabilityError, match="marks_compression_reads"):
            await rt.open_manager("agents/x", strategy=unmarked, view_reader="ann")
        assert unmarked.calls == []
        assert dump(rt.store) == before
        runs = Recording(marks=False)
        nobody = await rt.open_manager("agents/x", strategy=runs)
        assert nobody.view_reader is None
        await nobody.add_message("user", [text("hello")])
        assert texts(await nobody.compile()) == ["hello"]
        assert [c[0] for c in runs.calls] == ["initialize", "on_new_message", "select"]
        assert reader_records(rt.store) == {}


# -- 7. A claim never changes hands (Hypothesis) ------------------------------------------------

_opens = st.lists(
    st.tuples(st.sampled_from([None, "", "default"]), st.sampled_from([None, "ann", "bob", "cy"])),
    min_size=1,
    max_size=8,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(opens=_opens)
def test_claim_never_changes_hands(store_path, opens):
    """A claim never changes hands (property).

    SPEC R1, R2, R3, A1, 0 (one namespace under three spellings). Random sequences of opens by
    random readers (or none) of one namespace, every manager kept open: the record, once set,
    never changes; every open for another reader is refused writing nothing; a no-reader open
    compiles for the recorded reader (or none); only the claiming open raises the head (by one)."""

    async def main(path: str) -> None:
        recorded: str | None = None
        async with open_runtime(path) as rt:
            for namespace, reader in opens:
                head = rt.store.head("main")
                if reader is not None and recorded is not None and reader != recorded:
                    with pytest.raises(ReaderClaimError):
                        await rt.open_manager(namespace, strategy=PassthroughStrategy(), view_reader=reader)
                    assert rt.store.head("main") == head
                else:
                    manager = await rt.open_manager(namespace, strategy=PassthroughStrategy(), view_reader=reader)
                    claims = reader is not None and recorded is None
                    if claims:
                        recorded = reader
                    assert manager.view_reader == recorded
                    assert rt.store.head("main") == head + (1 if claims else 0)
                assert rt.store.get_state("main", "default/reader") == recorded

    trio.run(main, sibling_store(store_path, f"e{next(_EXAMPLES)}"))


#: Names the fresh store of each Hypothesis example (a sibling of the test's ``store_path``).
_EXAMPLES = itertools.count()


# -- 8. R2 when a claim lands while a move waits for its drain ----------------------------------


class Compressing:
    """A host strategy with one unit of background work: a model request (so a drain runs)."""

    name = "compressing"
    marks_compression_reads = True

    def __init__(self) -> None:
        self.pending = True
        self.calls: list[str] = []

    async def initialize(self, ctx) -> None:
        self.calls.append("initialize")

    async def on_new_message(self, message, ctx) -> None:
        return None

    async def select(self, ctx, budget, options):
        return await PassthroughStrategy().select(ctx, budget, options)

    async def tick(self, ctx) -> bool:
        await ctx.model.complete(CompletionRequest(messages=(CompiledMessage("user", (text("summarise"),)),)))
        self.pending = False
        return True

    def is_ready(self) -> bool:
        return not self.pending


# Not an asides.testing model: it must run a callback while its request is being cancelled.
class HeldModel:
    """A model whose request never answers. When the request is cancelled (the drain stopping),
    it runs ``on_cancel`` shielded, before the drain can finish stopping: a deterministic way to
    make another open land exactly while a move waits for the drain."""

    def __init__(self, on_cancel) -> None:
        self.entered = anyio.Event()
        self.on_cancel = on_cancel

    async def complete(self, request):
        self.entered.set()
        try:
            await anyio.Event().wait()
        finally:
            with anyio.CancelScope(shield=True):
                await self.on_cancel()


async def test_refused_switch_stays_put_when_a_claim_lands_during_the_switch(store_path):
    """A refused switch leaves the manager where it was, even when the claim that refuses it
    lands while the switch waits for the manager's drain to stop.

    SPEC R2, R1, R6, D3 (seed row 20's guarantee under a race). ann's manager on main has a drain
    with a model request out; it switches to branch b (unclaimed for x when the switch starts);
    bob's manager claims x on b while the switch stops the drain. The switch is refused with
    ``ReaderClaimError``; R2: ann's manager must still be on main, working."""
    async with open_runtime(store_path) as rt:
        await make_branch(rt, "b")
        opened: dict[str, Any] = {}

        async def bob_claims_b() -> None:
            opened["bob"] = await rt.open_manager("x", strategy=PassthroughStrategy(), view_reader="bob", branch="b")

        model = HeldModel(bob_claims_b)
        ann = await rt.open_manager("x", strategy=Compressing(), view_reader="ann", model=model)
        await ann.add_message("user", [text("hello")])
        await model.entered.wait()
        with pytest.raises(ReaderClaimError):
            await ann.switch_branch("b")
        assert opened["bob"].view_reader == "bob"
        assert ann.branch == "main"
        await ann.compile()


async def test_refused_set_strategy_keeps_old_strategy_when_a_claim_lands_during_it(store_path):
    """A refused set_strategy keeps the old strategy, even when the claim that refuses it lands
    while set_strategy waits for the manager's drain to stop.

    SPEC R2, R4, R10. A manager with no reader, its drain's model request out, calls
    ``set_strategy``; ann's manager claims the namespace while the drain stops. The call is
    refused with ``ReaderClaimError`` and the new strategy is handed nothing; R2: the manager's
    strategy is still the old one."""
    async with open_runtime(store_path) as rt:
        opened: dict[str, Any] = {}

        async def ann_claims() -> None:
            opened["ann"] = await rt.open_manager("x", strategy=PassthroughStrategy(), view_reader="ann")

        model = HeldModel(ann_claims)
        old = Compressing()
        nobody = await rt.open_manager("x", strategy=old, model=model)
        await nobody.add_message("user", [text("hello")])
        await model.entered.wait()
        new = Compressing()
        with pytest.raises(ReaderClaimError):
            await nobody.set_strategy(new)
        assert opened["ann"].view_reader == "ann"
        assert new.calls == []
        assert nobody.strategy is old


async def test_row24_refuses_a_fork_when_the_head_records_another_reader(store_path):
    """Seed row 24: "refuses a fork when the head records another reader, before it makes a
    branch". SPEC R1, R2, R4, D1.

    Changed by SPEC D1: a fork starts at the manager's own head, where a manager that compiles
    for ann can only be while the head records ann. The head records another reader for (a) a
    manager opened with no reader before bob claimed the namespace, and (b) a manager for ann
    whose namespace's record is, in the actor's memory, someone else's (foreign data; set
    directly, as no public write can change a claim). Each fork is refused naming the recorded
    reader, and no branch is made."""
    async with open_runtime(store_path) as rt:
        stale = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
        await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="bob")
        before = dump(rt.store)
        with pytest.raises(ReaderClaimError) as refused:
            await stale.fork("from-stale")
        assert "'bob'" in str(refused.value)
        assert dump(rt.store) == before
        assert [b.name for b in rt.list_branches()] == ["main"]

        ann = await rt.open_manager("agents/y", strategy=PassthroughStrategy(), view_reader="ann")
        namespace_actor(rt, ann.branch, ann.namespace)._record = "bob"  # foreign data in memory, see the docstring
        before = dump(rt.store)
        with pytest.raises(ReaderClaimError) as refused:
            await ann.fork("from-ann")
        assert "'ann'" in str(refused.value) and "'bob'" in str(refused.value)
        assert dump(rt.store) == before
        assert [b.name for b in rt.list_branches()] == ["main"]
        namespace_actor(rt, ann.branch, ann.namespace)._record = "ann"
