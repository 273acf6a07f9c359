"""Cancellation follows Trio's convention: a call that raised ``Cancelled`` wrote nothing
(issue 10, item 11).

Once a call's write is queued, the call finishes it (shielded) and returns normally; the
cancellation reaches the caller at its next checkpoint. So for every writing call
(``add_message``, ``edit_message``, ``open_manager``'s claim, ``fork``, ``derive``,
``set_strategy``, ``append_context_entry``), whatever the moment of the cancel:

* it raised ``Cancelled`` and the store is exactly as it was (memory and disk), and nothing
  in memory says otherwise (a retried ``fork`` or ``derive`` of the same name goes through; an
  open's namespace is still unclaimed; the manager kept its branch and strategy); or
* it returned, and its write is there (and survives a reopen).

The cancel comes at three kinds of moment: before the call starts (``move_on_after(0)``); while
its commit is in flight (the scope is cancelled from a store listener, which hears the write
as it is queued, before the commit, or by another task the listener wakes: a deterministic "in
flight" that patches nothing; ``wait_all_tasks_blocked`` does not see a commit in flight, which
ends before the run loop goes idle); and at a random point, from a sibling task that cancels
after a random number of scheduler yields (Hypothesis, over random sequences of the seven
calls).

Sections:
  1. The calls, what each writes, and the convention as one check
  2. A cancel before the call starts
  3. A cancel while the commit is in flight
  4. Retrying after a cancel; an open's claim
  5. Random cancel points (Hypothesis), then a reopen
  6. The same convention under asyncio
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel
import attrs
import pytest
import trio
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from asides import BranchExistsError, PassthroughStrategy, ReaderClaimError, TextBlock, WindowedPassthroughStrategy, open_runtime, text
from asides.lowlevel import Selection, SelectOptions, StrategyContext
from tests.helpers import dump, sibling_store, writable_store

CALLS = ["add_message", "edit_message", "open_manager", "fork", "derive", "set_strategy", "append_context_entry"]

# -- 1. The calls, what each writes, and the convention -------------------------------------------


class SlowPassthrough(PassthroughStrategy):
    """Passthrough, whose ``select`` passes ``pause`` scheduler checkpoints first: a compile
    running beside a call holds the namespace's turn for a while, so that a call waiting for the
    turn can be cancelled while it waits."""

    name = "slow-passthrough"
    pause = 10

    def __init__(self) -> None:
        super().__init__()
        #: Set when a ``select`` begins (it then holds the namespace's turn for ``pause`` checkpoints).
        self.selecting = trio.Event()

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        self.selecting.set()
        for _ in range(self.pause):
            await trio.lowlevel.checkpoint()
        return await super().select(ctx, budget, options)


class SlowWindowed(WindowedPassthroughStrategy):
    """The same, for the windowed passthrough (so that a strategy change always changes the
    strategy's recorded name)."""

    name = "slow-windowed"
    pause = 10

    def __init__(self) -> None:
        super().__init__()
        self.selecting = trio.Event()

    async def select(self, ctx: StrategyContext, budget: int, options: SelectOptions) -> Selection:
        self.selecting.set()
        for _ in range(self.pause):
            await trio.lowlevel.checkpoint()
        return await super().select(ctx, budget, options)


@attrs.define
class World:
    """A runtime with ann's manager (a passthrough strategy, no background work, so nothing
    writes but the calls under test) and a message to edit; ``number`` makes each call's names
    and texts unique."""

    rt: Any
    ann: Any
    edited: str
    number: int = 0
    opened: list[Any] = attrs.Factory(list)

    @classmethod
    async def open(cls, rt: Any) -> World:
        ann = await rt.open_manager("agents/ann", strategy=SlowPassthrough(), view_reader="ann")
        message = await ann.add_message("user", [text("the line to edit")])
        return cls(rt, ann, message.id)


@attrs.frozen
class Call:
    """One call under test: ``run()`` makes it; ``written(result)`` says whether its write is
    there (``result`` is what it returned); ``unchanged()`` whether nothing of it is visible,
    in the store or in what the managers hold (their branch and strategy)."""

    kind: str
    run: Callable[[], Awaitable[Any]]
    written: Callable[[Any], bool]
    unchanged: Callable[[], bool]


def texts(content: Any) -> list[str]:
    return [b.text for b in content if isinstance(b, TextBlock)]


def make_call(world: World, kind: str) -> Call:
    """The call ``kind`` on ``world``, with its checks."""
    world.number += 1
    n = world.number
    rt, ann = world.rt, world.ann
    branch, strategy = ann.branch, ann.strategy

    def same_manager() -> bool:
        return ann.branch == branch and ann.strategy is strategy

    if kind == "add_message":
        words = f"added {n}"
        return Call(
            kind,
            lambda: ann.add_message("user", [text(words)]),
            lambda result: any(texts(m.content) == [words] for m in rt.store.messages(branch)),
            lambda: not any(texts(m.content) == [words] for m in rt.store.messages(branch)),
        )
    if kind == "edit_message":
        words = f"edited {n}"
        return Call(
            kind,
            lambda: ann.edit_message(world.edited, [text(words)]),
            lambda result: texts(rt.store.get_message(branch, world.edited).content) == [words],
            lambda: texts(rt.store.get_message(branch, world.edited).content) != [words],
        )
    if kind == "open_manager":
        namespace, reader = f"agents/new{n}", f"reader{n}"

        async def open_one() -> Any:
            opened = await rt.open_manager(namespace, strategy=PassthroughStrategy(), view_reader=reader)
            world.opened.append(opened)
            return opened

        return Call(
            kind,
            open_one,
            lambda result: rt.store.get_state("main", f"{namespace}/reader") == reader and result.view_reader == reader,
            lambda: rt.store.get_state("main", f"{namespace}/reader") is None,
        )
    if kind == "fork":
        name = f"fork{n}"
        return Call(
            kind,
            lambda: ann.fork(name),
            lambda result: rt.store.has_branch(name) and ann.branch == name,
            lambda: not rt.store.has_branch(name) and same_manager(),
        )
    if kind == "derive":
        name = f"derived{n}"
        return Call(
            kind,
            lambda: ann.derive(branch=name, strategy=PassthroughStrategy()),
            lambda result: rt.store.has_branch(name) and result.branch == name and result.view_reader == "ann",
            lambda: not rt.store.has_branch(name) and same_manager(),
        )
    if kind == "set_strategy":
        new = SlowWindowed() if isinstance(strategy, SlowPassthrough) else SlowPassthrough()
        return Call(
            kind,
            lambda: ann.set_strategy(new),
            lambda result: ann.strategy is new and rt.recorded_strategy("agents/ann", branch=branch).name == new.name,
            same_manager,
        )
    assert kind == "append_context_entry"
    words = f"entry {n}"
    return Call(
        kind,
        lambda: ann.append_context_entry([text(words)]),
        lambda result: any(texts(e.content) == [words] for e in ann.get_context_entries()) and texts(result.content) == [words],
        lambda: not any(texts(e.content) == [words] for e in ann.get_context_entries()),
    )


@attrs.define
class Outcome:
    returned: bool
    result: Any
    delivered: bool  # the cancellation reached the caller (at the call, or at its next checkpoint)


def check_convention(world: World, call: Call, outcome: Outcome, before: dict[str, Any]) -> None:
    """Raised ``Cancelled`` ⇒ nothing written; returned ⇒ written."""
    if outcome.returned:
        assert call.written(outcome.result), f"{call.kind} returned but its write is not there"
    else:
        assert dump(world.rt.store) == before, f"{call.kind} raised Cancelled but the store changed"
        assert call.unchanged(), f"{call.kind} raised Cancelled but its effect is visible"


async def run_cancelled(call: Call, arm: Callable[[trio.CancelScope], Any]) -> Outcome:
    """Make ``call`` inside a cancel scope that ``arm`` sets up to be cancelled; then pass one
    checkpoint inside the scope, where a cancellation deferred by the call is delivered."""
    returned, result = False, None
    with trio.CancelScope() as scope:
        disarm = arm(scope)
        try:
            result = await call.run()
            returned = True
            await trio.lowlevel.checkpoint()
        finally:
            if disarm is not None:
                disarm()
    return Outcome(returned, result, scope.cancelled_caught)


def cancel_now(scope: trio.CancelScope) -> None:
    scope.cancel()


def cancel_when_queued(rt: Any) -> Callable[[trio.CancelScope], Callable[[], None]]:
    """Cancel the scope when the store hears the call's first write (as it is queued, before its
    commit): a cancel that arrives while the commit is in flight."""

    def arm(scope: trio.CancelScope) -> Callable[[], None]:
        return writable_store(rt).add_listener(lambda event: scope.cancel())

    return arm


# -- 2. A cancel before the call starts ----------------------------------------------------------------


@pytest.mark.parametrize("kind", CALLS)
async def test_a_call_cancelled_before_it_starts_raises_and_writes_nothing_or_returns_written(store_path, kind):
    """``move_on_after(0)`` around the call: either it raised ``Cancelled`` and the store (and
    what the managers hold) is exactly as before, or it returned and its write is there."""
    async with open_runtime(store_path) as rt:
        world = await World.open(rt)
        call = make_call(world, kind)
        before = dump(rt.store)
        outcome = await run_cancelled(call, cancel_now)
        assert outcome.delivered, "the cancellation reaches the caller"
        check_convention(world, call, outcome, before)


@pytest.mark.parametrize("kind", CALLS)
async def test_a_call_already_cancelled_when_it_starts_raises_and_writes_nothing(store_path, kind):
    """More precisely: every writing call checks for a pending cancel before it queues anything
    (or waits for its namespace's turn first), so one cancelled before it starts raises
    ``Cancelled`` and writes nothing."""
    async with open_runtime(store_path) as rt:
        world = await World.open(rt)
        call = make_call(world, kind)
        before = dump(rt.store)
        outcome = await run_cancelled(call, cancel_now)
        assert not outcome.returned
        assert dump(rt.store) == before and call.unchanged()


# -- 3. A cancel while the commit is in flight -----------------------------------------------------------


@pytest.mark.parametrize("kind", CALLS)
async def test_a_call_cancelled_while_its_commit_is_in_flight_returns_and_its_write_is_there(store_path, kind):
    """The scope is cancelled as the call's write is queued. The call finishes the write and
    returns normally; its write is there; the cancellation is delivered at the caller's next
    checkpoint."""
    async with open_runtime(store_path) as rt:
        world = await World.open(rt)
        call = make_call(world, kind)
        outcome = await run_cancelled(call, cancel_when_queued(rt))
        assert outcome.returned, f"{kind} raised Cancelled after its write was queued"
        assert call.written(outcome.result)
        assert outcome.delivered, "the cancellation is delivered at the next checkpoint"


@pytest.mark.sqlite_only(
    "its premise is a store event while the commit is in flight; on PostgreSQL a write's events arrive at its commit (docs/postgres.md)"
)
@pytest.mark.parametrize("kind", CALLS)
async def test_a_call_cancelled_from_another_task_while_its_commit_is_in_flight_returns_written(store_path, kind):
    """The same, the cancel coming from another task: the store's listener only wakes that task
    when the call's write is queued, and it cancels the call's scope while the call still waits
    for its commit (checked: the call has not returned yet). The call returns, written. (With
    ``synchronous="FULL"`` every commit runs in the store's worker thread, so the call still waits
    when the other task runs; a ``NORMAL`` commit may run on the event loop's thread and finish
    first.)"""
    async with open_runtime(store_path, synchronous="FULL") as rt:
        world = await World.open(rt)
        call = make_call(world, kind)
        progress = {"returned": False, "returned_before_the_cancel": None}

        async def run_and_note() -> Any:
            result = await call.run()
            progress["returned"] = True
            return result

        async with trio.open_nursery() as nursery:

            def arm(scope: trio.CancelScope) -> Callable[[], None]:
                queued = trio.Event()

                async def cancel_once_queued() -> None:
                    await queued.wait()
                    progress["returned_before_the_cancel"] = progress["returned"]
                    scope.cancel()

                nursery.start_soon(cancel_once_queued)
                return writable_store(rt).add_listener(lambda event: queued.set())

            outcome = await run_cancelled(attrs.evolve(call, run=run_and_note), arm)
        assert progress["returned_before_the_cancel"] is False, "the premise: the cancel came while the call waited"
        assert outcome.returned and call.written(outcome.result)
        assert outcome.delivered


async def test_writes_finished_under_a_cancel_survive_a_reopen(store_path):
    """What a call finished after its cancel arrived is durable: a reopen holds the same store."""
    path = store_path
    async with open_runtime(path) as rt:
        world = await World.open(rt)
        for kind in CALLS:
            call = make_call(world, kind)
            outcome = await run_cancelled(call, cancel_when_queued(rt))
            assert outcome.returned and call.written(outcome.result)
        held = dump(rt.store)
    async with open_runtime(path) as again:
        assert dump(again.store) == held


# -- 4. Retrying after a cancel; an open's claim ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["fork", "derive"])
async def test_a_retried_fork_or_derive_raises_branch_exists_only_if_the_first_returned(store_path, kind):
    """A ``fork`` (or ``derive``) cancelled before it started raised ``Cancelled``, made no branch,
    and a retry of the same name goes through. One cancelled while its commit was in flight
    returned: the branch is there, and another call making that name is refused with
    ``BranchExistsError``."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.add_message("user", [text("hello")])

        def make(name: str) -> Awaitable[Any]:
            return ann.fork(name) if kind == "fork" else ann.derive(branch=name, strategy=PassthroughStrategy())

        with trio.move_on_after(0) as scope:
            await make("first")
        assert scope.cancelled_caught and not rt.store.has_branch("first")
        await make("first")  # no BranchExistsError: the cancelled call made nothing
        assert rt.store.has_branch("first")

        outcome = await run_cancelled(Call(kind, lambda: make("second"), bool, bool), cancel_when_queued(rt))
        assert outcome.returned and rt.store.has_branch("second")
        with pytest.raises(BranchExistsError):
            await make("second")


async def test_an_open_cancelled_before_its_claim_leaves_the_namespace_to_anyone(store_path):
    """An open for ann cancelled before its claim raised, and holds no claim, in the store or in
    memory: bob may then open the namespace (and claims it). An open cancelled while its claim
    is being committed returned, and the claim stands: another reader is refused."""
    async with open_runtime(store_path) as rt:
        with trio.move_on_after(0) as scope:
            await rt.open_manager("agents/a", strategy=PassthroughStrategy(), view_reader="ann")
        assert scope.cancelled_caught
        bob = await rt.open_manager("agents/a", strategy=PassthroughStrategy(), view_reader="bob")
        assert bob.view_reader == "bob" and rt.store.get_state("main", "agents/a/reader") == "bob"

        opened: list[Any] = []

        async def open_for_ann() -> Any:
            opened.append(await rt.open_manager("agents/b", strategy=PassthroughStrategy(), view_reader="ann"))
            return opened[-1]

        outcome = await run_cancelled(Call("open_manager", open_for_ann, bool, bool), cancel_when_queued(rt))
        assert outcome.returned and opened and opened[0].view_reader == "ann"
        with pytest.raises(ReaderClaimError):
            await rt.open_manager("agents/b", strategy=PassthroughStrategy(), view_reader="bob")


# -- 5. Random cancel points (Hypothesis) --------------------------------------------------------------

STEPS = st.lists(
    st.tuples(
        st.sampled_from(CALLS),
        st.sampled_from(["none", "before", "in-flight", "after-yields", "after-yields-while-busy"]),
        st.integers(min_value=0, max_value=3 * SlowPassthrough.pause),
    ),
    min_size=1,
    max_size=8,
)


def test_random_cancel_points_follow_the_convention(store_path: str) -> None:
    """Random sequences of the seven calls, each cancelled at a random moment (never, before it
    starts, as its write is queued, or by a sibling task after a random number of scheduler
    yields, also while a compile holds the namespace's turn so the call waits for it): after
    every call, raised ``Cancelled`` means the store is as it was and returned means the write
    is there; a reopen then holds exactly what the runtime held. A cancel that never lands
    checks nothing, so the run must see cancels from a sibling task land mid-call (the call
    raised ``Cancelled``) and calls that returned despite one."""
    landed: collections.Counter[str] = collections.Counter()

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(steps=STEPS)
    # Always run, whatever Hypothesis draws: calls that wait for ann's turn while a compile holds
    # it, cancelled from a sibling within a few yields, where a cancel lands mid-call.
    @example(steps=[(kind, "after-yields-while-busy", n) for kind in TURN_TAKERS for n in (0, 1, 2)])
    def examples(steps: list[tuple[str, str, int]]) -> None:
        async def main(path: str) -> None:
            async with open_runtime(path) as rt:
                world = await World.open(rt)
                for kind, mode, yields in steps:
                    call = make_call(world, kind)
                    before = dump(rt.store)
                    if mode == "none":
                        outcome = await run_cancelled(call, lambda scope: None)
                        assert outcome.returned
                    elif mode == "before":
                        outcome = await run_cancelled(call, cancel_now)
                    elif mode == "in-flight":
                        outcome = await run_cancelled(call, cancel_when_queued(rt))
                        assert outcome.returned
                    else:
                        async with trio.open_nursery() as nursery:
                            if mode == "after-yields-while-busy":
                                # a compile (it writes nothing) takes ann's turn first, so a call
                                # that needs the turn waits for it, and may be cancelled waiting
                                strategy = world.ann.strategy
                                strategy.selecting = trio.Event()
                                nursery.start_soon(world.ann.compile)
                                await strategy.selecting.wait()  # it holds the turn now

                            def arm(scope: trio.CancelScope, yields: int = yields) -> None:
                                async def cancel_later() -> None:
                                    for _ in range(yields):
                                        await trio.lowlevel.checkpoint()
                                    scope.cancel()

                                nursery.start_soon(cancel_later)

                            outcome = await run_cancelled(call, arm)
                        landed["mid-call: raised" if not outcome.returned else "mid-call: returned"] += 1
                        event(f"a random cancel: {kind} {'returned' if outcome.returned else 'raised'}")
                    check_convention(world, call, outcome, before)
                held = dump(rt.store)
            async with open_runtime(path) as again:
                assert dump(again.store) == held, "a reopen holds what the runtime held"

        trio.run(main, sibling_store(store_path, f"r{next(_EXAMPLES)}"))

    examples()
    assert landed["mid-call: raised"] > 0, f"no cancel from a sibling task landed mid-call: {dict(landed)}"


_EXAMPLES = itertools.count()
#: Calls that wait for the namespace's turn (a compile holding it holds them up).
TURN_TAKERS = ("edit_message", "set_strategy", "append_context_entry")


# -- 6. The same convention under asyncio -----------------------------------------------------------------


def test_the_convention_holds_under_asyncio(store_path):
    """Under asyncio (anyio's cancel scopes): each call cancelled before it starts either raised
    and wrote nothing or returned written, and each call cancelled as its write is queued
    returns with its write there, the cancellation delivered at the next checkpoint."""

    async def run_cancelled_anyio(call: Call, arm: Callable[[anyio.CancelScope], Any]) -> Outcome:
        returned, result = False, None
        with anyio.CancelScope() as scope:
            disarm = arm(scope)
            try:
                result = await call.run()
                returned = True
                await anyio.lowlevel.checkpoint()
            finally:
                if disarm is not None:
                    disarm()
        return Outcome(returned, result, scope.cancelled_caught)

    async def main(path: str) -> None:
        async with open_runtime(path) as rt:
            world = await World.open(rt)
            for kind in CALLS:
                call = make_call(world, kind)
                before = dump(rt.store)
                outcome = await run_cancelled_anyio(call, lambda scope: scope.cancel())
                assert outcome.delivered
                check_convention(world, call, outcome, before)

                call = make_call(world, kind)
                outcome = await run_cancelled_anyio(call, lambda scope: writable_store(rt).add_listener(lambda event: scope.cancel()))
                assert outcome.returned and call.written(outcome.result), kind
                assert outcome.delivered, kind
            held = dump(rt.store)
        async with open_runtime(path) as again:
            assert dump(again.store) == held

    anyio.run(main, store_path, backend="asyncio")
