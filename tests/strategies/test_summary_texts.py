"""A compressing strategy loaded from a store holds the texts of its frontier alone (the memories
no memory merged, which a compile shows, and the ones they merged, which a merge of them shows),
and reads any other text from the store when asked for: what its reads answer is what the
manager that wrote the memories answered."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from asides import text
from asides.actors import open_runtime
from asides.strategies import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy
from asides.strategies._autobiographical.records import Memory

NS = "agents/ann"
TEXT = "I remember this stretch going as planned. " * 50  # about 2,100 characters


def strategy() -> AutobiographicalStrategy:
    return AutobiographicalStrategy(target_chunk_tokens=100, head_window_tokens=60, recent_window_tokens=200, merge_threshold=3)


async def test_a_reopened_manager_answers_every_memory_read_as_the_writer_did(store_path: str) -> None:
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0)) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        for i in range(500):
            await host.add_message("user", [text(f"message {i:04d} " + "x" * 40)])
        m = await rt.open_manager(NS, strategy=strategy())
        await m.drain()
        written = m.get_summaries_in_range()
        compiled = await m.compile(max_tokens=100_000)
        found = m.search_summaries("message")
    assert len({s.level for s in written}) >= 3, "memories merged, and merged again"
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0), message_cache=16) as rt:
        m = await rt.open_manager(NS, strategy=strategy())
        assert (await m.compile(max_tokens=100_000)).messages == compiled.messages
        assert m.get_summaries_in_range() == written, "every memory, its text read back"
        assert all(m.get_summary(s.id) == s for s in written)
        assert m.search_summaries("message") == found


def build(chunks: int, merge: int = 3) -> dict[str, Any]:
    """The records of ``chunks`` chunks of 10 messages, a level-1 memory each, and merges of
    ``merge`` at every level (as the strategy writes them)."""
    out: dict[str, Any] = {}
    level: list[tuple[str, int, int]] = []
    n = 0
    for c in range(chunks):
        first = 1 + 10 * c
        runs = {"message_runs": [[first, 10]], "first_sequence": first, "last_sequence": first + 9}
        out[f"autobiographical/chunk/{first}"] = {"id": str(first), **runs}
        n += 1
        out[f"autobiographical/summary/L1-{n}"] = {"id": f"L1-{n}", "level": 1, "text": f"{n} {TEXT}", "chunk": str(first), **runs}
        level.append((f"L1-{n}", first, first + 9))
    depth = 1
    while len(level) >= merge:
        merged = []
        for g in range(0, len(level) - len(level) % merge, merge):
            group = level[g : g + merge]
            n += 1
            sid, first, last = f"L{depth + 1}-{n}", group[0][1], group[-1][2]
            runs = {"message_runs": [[first, last - first + 1]], "first_sequence": first, "last_sequence": last}
            out[f"autobiographical/summary/{sid}"] = {
                "id": sid, "level": depth + 1, "text": f"{n} {TEXT}", "children": [s for s, _, _ in group], **runs
            }
            merged.append((sid, first, last))
        level = merged
        depth += 1
    return out


class Texts:
    """A store's summary records, read as the strategy reads them, counting what it asks for."""

    def __init__(self, records: Mapping[str, Any]) -> None:
        self.records = records
        self.asked: list[str] = []

    def __call__(self, summary_ids: Sequence[str]) -> dict[str, str]:
        self.asked.extend(summary_ids)
        return {sid: self.records[f"autobiographical/summary/{sid}"]["text"] for sid in summary_ids}


def read_back(records: Mapping[str, Any]) -> Callable[[Sequence[str]], dict[str, Any]]:
    """Reads values as a store does: each decoded anew from its JSON text."""
    stored = {key: json.dumps(value) for key, value in records.items()}
    return lambda keys: {k: json.loads(stored[k]) for k in keys}


def loaded(records: dict[str, Any]) -> tuple[Memory, Texts]:
    memory = Memory("autobiographical")
    texts = memory.text_reader = Texts(records)
    memory.load_from(records, read_back(records))
    return memory, texts


def test_a_load_reads_the_frontiers_texts_and_any_other_when_asked_for() -> None:
    records = build(90)  # 90 memories, 30 merges of them, 10 above, 3, 1
    memory, texts = loaded(records)
    roots = {r.id for r in memory.roots()}
    frontier = roots | {c for r in memory.roots() for c in r.children}
    assert sorted(texts.asked) == sorted(frontier), "the frontier's texts, read once"
    assert len(frontier) < 10
    deep = "L1-1"
    assert deep not in frontier
    texts.asked.clear()
    summary = memory.public(deep)
    assert summary is not None and summary.text == records["autobiographical/summary/L1-1"]["text"]
    assert texts.asked == [deep]
    texts.asked.clear()
    root = next(iter(roots))
    assert memory.public(root) is not None and texts.asked == [], "a root's text is held"
    in_order = memory.read_summaries([deep, root, "L9-999"])
    assert list(in_order) == [deep, root], "an id with no summary is left out"


def test_a_merge_written_after_the_load_lets_its_grandchildren_texts_go() -> None:
    records = build(6)  # L1-1 to L1-6, merged into L2-7 and L2-8: every text of the frontier
    memory, texts = loaded(records)
    assert {r.id for r in memory.roots()} == {"L2-7", "L2-8"}
    assert sorted(texts.asked) == ["L1-1", "L1-2", "L1-3", "L1-4", "L1-5", "L1-6", "L2-7", "L2-8"]
    merge = {"id": "L3-9", "level": 3, "text": "9 " + TEXT, "children": ["L2-7", "L2-8"]}
    merge.update(message_runs=[[1, 60]], first_sequence=1, last_sequence=60)
    records["autobiographical/summary/L3-9"] = merge
    memory.apply("autobiographical/summary/L3-9", merge)  # as a manager takes in a merge written
    texts.asked.clear()
    for sid in ("L3-9", "L2-7", "L2-8"):
        assert memory.public(sid) is not None
    assert texts.asked == [], "the new root's text and its children's are held"
    assert memory.public("L1-4") == memory.read_summaries(["L1-4"])["L1-4"]
    assert texts.asked == ["L1-4", "L1-4"], "a memory two levels down is read when asked for"


def test_what_a_loaded_memory_holds_follows_its_frontier_not_its_texts() -> None:
    def held(chunks: int, *, reads_texts: bool) -> int:
        records = build(chunks)
        read = read_back(records)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        memory = Memory("autobiographical")
        if reads_texts:
            memory.text_reader = Texts(records)
        memory.load_from(records, read)  # without a store to read texts back from, every text is held
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(memory.summaries) > chunks
        return after - before

    small, large, whole = held(300, reads_texts=True), held(1_200, reads_texts=True), held(1_200, reads_texts=False)
    assert large < whole / 2, (large, whole)
    assert large < 5 * small, (small, large)


async def test_a_search_reads_the_memories_that_may_hold_its_words_and_finds_what_the_writer_found(store_path: str) -> None:
    lines = {
        7: "the ſtretch by the river",  # a long s: "stretch" once case-folded, not in any ASCII case
        40: "a reading of 4 \u212a on the gauge",  # the Kelvin sign folds to "k"
        90: "STRETCH goals for the quarter",
        150: "Größe und Maße",
        260: "zebra crossing at noon",
    }
    queries = ["stretch", "k gauge", "zebra", "größe", "masse", "quarter stretch", "nothing matches this"]
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0)) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        for i in range(400):
            await host.add_message("user", [text(lines.get(i, f"message {i:04d} " + "x" * 40))])
        m = await rt.open_manager(NS, strategy=strategy())
        await m.drain()
        assert any("zebra" in s.text for s in m.get_summaries_in_range()), "the memories hold the lines"
        written = {q: await m.search(q, kind="memory", limit=50) for q in queries}
    assert written["zebra"] and written["stretch"] and written["k gauge"]
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0), message_cache=16) as rt:
        m = await rt.open_manager(NS, strategy=strategy())
        await m.compile(max_tokens=100_000)
        reads = {}
        for query in queries:  # each the first to read what it reads: no text read back is cached yet
            before = rt.store.statistics().state_values_read
            assert await m.search(query, kind="memory", limit=50) == written[query], query
            reads[query] = rt.store.statistics().state_values_read - before
        memories = len(m.get_summaries_in_range())
    assert memories > 30
    for query, read in reads.items():  # the memories holding a non-ASCII character are read whatever the words
        if query.isascii():  # a word past ASCII narrows nothing in the database: "größe" reads them all
            assert read <= len(written[query]) + 6, (query, read, memories)
