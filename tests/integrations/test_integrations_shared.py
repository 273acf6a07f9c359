"""``integrations/_shared.py``: the conversion the LangChain and Pydantic AI integrations share
(issue 24, item 4): which framework messages become one asides message, and with what audience."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given

from asides.integrations._shared import Said, batches, prepare
from asides.store._blocks import TextBlock, ToolResultBlock, ToolUseBlock


def call(n: int, *ids: str) -> Said:
    return Said(f"m{n}", "ann", tuple(ToolUseBlock(i, "lookup", {}) for i in ids))


def result(n: int, *ids: str) -> Said:
    return Said(f"m{n}", "ann", tuple(ToolResultBlock(i, "ok") for i in ids))


def line(n: int, who: str = "user") -> Said:
    return Said(f"m{n}", who, (TextBlock(f"line {n}"),))


def test_a_private_call_and_its_results_are_one_message_for_the_agent() -> None:
    said = [line(0), call(1, "a", "b"), result(2, "a"), result(3, "b"), line(4, "ann")]
    out = batches(said, reader="ann", private_tool_calls=True)
    assert [([s.id for s in group], audience) for group, audience in out] == [
        (["m0"], None),
        (["m1", "m2", "m3"], ("ann",)),
        (["m4"], None),
    ]
    prepared = prepare(out[1][0], key="k", reader="ann", audience=("ann",))
    assert all(b.audience == ("ann",) for b in prepared.content)
    assert prepared.metadata["k"]["ids"] == ["m1", "m2", "m3"] and len(prepared.metadata["k"]["parts"]) == 3


def test_public_results_of_one_call_are_one_message_right_after_it() -> None:
    said = [call(1, "a", "b"), result(2, "a"), result(3, "b"), result(4, "z")]
    out = batches(said, reader="ann", private_tool_calls=False)
    assert [([s.id for s in group], audience) for group, audience in out] == [(["m1"], None), (["m2", "m3"], None), (["m4"], None)]
    assert [type(b).__name__ for b in prepare(out[1][0], key="k", reader="ann", audience=None).content] == ["ToolResultBlock"] * 2


_said = st.lists(
    st.one_of(
        st.builds(lambda n: line(n), st.integers(0, 99)),
        st.builds(lambda n: line(n, "ann"), st.integers(0, 99)),
        st.builds(lambda n, i: call(n, f"c{i}"), st.integers(0, 99), st.integers(0, 3)),
        st.builds(lambda n, i: result(n, f"c{i}"), st.integers(0, 99), st.integers(0, 3)),
    ),
    max_size=12,
)


@given(_said, st.booleans())
def test_property_batches_keep_every_message_once_in_order(said: list[Said], private: bool) -> None:
    """Property: the batches hold every message once, in order; a batch with an audience is for
    the agent alone and holds only its own calls and results; no other batch has an audience."""
    out = batches(said, reader="ann", private_tool_calls=private)
    assert [s for group, _ in out for s in group] == said
    for group, audience in out:
        if audience is not None:
            assert private and audience == ("ann",)
            assert all(s.participant == "ann" and all(isinstance(b, (ToolUseBlock, ToolResultBlock)) for b in s.content) for s in group)
