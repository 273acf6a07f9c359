"""The ids a (namespace, reader, way) was shown are held as runs: the same answers as a set of
ids, in memory that follows the runs, not the largest id."""

from __future__ import annotations

import tracemalloc

from hypothesis import given
from hypothesis import strategies as st

from asides import MessageIds
from asides.store._disclosure import COMPACTION_SLACK, DisclosureLog, IdRuns, disclosure_body, merged_runs

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


keys = st.tuples(st.sampled_from(["a", "b"]), st.sampled_from([None, "ann"]), st.sampled_from(["compile", "search"]))
rows_of_runs = st.lists(st.tuples(keys, st.integers(0, 200), st.integers(1, 9)), max_size=60)
NOT_WRITTEN = [("a", None, "read", 1, 2), ("a", 5, "compile", 1, 2), ("a", None, "compile", 4, 4)]  # rows no store writes


@given(rows_of_runs)
def test_merged_runs_hold_the_same_ids_each_in_as_few_runs_as_they_allow(rows):
    table = [(*key, first, first + count) for key, first, count in rows]
    merged = merged_runs([*table, *NOT_WRITTEN])

    def ids(runs):
        held: dict[tuple, set[int]] = {}
        for ns, reader, via, first, stop in runs:
            held.setdefault((ns, reader, via), set()).update(range(first, stop))
        return held

    assert ids(merged) == ids(table)
    for key, held in ids(table).items():
        starts = [first for ns, reader, via, first, _stop in merged if (ns, reader, via) == key]
        assert len(starts) == sum(1 for v in held if v - 1 not in held), "one row a run"


def test_a_merge_is_due_past_twice_the_runs_and_not_again_at_once_after_a_failed_one():
    log = DisclosureLog()
    for i in range(COMPACTION_SLACK + 2):  # a run each: ids far apart
        assert log.add(i + 1, disclosure_body("a", "ann", "main", "compile", 0.0, [(10 * i, 1)]))
    assert not log.compaction_due(), "as many rows as runs: nothing to merge"
    for i in range(COMPACTION_SLACK + 2):  # the same ids again, each its own row: twice the runs
        assert log.add(10_000 + i, disclosure_body("a", "ann", "main", "compile", 0.0, [(10 * i, 1)]))
    assert not log.compaction_due()
    for i in range(COMPACTION_SLACK + 1):  # one row past twice the runs and the slack
        assert log.add(20_000 + i, disclosure_body("a", "ann", "main", "compile", 0.0, [(10 * i, 1)]))
    assert log.compaction_due()
    log.compaction_failed()
    assert not log.compaction_due(), "a failed merge is tried again once the table grew"
    log.compacted(deleted=3 * COMPACTION_SLACK + 5, written=COMPACTION_SLACK + 2)
    assert not log.compaction_due()
