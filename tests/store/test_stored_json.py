"""The two ways stored JSON text is read agree: a value read whole (a state record's) is refused
exactly when the marking read finds an object that gives a key twice, at any depth."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asides.store._stored_json import GivesAKeyTwice, holds_duplicate, read_stored_json, read_whole_json

KEYS = st.sampled_from(["a", "b", "c", "é", ""])
SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3)


def objects(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """JSON object text that may give a key twice."""
    pairs = st.lists(st.tuples(KEYS, children), max_size=4)
    return pairs.map(lambda items: "{" + ", ".join(f"{json.dumps(k)}: {v}" for k, v in items) + "}")


TEXTS = st.recursive(
    SCALARS.map(json.dumps),
    lambda inner: objects(inner) | st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
    max_leaves=12,
)


@given(TEXTS)
def test_a_whole_read_refuses_what_the_marking_read_marks(text: str) -> None:
    marked = read_stored_json(text)
    if holds_duplicate(marked):
        with pytest.raises(GivesAKeyTwice):
            read_whole_json(text)
    else:
        assert read_whole_json(text) == marked


def test_a_whole_read_refuses_text_that_is_not_json_or_nests_too_deep() -> None:
    for text in ("not json", "{", '{"a": 1} {}', "[" * 100_000 + "]" * 100_000):
        with pytest.raises(ValueError):
            read_whole_json(text)
    assert not isinstance(ValueError("x"), GivesAKeyTwice)
