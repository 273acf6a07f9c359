"""The keys a namespace actor lists as written (``actors/_written.py``), held against the whole
list: a revision within the newest keys gets exactly the keys written since, an older one every
key written since the actor started, and the actor holds at most twice its window however many
were written."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given

from asides.actors._written import WrittenKeys

KEYS = st.lists(st.sampled_from(["a/1", "a/2", "b/1", "c/9"]), max_size=7)


@given(batches=st.lists(KEYS, max_size=30), window=st.integers(1, 6), asked=st.lists(st.integers(0, 120), max_size=8))
def test_recent_revisions_are_exact_and_older_ones_a_superset(batches, window, asked):
    whole: list[str] = []

    def since_start() -> list[str]:
        return list(dict.fromkeys(reversed(whole)))[::-1]  # each once, by its newest write

    written = WrittenKeys(since_start, window)
    for batch in batches:
        written.add(batch)
        whole.extend(batch)
        assert written.revision == len(whole)
        assert written.held <= 2 * window
        for revision in asked:
            answer = written.since(revision)
            exact = tuple(whole[revision:])
            if revision >= len(whole) - window:  # always held
                assert answer == exact
            else:  # held still, or every key since the start, each once
                assert answer == exact or set(exact) <= set(answer) and len(set(answer)) == len(answer)


def test_a_long_life_holds_a_window_and_asks_the_store_only_for_what_it_let_go():
    asked = []
    written = WrittenKeys(lambda: asked.append(1) or ["x"], 4)
    for n in range(10_000):
        written.add((f"k/{n}",))
    assert written.revision == 10_000 and written.held <= 8
    assert written.since(9_996) == ("k/9996", "k/9997", "k/9998", "k/9999") and asked == []
    assert written.since(10_000) == () and written.since(12_000) == ()
    assert written.since(0) == ("x",) and asked == [1]


def test_a_window_below_one_is_refused():
    with pytest.raises(ValueError, match="window"):
        WrittenKeys(list, 0)
