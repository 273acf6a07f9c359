"""Names a caller passes: checked before anything is queued, so one caller's bad name never stops
the store for the others.

A namespace, branch, reader, participant, state key or metadata key must be a string, not empty,
valid Unicode (no lone surrogate), free of control characters and line separators, and at most
256 characters long (see docs/input.md). Every refusal raises ``InvalidNameError`` (also a
``MalformedContentError``, an ``InvalidArgumentError`` and a ``ValueError``) whose ``path`` names
the field; the store is exactly as it was (a full dump is compared), it has not stopped, and
other writers go on working; after a reopen nothing of the refused call is there. A name of the
wrong type is an ``ArgumentTypeError`` (also an ``InvalidNameError`` and a ``TypeError``; issue
21, item 7).

Sections:
  1. Helpers
  2. The runtime: open_manager, add_message, fork, derive, switch_branch, reopen_derived
  3. Metadata: keys at every depth, string values, nesting
  4. The store's own write methods
  5. What is allowed
  6. Property: a lone surrogate in any name field is refused, the store unchanged
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import (
    ArgumentTypeError,
    AsidesError,
    InvalidArgumentError,
    InvalidNameError,
    MalformedContentError,
    PassthroughStrategy,
    Runtime,
    open_runtime,
    text,
)
from asides.lowlevel import open_store
from tests.helpers import dump, sibling_store, writable_store

# -- 1. Helpers ---------------------------------------------------------------------------------

BAD_NAMES = [
    pytest.param("agents/\udc80", "lone surrogate", id="surrogate"),
    pytest.param("\ud800", "lone surrogate", id="only-a-surrogate"),
    pytest.param("a\x00b", "control character", id="nul"),
    pytest.param("two\nlines", "control character", id="newline"),
    pytest.param("tab\there", "control character", id="tab"),
    pytest.param("del\x7f", "control character", id="del"),
    pytest.param("c1\x85", "control character", id="c1-next-line"),
    pytest.param("line\u2028sep", "line or paragraph separator", id="u2028"),
    pytest.param("x" * 257, "at most 256 characters", id="too-long"),
]


def _assert_name_refusal(exc: BaseException, path: str, words: str | None = None) -> None:
    assert isinstance(exc, InvalidNameError), exc
    for kind in (MalformedContentError, InvalidArgumentError, AsidesError, ValueError):
        assert isinstance(exc, kind)
    assert exc.path == path, exc
    if words is not None:
        assert words in exc.problem, exc.problem
    str(exc).encode("utf-8")  # the message itself always prints: bad characters are escaped


async def refused_name(call: Awaitable[Any], path: str, words: str | None = None) -> InvalidNameError:
    with pytest.raises(InvalidNameError) as info:
        await call
    _assert_name_refusal(info.value, path, words)
    return info.value


@asynccontextmanager
async def unchanged(rt: Runtime) -> AsyncIterator[None]:
    """The block leaves the store exactly as it was, and the store still works."""
    before = dump(rt.store)
    yield
    assert dump(rt.store) == before
    assert not rt.store.failed


async def still_works(rt: Runtime, namespace: str = "agents/other") -> None:
    """Another writer writes and compiles after the refusals."""
    async with rt.manager(namespace, strategy=PassthroughStrategy()) as other:
        message = await other.add_message("user", [text("still here")])
        compiled = await other.compile(max_tokens=100_000, reserve_for_response=0)
        assert message.id in {m.id for m in other.get_all_messages()}
        assert compiled.messages


# -- 2. The runtime -----------------------------------------------------------------------------


@pytest.mark.parametrize(("bad", "words"), BAD_NAMES)
async def test_open_manager_refuses_a_bad_namespace_reader_or_branch(store_path, bad, words):
    """Issue 10 item 2: ``open_manager`` with a bad namespace (``"agents/\\udc80"`` used to reach the
    commit and stop the store), view_reader or branch is refused, naming the field; nothing is
    written, the store goes on, and a reopen shows nothing of it."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as ann:
            await ann.add_message("user", [text("hello")])
            async with unchanged(rt):
                await refused_name(rt.open_manager(bad, strategy=PassthroughStrategy(), view_reader="ann"), "namespace", words)
                await refused_name(rt.open_manager(bad, strategy=PassthroughStrategy()), "namespace", words)
                await refused_name(rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader=bad), "view_reader", words)
                await refused_name(rt.open_manager("agents/bob", strategy=PassthroughStrategy(), branch=bad), "branch", words)
            await still_works(rt)
            before = dump(rt.store)
    async with open_runtime(store_path) as rt:
        assert dump(rt.store) == before


@pytest.mark.parametrize(("bad", "words"), BAD_NAMES)
async def test_add_message_refuses_a_bad_participant(store_path, bad, words):
    """A participant with a lone surrogate is reported at ``participant``, not as content."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy()) as ann:
            await ann.add_message("user", [text("hello")])
            async with unchanged(rt):
                await refused_name(ann.add_message(bad, [text("x")]), "participant", words)
            await still_works(rt)


@pytest.mark.parametrize(("bad", "words"), BAD_NAMES)
async def test_fork_derive_and_switch_refuse_a_bad_branch_name(store_path, bad, words):
    """``fork``, ``derive``, ``switch_branch`` and ``reopen_derived`` check the branch name first;
    the manager stays where it was, with its strategy running."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as ann:
            await ann.add_message("user", [text("hello")])
            async with unchanged(rt):
                await refused_name(ann.fork(bad), "branch", words)
                await refused_name(ann.derive(branch=bad, strategy=PassthroughStrategy()), "branch", words)
                await refused_name(ann.switch_branch(bad), "branch", words)
                await refused_name(rt.reopen_derived(bad, strategy=PassthroughStrategy()), "branch", words)
            assert ann.branch == "main"
            await ann.add_message("user", [text("after")])
            await ann.fork("good")
            assert ann.branch == "good"
            await still_works(rt)


@pytest.mark.parametrize(
    ("call", "path"),
    [
        (lambda rt, m: rt.open_manager(5, strategy=PassthroughStrategy()), "namespace"),
        (lambda rt, m: rt.open_manager(m, strategy=PassthroughStrategy()), "namespace"),
        (lambda rt, m: rt.open_manager("ns", strategy=PassthroughStrategy(), view_reader=""), "view_reader"),
        (lambda rt, m: rt.open_manager("ns", strategy=PassthroughStrategy(), view_reader=7), "view_reader"),
        (lambda rt, m: rt.open_manager("ns", strategy=PassthroughStrategy(), branch=""), "branch"),
        (lambda rt, m: rt.open_manager("ns", strategy=PassthroughStrategy(), branch=None), "branch"),
        (lambda rt, m: m.add_message("", [text("x")]), "participant"),
        (lambda rt, m: m.add_message(None, [text("x")]), "participant"),
        (lambda rt, m: m.fork(""), "branch"),
        (lambda rt, m: m.fork(3), "branch"),
        (lambda rt, m: m.derive(branch="", strategy=PassthroughStrategy()), "branch"),
    ],
    ids=[
        "int-namespace",
        "manager-as-namespace",
        "empty-reader",
        "int-reader",
        "empty-branch",
        "none-branch",
        "empty-participant",
        "none-participant",
        "empty-fork",
        "int-fork",
        "empty-derive",
    ],
)
async def test_names_that_are_not_strings_or_are_empty(store_path, call, path):
    """A name that is not a string, or is empty, is refused the same way (a manager object passed
    as a namespace is told to pass its ``.namespace``)."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy()) as ann:
            async with unchanged(rt):
                await refused_name(call(rt, ann), path)


async def test_a_manager_passed_as_a_namespace_is_told_to_pass_its_name(store_path):
    """Issue 9: passing a manager where a namespace's name goes says what to pass instead."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy()) as ann:
            error = await refused_name(rt.open_manager(ann, strategy=PassthroughStrategy()), "namespace")
            assert "ContextManager" in error.problem and ".namespace" in error.problem


@pytest.mark.parametrize("where", ["participant", "namespace", "view_reader", "branch"])
async def test_a_name_of_the_wrong_type_is_an_argument_type_error(store_path, where):
    async with open_runtime(store_path) as rt:
        manager = await rt.open_manager("agents/ann", strategy=PassthroughStrategy())
        head = rt.store.head("main")
        calls = {
            "participant": lambda: manager.add_message(3, [text("x")]),  # type: ignore[arg-type]
            "namespace": lambda: rt.open_manager(3, strategy=PassthroughStrategy()),  # type: ignore[arg-type]
            "view_reader": lambda: rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader=3),  # type: ignore[arg-type]
            "branch": lambda: manager.fork(3),  # type: ignore[arg-type]
        }
        with pytest.raises(ArgumentTypeError) as refused:
            await calls[where]()
        assert isinstance(refused.value, InvalidNameError) and isinstance(refused.value, TypeError)
        assert refused.value.path == where
        assert rt.store.head("main") == head  # nothing written


# -- 3. Metadata --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metadata", "path", "error"),
    [
        ({"bad\udc80": 1}, "metadata['bad\\udc80']", InvalidNameError),
        ({"tags": {"\x00": 1}}, "metadata.tags['\\x00']", InvalidNameError),
        ({"rows": [{"ok": 1}, {"k\n": 2}]}, "metadata.rows[1]['k\\n']", InvalidNameError),
        ({"x" * 257: 1}, "metadata." + "x" * 257, InvalidNameError),
        ({1: "int key"}, "metadata[1]", InvalidNameError),
        ({"note": "caf\udce9"}, "metadata.note", MalformedContentError),
        ({"tags": ["fine", "bad \ud800"]}, "metadata.tags[1]", MalformedContentError),
    ],
    ids=["surrogate-key", "nul-key-nested", "newline-key-in-list", "long-key", "int-key", "surrogate-value", "surrogate-in-list"],
)
async def test_bad_metadata_is_reported_at_its_key(store_path, metadata, path, error):
    """Issue 10 item 2: a metadata key is a name (at every depth) and its string values must be
    valid Unicode; the error names the key, never ``content: text must be valid Unicode``."""
    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy()) as ann:
            async with unchanged(rt):
                with pytest.raises(error) as info:
                    await ann.add_message("user", [text("x")], metadata=metadata)
            assert info.value.path == path
            assert not info.value.path.startswith("content")
            await still_works(rt)


@pytest.mark.parametrize("depth", [65, 1_000, 50_000])
async def test_metadata_nested_too_deep_is_refused_at_its_path(store_path, depth):
    """Issue 10 item 4: metadata nested past 64 levels is refused with MalformedContentError at the
    first level past the limit, never RecursionError; 64 levels are fine."""

    def nested(levels: int) -> dict:
        value: dict = {}
        for _ in range(levels - 1):
            value = {"a": value}
        return value

    async with open_runtime(store_path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy()) as ann:
            async with unchanged(rt):
                with pytest.raises(MalformedContentError) as info:
                    await ann.add_message("user", [text("x")], metadata=nested(depth))
            assert info.value.path == "metadata" + ".a" * 64
            message = await ann.add_message("user", [text("x")], metadata=nested(64))
            assert dict(message.metadata) == nested(64)


# -- 4. The store's own write methods -----------------------------------------------------------


async def test_store_write_methods_check_names_before_anything_is_queued(store_path):
    """``append_messages``, ``append_message``, ``create_branch``, ``set_states`` and ``edit_message`` refuse what could
    not be stored before anything changes (a batch with one bad item writes none of its items);
    the store never stops, and a reopen shows exactly what was acknowledged."""
    async with open_store(store_path) as store:
        (first,) = await store.append_messages("main", [("user", (text("one"),), None)])
        before = dump(store)
        good = ("user", (text("fine"),), {"k": "v"})
        refusals: list[tuple[Callable[[], Awaitable[Any]], str, type[BaseException]]] = [
            (lambda: store.append_messages("main", [good, ("u\udc80", (text("x"),), None)]), "participant", InvalidNameError),
            (lambda: store.append_messages("main", [good, ("user", (text("x"),), {"\x00": 1})]), "metadata['\\x00']", InvalidNameError),
            (lambda: store.append_messages("main", [good, ("user", (text("x"),), {"v": "\udc80"})]), "metadata.v", MalformedContentError),
            (lambda: store.append_messages("main", [good, ("user", (text("x"),), None, float("nan"))]), "timestamp", InvalidArgumentError),
            (lambda: store.append_messages("main", [good, ("user", (text("x"),), None, 10**400)]), "timestamp", InvalidArgumentError),
            (lambda: store.append_message("main", "u\udc80", (text("x"),)), "participant", InvalidNameError),
            (lambda: store.append_message("main", "user", (text("x"),), {"\x00": 1}), "metadata['\\x00']", InvalidNameError),
            (lambda: store.append_message("main", "user", (text("x"),), {"v": "\udc80"}), "metadata.v", MalformedContentError),
            (lambda: store.create_branch("b\udc80", "main"), "branch", InvalidNameError),
            (lambda: store.create_branch("b\n", "main"), "branch", InvalidNameError),
            (lambda: store.create_branch("ok", "main", meta={"x": "\udc80"}), "meta.x", MalformedContentError),
            (lambda: store.set_states("main", {"ok": 1, "agents/\udc80/reader": "ann"}), "key", InvalidNameError),
            (lambda: store.set_states("main", {"ok": 1, "k": "v\udc80"}), "k", MalformedContentError),
            (lambda: store.set_states("main", {"ok": 1, "k": {"\udc80": 1}}), "k['\\udc80']", MalformedContentError),
            (lambda: store.edit_message("main", first.id, (text("new"),), states={"s\x00": 1}), "key", InvalidNameError),
        ]
        for call, path, error in refusals:
            with pytest.raises(error) as info:
                await call()
            assert info.value.path == path, info.value
            assert isinstance(info.value, ValueError) and isinstance(info.value, AsidesError)
            assert dump(store) == before
            assert not store.failed
        after = await store.append_messages("main", [good])
        await store.create_branch("other", "main")
        await store.set_states("main", {"k": "v"})
        acknowledged = dump(store)
    async with open_store(store_path) as store:
        assert dump(store) == acknowledged
        assert store.get_message("main", after[0].id) is not None


# -- 5. What is allowed -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["x" * 256, "agents/ann", "Zoë", "名前", "👩\u200d💻", "with space", "a\u200bb", "\ufeffbom", "emoji 🎭 mask"],
    ids=["256-chars", "slash", "accent", "cjk", "zwj-emoji", "space", "zero-width-space", "bom", "emoji"],
)
async def test_names_that_are_allowed(store_path, name):
    """Any one line of valid Unicode up to 256 characters is a name: as a namespace, reader,
    branch, participant and metadata key, it is stored and read back exactly after a reopen."""
    async with open_runtime(store_path) as rt:
        async with rt.manager(name, strategy=PassthroughStrategy(), view_reader=name) as m:
            message = await m.add_message(name, [text("x", [name])], metadata={name: name})
            await m.fork(name)
            assert m.branch == name
    async with open_runtime(store_path) as rt:
        async with rt.manager(name, strategy=PassthroughStrategy(), branch=name) as m:
            assert m.view_reader == name
            stored = m.get_message(message.id)
            assert stored.participant == name and dict(stored.metadata) == {name: name}
            compiled = await m.compile(max_tokens=100_000, reserve_for_response=0)
            assert compiled.messages[0].content == (text("x"),)


# -- 6. Property --------------------------------------------------------------------------------

surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
printable = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=8)
# otherwise a well-formed name: the lone surrogate is its only fault
with_a_surrogate = st.tuples(printable, surrogates, printable).map("".join)

FIELDS = {
    "namespace": lambda rt, m, bad: rt.open_manager(bad, strategy=PassthroughStrategy()),
    "view_reader": lambda rt, m, bad: rt.open_manager("agents/x", strategy=PassthroughStrategy(), view_reader=bad),
    "branch": lambda rt, m, bad: rt.open_manager("agents/x", strategy=PassthroughStrategy(), branch=bad),
    "participant": lambda rt, m, bad: m.add_message(bad, [text("x")]),
    "metadata key": lambda rt, m, bad: m.add_message("user", [text("x")], metadata={"outer": {bad: 1}}),
    "metadata value": lambda rt, m, bad: m.add_message("user", [text("x")], metadata={"outer": [bad]}),
    "fork": lambda rt, m, bad: m.fork(bad),
    "derive": lambda rt, m, bad: m.derive(branch=bad, strategy=PassthroughStrategy()),
    "switch_branch": lambda rt, m, bad: m.switch_branch(bad),
    "store participant": lambda rt, m, bad: writable_store(rt).append_messages(
        "main", [("user", (text("a"),), None), (bad, (text("b"),), None)]
    ),
    "store branch": lambda rt, m, bad: writable_store(rt).create_branch(bad, "main"),
    "store state key": lambda rt, m, bad: writable_store(rt).set_states("main", {"fine": 1, bad: 2}),
}


async def _surrogate_scenario(path: str, cases: list[tuple[str, str]]) -> None:
    async with open_runtime(path) as rt:
        async with rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as ann:
            await ann.add_message("user", [text("before", ["ann"])])
            for field, bad in cases:
                before = dump(rt.store)
                with pytest.raises(AsidesError) as info:
                    await FIELDS[field](rt, ann, bad)
                assert isinstance(info.value, (InvalidNameError, MalformedContentError)), info.value
                assert isinstance(info.value, ValueError)
                assert "valid Unicode" in str(info.value) or "lone surrogate" in str(info.value)
                assert not info.value.path.startswith("content")
                assert dump(rt.store) == before
                assert not rt.store.failed
                assert ann.branch == "main"
            await still_works(rt)
            acknowledged = dump(rt.store)
    async with open_runtime(path) as rt:
        assert dump(rt.store) == acknowledged


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(cases=st.lists(st.tuples(st.sampled_from(sorted(FIELDS)), with_a_surrogate), min_size=1, max_size=6))
def test_a_lone_surrogate_in_any_name_field_is_refused_and_the_store_unchanged(store_path, cases):
    """Property (issue 10 item 2): text holding a lone surrogate, in any field a name enters by,
    is refused with an AsidesError naming that field; the store is exactly as it was and still
    works for other writers; a reopen holds exactly what was acknowledged."""
    trio.run(_surrogate_scenario, sibling_store(store_path, f"e{next(_EXAMPLES)}"), cases)


_EXAMPLES = itertools.count()
