"""A strategy object belongs to one open manager at a time (issue 10, item 1).

A strategy keeps what it read in memory. Shared by the managers of two readers, it would carry
one reader's lines into the other's compiles and memories. So ``open_manager``,
``set_strategy``, ``derive`` and ``reopen_derived`` refuse an object that another open manager
holds, with ``StrategyInUseError`` (an ``AsidesError``) naming that manager, and write nothing;
the object is free again once its manager closed or moved to another strategy.

Sections:
  1. Helpers
  2. Each call refuses a held object, writing nothing
  3. When an object is free again
  4. The leak the rule stops (one AutobiographicalStrategy shared by ann and bob)
  5. A property: a random sequence of opens, moves and closes against a reference model
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from asides import (
    AsidesError,
    AutobiographicalStrategy,
    ExtractiveModel,
    PassthroughStrategy,
    ReaderClaimError,
    WindowedPassthroughStrategy,
    open_runtime,
    text,
)
from asides.actors import StrategyInUseError
from asides.testing import LeakCheck
from tests.helpers import dump, sibling_store

# -- 1. Helpers ---------------------------------------------------------------------------------


def memory() -> AutobiographicalStrategy:
    """Small windows, so that a short conversation is compressed into memories."""
    return AutobiographicalStrategy(target_chunk_tokens=20, head_window_tokens=20, recent_window_tokens=40, holdback_chunks=0)


STRATEGY_KINDS = {"passthrough": PassthroughStrategy, "windowed": WindowedPassthroughStrategy, "autobiographical": memory}


def assert_names_holder(error: StrategyInUseError, namespace: str, reader: str | None, branch: str = "main") -> None:
    """The refusal names the manager that holds the object: namespace, branch and reader."""
    message = str(error)
    assert isinstance(error, AsidesError)
    assert f"'{namespace}'" in message and f"'{branch}'" in message and f"reader={reader!r}" in message, message
    assert namespace in error.holder


# -- 2. Each call refuses a held object, writing nothing ------------------------------------------


@pytest.mark.parametrize("kind", sorted(STRATEGY_KINDS))
@pytest.mark.parametrize(
    ("namespace", "reader"),
    [("agents/bob", "bob"), ("agents/bob", None), ("agents/ann", "ann"), ("agents/ann", None)],
    ids=["other-reader", "other-namespace-no-reader", "same-namespace-same-reader", "same-namespace-no-reader"],
)
async def test_open_manager_refuses_a_strategy_another_open_manager_holds(store_path, kind, namespace, reader):
    """``open_manager`` with an object ann's open manager holds is refused, whoever asks (another
    reader, the same reader again, a manager with no reader), naming ann's manager; nothing is
    written (a reader's open would otherwise claim its namespace), nothing is registered (an
    open with an object of its own then works as if the refused one never happened)."""
    async with open_runtime(store_path) as rt:
        shared = STRATEGY_KINDS[kind]()
        ann = await rt.open_manager("agents/ann", strategy=shared, view_reader="ann")
        await ann.add_message("user", [text("hello")])
        before = dump(rt.store)
        with pytest.raises(StrategyInUseError) as refused:
            await rt.open_manager(namespace, strategy=shared, view_reader=reader)
        assert_names_holder(refused.value, "agents/ann", "ann")
        assert dump(rt.store) == before, "a refused open writes nothing"
        assert rt.store.get_state("main", "agents/bob/reader") is None

        other = await rt.open_manager(namespace, strategy=STRATEGY_KINDS[kind](), view_reader=reader)
        assert other.view_reader == (reader or ("ann" if namespace == "agents/ann" else None))
        assert ann.strategy is shared and not ann.closed
        assert (await ann.compile()).messages, "the holder goes on as before"


async def test_set_strategy_refuses_a_strategy_another_open_manager_holds(store_path):
    """``set_strategy`` with an object ann's manager holds is refused naming ann's manager; bob's
    manager keeps its own strategy and keeps working, and nothing is written (not even the
    strategy-name record a strategy change writes)."""
    async with open_runtime(store_path) as rt:
        ann_strategy, bob_strategy = PassthroughStrategy(), WindowedPassthroughStrategy()
        ann = await rt.open_manager("agents/ann", strategy=ann_strategy, view_reader="ann")
        bob = await rt.open_manager("agents/bob", strategy=bob_strategy, view_reader="bob")
        await bob.add_message("user", [text("hello")])
        before = dump(rt.store)
        with pytest.raises(StrategyInUseError) as refused:
            await bob.set_strategy(ann_strategy)
        assert_names_holder(refused.value, "agents/ann", "ann")
        assert dump(rt.store) == before
        assert bob.strategy is bob_strategy and ann.strategy is ann_strategy
        assert (await bob.compile()).messages, "bob's manager keeps working with its own strategy"
        await bob.set_strategy(PassthroughStrategy())  # a fresh object is accepted
        assert bob.strategy is not ann_strategy


async def test_set_strategy_to_the_object_a_manager_already_holds_is_allowed(store_path):
    """A manager is not refused its own object: it holds it already, nobody else does."""
    async with open_runtime(store_path) as rt:
        own = PassthroughStrategy()
        ann = await rt.open_manager("agents/ann", strategy=own, view_reader="ann")
        await ann.set_strategy(own)
        assert ann.strategy is own
        assert (await ann.compile()).messages == ()


@pytest.mark.parametrize("holder", ["another-manager", "the-parent-itself"])
async def test_derive_refuses_a_strategy_an_open_manager_holds(store_path, holder):
    """``derive`` with an object an open manager holds is refused before the child's branch is
    made: another manager's object, or the parent's own (the child would be a second manager
    holding it). The refusal names the holder; no branch, no claim, nothing else is written."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        await ann.add_message("user", [text("hello")])
        held, by = (bob.strategy, ("agents/bob", "bob")) if holder == "another-manager" else (ann.strategy, ("agents/ann", "ann"))
        before = dump(rt.store)
        with pytest.raises(StrategyInUseError) as refused:
            await ann.derive(branch="ann-child", strategy=held)
        assert_names_holder(refused.value, *by)
        assert dump(rt.store) == before
        assert [b.name for b in rt.list_branches()] == ["main"]
        child = await ann.derive(branch="ann-child", strategy=PassthroughStrategy())  # the same name, now accepted
        assert child.branch == "ann-child" and child.view_reader == "ann"


async def test_reopen_derived_refuses_a_strategy_an_open_manager_holds(store_path):
    """``reopen_derived`` with an object another open manager holds is refused naming it and
    writes nothing; with an object of its own it reopens the derived manager."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        child = await ann.derive(branch="ann-child", strategy=PassthroughStrategy())
        await child.add_message("user", [text("on the child")])
        await child.aclose()
        before = dump(rt.store)
        with pytest.raises(StrategyInUseError) as refused:
            await rt.reopen_derived("ann-child", strategy=bob.strategy)
        assert_names_holder(refused.value, "agents/bob", "bob")
        assert dump(rt.store) == before
        with pytest.raises(StrategyInUseError):
            await rt.reopen_derived("ann-child", strategy=ann.strategy)
        assert dump(rt.store) == before
        again = await rt.reopen_derived("ann-child", strategy=PassthroughStrategy())
        assert again.branch == "ann-child" and again.view_reader == "ann"
        assert again.derivation is not None and again.derivation.parent_branch == "main"


# -- 3. When an object is free again --------------------------------------------------------------


async def test_a_strategy_is_free_again_once_its_manager_closed(store_path):
    """Once ann's manager closed, its object may go to another manager (bob's); while bob holds
    it, it is refused to everyone else again, and the refusal now names bob."""
    async with open_runtime(store_path) as rt:
        shared = PassthroughStrategy()
        ann = await rt.open_manager("agents/ann", strategy=shared, view_reader="ann")
        await ann.aclose()
        bob = await rt.open_manager("agents/bob", strategy=shared, view_reader="bob")
        assert bob.strategy is shared
        with pytest.raises(StrategyInUseError) as refused:
            await rt.open_manager("agents/ann", strategy=shared, view_reader="ann")
        assert_names_holder(refused.value, "agents/bob", "bob")


async def test_a_strategy_is_free_again_once_its_manager_moved_to_another(store_path):
    """After ``set_strategy`` ann's manager no longer holds its old object, which bob's manager may
    take (at open, or through its own ``set_strategy``); ann now holds the new one."""
    async with open_runtime(store_path) as rt:
        first, second = PassthroughStrategy(), WindowedPassthroughStrategy()
        ann = await rt.open_manager("agents/ann", strategy=first, view_reader="ann")
        await ann.set_strategy(second)
        bob = await rt.open_manager("agents/bob", strategy=first, view_reader="bob")
        assert bob.strategy is first
        with pytest.raises(StrategyInUseError):
            await bob.set_strategy(second)
        await ann.set_strategy(PassthroughStrategy())
        await bob.set_strategy(second)
        assert bob.strategy is second


async def test_a_strategy_is_free_again_once_a_derived_manager_closed(store_path):
    """A derived manager holds its object until it closes; then the object may be used again."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        given_to_child = PassthroughStrategy()
        child = await ann.derive(branch="ann-child", strategy=given_to_child)
        with pytest.raises(StrategyInUseError):
            await rt.open_manager("agents/bob", strategy=given_to_child, view_reader="bob")
        await child.aclose()
        bob = await rt.open_manager("agents/bob", strategy=given_to_child, view_reader="bob")
        assert bob.strategy is given_to_child


async def test_a_refused_open_or_move_does_not_keep_the_strategy(store_path):
    """A call refused for another reason (another reader's claim) does not leave its object held:
    the object may be given to another manager right after."""
    async with open_runtime(store_path) as rt:
        await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        candidate = PassthroughStrategy()
        with pytest.raises(ReaderClaimError):
            await rt.open_manager("agents/ann", strategy=candidate, view_reader="bob")
        nobody = await rt.open_manager("agents/s", strategy=PassthroughStrategy())
        await rt.open_manager("agents/s", strategy=PassthroughStrategy(), view_reader="cleo")  # nobody is stale now
        with pytest.raises(ReaderClaimError):
            await nobody.set_strategy(candidate)
        bob = await rt.open_manager("agents/bob", strategy=candidate, view_reader="bob")
        assert bob.strategy is candidate


async def test_a_cancelled_open_does_not_keep_the_strategy(store_path):
    """An open cancelled before its claim (``move_on_after(0)``) holds nothing afterwards."""
    async with open_runtime(store_path) as rt:
        candidate = PassthroughStrategy()
        with trio.move_on_after(0) as scope:
            await rt.open_manager("agents/ann", strategy=candidate, view_reader="ann")
        assert scope.cancelled_caught, "the premise: the open raised Cancelled"
        bob = await rt.open_manager("agents/bob", strategy=candidate, view_reader="bob")
        assert bob.strategy is candidate


# -- 4. The leak the rule stops ---------------------------------------------------------------------


async def write_private_lines(room, count: int = 12) -> None:
    """A conversation long enough to compress, with lines meant for ann alone and bob alone."""
    for number in range(count):
        await room.add_message("user", [text(f"Line {number} of a conversation long enough to compress.")])
        if number % 3 == 0:
            await room.add_message("user", [text(f"ANN-ONLY-{number}: the hall code is {number}1.", ["ann"])])
        if number % 3 == 1:
            await room.add_message("user", [text(f"BOB-ONLY-{number}: the ceiling is {number}9 euros.", ["bob"])])


def leak_check() -> LeakCheck:
    return LeakCheck({"ann": [f"ANN-ONLY-{n}" for n in range(0, 12, 3)], "bob": [f"BOB-ONLY-{n}" for n in range(1, 12, 3)]})


async def test_one_autobiographical_strategy_for_ann_and_bob_is_refused(store_path):
    """The leak of the issue: one ``AutobiographicalStrategy`` given to the managers of ann and bob.
    Bob's open is refused (naming ann's manager), so nothing of ann's can reach bob's memories
    through it; with an object each, their memories are written and nothing leaks between them
    (every compile, memory, provenance entry and model request searched)."""
    async with open_runtime(store_path) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        shared = memory()
        ann = await rt.open_manager("agents/ann", strategy=shared, view_reader="ann", model=ExtractiveModel(name="ann"))
        before = dump(rt.store)
        with pytest.raises(StrategyInUseError) as refused:
            await rt.open_manager("agents/bob", strategy=shared, view_reader="bob", model=ExtractiveModel(name="bob"))
        assert_names_holder(refused.value, "agents/ann", "ann")
        assert dump(rt.store) == before

        bob = await rt.open_manager("agents/bob", strategy=memory(), view_reader="bob", model=ExtractiveModel(name="bob"))
        await write_private_lines(room)
        for manager in (ann, bob):
            await manager.drain()
            assert manager.get_summaries_in_range(), "the premise: memories were written"
        check = leak_check()
        await check.scan(ann, bob)
        check.assert_no_leaks()


async def test_an_object_reused_after_its_manager_closed_carries_nothing_over(store_path):
    """Reuse after a close is allowed, and safe: ann's manager compresses her private lines with
    an object, closes; bob's manager (another namespace) opens with that same object, and
    nothing of ann's reaches bob's compiles, memories or model requests."""
    async with open_runtime(store_path) as rt:
        room = await rt.open_manager("room", strategy=PassthroughStrategy())
        reused = memory()
        ann = await rt.open_manager("agents/ann", strategy=reused, view_reader="ann", model=ExtractiveModel(name="ann"))
        await write_private_lines(room)
        await ann.drain()
        assert any("ANN-ONLY" in s.text for s in ann.get_summaries_in_range()), "the premise: ann's memories hold her lines"
        await ann.aclose()

        bob = await rt.open_manager("agents/bob", strategy=reused, view_reader="bob", model=ExtractiveModel(name="bob"))
        await bob.drain()
        assert bob.get_summaries_in_range()
        check = leak_check()
        await check.scan(bob)
        check.record("bob", await bob.compile(max_tokens=100_000), where="bob's compile")
        check.assert_no_leaks()


# -- 5. A property against a reference model ----------------------------------------------------------

POOL = 3  # strategy objects
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("open"), st.integers(0, POOL - 1)),
        st.tuples(st.just("close"), st.integers(0, 5)),
        st.tuples(st.just("set"), st.integers(0, 5), st.integers(0, POOL - 1)),
        st.tuples(st.just("derive"), st.integers(0, 5), st.integers(0, POOL - 1)),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_ownership_follows_a_reference_model(store_path: str, ops: list[tuple[Any, ...]]) -> None:
    """A random sequence of opens, strategy changes, derives and closes over three strategy
    objects: each call is refused with ``StrategyInUseError`` exactly when the reference model
    says another open manager holds the object, and a refused call writes nothing."""

    async def main(path: str) -> None:
        pool = [PassthroughStrategy() for _ in range(POOL)]
        async with open_runtime(path) as rt:
            managers: list[Any] = []  # opened managers, in order (closed ones stay, marked closed)
            holder: dict[int, int] = {}  # reference: strategy index -> index of the open manager holding it

            def held_by_other(strategy: int, me: int | None) -> bool:
                owner = holder.get(strategy)
                return owner is not None and owner != me

            for number, op in enumerate(ops):
                kind = op[0]
                before = dump(rt.store)
                if kind == "open":
                    strategy = op[1]
                    namespace = f"agents/n{number}"
                    if held_by_other(strategy, None):
                        event("an open refused")
                        with pytest.raises(StrategyInUseError):
                            await rt.open_manager(namespace, strategy=pool[strategy], view_reader=f"r{number}")
                        assert dump(rt.store) == before
                    else:
                        managers.append(await rt.open_manager(namespace, strategy=pool[strategy], view_reader=f"r{number}"))
                        holder[strategy] = len(managers) - 1
                    continue
                open_ones = [i for i, m in enumerate(managers) if not m.closed]
                if not open_ones:
                    continue
                me = open_ones[op[1] % len(open_ones)]
                manager = managers[me]
                if kind == "close":
                    await manager.aclose()
                    holder = {s: m for s, m in holder.items() if m != me}
                elif kind == "set":
                    strategy = op[2]
                    if held_by_other(strategy, me):
                        event("a strategy change refused")
                        with pytest.raises(StrategyInUseError):
                            await manager.set_strategy(pool[strategy])
                        assert dump(rt.store) == before
                    else:
                        await manager.set_strategy(pool[strategy])
                        holder = {s: m for s, m in holder.items() if m != me}
                        holder[strategy] = me
                    assert manager.strategy is pool[next(s for s, m in holder.items() if m == me)]
                else:  # derive
                    strategy = op[2]
                    branch = f"b{number}"
                    if held_by_other(strategy, None):
                        event("a derive refused")
                        with pytest.raises(StrategyInUseError):
                            await manager.derive(branch=branch, strategy=pool[strategy])
                        assert dump(rt.store) == before
                    else:
                        managers.append(await manager.derive(branch=branch, strategy=pool[strategy]))
                        holder[strategy] = len(managers) - 1

    trio.run(main, sibling_store(store_path, f"e{next(_EXAMPLES)}"))


#: Names the fresh store of each Hypothesis example (a sibling of the test's ``store_path``).
_EXAMPLES = itertools.count()
