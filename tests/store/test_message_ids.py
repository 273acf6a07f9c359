"""asides.MessageIds (a summary's messages as runs of ids) and the id runs chunks own: each
behaves as the plain tuple or set of the same ids, at a size that follows the gaps among them."""

from __future__ import annotations

import json
import pickle
import warnings

from hypothesis import given
from hypothesis import strategies as st

from asides import AsidesDeprecationWarning, MessageIds, Summary
from asides.store._erasure import derived_from
from asides.store._message_ids import IdRuns, ids_from_record, record_names

numbers = st.lists(st.integers(0, 60), max_size=40)
odd_ids = st.sampled_from(["x", "01", "", "٣", "-1", "1.0", "1_0", " 1", "+1", "99999999999999999999"])
any_ids = st.lists(st.one_of(st.integers(0, 60).map(str), odd_ids), max_size=30)


@given(any_ids)
def test_it_behaves_as_the_tuple_of_its_ids(listed):
    ids = MessageIds(listed)
    plain = tuple(listed)
    assert ids == plain and plain == ids and ids == list(listed) and hash(ids) == hash(plain)
    assert len(ids) == len(plain) and tuple(ids) == plain and tuple(reversed(ids)) == plain[::-1]
    assert [ids[i] for i in range(-len(plain), len(plain))] == [plain[i] for i in range(-len(plain), len(plain))]
    assert ids[1:-1] == plain[1:-1] and ids[::2] == plain[::2] and isinstance(ids[1:], tuple)
    for candidate in [*plain, "7", "99", "x", "01"]:
        assert (candidate in ids) == (candidate in plain)
    assert pickle.loads(pickle.dumps(ids)) == ids
    assert ids == MessageIds(ids) and MessageIds.concat([ids, ids]) == plain + plain


@given(numbers)
def test_its_record_reads_back_as_the_same_ids(values):
    listed = [str(v) for v in values]
    ids = MessageIds(listed)
    record = json.loads(json.dumps(ids.to_record()))
    assert "message_ids" not in record and sum(count for _first, count in ids.runs()) == len(listed)
    if listed:
        assert ids_from_record(record) == ids
    assert MessageIds.from_runs(ids.runs()) == ids


def test_consecutive_ids_are_one_run_however_many():
    for count in (1, 10, 100_000):
        ids = MessageIds(str(i) for i in range(5, 5 + count))
        assert ids.runs() == [(5, count)] and ids.to_record() == {"message_runs": [[5, count]]}
    assert MessageIds(["1", "2", "4", "5", "3"]).runs() == [(1, 2), (4, 2), (3, 1)]
    assert MessageIds(["1", "x"]).to_record() == {"message_ids": ["1", "x"]}


def test_a_summary_takes_any_iterable_of_ids_and_holds_them_as_message_ids():
    summary = Summary("L1-1", 1, "memory", ["3", "4", "5"], 3, 5)
    assert isinstance(summary.message_ids, MessageIds) and summary.message_ids == ("3", "4", "5")
    assert summary == Summary("L1-1", 1, "memory", ("3", "4", "5"), 3, 5)


def test_adding_to_it_as_to_a_tuple_works_and_warns():
    ids = MessageIds(["1", "2"])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert ids + ("3",) == ("1", "2", "3") and ("0",) + ids == ("0", "1", "2")
    assert [w.category for w in seen] == [AsidesDeprecationWarning, AsidesDeprecationWarning]
    assert "tuple(summary.message_ids)" in str(seen[0].message)


@given(st.lists(st.tuples(st.integers(0, 80), st.integers(1, 6)), max_size=12), st.sets(st.integers(0, 100).map(str), max_size=20))
def test_erasure_finds_exactly_the_erased_ids_a_records_runs_name(runs, erased):
    named = {str(first + k) for first, count in runs for k in range(count)}
    value = {"message_runs": [list(run) for run in runs]}
    assert record_names(value["message_runs"], erased) == named & erased
    assert derived_from(value, erased) == named & erased


def test_malformed_runs_name_nothing():
    for runs in ([], [[1]], [[1, 0]], [[-1, 2]], [["1", 2]], [[True, 2]], "1-3"):
        assert ids_from_record({"message_runs": runs}) is None
    assert ids_from_record({"message_ids": []}) is None and ids_from_record({}) is None


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 5)), max_size=10), st.integers(0, 60), st.integers(1, 8))
def test_owned_runs_answer_membership_overlap_and_what_they_miss_as_a_set_does(added, first, count):
    runs, held = IdRuns(), set()
    for start, length in added:
        runs.add(start, length)
        held.update(range(start, start + length))
    assert all((v in runs) == (v in held) for v in range(0, 70))
    assert runs.overlaps(first, count) == bool(held & set(range(first, first + count)))
    missing = runs.missing(first, count)
    assert [v for start, length in missing for v in range(start, start + length)] == sorted(set(range(first, first + count)) - held)
    assert all(b[0] > a[0] + a[1] for a, b in zip(missing, missing[1:], strict=False))  # apart: as few runs as can be


@given(st.lists(st.lists(st.integers(0, 60).map(str), max_size=15), max_size=6))
def test_a_union_of_numbered_ids_holds_each_once_in_id_order(parts):
    """``MessageIds.union`` of store-issued ids: every id of every part once, in id order, by
    runs (a union of memories' ids costs their runs)."""
    joined = MessageIds.union(MessageIds(p) for p in parts)
    assert joined == tuple(str(n) for n in sorted({int(i) for p in parts for i in p}))
    big = MessageIds.union([MessageIds.from_runs([(10, 1_000_000)]), ["5"], MessageIds.from_runs([(500_000, 600_000)])])
    assert len(big) == 1 + 1_099_990 and big.runs() == [(5, 1), (10, 1_099_990)]


def test_a_union_with_ids_that_are_not_numbers_keeps_the_first_appearance_of_each():
    assert MessageIds.union([["b", "7"], ["a", "b"], ["7"]]) == ("b", "7", "a")


async def test_whether_a_summary_covers_an_erased_message_costs_its_runs(store_path):
    """``LogModel.any_erased`` (what a manager's summary reads check after an erasure) answers
    for a run of a trillion ids at once: by runs and a binary search over the erasures, never id
    by id."""
    from asides import text
    from asides.lowlevel import open_store

    async with open_store(store_path) as store:
        ids = [(await store.append_message("main", "user", [text(f"line {i}")])).id for i in range(6)]
        model = store.model
        assert not model.any_erased(MessageIds.from_runs([(0, 10**12)]))  # nothing erased yet
        await store.erase([ids[3]], reason="asked", at=1.0)
        erased = int(ids[3])
        assert model.any_erased(MessageIds.from_runs([(0, 10**12)]))
        assert model.any_erased(MessageIds.from_runs([(erased, 1)])) and model.any_erased([ids[0], ids[3]])
        assert not model.any_erased(MessageIds.from_runs([(0, erased), (erased + 1, 10**12)]))
        assert not model.any_erased([ids[0], ids[4]]) and not model.any_erased(["x", "01"])
        await store.erase([ids[1]], reason="asked", at=2.0)  # a second erasure is seen too
        assert model.any_erased(MessageIds.from_runs([(int(ids[1]), 1)]))
