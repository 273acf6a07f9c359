"""The ids a (namespace, reader, way) was shown are held as runs: the same answers as a set of
ids, in memory that follows the runs, not the largest id."""

from __future__ import annotations

import tracemalloc

from hypothesis import given
from hypothesis import strategies as st

from asides import MessageIds
from asides.store._disclosure import DisclosureLog, IdRuns, disclosure_body

runs_added = st.lists(st.tuples(st.integers(0, 300), st.integers(0, 12)), max_size=40)


@given(runs_added, st.lists(st.integers(0, 320), max_size=60))
def test_runs_answer_as_a_set_of_ids_would(added, probes):
    runs, ids = IdRuns(), set()
    for first, count in added:
        runs.add(first, count)
        ids.update(range(first, first + count))
    for value in [*probes, *ids]:
        assert (value in runs) == (value in ids)
    # Disjoint, sorted and not touching: as few runs as the ids allow.
    starts = sorted(v for v in ids if v - 1 not in ids)
    assert len(runs) == len(starts)


def test_ids_shown_at_ten_million_cost_what_their_runs_cost():
    log = DisclosureLog()
    body = disclosure_body("agents/a", "ann", "main", "compile", 0.0, [(9_999_000, 1000)])
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        assert log.add(10_000_001, body)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 16_000, f"one run of ids near ten million held {held} bytes"  # a bitmap: 1.25 MB
    assert log.new_runs("agents/a", "ann", "compile", ["9998999", "9999000", "9999999", "10000000"]) == [(9_998_999, 1), (10_000_000, 1)]
    assert log.new_runs("agents/a", "bob", "compile", ["9999000"]) == [(9_999_000, 1)]


@given(
    st.lists(st.tuples(st.integers(0, 60), st.integers(1, 6)), max_size=10),
    st.lists(st.one_of(st.integers(0, 80).map(str), st.sampled_from(["x", "01", "+1"])), max_size=30),
)
def test_what_is_new_to_a_reader_is_what_was_not_shown_each_id_once(shown, asked):
    log = DisclosureLog()
    held: set[int] = set()
    if shown:
        assert log.add(1, disclosure_body("agents/a", "ann", "main", "compile", 0.0, shown))
        held = {first + k for first, count in shown for k in range(count)}
    fresh = log.new_runs("agents/a", "ann", "compile", asked)
    listed = [first + k for first, count in fresh for k in range(count)]
    expected = sorted({int(a) for a in asked if a.isdigit() and a == str(int(a))} - held)
    assert listed == expected
    assert log.new_runs("agents/a", "ann", "compile", MessageIds(asked)) == fresh
