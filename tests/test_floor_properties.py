"""Properties of the narrowing floor and of refusals (SPEC N2, N5, R2, E), checked with
Hypothesis over random sequences of operations.

Each example runs in its own runtime (its own store) through ``trio.run`` inside a plain test,
so examples never share state; examples are bounded (``max_examples=25``, short op lists) and
have no deadline (they do real SQLite commits).

(a) The floor never lowers: a host strategy marks random sequences on random branches, with
    reopens of the store, forks, switches, derives and strategy switches (to passthrough and
    back) in between. A reference model keeps, per branch, the highest mark (a fork or derive
    starts its child at the parent's floor); after every operation the stored floor of every
    branch equals the model's (N2: never lowers, a lower mark keeps the higher floor; N5: it
    holds across reopen, switches, forks and derives).
(b) A refused call never changes the store: random opens (random namespace, reader and
    branch), messages, narrowing and widening edits, forks, switches, derives, set_strategy
    (sometimes with a strategy that does not mark its reads), marks and closes. Every call that
    raises an asides error leaves ``dump(rt.store)`` identical, and a refused fork, switch,
    set_strategy or derive leaves the manager's branch and strategy as they were (SPEC E, R2).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides.actors import AsidesError, open_runtime
from asides.store import text
from asides.strategies._passthrough import PassthroughStrategy
from tests.helpers import dump

NS = "agents/ann"
FLOOR = f"{NS}/narrowing-floor"
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Marker:
    """Marks the sequences queued in ``marks`` from ``tick``; selects like passthrough; never has
    background work (no drain runs). ``marks_compression_reads`` is configurable."""

    name = "marker"

    def __init__(self, *, marks: bool = True) -> None:
        self.marks_compression_reads = marks
        self.marks: list[int] = []

    async def initialize(self, ctx) -> None:
        return None

    async def on_new_message(self, message, ctx) -> None:
        return None

    async def select(self, ctx, budget, options):
        return await PassthroughStrategy().select(ctx, budget, options)

    async def tick(self, ctx) -> bool:
        if not self.marks:
            return False
        await ctx.mark_compression_read(self.marks.pop(0))
        return True

    def is_ready(self) -> bool:
        return True


# -- (a) the floor never lowers -------------------------------------------------------------------

floor_ops = st.lists(
    st.one_of(
        st.tuples(st.just("mark"), st.integers(0, 40)),
        st.tuples(st.just("add"), st.just(0)),
        st.tuples(st.just("fork"), st.just(0)),
        st.tuples(st.just("switch"), st.integers(0, 20)),
        st.tuples(st.just("derive"), st.just(0)),
        st.tuples(st.just("passthrough"), st.just(0)),
        st.tuples(st.just("marker"), st.just(0)),
        st.tuples(st.just("reopen"), st.just(0)),
    ),
    min_size=6,
    max_size=20,
)


async def _floor_scenario(path: str, ops: list[tuple[str, int]]) -> None:
    expected: dict[str, int] = {"main": 0}
    current = "main"
    kind = "marker"
    counter = 0
    seen: dict[str, int] = {}

    def check(rt) -> None:
        for branch, floor in expected.items():
            stored = rt.store.get_state(branch, FLOOR)
            assert (stored if stored is not None else 0) == floor, (branch, stored, floor, ops)
            assert floor >= seen.get(branch, 0)
            seen[branch] = floor

    index = 0
    while True:
        async with open_runtime(path) as rt:
            strategy = Marker() if kind == "marker" else PassthroughStrategy()
            manager = await rt.open_manager(NS, strategy=strategy, view_reader="ann", branch=current)
            check(rt)
            while index < len(ops):
                op, value = ops[index]
                index += 1
                if op == "reopen":
                    break
                if op == "mark":
                    if kind == "marker":
                        manager.strategy.marks.append(value)
                        assert await manager.tick()
                        expected[current] = max(expected[current], value)
                elif op == "add":
                    await manager.add_message("user", [text(f"message {index}")])
                elif op in ("fork", "derive"):
                    counter += 1
                    name = f"{op}-{counter}"
                    if op == "fork":
                        await manager.fork(name)
                    else:
                        child = await manager.derive(branch=name, strategy=Marker() if kind == "marker" else PassthroughStrategy())
                        await manager.aclose()
                        manager = child
                    expected[name] = expected[current]
                    current = name
                elif op == "switch":
                    names = sorted(expected)
                    current = names[value % len(names)]
                    await manager.switch_branch(current)
                else:
                    kind = op
                    await manager.set_strategy(Marker() if kind == "marker" else PassthroughStrategy())
                check(rt)
            else:
                return


@SETTINGS
@given(ops=floor_ops)
def test_floor_never_lowers_across_marks_reopens_forks_and_strategy_switches(ops):
    """SPEC N2, N5, S2 (see the module docstring, (a))."""
    with tempfile.TemporaryDirectory() as directory:
        trio.run(_floor_scenario, os.path.join(directory, "store.db"), ops)


# -- (b) a refused call never changes the store -----------------------------------------------------

AUDIENCES = [None, ("ann",), ("bob",), ("ann", "bob")]
READERS = [None, "ann", "bob"]
NAMESPACES = ["agents/x", "agents/y"]

open_op = st.tuples(st.just("open"), st.integers(0, 1), st.integers(0, 2), st.integers(0, 10))
edit_op = st.tuples(
    st.just("edit"), st.integers(0, 10), st.lists(st.integers(0, 3), min_size=1, max_size=2), st.integers(0, 10)
)
store_ops = st.builds(
    lambda first, rest: first + rest,
    st.lists(open_op, min_size=1, max_size=3),
    st.lists(
        st.one_of(
            open_op,
            st.tuples(st.just("add"), st.integers(0, 10), st.lists(st.integers(0, 3), min_size=1, max_size=2), st.just(0)),
            edit_op,
            edit_op,
            st.tuples(st.just("fork"), st.integers(0, 10), st.just(0), st.just(0)),
            st.tuples(st.just("switch"), st.integers(0, 10), st.integers(0, 10), st.just(0)),
            st.tuples(st.just("derive"), st.integers(0, 10), st.just(0), st.just(0)),
            st.tuples(st.just("set_strategy"), st.integers(0, 10), st.booleans(), st.just(0)),
            st.tuples(st.just("mark"), st.integers(0, 10), st.integers(0, 30), st.just(0)),
            st.tuples(st.just("close"), st.integers(0, 10), st.just(0), st.just(0)),
        ),
        min_size=10,
        max_size=30,
    ),
)


async def _refusal_scenario(ops: list[tuple[Any, ...]]) -> None:
    async with open_runtime() as rt:
        managers: list[Any] = []
        counter = 0
        refusals = 0

        def branches() -> list[str]:
            return sorted(b.name for b in rt.list_branches())

        for op, a, b, c in ops:
            if op == "open":
                names = branches()
                call = lambda: rt.open_manager(  # noqa: E731
                    NAMESPACES[a], strategy=Marker(), view_reader=READERS[b], branch=names[c % len(names)]
                )
                manager = None
            else:
                if not managers:
                    continue
                manager = managers[a % len(managers)]
                if op == "add":
                    content = [text(f"block {j}", AUDIENCES[x]) for j, x in enumerate(b)]
                    call = lambda m=manager, content=content: m.add_message("user", content)  # noqa: E731
                elif op == "edit":

                    async def call(m=manager, audiences=b, pick=c):
                        messages = m.get_all_messages()
                        if not messages:
                            return None
                        target = messages[pick % len(messages)]
                        content = [text(f"edited {j}", AUDIENCES[x]) for j, x in enumerate(audiences)]
                        return await m.edit_message(target.id, content)

                elif op in ("fork", "derive"):
                    counter += 1
                    name = f"{op}-{counter}"
                    if op == "fork":
                        call = lambda m=manager, name=name: m.fork(name)  # noqa: E731
                    else:
                        call = lambda m=manager, name=name: m.derive(branch=name, strategy=Marker())  # noqa: E731
                elif op == "switch":
                    names = branches()
                    call = lambda m=manager, name=names[b % len(names)]: m.switch_branch(name)  # noqa: E731
                elif op == "set_strategy":
                    call = lambda m=manager, marks=b: m.set_strategy(Marker(marks=marks))  # noqa: E731
                elif op == "mark":

                    async def call(m=manager, sequence=b):
                        m.strategy.marks.append(sequence)
                        try:
                            return await m.tick()
                        finally:
                            m.strategy.marks.clear()

                else:
                    call = lambda m=manager: m.aclose()  # noqa: E731
            before = dump(rt.store)
            where = (manager.branch, manager.strategy) if manager is not None else None
            try:
                result = await call()
            except AsidesError:
                refusals += 1
                assert dump(rt.store) == before, (op, a, b, c)
                if manager is not None and op in ("fork", "switch", "set_strategy", "derive"):
                    assert (manager.branch, manager.strategy) == where, (op, a, b, c)
                continue
            if op in ("open", "derive"):
                managers.append(result)


@SETTINGS
@given(ops=store_ops)
def test_a_refused_call_never_changes_the_store(ops):
    """SPEC E, R2, N3, N4, N7, R1, R4, R5 (see the module docstring, (b))."""
    trio.run(_refusal_scenario, ops)
