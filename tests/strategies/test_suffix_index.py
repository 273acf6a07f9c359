"""The passthrough selection kept up to date (``SuffixIndex``) always equals the selection made
from scratch: the longest suffix that fits, over any run of appends, edits and budgets."""

from __future__ import annotations

from unittest import mock

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from asides import Message, PassthroughStrategy, text
from asides.strategies import _suffix as suffix
from asides.strategies._passthrough import emit_view_message
from asides.strategies._suffix import SuffixIndex

HIDDEN: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


class ListView:
    """A view over a list of messages, with the revision a real view reports."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.edits = 0

    @property
    def revision(self) -> tuple[int, int]:
        return (len(self.messages), self.edits)

    def length(self) -> int:
        return len(self.messages)

    def slice(self, start: int, stop: int | None = None) -> tuple[Message, ...]:
        return tuple(self.messages[start:stop])


def from_scratch(messages: list[Message], budget: int, price) -> list[str]:
    kept: list[str] = []
    total = 0
    for message in reversed(messages):
        cost = sum(price(item, message) for item in emit_view_message(message, HIDDEN))
        if total + cost > budget:
            break
        total += cost
        kept.append(message.id)
    return list(reversed(kept))


operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 400)),
        st.tuples(st.just("edit"), st.integers(0, 10_000), st.integers(1, 400)),
        st.tuples(st.just("select"), st.integers(0, 3_000)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(operations, st.sampled_from([256, 0]))
def test_the_kept_selection_equals_one_made_from_scratch(ops, slack):
    """With the coverage cut back as the index does (``slack`` 0: as soon as it covers over four
    times what a selection needed), as with the slack it has."""
    with mock.patch.object(suffix, "SLACK", slack):
        check_against_scratch(ops)


def check_against_scratch(ops):
    widest = 0
    view = ListView()
    index = SuffixIndex()
    strategy = PassthroughStrategy()
    for op in ops:
        if op[0] == "append":
            n = len(view.messages)
            view.messages.append(Message(str(n), n + 1, "user", (text("x" * op[1]),), {}, 0.0))
        elif op[0] == "edit" and view.messages:
            position = op[1] % len(view.messages)
            view.messages[position] = attrs.evolve(view.messages[position], content=(text("y" * op[2]),))
            view.edits += 1
        elif op[0] == "select":
            selection = index.select(HIDDEN, view, op[1], lambda m: emit_view_message(m, HIDDEN), strategy.price)
            ids = [entry.message_ids[0] for entry in selection.sources]
            assert ids == from_scratch(view.messages, op[1], strategy.price)
            widest = max(widest, len(ids) + 1)  # what it needed, and the one past the fit
            assert len(index.covered_ids()) <= 4 * widest + suffix.SLACK, "the coverage follows the selections' needs"
