"""Erasure (issue 23): a line taken back is gone from every compile, summary, context entry, read,
record and file, on both backends, and the summaries come back without it after a drain."""

from __future__ import annotations

import json
from typing import Any

import pytest
from erasure_checks import data_dir, files_holding, hold_a_snapshot

from asides.actors import open_runtime
from asides.store import AsidesError, TextBlock, text
from asides.store._erasure import MessageErasedError, UnknownMessagesError
from asides.strategies import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy

SECRET = "zebra-passport-4471"
BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}
NS = "agents/a"


def tok(content: Any) -> int:
    return sum(len(b.text) for b in content if isinstance(b, TextBlock)) or 10


def auto() -> AutobiographicalStrategy:
    return AutobiographicalStrategy(target_chunk_tokens=120, head_window_tokens=0, recent_window_tokens=0, holdback_chunks=0, estimator=tok)


def lines(n: int, secret_at: int) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        body = f"line {i} about the garden and the weather, item {i * 7}"
        if i == secret_at:
            body = f"my passport number is {SECRET}, keep it"
        out.append(("user" if i % 2 == 0 else "assistant", body))
    return out


async def everything(rt: Any, m: Any) -> str:
    """Every read a host can make of the store, as one string."""
    compiled = await m.compile(**BIG)
    parts = [
        json.dumps(compiled.to_openai("assistant")),
        json.dumps(compiled.to_anthropic("assistant")),
        repr(m.get_all_messages()),
        repr(m.view_messages()),
        repr(m.get_summaries_in_range()),
        repr(m.search_summaries(".")),
        repr(m.get_context_entries()),
        repr(rt.store.state_items("main")),
        repr(await rt.store.records()),
    ]
    return "\n".join(parts)


async def summarised(store_path: str) -> tuple[str, list[str]]:
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        m = await rt.open_manager(NS, strategy=auto())
        ids = [(await m.add_message(p, [text(b)])).id for p, b in lines(12, 3)]
        await m.append_context_entry([text(f"note: {SECRET}")], source_message_id=ids[3])
        await m.preview_context(**BIG)
        await m.drain()
        assert any(SECRET in s.text for s in m.get_summaries_in_range()), "the line was summarised"
    return ids[3], ids


async def test_erase_summarised_line(store_path: str, request: pytest.FixtureRequest) -> None:
    secret_id, ids = await summarised(store_path)
    folder = data_dir(store_path, request)
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        m = await rt.open_manager(NS, strategy=auto())
        before = await m.compile(**BIG)
        assert SECRET in json.dumps(before.to_openai("assistant"))
        assert files_holding(SECRET, store_path, folder), "the check finds the line before the erasure"
        erasure = await rt.erase([secret_id], reason="the user asked")
        assert erasure.message_ids == (secret_id,)
        assert erasure.summaries_invalidated >= 1
        assert erasure.reason == "the user asked"
        assert rt.erasures() == (erasure,)
        assert SECRET not in await everything(rt, m)
        assert files_holding(SECRET, store_path, folder) == [], "erased bytes left in a store file"
        stone = rt.tombstone(secret_id)
        assert stone is not None and stone.reason == "the user asked"
        stored = m.get_message(secret_id)
        assert stored is not None and stored.content == () and stored.metadata["asides_erased"]["reason"] == "the user asked"
        # the lines the summary covered show (raw, or in a summary a drain wrote again), the line does not
        shown = [i for e in (await m.compile(**BIG)).provenance.entries for i in e.message_ids]
        assert ids[2] in shown and secret_id not in shown
        await m.drain()
        again = m.get_summaries_in_range()
        assert again and all(secret_id not in s.message_ids for s in again)
        assert any(ids[2] in s.message_ids for s in again), "summaries are back without the line"
        assert SECRET not in await everything(rt, m)
        # erasing again does nothing
        nothing = await rt.erase([secret_id], reason="again")
        assert nothing.message_ids == () and len(rt.erasures()) == 1
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        m = await rt.open_manager(NS, strategy=auto())
        assert SECRET not in await everything(rt, m)
        assert rt.erasures()[0].message_ids == (secret_id,)
        assert rt.tombstone(secret_id) is not None
        assert files_holding(SECRET, store_path, folder) == []
    async with open_runtime(store_path, read_only=True) as rt:
        assert [e.message_ids for e in rt.erasures()] == [(secret_id,)]


async def test_unknown_ids_erase_nothing(store_path: str) -> None:
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(strategy=PassthroughStrategy())
        kept = await m.add_message("user", [text(SECRET)])
        with pytest.raises(UnknownMessagesError) as raised:
            await rt.erase([kept.id, "999", "nope"], reason="x")
        assert isinstance(raised.value, AsidesError)
        assert raised.value.message_ids == ("999", "nope")
        assert rt.erasures() == ()
        assert SECRET in repr(tuple(m.get_all_messages()))
        with pytest.raises(AsidesError):
            await rt.erase([kept.id], reason="  ")


async def test_erasure_across_a_fork_and_an_edit(store_path: str, request: pytest.FixtureRequest) -> None:
    folder = data_dir(store_path, request)
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(NS, strategy=PassthroughStrategy())
        first = await m.add_message("user", [text("hello")])
        secret = await m.add_message("user", [text(f"old {SECRET}")])
        await m.edit_message(secret.id, [text(f"new {SECRET}-edited")])
        await m.fork("side")
        await m.edit_message(secret.id, [text(f"side {SECRET}-side")])
        await m.add_message("assistant", [text("after")])
        await m.switch_branch("main")
        erasure = await rt.erase([secret.id], reason="forget")
        assert erasure.message_ids == (secret.id,)
        for branch in ("main", "side"):
            await m.switch_branch(branch)
            assert SECRET not in await everything(rt, m)
            assert [x.id for x in m.get_all_messages()][0] == first.id
            with pytest.raises(MessageErasedError):
                await m.edit_message(secret.id, [text("back")])
        assert files_holding(SECRET, store_path, folder) == []
        # sequences stay valid: new messages take the next sequence
        after = await m.add_message("user", [text("later")])
        assert after.sequence > secret.sequence


async def test_erase_participant(store_path: str, request: pytest.FixtureRequest) -> None:
    folder = data_dir(store_path, request)
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager(strategy=PassthroughStrategy())
        await m.add_message("ann", [text(f"ann says {SECRET}")])
        bob = await m.add_message("bob", [text("bob says hi")])
        await m.add_message("ann", [text(f"ann again {SECRET}")])
        erasure = await rt.erase_participant("ann", reason="account deleted")
        assert len(erasure.message_ids) == 2
        assert [x.id for x in m.get_all_messages()] == [bob.id]
        assert SECRET not in await everything(rt, m)
        assert files_holding(SECRET, store_path, folder) == []
        assert (await rt.erase_participant("ann", reason="again")).message_ids == ()


async def test_erasure_reaches_openai_agents_session_items(store_path: str, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("agents")
    from asides.integrations.openai_agents import AsidesSession

    folder = data_dir(store_path, request)
    async with open_runtime(store_path) as rt:
        session = await AsidesSession.bound_to(rt, "conv-1")
        await session.add_items(
            [{"role": "user", "content": f"my pin is {SECRET}"}, {"role": "user", "content": "and the weather is fine"}]
        )
        assert SECRET in repr(await session.get_items())
        branch = next(b.name for b in rt.list_branches() if b.name.startswith("openai-agents/"))
        (secret,) = [x for x in rt.store.messages(branch) if SECRET in repr(x.content)]
        await rt.erase([secret.id], reason="asked")
        items = await session.get_items()
        assert SECRET not in repr(items) and "weather" in repr(items)
        assert files_holding(SECRET, store_path, folder) == []
    async with open_runtime(store_path) as rt:
        session = await AsidesSession.bound_to(rt, "conv-1")
        items = await session.get_items()
        assert SECRET not in repr(items) and "weather" in repr(items)


async def test_a_summarised_line_erased_across_a_fork_after_an_edit(store_path: str, request: pytest.FixtureRequest) -> None:
    """The summarised case on two branches: the line was edited, the branch forked, each branch's
    manager summarised it; one erasure takes it from both, and each drain writes its summaries
    again without it."""
    folder = data_dir(store_path, request)
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        writer = await rt.open_manager("host", strategy=PassthroughStrategy())
        ids = [(await writer.add_message(p, [text(b)])).id for p, b in lines(12, 3)]
        await writer.edit_message(ids[3], [text(f"edited: my passport number is {SECRET}-v2, keep it")])
        await writer.fork("side")
        await writer.add_message("user", [text("only on the side branch, a long enough line to chunk")])
        managers = [await rt.open_manager(NS, strategy=auto(), branch=b) for b in ("main", "side")]
        for m in managers:
            await m.preview_context(**BIG)
            await m.drain()
            assert any(SECRET in s.text for s in m.get_summaries_in_range())
        erasure = await rt.erase([ids[3]], reason="asked")
        assert erasure.summaries_invalidated >= 2
        for m in managers:
            assert SECRET not in await everything(rt, m)
            await m.drain()
            again = m.get_summaries_in_range()
            assert again and all(ids[3] not in s.message_ids for s in again)
            assert any(ids[2] in s.message_ids for s in again)
        assert files_holding(SECRET, store_path, folder) == []


def _end_once_erased(holder: Any, store_url: str) -> None:
    """End ``holder``'s transaction once an erasure record of the store at ``store_url`` is committed."""
    import time

    import psycopg

    with psycopg.connect(store_url, autocommit=True) as watcher:
        deadline = time.monotonic() + 30
        while not watcher.execute("SELECT count(*) FROM asides_log WHERE kind = 'erasure'").fetchone()[0]:
            assert time.monotonic() < deadline, "no erasure was committed"
            time.sleep(0.01)
    holder.rollback()


@pytest.mark.timeout(60)
async def test_an_erasure_waits_for_an_older_transaction_of_the_database_and_leaves_no_copy(pg_url, pg_cluster, request):
    """PostgreSQL keeps the row versions an older transaction may see, whichever schema it reads:
    the erasure waits for it to end before it rewrites the log."""
    import trio

    folder = data_dir(pg_url, request)
    holder = hold_a_snapshot(pg_cluster.url)
    try:
        async with open_runtime(pg_url) as rt:
            m = await rt.open_manager(strategy=PassthroughStrategy())
            secret = await m.add_message("user", [text(f"my passport is {SECRET}")])
            await m.add_message("user", [text("and the weather is fine")])
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.to_thread.run_sync, _end_once_erased, holder, pg_url)
                await rt.erase([secret.id], reason="asked")
            assert files_holding(SECRET, pg_url, folder) == []
    finally:
        holder.close()


@pytest.mark.timeout(60)
async def test_an_erasure_outlived_by_an_older_transaction_says_so(pg_url, pg_cluster, caplog, monkeypatch):
    """A transaction that outlives the erasure's wait is reported (its server process named), never silent."""
    from asides.store import _pg_vacuum

    monkeypatch.setattr(_pg_vacuum, "ERASURE_WAIT_SECONDS", 0.0)
    holder = hold_a_snapshot(pg_cluster.url)
    try:
        pid = holder.info.backend_pid
        async with open_runtime(pg_url) as rt:
            m = await rt.open_manager(strategy=PassthroughStrategy())
            secret = await m.add_message("user", [text(f"my passport is {SECRET}")])
            with caplog.at_level("WARNING", logger="asides.store"):
                erasure = await rt.erase([secret.id], reason="asked")
            assert erasure.message_ids == (secret.id,)
            assert SECRET not in await everything(rt, m)
        warnings = [r.getMessage() for r in caplog.records if "older than the erasure" in r.getMessage()]
        assert warnings and str(pid) in warnings[0]
    finally:
        holder.close()


async def test_every_erasure_keeps_a_receipt_with_no_text(store_path):
    """``erase`` returns, and ``erasures()`` keeps across a reopen, a receipt of what the erasure
    removed: the messages, their edited versions, the context-log copies and summaries made from
    them, the index entries, and what the store rewrote; none of their text."""
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        line = await m.add_message("user", [text(SECRET)])
        await m.edit_message(line.id, [text(SECRET + " again")])
        await m.append_context_entry([text(SECRET + " copied")], source_message_id=line.id)
        other = await m.add_message("user", [text("kept")])
        receipt = await rt.erase([line.id], reason="asked")
        assert (receipt.message_ids, receipt.versions_erased, receipt.context_copies) == ((line.id,), 1, 1)
        assert receipt.index_entries == 2 and receipt.records_invalidated >= 1
        assert receipt.rewrites and all(isinstance(r, str) and r for r in receipt.rewrites)
        assert SECRET not in repr(receipt)
        assert rt.erasures() == (receipt,)
        assert other.id not in receipt.message_ids
    async with open_runtime(store_path) as rt:
        assert rt.erasures() == (receipt,), "the receipt is kept with the erasure, as it was returned"
