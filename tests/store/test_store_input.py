"""Issue 19 (items 3, 5, 10, 11, 12) and issue 20's two store bugs: stored data read one way,
fail-closed, on both backends; namespace record keys that no strategy key can spell; restores
both backends take alike; one listener rule; one fork-point check."""

from __future__ import annotations

import json
import logging

import pytest
import trio
from helpers import Raw, message_body, seed_records, writable_store
from hypothesis import given, settings
from hypothesis import strategies as st

from asides import InvalidArgumentError, PassthroughStrategy, open_runtime, text
from asides.actors._records import NAMESPACE_KEYS, own_record, strategy_state_key
from asides.lowlevel import open_store
from asides.store import MalformedContentError
from tests.actors.test_narrowing import StateWriter
from tests.cli.test_cli import run

BIG = {"max_tokens": 100_000, "reserve_for_response": 0}


def _texts(compiled) -> str:
    return json.dumps([repr(m) for m in compiled.messages]) + json.dumps(compiled.to_anthropic("assistant"), default=str)


# -- item 3: a block that gives a key twice is read fail-closed ---------------------------------

DUPLICATED_BLOCK = '{"type":"text","text":"BOB-ONLY: the vault is open","audience":["bob"],"audience":null}'


def _duplicated_body() -> str:
    return '{"participant":"user","content":[' + DUPLICATED_BLOCK + ',{"type":"text","text":"for everyone"}],"metadata":{},"timestamp":0.0}'


async def _assert_bob_only_hidden(path: str) -> None:
    async with open_runtime(path) as rt:
        async with (
            rt.manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann") as ann,
            rt.manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob") as bob,
            rt.manager("host", strategy=PassthroughStrategy()) as host,
        ):
            for manager in (ann, bob, host):
                compiled = await manager.compile(**BIG)
                shown = _texts(compiled)
                assert "BOB-ONLY" not in shown, (manager.namespace, shown)
                assert "for everyone" in shown
                assert "BOB-ONLY" not in json.dumps(list(compiled.provenance.raw_bodies.values()), default=str)


async def test_item3_a_stored_block_giving_audience_twice_reaches_no_reader(store_path, caplog):
    """Issue 19 item 3: ``{"audience": ["bob"], "audience": null}`` is not a block for everyone
    (``json.loads`` keeps the last key): it is hidden from ann, bob and a no-reader manager, and
    reported."""
    caplog.set_level(logging.WARNING)
    (record_id,) = seed_records(store_path, [("main", "message", None, Raw(_duplicated_body()))])
    await _assert_bob_only_hidden(store_path)
    assert any(f"record {record_id} " in r.getMessage() and "twice" in r.getMessage() for r in caplog.records)


async def test_item3_duplicates_in_an_edit_a_tool_result_or_the_message_itself_fail_closed(store_path):
    nested = (
        '{"participant":"user","content":[{"type":"tool_result","tool_use_id":"t","content":'
        '[{"type":"text","text":"BOB-ONLY nested","audience":["bob"],"audience":null}]},'
        '{"type":"text","text":"for everyone"}],"metadata":{},"timestamp":0.0}'
    )
    outer = '{"participant":"user","content":[{"type":"text","text":"BOB-ONLY outer","audience":["bob"]}],"content":[],"metadata":{}}'
    ids = seed_records(
        store_path,
        [
            ("main", "message", None, Raw(nested)),
            ("main", "message", None, Raw(outer)),
            ("main", "message", None, message_body("user", [{"type": "text", "text": "to be edited"}])),
        ],
    )
    edit = '{"content":[' + DUPLICATED_BLOCK + ',{"type":"text","text":"for everyone"}]}'
    seed_records(store_path, [("main", "edit", ids[2], Raw(edit))])
    await _assert_bob_only_hidden(store_path)


async def test_item3_a_state_record_giving_a_key_twice_reads_unreadable(store_path):
    seed_records(store_path, [("main", "state", "agents/ann/context/0", Raw('{"content":[],"content":[{"type":"text","text":"x"}]}'))])
    async with open_store(store_path) as store:
        from asides.store._model import UNREADABLE

        assert store.get_state("main", "agents/ann/context/0") is UNREADABLE


def test_item3_through_restore_and_compile_cli(store_path, capsys, tmp_path):
    """The same body through ``asides restore`` (a raw-body dump line), then ``asides compile
    --reader ann`` and a no-reader compile: neither shows it."""
    header = '{"asides":"dump","format":1}'
    line = json.dumps({"kind": "message", "id": "1", "branch": "main", "sequence": 1, "ref": None, "body": _duplicated_body()})
    source = tmp_path / "dup.jsonl"
    source.write_text(header + "\n" + line + "\n", encoding="utf-8")
    code, _out, err = run(capsys, "restore", store_path, str(source))
    assert code == 0, err
    for extra in (["--reader", "ann"], ["--reader", "bob"], []):
        code, out, err = run(capsys, "compile", store_path, "--namespace", "x", "--strategy", "passthrough", *extra)
        assert code == 0, err
        assert "BOB-ONLY" not in out and "for everyone" in out
    trio.run(_assert_bob_only_hidden, store_path)


# -- item 5: a strategy key never spells another namespace's own record -------------------------


async def test_item5_namespace_agents_context_cannot_write_context_entry_5_of_agents(store_path):
    """Issue 19 item 5: a strategy of namespace ``agents/context`` writing its key ``5`` would
    write ``agents/context/5``, entry 5 of namespace ``agents``'s context log. It is refused
    (``InvalidArgumentError``, a ``ValueError``), and ann reads no entry."""
    entry = {"content": [{"type": "text", "text": "INJECTED into agents' context log"}], "source_message_id": None}
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents", strategy=PassthroughStrategy(), view_reader="ann")
        writer = await rt.open_manager("agents/context", strategy=StateWriter("5", entry))
        head = rt.store.head("main")
        with pytest.raises(InvalidArgumentError, match="spells 'context/5' of namespace 'agents'"):
            await writer.tick()
        assert rt.store.head("main") == head
        assert ann.get_context_entries() == ()
        assert (await ann.append_context_entry([text("ann's own note")])).index == 0
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents", strategy=PassthroughStrategy(), view_reader="ann")
        assert [e.content for e in ann.get_context_entries()] == [(text("ann's own note"),)]


_SEGMENTS = st.sampled_from(["a", "agents", "context", "5", "0", "07", "²", "", *NAMESPACE_KEYS])
_PATHS = st.lists(_SEGMENTS, min_size=1, max_size=5).map("/".join).filter(bool)


def _spells_own_record(full: str) -> bool:
    """Whether some cut of ``full`` is (a namespace, one of its own records), told without
    ``actors._records``: the tails are the four names and ``context/<str(n)>``."""
    for cut in range(len(full)):
        if full[cut] != "/" or cut == 0:
            continue
        tail = full[cut + 1 :]
        if tail in NAMESPACE_KEYS:
            return True
        head, _, number = tail.partition("/")
        if head == "context" and number and number.isascii() and number.isdigit() and str(int(number)) == number:
            return True
    return False


@settings(max_examples=400, deadline=None)
@given(namespace=_PATHS, key=_PATHS)
def test_item5_no_cut_of_an_accepted_key_is_a_namespaces_own_record(namespace, key):
    """Whichever way a full key is cut into a namespace and a tail, an accepted strategy key is
    never (namespace, own record); a refused one always is, for some cut."""
    full = f"{namespace}/{key}"
    try:
        assert strategy_state_key(namespace, key) == full
    except InvalidArgumentError:
        assert _spells_own_record(full)
        assert own_record(full) is not None
    else:
        assert not _spells_own_record(full)


@settings(max_examples=200, deadline=None)
@given(record=st.tuples(_PATHS, st.sampled_from([*NAMESPACE_KEYS, "context/0", "context/5", "context/12"])))
def test_item5_every_own_record_is_refused_under_every_cut(record):
    namespace, tail = record
    full = f"{namespace}/{tail}"
    assert own_record(full) is not None
    for cut in range(1, len(full)):
        if full[cut] == "/":
            with pytest.raises(InvalidArgumentError):
                strategy_state_key(full[:cut], full[cut + 1 :])


# -- item 10: a context key ending in a Unicode digit is no entry, read fail-closed -------------


async def test_item10_context_keys_with_unicode_digits_are_no_entries(store_path, capsys, caplog):
    """Issue 19 item 10: ``agents/context/²`` (restored, or written by a strategy) made
    ``get_context_entries()`` and ``append_context_entry()`` raise ``ValueError`` (``int('²')``).
    Only ASCII decimal indexes are entries; the rest is skipped and reported."""
    caplog.set_level(logging.WARNING)
    entry = {"content": [{"type": "text", "text": "ODD"}], "source_message_id": None}
    good = {"content": [{"type": "text", "text": "entry three"}], "source_message_id": None}
    seed_records(
        store_path,
        [
            ("main", "state", "agents/context/²", entry),
            ("main", "state", "agents/context/٣", entry),
            ("main", "state", "agents/context/07", entry),
            ("main", "state", "agents/context/3", good),
        ],
    )
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents", strategy=PassthroughStrategy(), view_reader="ann")
        assert [(e.index, e.content) for e in ann.get_context_entries()] == [(3, (text("entry three"),))]
        assert (await ann.append_context_entry([text("four")])).index == 4
        # a strategy may write such a key: it is its own state, no one's context entry
        other = await rt.open_manager("agents/x", strategy=StateWriter("context/²", entry))
        await other.tick()
        writer = await rt.open_manager("agents", strategy=StateWriter("context/¹", entry), view_reader="ann")
        await writer.tick()
        assert [e.index for e in ann.get_context_entries()] == [3, 4]
        assert (await ann.append_context_entry([text("five")])).index == 5
    assert any("agents/context/²" in r.getMessage() for r in caplog.records)
    await trio.to_thread.run_sync(lambda: _inspect_ok(capsys, store_path))


def _inspect_ok(capsys, path: str) -> None:
    code, _out, err = run(capsys, "inspect", path, "--json")
    assert code == 0, err


# -- item 12: a bad reader name in an audience is an InvalidNameError at its exact path ---------


@pytest.mark.parametrize("name", ["bad\nname", "", "\udc80", "x" * 300, 7])
async def test_item12_a_bad_reader_name_in_an_audience_raises_invalid_name_error_at_its_path(store_path, name):
    """Issue 19 item 12: docs/input.md documents ``InvalidNameError`` for every bad name, each
    reader an audience lists included; the path of a block in a message is
    ``content[1].audience``. The constructors, which know no position, say ``audience``."""
    from asides import image
    from asides.store import InvalidNameError, MalformedContentError, block_from_json

    with pytest.raises(InvalidNameError) as raised:
        text("x", [name])
    assert raised.value.path == "audience"
    with pytest.raises(InvalidNameError) as raised:
        block_from_json({"type": "text", "text": "x", "audience": ["ann", name]})
    assert raised.value.path == "block.audience"
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        kept = await ann.add_message("user", [text("kept")])
        head = rt.store.head("main")
        bad = {"type": "text", "text": "BOB", "audience": [name]}
        with pytest.raises(InvalidNameError) as raised:
            await ann.add_message("user", [image("image/png", data="AA"), bad])
        assert raised.value.path == "content[1].audience"
        with pytest.raises(InvalidNameError) as raised:
            await ann.edit_message(kept.id, [text("a"), bad])
        assert raised.value.path == "content[1].audience"
        # an audience that is not a list of names at all stays a MalformedContentError
        for odd in ([], "ann", {"ann": 1}):
            with pytest.raises(MalformedContentError) as refused:
                await ann.add_message("user", [text("a"), {"type": "text", "text": "b", "audience": odd}])
            assert not isinstance(refused.value, InvalidNameError) and refused.value.path == "content[1].audience"
        assert rt.store.head("main") == head


# -- item 11: a NUL in a restored record is refused in one line, on both backends ---------------


@pytest.mark.parametrize(
    "record, field",
    [
        ({"kind": "message", "id": "2", "branch": "main", "sequence": 2, "ref": None, "body": '{"participant":"u\x00"}'}, "body"),
        ({"kind": "state", "id": "2", "branch": "main", "sequence": 2, "key": "agents/a\x00b", "value": 1}, "ref"),
        ({"kind": "branch", "id": "2", "branch": "b\x00", "sequence": 1, "parent": "main", "meta": {}}, "branch"),
    ],
)
def test_item11_restore_refuses_a_nul_naming_the_record_and_writes_nothing(store_path, capsys, tmp_path, record, field):
    """Issue 19 item 11: a NUL in a raw body, a key or a branch name restored into SQLite but
    printed ``psycopg.DataError`` on PostgreSQL. Both refuse it now, in one line naming the
    record and the column, before anything is written: both backends take the same dumps."""
    from tests.cli.test_cli import one_error_line

    first = {"kind": "message", "id": "1", "branch": "main", "sequence": 1, "participant": "user", "content": [], "metadata": {}}
    lines = ['{"asides":"dump","format":1}', json.dumps(first), json.dumps(record)]
    source = tmp_path / "nul.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, _out, err = run(capsys, "restore", store_path, str(source))
    line = one_error_line(err)
    assert code != 0 and f"record 2: {field}" in line and "NUL" in line, err
    trio.run(_assert_empty, store_path)


async def _assert_empty(path: str) -> None:
    async with open_store(path) as store:
        assert await store.records() == []


# -- issue 20: one listener rule, one fork-point check ------------------------------------------


async def test_issue20_a_raising_listener_never_splits_a_write_from_the_disk(store_path, caplog):
    """Issue 20: on SQLite a listener that raised left the write in memory and not on disk (a
    reopen showed it gone); PostgreSQL logged it. One rule now, for both: the write stands,
    durable when the call returns, the exception is logged, and the listeners after it hear the
    event too."""
    caplog.set_level(logging.ERROR)
    heard = []

    def failing(event) -> None:
        raise RuntimeError("listener bug")

    async with open_store(store_path) as store:
        store.add_listener(failing)
        store.add_listener(heard.append)
        message = await store.append_message("main", "user", (text("kept"),))
        await store.edit_message("main", message.id, (text("edited"),), states={"k/one": 1})
        await store.set_state("main", "k/two", 2)
        await store.create_branch("alt", "main")
        before = (store.head("main"), [m.content for m in store.messages("main")], store.state_items("main"), store.has_branch("alt"))
    assert len(heard) == 5
    assert sum("listener bug" in (r.exc_text or "") or "a store listener failed" in r.getMessage() for r in caplog.records) == 5
    async with open_store(store_path) as store:
        after = (store.head("main"), [m.content for m in store.messages("main")], store.state_items("main"), store.has_branch("alt"))
    assert after == before == (4, [(text("edited"),)], {"k/one": 1, "k/two": 2}, True)


@pytest.mark.parametrize("at", [True, False, 1.0, "1", [1]])
async def test_issue20_a_fork_point_is_an_int_not_a_bool_on_every_path(store_path, at):
    """Issue 20: ``store.create_branch("b", "main", True)`` made ``fork_sequence=True`` on
    SQLite; PostgreSQL and ``derive`` refused it. One check now (``store._model_parts.fork_point``):
    ``ArgumentTypeError`` on both stores and in ``derive``, nothing written."""
    from asides import ArgumentTypeError

    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.add_message("user", [text("one")])
        head = rt.store.head("main")
        with pytest.raises(ArgumentTypeError) as raised:
            await writable_store(rt).create_branch("b", "main", at)
        assert raised.value.path == "at_sequence"
        with pytest.raises(ArgumentTypeError):
            await ann.derive(branch="d", strategy=PassthroughStrategy(), at_sequence=at)
        with pytest.raises(InvalidArgumentError, match="between 0 and"):
            await writable_store(rt).create_branch("b", "main", head + 1)
        assert [b.name for b in rt.store.branches()] == ["main"] and rt.store.head("main") == head
        info = await writable_store(rt).create_branch("b", "main", 1)
        assert info.fork_sequence == 1 and type(info.fork_sequence) is int


def test_item3_a_stored_session_item_giving_a_key_twice_is_no_item():
    """The OpenAI Agents session keeps each item's JSON in the message's metadata: stored JSON,
    read the one way (``store._stored_json``). An item that gives a key twice is no item (the
    session rebuilds it from the reader's view of the content, as for a host's own message)."""
    from types import MappingProxyType

    from asides.integrations.openai_agents._items import METADATA_KEY, session_record
    from asides.store import Message

    def stored(item_json: str):
        metadata = MappingProxyType({METADATA_KEY: {"item": item_json, "reader": None}})
        return Message("1", 1, "user", (text("x"),), metadata, 0.0)

    assert session_record(stored('{"role":"user","content":"x"}')) is not None
    assert session_record(stored('{"role":"user","content":"BOB-ONLY","content":"x"}')) is None
    assert session_record(stored('{"role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}')) is None
    assert session_record(stored("not json")) is None


async def test_item5_a_strategy_lists_no_namespaces_own_record(store_path):
    """``ctx.state.items()`` of namespace ``agents`` never lists a nested namespace's own records
    (``agents/ann``'s reader record and context log), just as ``get`` refuses to read them."""
    listed = {}

    class Lister(StateWriter):
        async def tick(self, ctx) -> bool:
            await super().tick(ctx)
            listed.update(ctx.state.items())
            return True

    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        await ann.append_context_entry([text("ANN-CONTEXT")])
        host = await rt.open_manager("agents", strategy=Lister("own/x", 1))
        await host.tick()
    assert listed == {"own/x": 1}, listed


@pytest.mark.parametrize("reader", ["from_openai", "from_anthropic"])
def test_an_audience_in_provider_input_is_refused_not_dropped(reader):
    """A provider's messages carry no audience; one given in a part or block was silently
    dropped, so ``BOB-ONLY`` would have been added for every reader. It is refused at its path."""
    import asides

    convert = getattr(asides, reader)
    part = {"type": "text", "text": "BOB-ONLY", "audience": ["bob"]}
    with pytest.raises(MalformedContentError) as raised:
        convert([{"role": "user", "content": [{"type": "text", "text": "a"}, part]}])
    assert raised.value.path == "messages[0].content[1].audience"
    with pytest.raises(MalformedContentError) as raised:
        convert([{"role": "user", "content": "hi", "audience": ["bob"]}])
    assert raised.value.path == "messages[0].audience"
    assert convert([{"role": "user", "content": [{"type": "text", "text": "a"}]}])
