"""The estimates a strategy keeps of the messages it prices: memoised by message and content, and
bounded, so a strategy that prices every message of a long history keeps a fixed number of them
(and none of the history's content beyond those)."""

from __future__ import annotations

import gc

from asides.store import Message, TextBlock
from asides.strategies._tokens import MessageCosts


def message(n: int, content: tuple[TextBlock, ...] | None = None) -> Message:
    return Message(str(n), n, "user", content or (TextBlock(f"line {n}"),), {}, 0.0)


def test_estimates_are_memoised_by_message_and_content():
    calls: list[object] = []

    def estimate(content):
        calls.append(content)
        return 7

    costs = MessageCosts(estimate)
    first = message(1)
    assert costs(first) == costs(first) == 7 and len(calls) == 1
    assert costs(message(1, (TextBlock("edited"),))) == 7 and len(calls) == 2  # new content: priced again


def test_a_limit_keeps_the_estimates_and_the_content_they_hold_bounded():
    costs = MessageCosts(limit=100)
    for n in range(10_000):
        assert costs(message(n)) > 0
        assert len(costs) <= 100
    gc.collect()
    alive = sum(1 for o in gc.get_objects() if isinstance(o, TextBlock) and o.text.startswith("line "))
    assert alive <= 100
    recent = message(9_999)
    assert costs(recent) == costs(message(9_999))  # forgotten or not, the same price
