"""Properties of the narrowing floor and of refusals (SPEC N2, N5, R2, E), checked with
Hypothesis over random sequences of operations.

Each example runs in its own runtime (its own store, of the test's backend) through ``trio.run``
inside a plain test, so examples never share state; examples are bounded (25 examples for (a),
100 for (b), 25 on PostgreSQL, short op lists) and have no deadline (they do real commits).

(a) The floor never lowers: a host strategy marks random sequences on random branches, with
    reopens of the store, forks, switches, derives and strategy switches (to passthrough and
    back) in between. A reference model keeps, per branch, the highest mark (a fork or derive
    starts its child at the parent's floor); after every operation the stored floor of every
    branch equals the model's (N2: never lowers, a lower mark keeps the higher floor; N5: it
    holds across reopen, switches, forks and derives).
(b) A refused call never changes the store: random opens (random namespace, reader and
    branch), messages, narrowing and widening edits, forks, switches, derives, set_strategy
    (sometimes with a strategy that does not mark its reads), marks and closes. Each call's
    outcome is predicted from the store as it stands before it (a claim conflict, a stale or
    closed manager, a narrowing the floor or another reader forbids, a strategy that does not
    mark its reads under a reader) and checked both ways: a predicted refusal must happen, and
    a call predicted to go through must not be refused. Every call that raises an asides error
    leaves ``dump(rt.store)`` identical, and a refused fork, switch, set_strategy or derive
    leaves the manager's branch and strategy as they were (SPEC E, R2); every successful call
    has its effect (the message stored, the edit applied with id and sequence kept, the branch
    made, the manager moved, the claim recorded, the floor at the highest mark).
"""

from __future__ import annotations

import itertools
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides.actors import AsidesError, open_runtime
from asides.store import text
from asides.store._postgres import is_postgres_url
from asides.strategies._passthrough import PassthroughStrategy
from tests.helpers import dump, sibling_store

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


@settings(SETTINGS, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=floor_ops)
def test_floor_never_lowers_across_marks_reopens_forks_and_strategy_switches(store_path, ops):
    """SPEC N2, N5, S2 (see the module docstring, (a)); each example on a fresh store of the
    test's backend."""
    trio.run(_floor_scenario, sibling_store(store_path, f"e{next(_EXAMPLES)}"), ops)


_EXAMPLES = itertools.count()


# -- (b) a refused call never changes the store -----------------------------------------------------

AUDIENCES = [None, ("ann",), ("bob",), ("ann", "bob")]
READERS = [None, "ann", "bob"]
NAMESPACES = ["agents/x", "agents/y"]

open_op = st.tuples(st.just("open"), st.integers(0, 1), st.integers(0, 2), st.integers(0, 10))
edit_op = st.tuples(st.just("edit"), st.integers(0, 10), st.lists(st.integers(0, 3), min_size=1, max_size=2), st.integers(0, 10))
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


def _hides(old, new) -> tuple[set[str], bool]:
    """Whom an edit hides blocks from, by position (SPEC N1): named readers taken out of an
    audience, and whether a block everyone could see got one."""
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


async def _refusal_scenario(path: str, ops: list[tuple[Any, ...]]) -> tuple[int, int]:
    """Run ``ops`` on a fresh store at ``path``; every call's outcome (refused or not) is predicted
    from the store as it stands before the call, and checked; a successful call is checked for
    its effect. Returns (refusals, successes)."""
    async with open_runtime(path) as rt:
        store = rt.store
        managers: list[Any] = []
        counter = 0
        refusals = successes = 0

        def branches() -> list[str]:
            return sorted(b.name for b in rt.list_branches())

        def record(branch: str, namespace: str) -> str | None:
            return store.get_state(branch, f"{namespace}/reader")

        def floor(branch: str, namespace: str) -> int:
            return store.get_state(branch, f"{namespace}/narrowing-floor") or 0

        def stale(m) -> bool:
            recorded = record(m.branch, m.namespace)
            return m.closed or (recorded is not None and recorded != m.view_reader)

        for op, a, b, c in ops:
            manager = None
            check_success: Any = None
            if op == "open":
                namespace, reader = NAMESPACES[a], READERS[b]
                branch = branches()[c % len(branches())]
                recorded = record(branch, namespace)
                refuse = reader is not None and recorded is not None and recorded != reader
                call = lambda namespace=namespace, reader=reader, branch=branch: rt.open_manager(  # noqa: E731
                    namespace, strategy=Marker(), view_reader=reader, branch=branch
                )

                def check_success(opened, reader=reader, recorded=recorded, branch=branch, namespace=namespace):
                    assert opened.view_reader == (reader or recorded) and opened.branch == branch
                    assert record(branch, namespace) == (reader or recorded)
                    managers.append(opened)

            else:
                if not managers:
                    continue
                manager = managers[a % len(managers)]
                reader, branch, namespace = manager.view_reader, manager.branch, manager.namespace
                refuse = stale(manager)
                if op == "add":
                    content = [text(f"block {j}", AUDIENCES[x]) for j, x in enumerate(b)]
                    call = lambda m=manager, content=content: m.add_message("user", content)  # noqa: E731

                    def check_success(message, content=content, branch=branch):
                        assert store.get_message(branch, message.id).content == tuple(content)

                elif op == "edit":
                    messages = store.messages(branch)
                    if not messages:
                        continue
                    target = messages[c % len(messages)]
                    content = [text(f"edited {j}", AUDIENCES[x]) for j, x in enumerate(b)]
                    named, from_everyone = _hides(target.content, content)
                    if not refuse and (named or from_everyone):
                        others = {record(branch, ns) for ns in NAMESPACES if ns != namespace}
                        refuse = (
                            reader is None
                            or from_everyone
                            or bool(named - {reader})
                            or target.sequence <= floor(branch, namespace)  # compression may have read it (N3)
                            or reader in others  # another namespace compiles for the same reader (N4)
                        )
                    call = lambda m=manager, t=target, content=content: m.edit_message(t.id, content)  # noqa: E731

                    def check_success(edited, target=target, content=content, branch=branch):
                        assert (edited.id, edited.sequence, edited.content) == (target.id, target.sequence, tuple(content))
                        assert store.get_message(branch, target.id).content == tuple(content)

                elif op in ("fork", "derive"):
                    counter += 1
                    name = f"{op}-{counter}"
                    if op == "fork":
                        call = lambda m=manager, name=name: m.fork(name)  # noqa: E731

                        def check_success(_, m=manager, name=name, parent=branch):
                            assert m.branch == name and store.branch_info(name).parent == parent

                    else:
                        call = lambda m=manager, name=name: m.derive(branch=name, strategy=Marker())  # noqa: E731

                        def check_success(child, m=manager, name=name, parent=branch, reader=reader):
                            assert m.branch == parent and child.branch == name and child.view_reader == reader
                            assert store.branch_info(name).parent == parent
                            assert record(name, child.namespace) == reader
                            managers.append(child)

                elif op == "switch":
                    target_branch = branches()[b % len(branches())]
                    recorded = record(target_branch, namespace)
                    refuse = refuse or (recorded is not None and recorded != reader)
                    call = lambda m=manager, name=target_branch: m.switch_branch(name)  # noqa: E731

                    def check_success(_, m=manager, name=target_branch, reader=reader):
                        assert m.branch == name
                        if reader is not None:
                            assert record(name, m.namespace) == reader

                elif op == "set_strategy":
                    strategy = Marker(marks=b)
                    refuse = refuse or (reader is not None and not b)  # N7: a reader needs marked reads
                    call = lambda m=manager, strategy=strategy: m.set_strategy(strategy)  # noqa: E731

                    def check_success(_, m=manager, strategy=strategy):
                        assert m.strategy is strategy

                elif op == "mark":
                    before_floor = floor(branch, namespace)

                    async def call(m=manager, sequence=b):
                        m.strategy.marks.append(sequence)
                        try:
                            return await m.tick()
                        finally:
                            m.strategy.marks.clear()

                    def check_success(did, m=manager, sequence=b, reader=reader, before_floor=before_floor):
                        assert did, "the host strategy marked"
                        expected = max(before_floor, sequence) if reader is not None else before_floor
                        assert floor(m.branch, m.namespace) == expected  # N2: never lower; no reader, no floor

                else:
                    refuse = False  # closing is never refused
                    call = lambda m=manager: m.aclose()  # noqa: E731

                    def check_success(_, m=manager):
                        assert m.closed

            before = dump(store)
            where = (manager.branch, manager.strategy) if manager is not None else None
            try:
                result = await call()
            except AsidesError as error:
                refusals += 1
                assert refuse, f"{op} {(a, b, c)} was refused: {error!r}"
                assert dump(store) == before, (op, a, b, c)
                if manager is not None and op in ("fork", "switch", "set_strategy", "derive"):
                    assert (manager.branch, manager.strategy) == where, (op, a, b, c)
                continue
            successes += 1
            assert not refuse, f"{op} {(a, b, c)} went through; it must be refused"
            check_success(result)
        return refusals, successes


#: Examples of (b) per run: more than (a), since a refusal the floor decides is a rare draw; on
#: PostgreSQL, where each example costs a fresh schema and its commits, a quarter of them.
REFUSAL_EXAMPLES = {"sqlite": 100, "postgres": 25}


def test_a_refused_call_never_changes_the_store(store_path):
    """SPEC E, R2, N3, N4, N7, R1, R4, R5 (see the module docstring, (b)): each call's outcome is
    the predicted one, so the number of refusals is exactly the predicted number; a refused call
    changes nothing; a successful one has its effect. Each example on a fresh store of the
    test's backend."""

    @settings(SETTINGS, max_examples=REFUSAL_EXAMPLES["postgres" if is_postgres_url(store_path) else "sqlite"])
    @given(ops=store_ops)
    def check(ops: list[tuple[Any, ...]]) -> None:
        refusals, successes = trio.run(_refusal_scenario, sibling_store(store_path, f"e{next(_EXAMPLES)}"), ops)
        assert refusals + successes >= 1

    check()


def test_the_refusal_scenario_refuses_and_allows(store_path):
    """The premise of the property, on one fixed sequence: it meets both refusals and successes
    of every kind it predicts (a claim conflict, a stale manager, a narrowing below the floor,
    one hiding a block from another reader, a strategy that does not mark its reads)."""
    ops = [
        ("open", 0, 1, 0),  # agents/x for ann: claims
        ("open", 0, 2, 0),  # agents/x for bob: refused, ann holds it
        ("add", 0, [3], 0),  # a block for ann and bob
        ("mark", 0, 5, 0),  # ann's floor to 5
        ("edit", 0, [2], 0),  # hides it from ann, at or below her floor: refused
        ("add", 0, [3], 0),
        ("edit", 0, [2], 1),  # hides the new one from ann, above the floor: allowed
        ("edit", 0, [1], 1),  # hides it from bob: refused
        ("set_strategy", 0, False, 0),  # a strategy that does not mark reads, under ann: refused
        ("open", 1, 0, 0),  # agents/y, no reader
        ("open", 1, 2, 0),  # agents/y for bob: the no-reader manager is now stale
        ("add", 3, [0], 0),  # stale: refused
        ("close", 0, 0, 0),
        ("add", 0, [0], 0),  # closed: refused
    ]
    refusals, successes = trio.run(_refusal_scenario, store_path, ops)
    assert (refusals, successes) == (6, 8)
