"""The rule of when a PostgreSQL store's commits announce themselves (store/_pg_notices.py), tested
directly: it is times alone, no database."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from asides.store._pg_notices import OTHERS_WRITING_SECONDS, Notices


def test_a_lone_commit_is_announced_and_a_burst_owes_one_announcement() -> None:
    notices = Notices(gap=0.002)
    assert notices.due(100.0)
    assert not notices.committed(True, 100.0)  # announced: nothing owed
    assert not notices.owed and notices.owed_at() == math.inf
    assert not notices.due(100.001)
    assert notices.committed(False, 100.001)  # newly owed: the committer must set a deadline
    assert not notices.committed(False, 100.0015)  # still owed, not newly
    assert notices.owed and notices.owed_at() == 100.0 + 0.002
    assert notices.due(notices.owed_at())
    notices.committed(True, notices.owed_at())
    assert not notices.owed


def test_while_others_write_every_commit_announces_itself() -> None:
    notices = Notices(gap=10.0)
    notices.committed(True, 0.0)
    assert not notices.due(1.0)
    notices.others_write(1.0)
    assert notices.due(1.0) and notices.due(1.0 + OTHERS_WRITING_SECONDS / 2)
    assert not notices.due(1.0 + OTHERS_WRITING_SECONDS)


steps = st.lists(
    st.tuples(st.sampled_from(["announced", "quiet", "others"]), st.floats(min_value=0.0, max_value=1e6, allow_nan=False)),
    max_size=30,
)


@given(steps, st.floats(min_value=1e-6, max_value=10.0), st.floats(min_value=0.0, max_value=1e9))
def test_the_owed_announcement_is_due_at_its_own_deadline(ops, gap, start) -> None:
    """Whatever happened before, a wait until ``owed_at()`` ends with the announcement due (a
    deadline and a check that disagreed by a rounding error made the committer loop), and
    nothing is owed after an announcing commit."""
    notices = Notices(gap=gap)
    now = start
    for kind, step in ops:
        now += step
        if kind == "others":
            notices.others_write(now)
        else:
            notices.committed(kind == "announced", now)
            assert notices.owed == (kind == "quiet")
        if notices.owed:
            assert notices.due(notices.owed_at())
        else:
            assert notices.owed_at() == math.inf
