"""Who sees something of a message, as its body records it (store/_seers.py), agrees with the
reader view for every reader: a view that places a message by its summary leaves out exactly the
messages the reader view would, and the summary read back from a body is the one written."""

from __future__ import annotations

import json

import hypothesis.strategies as st
from hypothesis import given

from asides import text
from asides.lowlevel import reader_view
from asides.store._messages import Message
from asides.store._records import decode_message, encode_message
from asides.store._seers import read_seers, seers_of

NAMES = st.sampled_from(["ann", "bob", "cy", "dee"])
AUDIENCE = st.one_of(st.none(), st.lists(NAMES, min_size=1, max_size=3, unique=True))
CONTENT = st.lists(st.tuples(st.text(max_size=8), AUDIENCE), min_size=1, max_size=5)
READERS = st.one_of(st.none(), NAMES, st.just("eve"))


@given(content=CONTENT, reader=READERS)
def test_a_summary_says_exactly_whom_the_reader_view_shows_nothing(content, reader):
    blocks = tuple(text(body, audience) for body, audience in content)
    seers = seers_of(blocks)
    if all(audience is None for _body, audience in content):
        assert seers is None  # no audience: nothing to place
        return
    assert seers is not None
    shown, _dropped = reader_view(Message("1", 1, "user", blocks), reader)
    assert seers.sees_nothing(reader) == (shown is None)


@given(content=CONTENT)
def test_a_body_records_the_summary_it_is_read_back_as(content):
    blocks = tuple(text(body, audience) for body, audience in content)
    body = encode_message("user", blocks, None, 1.0)[4]
    recorded = json.loads(body).get("seers")
    assert read_seers(None if recorded is None else json.dumps(recorded)) == seers_of(blocks)
    assert decode_message(1, 1, body).content == blocks  # the summary changes nothing read


def test_a_summary_that_cannot_be_read_is_none():
    for bad in ("", "[", "[true]", '[1, ["a"]]', '[true, "a"]', '[true, [1]]', "{}", None, 5):
        assert read_seers(bad) is None
