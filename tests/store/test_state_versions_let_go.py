"""A store that reads its messages back holds the versions (sequence and record id) of the state
keys it read or wrote, and, past a bound (8,192 keys), a commit lets go of all but the keys it
committed and those waiting for a commit: a writer that runs for months holds as many keys as
the bound, not as many as it wrote. A key it wrote reads its newest version from what it holds (no read
of the database); one let go is read again when asked; and every read answers what was written,
on every branch, however small the bound."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import trio
from helpers import BranchedStates, reopen_segments
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import text
from asides.lowlevel import open_store

BOUND = 8192


async def test_a_writer_holds_at_most_the_bound_and_reads_back_none_it_wrote(store_path: str) -> None:
    """20,000 keys written a thousand at a time between messages, each read right after its
    write: the store holds at most the bound plus a batch, reads no version back for them, and
    still lists and reads every key, those it let go included."""
    async with open_store(store_path) as store:
        held = []
        for first in range(0, 20_000, 1000):
            await store.append_message("main", "user", (text(f"before {first}"),))
            await store.set_states("main", {f"agents/a/k/{i:05}": {"n": i} for i in range(first, first + 1000)})
            assert store.get_state("main", f"agents/a/k/{first + 999:05}") == {"n": first + 999}
            assert store.get_state("main", f"agents/a/k/{first:05}") == {"n": first}
            held.append(store.statistics().state_keys_in_memory)
        statistics = store.statistics()
        assert max(held) <= BOUND + 1000, held
        assert statistics.state_versions_read == 0, "a key written here reads its newest version from memory"
        assert store.get_state("main", "agents/a/k/00007") == {"n": 7}, "let go, read again"
        assert store.statistics().state_versions_read == 1
        assert len(store.state_keys("main", "agents/a/k/")) == 20_000
    async with open_store(store_path, read_only=True) as reopened:
        assert reopened.get_state("main", "agents/a/k/19999") == {"n": 19999}


async def test_a_key_let_go_reads_as_written_on_a_fork_and_its_parent(store_path: str) -> None:
    """A key written on ``main``, then on a fork, then let go: each branch reads its own version,
    and a version from before the fork, through the fork."""
    async with open_store(store_path) as store:
        store.model.state_keys_bound = 2
        await store.set_states("main", {"agents/a/k": {"v": "main 1"}, "agents/a/old": 1})
        await store.create_branch("side", "main")
        await store.set_states("side", {"agents/a/k": {"v": "side 1"}})
        await store.set_states("main", {"agents/a/k": {"v": "main 2"}})
        await store.set_states("main", {f"agents/a/filler/{i}": i for i in range(5)})  # past the bound: let go
        assert store.statistics().state_keys_in_memory <= 5, "the five just written"
        assert store.get_state("side", "agents/a/old") == 1
        assert store.get_state("side", "agents/a/k") == {"v": "side 1"}
        assert store.get_state("main", "agents/a/k") == {"v": "main 2"}
        assert store.state_keys("side", "agents/a/") == ["agents/a/k", "agents/a/old"]


KEYS = st.sampled_from([f"agents/a/{name}" for name in ("x", "y", "z", "deep/x", "deep/y")] + ["agents/b/x"])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.lists(st.tuples(KEYS, st.integers(0, 99)), min_size=1, max_size=3)),
        st.tuples(st.just("fork"), st.just(None)),
        st.tuples(st.just("switch"), st.integers(0, 9)),
        st.tuples(st.just("message"), st.just(None)),
        st.tuples(st.just("read"), KEYS),
        st.tuples(st.just("list"), st.sampled_from(["", "agents/", "agents/a/", "agents/a/deep/", "agents/b/"])),
        st.tuples(st.just("reopen"), st.just(None)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, bound=st.integers(0, 4))
def test_reads_answer_what_was_written_however_small_the_bound(ops: list[tuple[str, Any]], bound: int) -> None:
    """Random writes of a few keys (some under others' prefixes) on ``main`` and forks, messages
    between, reads, listings and reopens, with a bound of 0 to 4 keys held: every read and
    listing answers what a dictionary per branch (a fork copying its parent's) says."""

    async def run(path: str) -> None:
        states = BranchedStates()
        for segment in reopen_segments(ops):
            async with open_store(path) as store:
                store.model.state_keys_bound = bound
                for op, arg in segment:
                    if await states.apply(store, op, arg):
                        pass
                    elif op == "message":
                        await store.append_message(states.current, "user", (text("between"),))
                    elif op == "read":
                        for branch in states.branches:
                            assert store.get_state(branch, arg) == states.expected[branch].get(arg), (branch, arg)
                    else:
                        for branch in states.branches:
                            listed = sorted(k for k in states.expected[branch] if k.startswith(arg))
                            assert store.state_keys(branch, arg) == listed, (branch, arg)
                    if op in ("set", "message"):  # a commit: past the bound, it let go of all but its own
                        assert store.statistics().state_keys_in_memory <= max(bound, len(arg) if op == "set" else 0)
                for branch in states.branches:
                    assert store.state_items(branch, "") == states.expected[branch], branch

    with tempfile.TemporaryDirectory() as folder:
        trio.run(run, str(Path(folder) / "store.db"))
