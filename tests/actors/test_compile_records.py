"""Compile records: every compile (never a preview) records its numbers (tokens by part against
its budget, and how much of it leads unchanged from the same manager's previous compile), with no
text; ``Runtime.compile_records`` reads them back from the store, on both backends."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asides import AsidesError, CompileParts, CompileRecord, Injection, MessageInjection, open_runtime, text
from asides.store import TextBlock
from asides.strategies import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy

BIG = {"max_tokens": 1_000_000, "reserve_for_response": 1_000}


def tok(content: Any) -> int:
    return sum(len(b.text) for b in content if isinstance(b, TextBlock)) or 10


def compile_rows(records: list[Any]) -> list[Any]:
    return [r for r in records if r[3] == "compile"]


async def test_each_compile_records_its_numbers_and_a_preview_none(store_path: str) -> None:
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(estimator=tok), view_reader="ann")
        await m.add_message("user", [text("hello there"), text("SECRET-FOR-BOB", audience=["bob"])])
        first = await m.compile(**BIG)
        await m.preview_context(**BIG)
        await m.add_message("ann", [text("hi")])
        second = await m.compile(**BIG)
        records = await rt.compile_records()
        assert [r.tokens for r in records] == [first.token_estimate, second.token_estimate]
        one, two = records
        assert (one.namespace, one.reader, one.branch) == ("agents/ann", "ann", "main")
        assert (one.max_tokens, one.reserve_for_response) == (BIG["max_tokens"], BIG["reserve_for_response"])
        assert one.budget == BIG["max_tokens"] - BIG["reserve_for_response"]
        assert (one.messages, two.messages) == (1, 2)
        assert one.parts == CompileParts(raw=len("hello there")) and one.parts.total == one.tokens
        assert one.cached == 0, "a manager's first compile has nothing before it"
        assert two.cached == len("hello there"), "the second compile starts with the first one's message"
        assert one.record_id < two.record_id and one.head < two.head
        rows = compile_rows(await rt.store.records())
        assert len(rows) == 2, "the preview wrote none"
        assert all("hello" not in r[5] and "SECRET" not in r[5] for r in rows), "numbers only, no text"
    async with open_runtime(store_path, read_only=True) as rt:
        assert [r.to_json() for r in await rt.compile_records()] == [r.to_json() for r in records]


async def test_the_parts_of_a_compile_with_a_head_memories_and_injections(store_path: str) -> None:
    strategy = AutobiographicalStrategy(
        target_chunk_tokens=80, head_window_tokens=60, recent_window_tokens=80, holdback_chunks=0, estimator=tok
    )
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        m = await rt.open_manager("ns", strategy=strategy, view_reader="ann")
        for i in range(30):
            await m.add_message("user" if i % 2 else "assistant", [text(f"line {i} of the talk, with some words in it")])
        await m.drain()
        compiled = await m.compile(
            **BIG,
            injections=[
                Injection(namespace="host", content=(text("house rules"),), position="system"),
                Injection(namespace="host", content=(text("note"),), position="after_user"),
            ],
            message_injections=[MessageInjection(participant="user", content=(text("tool says hi"),))],
        )
        (record,) = await rt.compile_records(namespace="ns")
        kinds = [e.kind for e in compiled.provenance.entries]
        assert "summary" in kinds and kinds[0] == "raw", "the head, then memories"
        parts = record.parts
        assert parts.total == record.tokens == compiled.token_estimate
        assert parts.injections == len("house rules") + len("note") + len("tool says hi")
        assert parts.head > 0 and parts.raw > 0 and parts.memories and all(level >= 1 for level in parts.memories)
        levels = {m.get_summary(e.summary_id).level for e in compiled.provenance.entries if e.kind == "summary"}
        assert set(parts.memories) == levels


async def test_what_a_prompt_cache_could_serve_follows_the_leading_messages(store_path: str) -> None:
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("ns", strategy=PassthroughStrategy(estimator=tok))
        for word in ("alpha", "beta"):
            await m.add_message("user", [text(word)])
        rules = [Injection(namespace="host", content=(text("rules"),), position="system")]
        await m.compile(**BIG, injections=rules)
        await m.add_message("assistant", [text("gamma")])
        await m.compile(**BIG, injections=rules)
        await m.compile(**BIG, injections=[Injection(namespace="host", content=(text("other rules"),), position="system")])
        message = (await m.add_message("user", [text("delta")])).id
        await m.compile(**BIG, injections=[Injection(namespace="host", content=(text("other rules"),), position="system")])
        await m.edit_message(m.get_all_messages()[0].id, [text("ALPHA")])
        await m.compile(**BIG, injections=[Injection(namespace="host", content=(text("other rules"),), position="system")])
        cached = [r.cached for r in await rt.compile_records()]
        assert cached == [
            0,
            len("rules") + len("alpha") + len("beta"),  # the system content and the two messages sent before
            0,  # other system content: nothing leads unchanged
            len("other rules") + len("alpha") + len("beta") + len("gamma"),
            len("other rules"),  # the first message changed
        ]
        assert message


async def test_filters_limit_and_order(store_path: str) -> None:
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        await ann.add_message("user", [text("hello")])
        for _ in range(3):
            await ann.compile()
            await bob.compile()
        await ann.fork("alt")
        await ann.compile()
        assert [r.namespace for r in await rt.compile_records(namespace="agents/bob")] == ["agents/bob"] * 3
        assert [r.branch for r in await rt.compile_records(namespace="agents/ann")] == ["main"] * 3 + ["alt"]
        assert len(await rt.compile_records(namespace="agents/ann", branch="main")) == 3
        newest = await rt.compile_records(limit=2)
        assert [r.namespace for r in newest] == ["agents/bob", "agents/ann"] and newest[0].record_id < newest[1].record_id
        assert await rt.compile_records(namespace="nobody") == ()
        before = await rt.store.records()
        for bad in ({"limit": 0}, {"limit": "3"}, {"namespace": 3}, {"branch": ""}):
            with pytest.raises(AsidesError) as refused:
                await rt.compile_records(**bad)
            assert next(iter(bad)) in str(refused.value)
        assert await rt.store.records() == before, "a refusal writes nothing"


async def test_no_record_when_disclosures_are_not_recorded(store_path: str) -> None:
    async with open_runtime(store_path, record_disclosures=False) as rt:
        m = await rt.open_manager(strategy=PassthroughStrategy())
        await m.add_message("user", [text("hello")])
        await m.compile()
        assert await rt.compile_records() == ()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    turns=st.lists(
        st.tuples(st.sampled_from(["user", "assistant"]), st.text("abcde ", min_size=1, max_size=12), st.booleans(), st.booleans()),
        min_size=1,
        max_size=8,
    )
)
async def test_property_parts_add_up_and_the_cache_never_exceeds_the_request(tmp_path_factory: Any, turns: Any) -> None:
    path = str(tmp_path_factory.mktemp("compiles") / "store.db")
    async with open_runtime(path) as rt:
        m = await rt.open_manager("ns", strategy=PassthroughStrategy(estimator=tok), view_reader="ann")
        sent = []
        for participant, words, system, injected in turns:
            await m.add_message(participant, [text(words), text("for bob", audience=["bob"])])
            injections = [Injection(namespace="host", content=(text("sys"),), position="system")] if system else []
            extra = [MessageInjection(participant="user", content=(text("inj"),))] if injected else []
            sent.append(await m.compile(**BIG, injections=injections, message_injections=extra))
        records: tuple[CompileRecord, ...] = await rt.compile_records()
        assert [r.tokens for r in records] == [c.token_estimate for c in sent]
        for record in records:
            assert record.parts.total == record.tokens
            assert 0 <= record.cached <= record.tokens


async def test_a_compile_record_that_cannot_be_read_is_logged_and_left_out(store_path: str, caplog: pytest.LogCaptureFixture) -> None:
    from asides.lowlevel import open_store

    async with open_runtime(":memory:") as rt:  # the records to restore, one of them damaged
        m = await rt.open_manager("ns", strategy=PassthroughStrategy())
        await m.add_message("user", [text("hello")])
        await m.compile()
        await m.compile()
        rows = [list(r) for r in await rt.store.records()]
    damaged = next(r for r in rows if r[3] == "compile")
    damaged[5] = '{"r": null, "b": "main"}'  # no numbers
    async with open_store(store_path) as store:
        await store.restore_records([tuple(r) for r in rows])
    async with open_runtime(store_path, read_only=True) as rt:
        with caplog.at_level("WARNING", logger="asides.store"):
            found = await rt.compile_records()
    assert [r.record_id for r in found] == [r[0] for r in rows if r[3] == "compile" and r is not damaged]
    assert f"record {damaged[0]} is a compile record that cannot be read" in caplog.text
