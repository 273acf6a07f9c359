"""``get_all_messages()`` and ``view_messages()`` return a :class:`asides.MessagePages`: a sequence
that reads a page at a time, whose ``len()`` reads nothing, which stands for the branch as it was
when it was made, shows edits made since, and refuses a read once its positions moved.

Held against the manager's other reads on both backends, and against the bodies a file store
keeps decoded (a cache of a few messages, so nearly every read goes to the file)."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import (
    AsidesError,
    ContextManager,
    ManagerClosedError,
    MessagePages,
    PassthroughStrategy,
    Runtime,
    ViewChangedError,
    open_runtime,
    text,
)
from asides._deprecate import AsidesDeprecationWarning
from tests.helpers import writable_store
from tests.store.test_bodies_on_demand import write_long


@asynccontextmanager
async def _room(store_path: str, count: int = 30) -> AsyncIterator[tuple[Runtime, ContextManager, ContextManager]]:
    """A runtime, its host and ann, over ``count`` messages, every third for bob alone."""
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        for i in range(count):
            await host.add_message("user", [text(f"for bob {i}", ["bob"]) if i % 3 == 0 else text(f"m{i}")])
        yield rt, host, ann


async def test_pages_read_what_the_views_read_and_stand_for_the_branch_as_it_was(store_path):
    async with _room(store_path) as (rt, host, ann):
        seen, stored = ann.view_messages(), host.get_all_messages()
        assert isinstance(seen, MessagePages) and isinstance(stored, MessagePages)
        assert (len(seen), len(stored)) == (20, 30)
        assert [m.content[0].text for m in seen] == [f"m{i}" for i in range(30) if i % 3]
        assert all("bob" not in b.text for m in seen for b in m.content)
        assert [m.id for m in stored] == [host.get_message(m.id).id for m in stored]  # type: ignore[union-attr]
        assert seen[-1].content[0].text == "m29" and seen[0].content[0].text == "m1"
        assert seen[3:7] == tuple(seen)[3:7] and seen[::5] == tuple(seen)[::5] and seen[7:3] == ()
        assert list(reversed(seen)) == list(seen)[::-1]
        assert seen[4] in seen and seen.index(seen[4]) == 4 and seen.count(seen[4]) == 1
        with pytest.raises(IndexError):
            seen[20]
        with pytest.raises(TypeError):
            seen["0"]  # type: ignore[call-overload]

        await host.add_message("user", [text("later")])
        assert len(seen) == 20 and seen[-1].content[0].text == "m29", "a message written since is not in it"
        assert len(ann.view_messages()) == 21

        edited = await host.edit_message(seen[0].id, [text("m1, edited")])
        assert seen[0] == edited and stored[1] == edited, "an edit made since shows"


async def test_a_read_after_its_positions_moved_raises_and_never_answers_for_another_message(store_path):
    async with _room(store_path) as (rt, host, ann):
        seen, stored = ann.view_messages(), host.get_all_messages()
        first = stored[0]
        # An edit that shows ann a message she did not see moves her positions after it, not the log's.
        await host.edit_message(first.id, [text("now for everyone")])
        with pytest.raises(ViewChangedError, match="view_messages"):
            seen[0]
        assert stored[0].content[0].text == "now for everyone"
        assert len(ann.view_messages()) == 21

        seen, stored = ann.view_messages(), host.get_all_messages()
        erased = seen[2]
        await rt.erase([erased.id], reason="asked")
        for pages, name in ((seen, "view_messages"), (stored, "get_all_messages")):
            with pytest.raises(ViewChangedError, match=name) as raised:
                list(pages)
            assert isinstance(raised.value, AsidesError) and raised.value.source == name
        assert erased.id not in {m.id for m in ann.view_messages()} | {m.id for m in host.get_all_messages()}
        assert len(host.get_all_messages()) == 29 and len(ann.view_messages()) == 20


async def test_a_read_through_a_closed_manager_is_refused(store_path):
    async with _room(store_path, count=3) as (rt, host, ann):
        seen, stored = ann.view_messages(), ann.get_all_messages()
        await ann.aclose()
        with pytest.raises(ManagerClosedError):
            seen[0]
        with pytest.raises(ManagerClosedError):
            stored[0]


async def test_tuple_uses_keep_working_and_warn(store_path):
    async with _room(store_path, count=4) as (rt, host, ann):
        seen = ann.view_messages()
        as_tuple = tuple(seen)
        with pytest.warns(AsidesDeprecationWarning, match=r"comparing view_messages\(\) with a tuple"):
            assert seen == as_tuple
        with pytest.warns(AsidesDeprecationWarning, match=r"view_messages\(\) \+"):
            assert seen + () == as_tuple
        with pytest.warns(AsidesDeprecationWarning):
            assert () + seen == as_tuple
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert seen == ann.view_messages() and seen != host.get_all_messages() and seen != [1]
            (first, *_rest) = seen  # unpacking is iteration
            assert first == as_tuple[0]
        with pytest.raises(TypeError):
            hash(seen)


async def test_len_reads_nothing_and_a_walk_keeps_only_the_cache_decoded(tmp_path):
    path = str(tmp_path / "long.db")
    await write_long(path, 3000)  # every 100th message holds a line for ann
    async with open_runtime(path, message_cache=40) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        store = writable_store(rt)
        stored, seen = host.get_all_messages(), bob.view_messages()
        assert store.statistics().messages_read == 0, "bob's view read no message (the 30 naming a reader say who sees them)"
        assert (len(stored), len(seen)) == (3000, 3000)
        assert store.statistics().messages_read == 0, "len() read no message"
        texts = [m.content[0].text for m in seen]
        assert texts == [f"m{i}" for i in range(3000)]
        assert all(len(m.content) == 1 for m in seen), "ann's lines are not bob's"
        assert store.statistics().messages_in_memory <= 40, "a walk keeps the cache, not the history"
        assert [m.id for m in stored[1234:1240]] == [m.id for m in seen[1234:1240]]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    marks=st.lists(st.sampled_from(["ann", "bob", None]), min_size=0, max_size=60),
    erase=st.sets(st.integers(0, 59), max_size=5),
    reads=st.lists(st.tuples(st.integers(-70, 70), st.integers(-70, 70), st.sampled_from([1, 2, 3, -1])), max_size=8),
)
def test_every_slice_of_the_pages_is_that_slice_of_the_whole(tmp_path_factory, marks, erase, reads):
    path = str(tmp_path_factory.mktemp("pages") / "s.db")

    async def main() -> None:
        async with open_runtime(path, message_cache=3) as rt:
            host = await rt.open_manager("host", strategy=PassthroughStrategy())
            ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
            ids = []
            for i, mark in enumerate(marks):
                message = await host.add_message("user", [text(f"m{i}", None if mark is None else [mark])])
                ids.append(message.id)
            gone = [ids[i] for i in erase if i < len(ids)]
            if gone:
                await rt.erase(gone, reason="test")
            for pages, expected in (
                (ann.view_messages(), [f"m{i}" for i, mark in enumerate(marks) if mark in (None, "ann") and ids[i] not in gone]),
                (host.get_all_messages(), [f"m{i}" for i in range(len(marks)) if ids[i] not in gone]),
            ):
                whole = [m.content[0].text for m in pages]
                assert whole == expected and len(pages) == len(expected)
                for start, stop, step in reads:
                    assert [m.content[0].text for m in pages[start:stop:step]] == whole[start:stop:step]
                    if -len(whole) <= start < len(whole):
                        assert pages[start].content[0].text == whole[start]

    trio.run(main)
