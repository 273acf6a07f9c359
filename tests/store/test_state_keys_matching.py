"""``Store.state_keys_matching``: the keys under a prefix whose record visible on a branch holds
every word asked, found through the search index, answered as the values read say: on every
branch, whether the index has reached the records or not, across reopens."""

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
from asides.store._search import holds_every, state_text

WORDS = ("alpha", "beta", "gamma")
KEYS = st.sampled_from([f"agents/a/{name}" for name in ("x", "y", "deep/x")] + ["agents/ab/x", "agents/b/x"])
VALUES = st.one_of(
    st.none(),
    st.integers(0, 9),
    st.sampled_from(WORDS),
    st.fixed_dictionaries({"text": st.sampled_from(["alpha beta", "gamma", "Beta, ALPHA!", ""]), "n": st.integers(0, 9)}),
    st.lists(st.sampled_from([*WORDS, "delta"]), max_size=3),
)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.lists(st.tuples(KEYS, VALUES), min_size=1, max_size=3)),
        st.tuples(st.just("fork"), st.just(None)),
        st.tuples(st.just("switch"), st.integers(0, 9)),
        st.tuples(st.just("index"), st.just(None)),
        st.tuples(st.just("ask"), st.tuples(st.sampled_from(["agents/a/", "agents/a/deep/", "agents/"]), st.sampled_from(WORDS))),
        st.tuples(st.just("reopen"), st.just(None)),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS)
def test_the_keys_found_are_those_whose_visible_values_hold_the_word(ops: list[tuple[str, Any]]) -> None:
    """Random writes (some under others' prefixes, some rewriting a key so it no longer holds a
    word) on ``main`` and forks, the index brought up to date at random points, reopens: every
    answer is the keys a dictionary per branch (a fork copying its parent's) says hold the word."""

    async def run(path: str) -> None:
        states = BranchedStates()
        for segment in reopen_segments(ops):
            async with open_store(path) as store:
                for op, arg in segment:
                    if await states.apply(store, op, arg):
                        if op == "fork":  # a fork with a record of its own, as a host's would have
                            await store.append_message(states.current, "user", (text("on the fork"),))
                        continue
                    if op == "index":
                        await store.index_search()
                        continue
                    prefix, word = arg
                    for branch in states.branches:
                        held = states.expected[branch]
                        want = sorted(k for k, v in held.items() if k.startswith(prefix) and holds_every(state_text(v), (word,)))
                        assert store.state_keys_matching(branch, prefix, [word]) == want, (branch, prefix, word)

    with tempfile.TemporaryDirectory() as folder:
        trio.run(run, str(Path(folder) / "store.db"))


async def test_it_answers_on_both_backends_and_says_none_where_it_cannot(store_path: str) -> None:
    async with open_store(store_path) as store:
        await store.set_states("main", {"agents/a/x": {"text": "alpha"}, "agents/a/y": "beta", "agents/b/x": "alpha"})
        assert store.state_keys_matching("main", "agents/a/", ["alpha"]) == ["agents/a/x"]
        await store.index_search()
        assert store.state_keys_matching("main", "agents/a/", ["alpha"]) == ["agents/a/x"]
        await store.set_states("main", {"agents/a/x": {"text": "gamma"}})
        assert store.state_keys_matching("main", "agents/a/", ["alpha"]) == []
        assert store.state_keys_matching("main", "", ["alpha"]) is None, "no prefix: list the keys"
    async with open_store(":memory:") as held:
        await held.set_states("main", {"agents/a/x": "alpha"})
        assert held.state_keys_matching("main", "agents/a/", ["alpha"]) is None, "held in memory: list the keys"
