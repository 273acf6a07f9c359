"""Branches: fork, switch, derive, reopen_derived, set_strategy, and the context log's copies
(SPEC D1, D4, 3.2, 3.3.1, R1-R9, N7, P2, E, S2; STRATEGIES 4.14).

Seed rows 35-40 and 71 of ``seed/TESTS.md`` (titles verbatim at the top of each docstring),
row 11 (P2) and the row 13/22 interplay (an empty namespace's context log, its refusals and its
copies), then what the seed does not test: D1 (fork and switch move only the manager they are
called on), ``BranchInfo``, S2 through managers, R2 for every branch operation, ``derive`` at an
earlier ``at_sequence``, ``reopen_derived``, and N7 at ``set_strategy``, ``derive`` and
``reopen_derived``.

Adaptations (each test says which it took):

* SPEC D1: there is no store-wide cursor, so "a head that records another reader" under a
  manager comes from another manager on that branch (the manager is then stale, R5), from a
  record seeded into the file before the runtime opens it (``tests.helpers.seed_records``), or,
  where every public door is refused first, from setting the namespace actor's in-memory record
  (white-box, as ``test_reader_claims`` row 25 (c) does).
* ``derive(at_sequence=...)`` is the port's "checkpoint" (the seed's inspection of an older
  state): the child branch sees the parent as of that sequence (S2) and records the reader the
  parent compiles for (R9).
* SPEC D4: ``derive`` after ``aclose`` or after a failed strategy start is refused, like
  ``fork`` (row 71).
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import registered_managers

from asides import BranchInfo
from asides.actors import (
    BranchExistsError,
    MalformedContentError,
    ManagerClosedError,
    ReaderClaimError,
    ReaderRecordError,
    StrategyCapabilityError,
    StrategyNotStartedError,
    UnknownBranchError,
    open_runtime,
)
from asides.actors._namespace import UnreadableRecord
from asides.store import text
from asides.store._model import MISSING
from asides.strategies._passthrough import PassthroughStrategy
from tests.helpers import dump, message_body, namespace_actor, seed_records, writable_store

# -- helpers ------------------------------------------------------------------------------------


class Recording:
    """A host strategy: passthrough selection, every call recorded. ``fail`` makes
    ``initialize`` raise; ``marks`` is its ``marks_compression_reads``."""

    name = "recording"

    def __init__(self, *, marks: bool = True, fail: bool = False) -> None:
        self.marks_compression_reads = marks
        self.fail = fail
        self.calls: list[tuple[Any, ...]] = []

    async def initialize(self, ctx) -> None:
        self.calls.append(("initialize", ctx.branch, ctx.reader))
        if self.fail:
            raise RuntimeError("initialize failed (test)")

    async def on_new_message(self, message, ctx) -> None:
        self.calls.append(("on_new_message", message.id))

    async def select(self, ctx, budget, options):
        self.calls.append(("select",))
        return await PassthroughStrategy().select(ctx, budget, options)

    async def tick(self, ctx) -> bool:
        return False

    def is_ready(self) -> bool:
        return True


def texts(compiled) -> list[str]:
    return [b.text for m in compiled.messages for b in m.content]


def message_texts(manager) -> list[str]:
    return [b.text for m in manager.get_all_messages() for b in m.content]


def branch_names(rt) -> list[str]:
    return [b.name for b in rt.list_branches()]


PRIVATE = [text("[for ann]", ["ann"]), text("[for bob]", ["bob"]), text("Hello, both.")]


# -- seed rows 35-40, 71 ------------------------------------------------------------------------


async def test_row35_derived_child_compiles_for_parents_reader_records_it_and_reopens(store_path):
    """ "derives a child that compiles for the parent's reader, records it on its branch, and reopens with it"

    Seed row 35; SPEC R9, A1.5, 3.2. ann's manager derives a child: ``child.view_reader`` is ann,
    the child's branch records ann, its compile is ann's view; ``reopen_derived`` (after the
    child closed, and after the store reopened) gives ann again, the same namespace and the same
    ``derivation``."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.add_message("user", PRIVATE)
        child = await ann.derive(branch="child", strategy=PassthroughStrategy())
        assert child.view_reader == "ann" and child.namespace == "agents/x" and child.branch == "child"
        assert rt.store.get_state("child", "agents/x/reader") == "ann"
        assert texts(await child.compile()) == ["[for ann]", "Hello, both."]
        derivation = child.derivation
        assert (derivation.parent_branch, derivation.branch, derivation.namespace) == ("main", "child", "agents/x")
        await child.aclose()
        reopened = await rt.reopen_derived("child", strategy=PassthroughStrategy())
        assert reopened.view_reader == "ann" and reopened.namespace == "agents/x"
        assert reopened.derivation == derivation
    async with open_runtime(store_path) as rt:
        reopened = await rt.reopen_derived("child", strategy=PassthroughStrategy())
        assert reopened.view_reader == "ann" and reopened.derivation == derivation
        assert texts(await reopened.compile()) == ["[for ann]", "Hello, both."]


async def test_row36_no_reader_parent_on_claimed_namespace_derives_child_for_namespaces_reader(store_path):
    """ "derives, from a manager opened with no reader on a claimed namespace, a child that compiles
    for the namespace's reader, live and reopened"

    Seed row 36; SPEC R9, R3, A1, A1.5. ann claims ``agents/x``; a manager opened there with no
    reader, its live child and that child reopened each answer ``view_reader == "ann"`` and
    compile ann's view."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.add_message("user", PRIVATE)
        parent = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
        assert parent.view_reader == "ann"
        child = await parent.derive(branch="child", strategy=PassthroughStrategy())
        assert child.view_reader == "ann"
        assert rt.store.get_state("child", "agents/x/reader") == "ann"
        await child.aclose()
        reopened = await rt.reopen_derived("child", strategy=PassthroughStrategy())
        assert reopened.view_reader == "ann"
        assert texts(await reopened.compile()) == ["[for ann]", "Hello, both."]


async def test_row37_child_from_before_the_first_record_records_the_namespaces_reader(store_path):
    """ "records the namespace's reader on an inspection's child from before the first record"

    Seed row 37; SPEC R9, R4, R3, S2. Adaptation: the "inspection" is ``derive(at_sequence=...)``
    at a point before ann's claim. A parent opened with no reader after the claim compiles for
    ann (R3), so its child records ann on its branch and compiles for her, though the checkpoint
    recorded nothing; the child sees only what the parent held at that point. R4 against the
    seed: a parent that still compiles for no reader where ann is recorded (opened before the
    claim) is stale, and its derive is refused (R5) with no branch made."""
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("setup/host", strategy=PassthroughStrategy())
        early = await host.add_message("user", [text("early")])
        stale = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
        ann = await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.add_message("user", [text("late")])
        assert writable_store(rt).model.get_state_at("main", "agents/x/reader", early.sequence) is MISSING
        parent = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
        child = await parent.derive(branch="inspect", strategy=PassthroughStrategy(), at_sequence=early.sequence)
        assert child.view_reader == "ann"
        assert rt.store.get_state("inspect", "agents/x/reader") == "ann"
        assert message_texts(child) == ["early"]
        assert child.derivation.at_sequence == early.sequence
        await child.aclose()
        assert (await rt.reopen_derived("inspect", strategy=PassthroughStrategy())).view_reader == "ann"
        before = dump(rt.store)
        with pytest.raises(ReaderClaimError):
            await stale.derive(branch="stale-child", strategy=PassthroughStrategy(), at_sequence=early.sequence)
        assert "stale-child" not in branch_names(rt) and dump(rt.store) == before


async def test_row38_child_records_what_the_head_records_a_cleared_record_included(store_path):
    """ "records on a child what the namespace records at the parent's head, a cleared record included"

    Seed row 38; SPEC R9, R7, E. Adaptations: SPEC defines no cleared record (in the seed, null
    means unclaimed). (a) A head that records nothing: the no-reader parent's child records
    nothing (no state write on its branch) and compiles for no reader, live and reopened. (b) A
    head recording ann over a checkpoint from before any record: the child records ann (as row
    37). (c) The seed's "cleared" record, a JSON null, is not a reader's name here (R7, read
    fail-closed): a derive at a checkpoint holding it is refused with ``ReaderRecordError`` and
    makes no branch."""
    seed_records(
        store_path,
        [
            ("main", "message", None, message_body("user", [{"type": "text", "text": "hello"}])),
            ("main", "state", "agents/y/reader", None),
            ("main", "state", "agents/y/reader", "ann"),
        ],
    )
    async with open_runtime(store_path) as rt:
        # (a)
        nobody = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
        child = await nobody.derive(branch="unclaimed", strategy=PassthroughStrategy())
        assert child.view_reader is None
        assert rt.store.get_state("unclaimed", "agents/x/reader") is None
        info = next(b for b in rt.list_branches() if b.name == "unclaimed")
        assert info.head == info.fork_sequence
        await child.aclose()
        assert (await rt.reopen_derived("unclaimed", strategy=PassthroughStrategy())).view_reader is None
        # (b)
        parent = await rt.open_manager("agents/y", strategy=PassthroughStrategy())
        assert parent.view_reader == "ann"
        claimed = await parent.derive(branch="claimed", strategy=PassthroughStrategy(), at_sequence=1)
        assert claimed.view_reader == "ann" and rt.store.get_state("claimed", "agents/y/reader") == "ann"
        # (c)
        before = dump(rt.store)
        with pytest.raises(ReaderRecordError) as error:
            await parent.derive(branch="cleared", strategy=PassthroughStrategy(), at_sequence=2)
        assert "not a reader's name" in str(error.value)
        assert "cleared" not in branch_names(rt) and dump(rt.store) == before


async def test_row39_derive_refused_where_head_held_by_another_reader(store_path):
    """ "refuses a derive whose head another reader holds, before it writes the child's branch"

    Seed row 39; SPEC R1, R2, R5, D1. Adaptation (D1): a manager stands on a head another reader
    holds only (a) when it compiles for no reader and bob claimed the namespace after it opened
    (it is stale): its derive is refused with ``ReaderClaimError`` naming bob; or (b) through
    foreign data: the store records bob, then ann; ann's derive at the checkpoint where bob is
    recorded is refused naming both. Neither makes a branch nor writes anything."""
    seed_records(
        store_path,
        [
            ("main", "state", "agents/y/reader", "bob"),
            ("main", "state", "agents/y/reader", "ann"),
        ],
    )
    async with open_runtime(store_path) as rt:
        nobody = await rt.open_manager("agents/x", strategy=PassthroughStrategy())
        await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="bob")
        branches, before = rt.list_branches(), dump(rt.store)
        strategy = Recording()
        with pytest.raises(ReaderClaimError) as error:
            await nobody.derive(branch="child", strategy=strategy)
        assert error.value.recorded == "bob" and error.value.requested is None
        assert strategy.calls == []
        ann = await rt.open_manager("agents/y", strategy=PassthroughStrategy(), view_reader="ann")
        with pytest.raises(ReaderClaimError) as error:
            await ann.derive(branch="child", strategy=strategy, at_sequence=1)
        assert "'ann'" in str(error.value) and "'bob'" in str(error.value)
        assert rt.list_branches() == branches and dump(rt.store) == before
        assert strategy.calls == []


async def test_row40_derive_refused_over_unreadable_head_record_with_and_without_reader(store_path):
    """ "refuses a derive over a head record that isn't a reader's name, with a reader and without one"

    Seed row 40; SPEC R7, R2, E. (a) White-box, as test_reader_claims row 25 (c): every public
    door onto an unreadable record (open, switch) is refused first, so the namespace actor's
    record of a manager with a reader (ann, ``agents/x``) and of one without (``agents/y``) is
    set to the unreadable 42: each derive raises ``ReaderRecordError`` naming the record. (b)
    Foreign data: the store records 42, then ann; a derive at the checkpoint holding 42, by ann's
    manager and by one opened with no reader, is refused the same way. No branch is made and
    nothing is written."""
    seed_records(
        store_path,
        [
            ("main", "state", "agents/z/reader", 42),
            ("main", "state", "agents/z/reader", "ann"),
        ],
    )
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        nobody = await rt.open_manager("agents/y", strategy=PassthroughStrategy())
        branches, before = rt.list_branches(), dump(rt.store)
        for manager in (ann, nobody):
            actor = namespace_actor(rt, manager.branch, manager.namespace)
            saved = actor.record
            actor._record = UnreadableRecord(42)
            with pytest.raises(ReaderRecordError) as error:
                await manager.derive(branch="child", strategy=PassthroughStrategy())
            assert error.value.record == 42 and "not a reader's name" in str(error.value)
            actor._record = saved
        for reader in ("ann", None):
            manager = await rt.open_manager("agents/z", strategy=PassthroughStrategy(), view_reader=reader)
            with pytest.raises(ReaderRecordError) as error:
                await manager.derive(branch="child", strategy=PassthroughStrategy(), at_sequence=1)
            assert error.value.record == 42
        assert rt.list_branches() == branches and dump(rt.store) == before


async def test_row71_derive_and_fork_with_reader_after_close_and_failed_set_strategy(store_path):
    """ "derive and fork with a viewReader, after close() and after a failed setStrategy"

    Seed row 71 (probe zz-derive-fence-reader); SPEC D4, R2, R9, 3.2. Changed by SPEC D4: where
    the seed's derive went through (making the branch and writing ann's record), here, like
    fork, derive after ``aclose`` raises ``ManagerClosedError`` and after a failed start raises
    ``StrategyNotStartedError``. Neither makes a branch or writes a reader record (nothing is
    written at all)."""
    async with open_runtime(store_path) as rt:
        owner = await rt.open_manager(strategy=PassthroughStrategy())
        await owner.add_message("user", [text("Hello.")])
        shared = await rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader="ann")
        await shared.add_message("user", [text("Hello again.")])
        await shared.aclose()
        before, branches = dump(rt.store), rt.list_branches()
        with pytest.raises(ManagerClosedError):
            await shared.fork("after-close-fork")
        with pytest.raises(ManagerClosedError):
            await shared.derive(branch="after-close-derive", strategy=PassthroughStrategy())
        assert rt.list_branches() == branches and dump(rt.store) == before

        fenced = await rt.open_manager("agents/y", strategy=PassthroughStrategy(), view_reader="ann")
        await fenced.add_message("user", [text("Before.")])
        with pytest.raises(RuntimeError, match="initialize failed"):
            await fenced.set_strategy(Recording(fail=True))
        before, branches = dump(rt.store), rt.list_branches()
        with pytest.raises(StrategyNotStartedError):
            await fenced.fork("fenced-fork")
        with pytest.raises(StrategyNotStartedError):
            await fenced.derive(branch="fenced-derive", strategy=PassthroughStrategy())
        assert rt.list_branches() == branches and dump(rt.store) == before
        for name in ("after-close-derive", "fenced-derive", "after-close-fork", "fenced-fork"):
            assert name not in branch_names(rt)


# -- P2: the context log's copies (row 11; row 13/22 interplay) -----------------------------------


async def test_row11_edit_rewrites_copies_as_each_reader_sees_them_and_drops_unseen(store_path):
    """ "writes an edit's copies in the context log as the reader sees them, and drops them where it sees nothing"

    Seed row 11; SPEC P2, A2. Three namespaces on main keep copies of one message: ann's, bob's
    and one with no reader, each holding the message as its reader sees it, beside a note with
    no source. An edit through bob's manager (changing text, narrowing nothing) rewrites each copy
    as its namespace's reader sees the new content. A second edit through ann's manager, leaving
    only ann's block (a removal, not a narrowing by position), rewrites ann's copy and drops bob's
    and the no-reader one (their readers see nothing). The notes are untouched throughout."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        plain = await rt.open_manager("agents/plain", strategy=PassthroughStrategy())
        message = await ann.add_message("user", [text("ann part", ["ann"]), text("bob part", ["bob"]), text("hello all")])
        notes = {}
        for manager, copy in (
            (ann, [text("ann part"), text("hello all")]),
            (bob, [text("bob part"), text("hello all")]),
            (plain, [text("hello all")]),
        ):
            await manager.append_context_entry(copy, source_message_id=message.id)
            notes[manager.namespace] = await manager.append_context_entry([text(f"note of {manager.namespace}")])

        def copies(manager) -> list[list[str]]:
            return [[b.text for b in e.content] for e in manager.get_context_entries() if e.source_message_id == message.id]

        def note(manager):
            return [e for e in manager.get_context_entries() if e.source_message_id is None]

        await bob.edit_message(message.id, [text("ann 2", ["ann"]), text("bob 2", ["bob"]), text("hello all, edited")])
        assert copies(ann) == [["ann 2", "hello all, edited"]]
        assert copies(bob) == [["bob 2", "hello all, edited"]]
        assert copies(plain) == [["hello all, edited"]]
        await ann.edit_message(message.id, [text("ann 3", ["ann"])])
        assert copies(ann) == [["ann 3"]]
        assert copies(bob) == [] and copies(plain) == []
        for manager in (ann, bob, plain):
            assert note(manager) == [notes[manager.namespace]]
        assert all(b.audience is None for m in (ann, bob, plain) for e in m.get_context_entries() for b in e.content)


async def test_p2_copy_in_namespace_with_unreadable_reader_record_is_dropped_at_an_edit(store_path):
    """SPEC P2, E, R7. A copy kept by a namespace whose reader record is not a reader's name
    (seeded foreign data) cannot be rewritten for its reader, so an edit of its source drops it
    (read fail-closed: it never shows the new content to an unknown reader); a copy of another
    message is untouched."""
    ids = seed_records(
        store_path,
        [
            ("main", "message", None, message_body("user", [{"type": "text", "text": "hello"}])),
            ("main", "message", None, message_body("user", [{"type": "text", "text": "other"}])),
        ],
    )
    seed_records(
        store_path,
        [
            ("main", "state", "agents/z/reader", 42),
            ("main", "state", "agents/z/context/0", {"content": [{"type": "text", "text": "hello"}], "source_message_id": ids[0]}),
            ("main", "state", "agents/z/context/1", {"content": [{"type": "text", "text": "other"}], "source_message_id": ids[1]}),
        ],
    )
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.edit_message(ids[0], [text("hello, edited")])
        assert rt.store.get_state("main", "agents/z/context/0") is None
        assert rt.store.get_state("main", "agents/z/context/1") == {
            "content": [{"type": "text", "text": "other"}],
            "source_message_id": ids[1],
        }


@pytest.mark.parametrize(("claimed_through", "read_through"), [("", None), (None, "")])
async def test_row13_row22_empty_namespace_log_refuses_audience_and_rewrites_shared_copies(store_path, claimed_through, read_through):
    """Rows 13 and 22 together; SPEC P2, W1, E, 0 (glossary). ann claims the namespace through
    ``""`` (or ``None``); a manager opened through the other name compiles for ann and appends a
    copy of ann's message. An entry with an audience is refused through either name, leaving the
    one shared log unchanged; an edit of the message rewrites the copy as ann sees it, and both
    names read the same log."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager(claimed_through, strategy=PassthroughStrategy(), view_reader="ann")
        other = await rt.open_manager(read_through, strategy=PassthroughStrategy())
        assert other.view_reader == "ann" and other.namespace == ann.namespace == "default"
        message = await ann.add_message("user", [text("plain"), text("ann only", ["ann"])])
        await other.append_context_entry([text("plain"), text("ann only")], source_message_id=message.id)
        log = ann.get_context_entries()
        before = dump(rt.store)
        for manager in (ann, other):
            with pytest.raises(MalformedContentError) as error:
                await manager.append_context_entry([text("leak", ["bob"])], source_message_id=message.id)
            assert error.value.path == "content[0].audience"
        assert dump(rt.store) == before and other.get_context_entries() == log
        await ann.edit_message(message.id, [text("plain, edited"), text("ann only, edited", ["ann"])])
        for manager in (ann, other):
            (entry,) = manager.get_context_entries()
            assert [b.text for b in entry.content] == ["plain, edited", "ann only, edited"]


# -- D1, BranchInfo, S2 ---------------------------------------------------------------------------


async def test_fork_and_switch_move_only_the_manager_they_are_called_on(store_path):
    """SPEC D1, S2, 3.2. Two managers on main (two namespaces, and a second one of the same
    namespace): ``fork`` moves only the forking manager to the new branch; each branch then sees
    only its own later writes; ``switch_branch`` moves only its manager back, and a fork by the
    other moves only that one."""
    async with open_runtime(store_path) as rt:
        a = await rt.open_manager("agents/a", strategy=PassthroughStrategy(), view_reader="ann")
        b = await rt.open_manager("agents/b", strategy=PassthroughStrategy(), view_reader="bob")
        a2 = await rt.open_manager("agents/a", strategy=PassthroughStrategy(), view_reader="ann")
        await a.add_message("user", [text("before")])
        await a.fork("f")
        assert (a.branch, b.branch, a2.branch) == ("f", "main", "main")
        await a.add_message("user", [text("on f")])
        await b.add_message("user", [text("on main")])
        assert message_texts(a) == ["before", "on f"]
        assert message_texts(b) == message_texts(a2) == ["before", "on main"]
        await a.switch_branch("main")
        assert (a.branch, b.branch, a2.branch) == ("main", "main", "main")
        assert message_texts(a) == ["before", "on main"]
        await b.fork("g")
        assert (a.branch, b.branch, a2.branch) == ("main", "g", "main")
        await a2.switch_branch("f")
        assert (a.branch, b.branch, a2.branch) == ("main", "g", "f")
        assert texts(await a2.compile()) == ["before", "on f"]


async def test_list_branches_shows_name_parent_fork_sequence_and_head(store_path):
    """SPEC 3.3.1 (``BranchInfo(name, parent, fork_sequence, head)``), 0 (sequence), S2. A fork
    is at the manager's head; each branch's head rises only with its own writes; a derive at an
    earlier sequence forks there."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("agents/a", strategy=PassthroughStrategy())
        first = await m.add_message("user", [text("one")])
        await m.add_message("user", [text("two")])
        head = rt.store.head("main")
        assert rt.list_branches() == (BranchInfo("main", None, 0, head),)
        await m.fork("f")
        assert rt.list_branches() == (BranchInfo("main", None, 0, head), BranchInfo("f", "main", head, head))
        await m.add_message("user", [text("three")])
        assert rt.list_branches()[1] == BranchInfo("f", "main", head, head + 1)
        assert rt.list_branches()[0] == BranchInfo("main", None, 0, head)
        child = await m.derive(branch="d", strategy=PassthroughStrategy(), at_sequence=first.sequence)
        assert rt.list_branches()[2] == BranchInfo("d", "f", first.sequence, first.sequence)
        await child.add_message("user", [text("on d")])
        assert rt.list_branches()[2].head == first.sequence + 1
        assert all(isinstance(b, BranchInfo) for b in rt.list_branches())


async def test_child_sees_parent_up_to_fork_and_nothing_after(store_path):
    """SPEC S2, 0 (branch), R9. Through managers: a forked branch and a derived child see the
    parent's messages (and edits) up to the fork point, in ``get_all_messages`` and in their
    compiles, and nothing the parent writes or edits afterwards; the parent sees none of theirs."""
    async with open_runtime(store_path) as rt:
        parent = await rt.open_manager("agents/a", strategy=PassthroughStrategy(), view_reader="ann")
        first = await parent.add_message("user", [text("one")])
        await parent.edit_message(first.id, [text("one, edited")])
        forker = await rt.open_manager("agents/b", strategy=PassthroughStrategy(), view_reader="ann")
        await forker.fork("f")
        child = await parent.derive(branch="d", strategy=PassthroughStrategy())
        await parent.add_message("user", [text("parent after")])
        await parent.edit_message(first.id, [text("one, edited again")])
        await forker.add_message("user", [text("on f")])
        await child.add_message("user", [text("on d")])
        assert message_texts(forker) == ["one, edited", "on f"]
        assert message_texts(child) == ["one, edited", "on d"]
        assert message_texts(parent) == ["one, edited again", "parent after"]
        assert texts(await child.compile()) == ["one, edited", "on d"]
        assert texts(await forker.compile()) == ["one, edited", "on f"]


# -- R2: refused branch operations leave nothing behind --------------------------------------------


async def test_refused_fork_and_derive_make_no_branch(store_path):
    """SPEC R2, E. A fork or derive to a name already taken (``BranchExistsError``), a derive at a
    sequence outside the parent (``ValueError``), and a fork by a manager whose namespace another
    reader claimed (``ReaderClaimError``): no branch is made, nothing is written, the manager
    stays where it was with its strategy."""
    async with open_runtime(store_path) as rt:
        strategy = Recording()
        m = await rt.open_manager("agents/a", strategy=strategy)
        await m.add_message("user", [text("one")])
        await m.derive(branch="taken", strategy=PassthroughStrategy())
        head = rt.store.head("main")
        before, branches = dump(rt.store), rt.list_branches()
        with pytest.raises(BranchExistsError):
            await m.fork("taken")
        with pytest.raises(BranchExistsError):
            await m.derive(branch="taken", strategy=PassthroughStrategy())
        for at in (-1, head + 1, True, "1"):
            with pytest.raises(ValueError):
                await m.derive(branch=f"bad-{at}", strategy=PassthroughStrategy(), at_sequence=at)
        assert m.branch == "main" and m.strategy is strategy
        assert rt.list_branches() == branches and dump(rt.store) == before
        await rt.open_manager("agents/a", strategy=PassthroughStrategy(), view_reader="bob")
        before, branches = dump(rt.store), rt.list_branches()
        with pytest.raises(ReaderClaimError):
            await m.fork("never")
        assert rt.list_branches() == branches and dump(rt.store) == before
        assert m.branch == "main" and m.strategy is strategy


async def test_refused_switch_stays_where_it_was(store_path):
    """SPEC R2, R1, D1. A switch to a branch that does not exist (``UnknownBranchError``) or where
    the namespace records another reader (``ReaderClaimError`` naming both) leaves ann's manager
    on its branch with its strategy, still working, and writes nothing."""
    async with open_runtime(store_path) as rt:
        helper = await rt.open_manager("setup/helper", strategy=PassthroughStrategy())
        await helper.fork("bobs")  # before ann's claim on main, so "bobs" inherits none
        strategy = Recording()
        ann = await rt.open_manager("agents/a", strategy=strategy, view_reader="ann")
        await ann.add_message("user", [text("one")])
        await rt.open_manager("agents/a", strategy=PassthroughStrategy(), view_reader="bob", branch="bobs")
        before = dump(rt.store)
        with pytest.raises(UnknownBranchError):
            await ann.switch_branch("nowhere")
        with pytest.raises(ReaderClaimError) as error:
            await ann.switch_branch("bobs")
        assert error.value.recorded == "bob" and error.value.requested == "ann"
        assert ann.branch == "main" and ann.strategy is strategy
        assert dump(rt.store) == before
        assert texts(await ann.compile()) == ["one"]
        assert [c[1] for c in strategy.calls if c[0] == "initialize"] == ["main"]


async def test_refused_set_strategy_keeps_the_old_strategy_running(store_path):
    """SPEC R2, N7, 3.2. ann's ``set_strategy`` with a strategy that does not mark its compression
    reads is refused with ``StrategyCapabilityError`` before the new one is handed anything; the
    old strategy stays and keeps serving compiles and new messages; nothing is written."""
    async with open_runtime(store_path) as rt:
        old = Recording()
        ann = await rt.open_manager("agents/a", strategy=old, view_reader="ann")
        await ann.add_message("user", [text("one")])
        before = dump(rt.store)
        new = Recording(marks=False)
        with pytest.raises(StrategyCapabilityError) as error:
            await ann.set_strategy(new)
        assert "marks_compression_reads" in str(error.value) and "'ann'" in str(error.value)
        assert new.calls == [] and ann.strategy is old
        assert dump(rt.store) == before
        message = await ann.add_message("user", [text("two")])
        await ann.compile()
        assert ("on_new_message", message.id) in old.calls and old.calls[-1] == ("select",)


# -- derive at_sequence, reopen_derived, N7 --------------------------------------------------------


async def test_derive_at_an_earlier_sequence(store_path):
    """SPEC 3.2 (``derive(..., at_sequence=...)``), S2, R9. A child derived at the sequence of an
    earlier message sees the parent's messages up to it (none after), records the parent's
    reader, and says where it came from in ``derivation``; ``at_sequence`` 0 gives an empty
    child."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/a", strategy=PassthroughStrategy(), view_reader="ann")
        messages = [await ann.add_message("user", [text(f"m{i}")]) for i in range(4)]
        child = await ann.derive(branch="early", strategy=PassthroughStrategy(), at_sequence=messages[1].sequence)
        assert message_texts(child) == ["m0", "m1"]
        assert child.derivation.at_sequence == messages[1].sequence
        assert child.derivation.parent_branch == "main" and child.derivation.branch == "early"
        assert child.view_reader == "ann" and rt.store.get_state("early", "agents/a/reader") == "ann"
        empty = await ann.derive(branch="empty", strategy=PassthroughStrategy(), at_sequence=0)
        assert message_texts(empty) == [] and empty.view_reader == "ann"
        head = rt.store.head("main")
        assert (await ann.derive(branch="head", strategy=PassthroughStrategy())).derivation.at_sequence == head


async def test_reopen_derived_gives_the_same_reader_namespace_and_derivation(store_path):
    """SPEC 3.2 (``reopen_derived``), R9. A derived child reopened (child still open, and closed)
    compiles for the same reader in the same namespace with an equal ``derivation``; a branch not
    made by ``derive`` is refused with ``ValueError`` (nothing to reopen) and an unknown one with
    ``UnknownBranchError``."""
    async with open_runtime(store_path) as rt:
        nobody = await rt.open_manager("agents/a", strategy=PassthroughStrategy())
        await rt.open_manager("agents/a", strategy=PassthroughStrategy(), view_reader="ann")
        parent = await rt.open_manager("agents/a", strategy=PassthroughStrategy())
        child = await parent.derive(branch="child", strategy=PassthroughStrategy())
        again = await rt.reopen_derived("child", strategy=PassthroughStrategy())
        assert (again.view_reader, again.namespace, again.branch) == ("ann", "agents/a", "child")
        assert again.derivation == child.derivation
        await child.aclose()
        await again.aclose()
        third = await rt.reopen_derived("child", strategy=PassthroughStrategy(), view_reader="ann")
        assert third.derivation == child.derivation and third.view_reader == "ann"
        with pytest.raises(ReaderClaimError):
            await rt.reopen_derived("child", strategy=PassthroughStrategy(), view_reader="bob")
        await nobody.aclose()
        with pytest.raises(ValueError):
            await rt.reopen_derived("main", strategy=PassthroughStrategy())
        with pytest.raises(UnknownBranchError):
            await rt.reopen_derived("nowhere", strategy=PassthroughStrategy())


async def test_n7_derive_and_reopen_derived_refuse_a_strategy_that_does_not_mark_reads(store_path):
    """SPEC N7, R2. Under a reader, ``derive`` with a strategy whose ``marks_compression_reads`` is
    false is refused with ``StrategyCapabilityError`` before the child's branch is made and
    before the strategy is handed anything; so is ``reopen_derived`` of ann's child, writing and
    registering nothing. A parent with no reader (on an unclaimed namespace) derives with it."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/a", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.add_message("user", [text("one")])
        child = await ann.derive(branch="child", strategy=PassthroughStrategy())
        await child.aclose()
        before, branches = dump(rt.store), rt.list_branches()
        unmarked = Recording(marks=False)
        with pytest.raises(StrategyCapabilityError):
            await ann.derive(branch="never", strategy=unmarked)
        with pytest.raises(StrategyCapabilityError):
            await rt.reopen_derived("child", strategy=unmarked)
        assert unmarked.calls == []
        assert rt.list_branches() == branches and dump(rt.store) == before
        assert registered_managers(rt) == 1  # only ann: the refused reopen registered nothing
        nobody = await rt.open_manager("agents/b", strategy=PassthroughStrategy())
        free = await nobody.derive(branch="free", strategy=unmarked)
        assert free.view_reader is None and unmarked.calls[0] == ("initialize", "free", None)
