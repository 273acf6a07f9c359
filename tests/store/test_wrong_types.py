"""Issue 19 item 9: a value of the wrong type given to any public entry point raises an
``AsidesError`` naming the argument, never a bare ``TypeError``/``AttributeError``, and writes
nothing.

The entry points are SPEC section 3's: the block constructors, ``from_openai`` and
``from_anthropic``, the store's methods, the runtime's and the manager's. For each argument the
table says which types it takes; a Hypothesis sweep gives it values of every other type (the
other arguments keep good values) on a live runtime, and checks the error and that a full dump of
the store is unchanged. The reproductions of the issue are pinned as their own tests.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import pytest
import trio
from helpers import dump, writable_store
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asides
from asides import (
    ArgumentTypeError,
    AsidesError,
    AutobiographicalStrategy,
    Injection,
    MessageInjection,
    PassthroughStrategy,
    from_anthropic,
    from_openai,
    open_runtime,
    text,
)

# -- what each argument takes -------------------------------------------------------------------


def _str(value: object) -> bool:
    return isinstance(value, str)


def _opt_str(value: object) -> bool:
    return value is None or isinstance(value, str)


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _opt_int(value: object) -> bool:
    return value is None or _int(value)


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _opt_number(value: object) -> bool:
    return value is None or _number(value)


def _bool(value: object) -> bool:
    return isinstance(value, bool)


def _seq(value: object) -> bool:
    return isinstance(value, (list, tuple))


def _opt_seq(value: object) -> bool:
    return value is None or _seq(value)


def _mapping(value: object) -> bool:
    return isinstance(value, Mapping)


def _opt_mapping(value: object) -> bool:
    return value is None or _mapping(value)


def _content(value: object) -> bool:
    # a list of blocks; a list of anything else is refused item by item (content[i])
    return _seq(value)


def _result_content(value: object) -> bool:
    return isinstance(value, str) or _seq(value)


def _pattern(value: object) -> bool:
    return isinstance(value, (str, re.Pattern))


def _callable_or_none(value: object) -> bool:
    return value is None or callable(value)


def _block(value: object) -> bool:
    return isinstance(value, (*asides.store._blocks.ALL_BLOCK_TYPES, asides.lowlevel.UnreadableBlock))


def _strategy(value: object) -> bool:
    return False  # only a strategy object; the sweep never makes one


def _model(value: object) -> bool:
    return value is None


def _json(value: object) -> bool:
    # a state value: any JSON value (refused values are a MalformedContentError, an AsidesError)
    return True


#: Values of every kind, for the sweep to pick the wrong-typed ones from.
WRONG_VALUES = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            False,
            0,
            -3.6e16,
            math.nan,
            math.inf,
            "",
            "x",
            "\udc80",
            b"x",
            [],
            [1],
            ["x"],
            [None],
            (),
            {},
            {"a": 1},
            {1, 2},
            object(),
            print,
            1j,
            re.compile("x"),
            text("a block"),
        ]
    ),
    st.integers(),
    st.floats(),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=3)), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


# -- the entry points ---------------------------------------------------------------------------

Call = Callable[..., Any]


class Entry:
    """One entry point: how to call it with good arguments, and what each argument takes."""

    def __init__(self, name: str, call: Call, args: Sequence[tuple[str, Any, Callable[[object], bool]]]) -> None:
        self.name = name
        self.call = call
        self.args = list(args)

    def __repr__(self) -> str:
        return self.name


def _block_entries() -> list[Entry]:
    block = text("b")
    return [
        Entry("text", lambda s, audience: asides.text(s, audience), [("s", "x", _str), ("audience", None, _opt_seq)]),
        Entry(
            "thinking",
            lambda t, signature, audience: asides.thinking(t, signature, audience),
            [("thinking", "x", _str), ("signature", None, _opt_str), ("audience", None, _opt_seq)],
        ),
        Entry(
            "redacted_thinking",
            lambda data, audience: asides.redacted_thinking(data, audience),
            [("data", "x", _str), ("audience", None, _opt_seq)],
        ),
        Entry(
            "tool_use",
            lambda id_, name, input_: asides.tool_use(id_, name, input_),
            [("id", "t1", _str), ("name", "search", _str), ("input", {"q": 1}, _opt_mapping)],
        ),
        Entry(
            "tool_result",
            lambda id_, content, is_error: asides.tool_result(id_, content, is_error),
            [("tool_use_id", "t1", _str), ("content", "found", _result_content), ("is_error", False, _bool)],
        ),
        Entry(
            "image",
            lambda media_type, data: asides.image(media_type, data),
            [("media_type", "image/png", _str), ("data", "AA", _str)],
        ),
        Entry("system_change", lambda s: asides.system_change(s), [("s", "x", _str)]),
        Entry("TextBlock", lambda s, audience: asides.TextBlock(s, audience), [("text", "x", _str), ("audience", None, _opt_seq)]),
        Entry(
            "ToolResultBlock",
            lambda id_, content, is_error: asides.ToolResultBlock(id_, content, is_error),
            [("tool_use_id", "t1", _str), ("content", (block,), _result_content), ("is_error", False, _bool)],
        ),
        Entry(
            "from_openai",
            lambda messages, assistant, user: from_openai(messages, assistant=assistant, user=user),
            [("messages", [{"role": "user", "content": "hi"}], _seq), ("assistant", "assistant", _str), ("user", "user", _str)],
        ),
        Entry(
            "from_anthropic",
            lambda messages, assistant, user: from_anthropic(messages, assistant=assistant, user=user),
            [("messages", [{"role": "user", "content": "hi"}], _seq), ("assistant", "assistant", _str), ("user", "user", _str)],
        ),
        Entry("block_from_json", lambda obj: asides.lowlevel.block_from_json(obj), [("obj", {"type": "text", "text": "x"}, _mapping)]),
        Entry("content_from_json", lambda items: asides.lowlevel.content_from_json(items), [("items", [], _seq)]),
        Entry(
            "content_for_reader",
            lambda blocks, reader: asides.content_for_reader(blocks, reader),
            [("blocks", (block,), _seq), ("reader", "ann", _opt_str)],
        ),
        Entry("block_to_json", lambda b: asides.lowlevel.block_to_json(b), [("block", block, _block)]),
        Entry("content_to_json", lambda blocks: asides.lowlevel.content_to_json(blocks), [("blocks", (block,), _seq)]),
    ]


def _live_entries(rt: Any, ann: Any, summaries: Any, message_id: str) -> list[Entry]:
    store = writable_store(rt)
    strategy = PassthroughStrategy
    content = (text("new"),)
    return [
        # the store
        Entry(
            "store.append_message",
            lambda b, p, c, m: store.append_message(b, p, c, m),
            [("branch", "main", _str), ("participant", "user", _str), ("content", content, _content), ("metadata", None, _opt_mapping)],
        ),
        Entry(
            "store.append_messages",
            lambda b, items, timestamp: store.append_messages(b, items, timestamp=timestamp),
            [("branch", "main", _str), ("items", [("user", content, None)], _seq), ("timestamp", None, _opt_number)],
        ),
        Entry(
            "store.create_branch",
            lambda name, parent, at, meta: store.create_branch(name, parent, at, meta=meta),
            [("name", "new-branch", _str), ("parent", "main", _str), ("at_sequence", None, _opt_int), ("meta", None, _opt_mapping)],
        ),
        Entry(
            "store.edit_message",
            lambda b, mid, c, states, guard: store.edit_message(b, mid, c, states=states, guard=guard),
            [
                ("branch", "main", _str),
                ("message_id", message_id, _str),
                ("content", content, _content),
                ("states", None, _opt_mapping),
                ("guard", None, _callable_or_none),
            ],
        ),
        Entry(
            "store.set_state",
            lambda b, k, v, guard: store.set_state(b, k, v, guard=guard),
            [("branch", "main", _str), ("key", "k/x", _str), ("value", 1, _json), ("guard", None, _callable_or_none)],
        ),
        Entry(
            "store.set_states",
            lambda b, states, guard: store.set_states(b, states, guard=guard),
            [("branch", "main", _str), ("states", {"k/x": 1}, _mapping), ("guard", None, _callable_or_none)],
        ),
        Entry("store.get_state", lambda b, k: store.get_state(b, k), [("branch", "main", _str), ("key", "k/x", _str)]),
        Entry("store.get_message", lambda b, mid: store.get_message(b, mid), [("branch", "main", _str), ("message_id", message_id, _str)]),
        Entry(
            "store.messages",
            lambda b, start, stop: store.messages(b, start, stop),
            [("branch", "main", _str), ("start", 0, _int), ("stop", None, _opt_int)],
        ),
        Entry("store.state_items", lambda b, prefix: store.state_items(b, prefix), [("branch", "main", _str), ("prefix", "", _str)]),
        Entry("store.head", lambda b: store.head(b), [("branch", "main", _str)]),
        Entry("store.length", lambda b: store.length(b), [("branch", "main", _str)]),
        Entry("store.branch_info", lambda b: store.branch_info(b), [("name", "main", _str)]),
        Entry("store.has_branch", lambda b: store.has_branch(b), [("name", "main", _str)]),
        Entry("store.may_hold_audience", lambda b: store.may_hold_audience(b), [("branch", "main", _str)]),
        Entry("store.add_listener", lambda listener: store.add_listener(listener), [("listener", print, callable)]),
        Entry("store.restore_records", lambda rows: store.restore_records(rows), [("rows", [], _seq)]),
        # the runtime
        Entry(
            "Runtime.open_manager",
            lambda ns, strat, reader, view_filter, branch, model: rt.open_manager(
                ns, strategy=strat, view_reader=reader, view_filter=view_filter, branch=branch, model=model
            ),
            [
                ("namespace", "agents/sweep", _opt_str),
                ("strategy", strategy(), _strategy),
                ("view_reader", "ann", _opt_str),
                ("view_filter", None, _callable_or_none),
                ("branch", "main", _str),
                ("model", None, _model),
            ],
        ),
        Entry(
            "Runtime.reopen_derived",
            lambda branch, strat, reader: rt.reopen_derived(branch, strategy=strat, view_reader=reader),
            [("branch", "main", _str), ("strategy", strategy(), _strategy), ("view_reader", None, _opt_str)],
        ),
        # the manager
        Entry(
            "add_message",
            lambda p, c, m: ann.add_message(p, c, metadata=m),
            [("participant", "user", _str), ("content", content, _content), ("metadata", None, _opt_mapping)],
        ),
        Entry("edit_message", lambda mid, c: ann.edit_message(mid, c), [("message_id", message_id, _str), ("content", content, _content)]),
        Entry("get_message", lambda mid: ann.get_message(mid), [("message_id", message_id, _str)]),
        Entry("view_message", lambda mid: ann.view_message(mid), [("message_id", message_id, _str)]),
        Entry(
            "append_context_entry",
            lambda c, source: ann.append_context_entry(c, source_message_id=source),
            [("content", content, _content), ("source_message_id", None, _opt_str)],
        ),
        Entry(
            "compile",
            lambda mt, r, inj, minj: ann.compile(max_tokens=mt, reserve_for_response=r, injections=inj, message_injections=minj),
            [("max_tokens", 1000, _int), ("reserve_for_response", 0, _int), ("injections", (), _seq), ("message_injections", (), _seq)],
        ),
        Entry(
            "preview_context",
            lambda mt, r, inj, minj: ann.preview_context(max_tokens=mt, reserve_for_response=r, injections=inj, message_injections=minj),
            [("max_tokens", 1000, _int), ("reserve_for_response", 0, _int), ("injections", (), _seq), ("message_injections", (), _seq)],
        ),
        Entry("fork", lambda name: ann.fork(name), [("name", "forked", _str)]),
        Entry("switch_branch", lambda name: ann.switch_branch(name), [("name", "main", _str)]),
        Entry("set_strategy", lambda s: ann.set_strategy(s), [("strategy", strategy(), _strategy)]),
        Entry(
            "derive",
            lambda branch, strat, at: ann.derive(branch=branch, strategy=strat, at_sequence=at),
            [("branch", "derived", _str), ("strategy", strategy(), _strategy), ("at_sequence", None, _opt_int)],
        ),
        Entry(
            "search_summaries",
            lambda p, limit: summaries.search_summaries(p, limit=limit),
            [("pattern", "x", _pattern), ("limit", 5, _int)],
        ),
        Entry(
            "get_summaries_in_range",
            lambda start, end: summaries.get_summaries_in_range(start, end),
            [("start", None, _opt_int), ("end", None, _opt_int)],
        ),
        Entry("get_summary", lambda sid: summaries.get_summary(sid), [("summary_id", "L1-0", _str)]),
        Entry("reset_head_window", lambda t: summaries.reset_head_window(t), [("text", None, _opt_str)]),
        Entry(
            "Injection",
            lambda ns, position, c: Injection(ns, position, c),
            [("namespace", "agents/ann", _opt_str), ("position", "system", _str), ("content", content, _content)],
        ),
        Entry("MessageInjection", lambda p, c: MessageInjection(p, c), [("participant", "user", _str), ("content", content, _content)]),
    ]


async def _open_and_close_store(path: Any, synchronous: Any, read_only: Any) -> None:
    async with asides.lowlevel.open_store(path, synchronous=synchronous, read_only=read_only):
        pass


async def _open_and_close_runtime(path: Any, model: Any) -> None:
    async with open_runtime(path, model=model):
        pass


def _open_entries() -> list[Entry]:
    return [
        Entry(
            "open_store",
            _open_and_close_store,
            [("path", ":memory:", lambda v: isinstance(v, str)), ("synchronous", "NORMAL", _opt_str), ("read_only", False, _bool)],
        ),
        Entry("open_runtime", _open_and_close_runtime, [("path", ":memory:", _str), ("model", None, _model)]),
    ]


def _cases(entries: list[Entry]) -> st.SearchStrategy[tuple[Entry, int, Any]]:
    """An entry point, one of its arguments, and a value that argument does not take."""

    def for_entry(entry: Entry) -> st.SearchStrategy[tuple[Entry, int, Any]]:
        def for_arg(index: int) -> st.SearchStrategy[tuple[Entry, int, Any]]:
            takes = entry.args[index][2]
            return WRONG_VALUES.filter(lambda value: not takes(value)).map(lambda value: (entry, index, value))

        return st.integers(0, len(entry.args) - 1).flatmap(for_arg)

    return st.sampled_from(entries).flatmap(for_entry)


def _args(entry: Entry, index: int, value: Any) -> list[Any]:
    args = [good for _name, good, _takes in entry.args]
    args[index] = value
    return args


def _call_sync(entry: Entry, index: int, value: Any) -> BaseException | None:
    try:
        entry.call(*_args(entry, index, value))
    except Exception as exc:
        return exc
    return None


async def _call(entry: Entry, index: int, value: Any) -> BaseException | None:
    try:
        result = entry.call(*_args(entry, index, value))
        if isinstance(result, Awaitable):
            await result
    except Exception as exc:
        return exc
    return None


def _judge(entry: Entry, index: int, value: Any, error: BaseException | None) -> None:
    where = f"{entry.name}({entry.args[index][0]}={value!r})"
    assert error is not None, f"{where} was accepted"
    assert isinstance(error, AsidesError), f"{where} raised {type(error).__name__}: {error}"


def test_item9_every_block_constructor_and_provider_reader_refuses_wrong_types_with_an_asides_error():
    """The pure entry points: the block constructors, the wire-form codec and the provider forms."""
    entries = _block_entries()

    @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
    @given(case=_cases(entries))
    def sweep(case: tuple[Entry, int, Any]) -> None:
        entry, index, value = case
        _judge(entry, index, value, _call_sync(entry, index, value))

    sweep()


async def test_item9_every_store_runtime_and_manager_entry_point_refuses_wrong_types_and_writes_nothing(store_path):
    """The live entry points, on both backends: the store's methods, the runtime's and the
    manager's. Each wrong-typed call raises an ``AsidesError`` and leaves the store as it was."""
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        summaries = await rt.open_manager("agents/memory", strategy=AutobiographicalStrategy(), view_reader="ann")
        message = await ann.add_message("user", [text("hello")])
        await summaries.add_message("user", [text("hello")])
        entries = _live_entries(rt, ann, summaries, message.id) + _open_entries()
        token = trio.lowlevel.current_trio_token()

        @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
        @given(case=_cases(entries))
        def sweep(case: tuple[Entry, int, Any]) -> None:
            entry, index, value = case
            before = dump(rt.store)
            error = trio.from_thread.run(_call, entry, index, value, trio_token=token)
            _judge(entry, index, value, error)
            assert dump(rt.store) == before, f"{entry.name} wrote something"

        await trio.to_thread.run_sync(sweep)


# -- the issue's reproductions ------------------------------------------------------------------


async def test_item9_the_issues_five_reproductions(store_path):
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.add_message("user", [text("hello")])
        before = dump(rt.store)
        with pytest.raises(AsidesError) as raised:
            await writable_store(rt).set_state("main", [], 1)
        assert raised.value.path == "key"
        with pytest.raises(ArgumentTypeError):
            from_openai(None)
        with pytest.raises(ArgumentTypeError):
            from_anthropic(-3.6e16)
        with pytest.raises(AsidesError) as raised:
            await ann.edit_message({"a": 1}, [text("x")])
        assert raised.value.path == "message_id"
        with pytest.raises(AsidesError) as raised:
            await ann.append_context_entry([text("x")], source_message_id=[])
        assert raised.value.path == "source_message_id"
        assert dump(rt.store) == before
