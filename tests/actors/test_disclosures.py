"""Disclosures (issue 23): every compile, preview and compression request records which messages
it showed and to whom; only what is new is recorded; the record outlives an erasure."""

from __future__ import annotations

import json
from typing import Any

import pytest

from asides.actors import open_runtime
from asides.store import TextBlock, text
from asides.strategies import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy

BIG = {"max_tokens": 10_000_000, "reserve_for_response": 0}


def tok(content: Any) -> int:
    return sum(len(b.text) for b in content if isinstance(b, TextBlock)) or 10


def disclosure_rows(records: list[Any]) -> list[Any]:
    return [r for r in records if r[3] == "disclosure"]


async def test_compile_and_preview_record_what_they_showed(store_path: str) -> None:
    async with open_runtime(store_path) as rt:
        m = await rt.open_manager("ns", strategy=PassthroughStrategy(), view_reader="ann")
        first = await m.add_message("user", [text("hello")])
        hidden = await m.add_message("user", [text("for bob only", audience=["bob"])])
        await m.compile(**BIG)
        (seen,) = rt.disclosures(first.id)
        assert (seen.message_id, seen.reader, seen.namespace, seen.branch, seen.via) == (first.id, "ann", "ns", "main", "compile")
        assert rt.disclosures(hidden.id) == (), "a message the reader does not see is not disclosed"
        await m.compile(**BIG)
        assert len(rt.disclosures(first.id)) == 1, "shown again to the same reader the same way: nothing new"
        await m.preview_context(**BIG)
        assert [d.via for d in rt.disclosures(first.id)] == ["compile", "preview"]
        rows_before = len(disclosure_rows(await rt.store.records()))
        second = await m.add_message("assistant", [text("hi")])
        await m.compile(**BIG)
        rows = disclosure_rows(await rt.store.records())
        assert len(rows) == rows_before + 1, "a compile after one new message writes one record"
        assert json.loads(rows[-1][5])["ids"] == [int(second.id), 1], "naming the one new message"
        assert [d.message_id for d in rt.disclosures_to("ann") if d.via == "compile"] == [first.id, second.id]
        # disclosures outlive an erasure, and hold no content
        await rt.erase([first.id], reason="asked")
        assert [d.via for d in rt.disclosures(first.id)] == ["compile", "preview"]
        assert all("hello" not in r[5] for r in rows)
    async with open_runtime(store_path, read_only=True) as rt:
        assert [d.via for d in rt.disclosures(first.id)] == ["compile", "preview"]
        assert [e.message_ids for e in rt.erasures()] == [(first.id,)]


async def test_compression_requests_and_summaries_count(store_path: str) -> None:
    strategy = AutobiographicalStrategy(
        target_chunk_tokens=80, head_window_tokens=0, recent_window_tokens=0, holdback_chunks=0, estimator=tok
    )
    async with open_runtime(store_path, model=ExtractiveModel()) as rt:
        m = await rt.open_manager("ns", strategy=strategy)
        ids = [(await m.add_message("user" if i % 2 else "assistant", [text(f"line {i} of the talk here")])).id for i in range(10)]
        await m.preview_context(**BIG)
        await m.drain()
        compiled = await m.compile(**BIG)
        assert any(e.kind == "summary" for e in compiled.provenance.entries)
        for message_id in ids:
            vias = {d.via for d in rt.disclosures(message_id)}
            assert "compile" in vias, f"{message_id} shown through a summary or raw counts"
            assert "compression" in vias or message_id not in {i for s in m.get_summaries_in_range() for i in s.message_ids}
            assert all(d.reader is None for d in rt.disclosures(message_id))


async def test_recording_can_be_turned_off(store_path: str) -> None:
    async with open_runtime(store_path, record_disclosures=False) as rt:
        m = await rt.open_manager(strategy=PassthroughStrategy())
        message = await m.add_message("user", [text("hello")])
        await m.compile(**BIG)
        assert rt.disclosures(message.id) == ()
        assert disclosure_rows(await rt.store.records()) == []
    with pytest.raises(TypeError):
        async with open_runtime(store_path, record_disclosures="yes"):  # type: ignore[arg-type]
            pass


@pytest.mark.slow
async def test_the_disclosure_benchmark_runs_on_a_tiny_history() -> None:
    """benchmarks/disclosures.py on 200 messages: one record for the first compile, then one
    record per compile after one new message (it counts work; no time is asserted)."""
    import os
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks import disclosures

    result = await disclosures.measure(200, 4, 1.0)
    assert len(result["first"]) == 1
    assert len(result["later"]) == result["stats"]["recording"].count
