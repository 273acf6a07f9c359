"""A compressing manager's open reads its frontier, not its history: the strategy writes, now and
then, an outline of what its memory holds with a unit's records, and a manager opened later
reads the outline, the records it names and those written after it. What the reopened manager
compiles and answers is what the writer compiled and answered; an outline it cannot trust (a
record it names erased since, records it does not account for) costs a load of every record,
never a wrong answer."""

from __future__ import annotations

import json
import shutil

import pytest

from asides import text
from asides.actors import open_runtime
from asides.lowlevel import open_store
from asides.strategies import AutobiographicalStrategy, ExtractiveModel, KnowledgeStrategy, PassthroughStrategy
from asides.strategies._autobiographical.records import Outline
from asides.strategies._autobiographical.tracking import OUTLINE_EVERY

NS = "agents/ann"


def strategy() -> AutobiographicalStrategy:
    return AutobiographicalStrategy(target_chunk_tokens=60, head_window_tokens=40, recent_window_tokens=120, merge_threshold=3)


async def write(store_path: str, messages: int, make: type[AutobiographicalStrategy] = AutobiographicalStrategy) -> dict[str, object]:
    """Write ``messages`` messages and compress them all; what the writer compiles and reads."""
    kind = make(target_chunk_tokens=60, head_window_tokens=40, recent_window_tokens=120, merge_threshold=3)
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0)) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        m = await rt.open_manager(NS, strategy=kind)
        for i in range(messages):  # as a host runs: compression keeps up with the conversation
            await host.add_message("user", [text(f"message {i:05d} " + "x" * 40)])
            if i % 50 == 49:
                await m.drain()
        await m.drain()
        return {
            "compiled": (await m.compile(max_tokens=1_000_000)).messages,
            "summaries": m.get_summaries_in_range(),
            "found": m.search_summaries("message"),
            "searched": await m.search("message 00003", kind="memory", limit=50),
            "outlines": len([k for k in rt.store.state_keys("main", f"{NS}/") if k.endswith("/outline")]),
        }


async def reopen_reads(
    store_path: str, make: type[AutobiographicalStrategy] = AutobiographicalStrategy, reader: str | None = None
) -> tuple[int, object]:
    """The state values an open of the manager (for ``reader``) and its first compile read, and
    what it compiles."""
    kind = make(target_chunk_tokens=60, head_window_tokens=40, recent_window_tokens=120, merge_threshold=3)
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0), message_cache=16) as rt:
        before = rt.store.statistics().state_values_read
        m = await rt.open_manager(NS, strategy=kind, view_reader=reader)
        compiled = (await m.compile(max_tokens=1_000_000)).messages
        return rt.store.statistics().state_values_read - before, compiled


@pytest.mark.parametrize("make", [AutobiographicalStrategy, KnowledgeStrategy])
async def test_a_reopened_manager_reads_its_frontier_and_compiles_as_the_writer_did(tmp_path, make) -> None:  # type: ignore[no-untyped-def]
    reads = {}
    for messages in (700, 2_800):
        path = str(tmp_path / f"{messages}.db")
        written = await write(path, messages, make)
        assert written["outlines"] == 1, "an outline, written again now and then"
        reads[messages], compiled = await reopen_reads(path, make)
        assert compiled == written["compiled"]
    # the records before the newest outline are not read: the frontier (a few per level), the
    # records written after the outline (under OUTLINE_EVERY) and the namespace's own
    assert reads[2_800] <= 2 * OUTLINE_EVERY + 40, reads
    assert reads[2_800] <= reads[700] + OUTLINE_EVERY, reads


async def test_every_read_of_a_reopened_manager_answers_as_the_writers(store_path: str) -> None:
    written = await write(store_path, 900)
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0), message_cache=16) as rt:
        m = await rt.open_manager(NS, strategy=strategy())
        assert m.search_summaries("message") == written["found"]
        assert (await m.compile(max_tokens=1_000_000)).messages == written["compiled"]
        oldest = written["summaries"][0]  # type: ignore[index]
        before = rt.store.statistics().state_values_read
        assert m.get_summary(oldest.id) == oldest, "a memory past the frontier, read alone"
        assert rt.store.statistics().state_values_read - before == 1
        before = rt.store.statistics().state_values_read
        assert await m.search("message 00003", kind="memory", limit=50) == written["searched"]
        read = rt.store.statistics().state_values_read - before
        assert read <= len(written["summaries"]) // 8, ("the memories that may hold the words", read)  # type: ignore[arg-type]
        every = written["summaries"]
        for start, end in ((None, 40), (300, 320), (880, None), (500, 499)):
            before = rt.store.statistics().state_values_read
            found = m.get_summaries_in_range(start, end)
            assert found == tuple(
                s for s in every if (end is None or s.first_sequence <= end) and (start is None or s.last_sequence >= start)  # type: ignore[attr-defined]
            ), (start, end)
            read = rt.store.statistics().state_values_read - before
            assert read <= 4 * len(found) + 4, ("the memories in the range and their children, no other", start, end, read)
        assert m.get_summaries_in_range() == every, "every memory, when the range is every message"
        assert all(m.get_summary(s.id) == s for s in written["summaries"])  # type: ignore[attr-defined]
        assert (await m.compile(max_tokens=1_000_000)).messages == written["compiled"]


async def test_a_manager_loaded_from_an_outline_goes_on_compressing_as_one_loaded_whole(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two copies of one store: in one the outline is overwritten with a value of another shape,
    so its manager loads every record; both then take the same new messages and compress them, and end alike."""
    first = str(tmp_path / "a.db")
    await write(first, 900)
    second = str(tmp_path / "b.db")
    shutil.copyfile(first, second)  # the runtime closed: its file holds every commit
    outline = f"{NS}/autobiographical/outline"
    for path, key in ((first, "elsewhere/note"), (second, outline)):  # one record more in each
        async with open_store(path) as store:
            assert store.get_state("main", outline) is not None
            await store.set_states("main", {key: {"not": "an outline"}})  # the second's: a whole load
    ends = []
    for path in (first, second):
        async with open_runtime(path) as rt:
            host = await rt.open_manager("host", strategy=PassthroughStrategy())
            for i in range(300):
                await host.add_message("user", [text(f"later {i:05d} " + "y" * 40)])
        async with open_runtime(path, model=ExtractiveModel(keep_requests=0)) as rt:
            m = await rt.open_manager(NS, strategy=strategy())
            await m.drain()
            ends.append(((await m.compile(max_tokens=1_000_000)).messages, m.get_summaries_in_range()))
    assert ends[0] == ends[1]


async def test_an_erasure_of_a_message_no_chunk_owns_leaves_the_outline_and_the_walk_trusted(store_path: str) -> None:
    """The newest message, in the recent window, erased after the outline: no record of the
    namespace was made from it, so a reopened manager reads its frontier alone (the outline,
    and the walk resumes after the newest chunk from the chunks' total), and compiles what the
    writer did without that message."""
    written = await write(store_path, 900)
    async with open_runtime(store_path) as rt:
        newest = rt.store.messages("main")[-1]
        await rt.erase([newest.id], reason="asked to")
    reads, compiled = await reopen_reads(store_path)
    assert reads <= 2 * OUTLINE_EVERY + 40, reads
    assert compiled == written["compiled"][:-1]  # type: ignore[index]
    assert newest.content[0].text not in str(compiled)


async def test_after_an_erasure_of_a_message_a_chunk_owns_the_next_outline_is_trusted_again(store_path: str) -> None:
    """The oldest memory's first message erased: the first open reads every record (a record the
    outline names no longer reads as it says) and compresses again what the erased chunk
    owned, writing an outline; an open after that reads its frontier alone, though the store
    holds an erasure, and compiles as the manager that wrote it."""
    written = await write(store_path, 900)
    oldest = written["summaries"][0].message_ids[0]  # type: ignore[index]
    async with open_runtime(store_path) as rt:
        await rt.erase([oldest], reason="asked to")
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0), message_cache=16) as rt:
        before = rt.store.statistics().state_values_read
        m = await rt.open_manager(NS, strategy=strategy())
        compiled = await m.compile(max_tokens=1_000_000)
        assert rt.store.statistics().state_values_read - before > len(written["summaries"]), "every record read once"  # type: ignore[arg-type]
        assert all(s.message_ids[0] != oldest for s in m.get_summaries_in_range())
        assert oldest not in {i for entry in compiled.provenance.entries for i in entry.message_ids}
        await m.drain()
        expected = (await m.compile(max_tokens=1_000_000)).messages
    reads, compiled = await reopen_reads(store_path)
    assert reads <= 2 * OUTLINE_EVERY + 40, reads
    assert compiled == expected


@pytest.mark.parametrize("spoil", ["names a memory with no record", "counts one record more"])
async def test_an_outline_that_does_not_hold_makes_the_open_read_every_record(store_path: str, spoil: str) -> None:
    written = await write(store_path, 900)
    outline = f"{NS}/autobiographical/outline"
    async with open_store(store_path) as store:
        value = dict(store.get_state("main", outline))
        if spoil == "names a memory with no record":
            value["summaries"] = [*value["summaries"], "L9-999"]
        else:
            value["taken"] += 1
        await store.set_states("main", {outline: value})
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0), message_cache=16) as rt:
        before = rt.store.statistics().state_values_read
        m = await rt.open_manager(NS, strategy=strategy())
        assert (await m.compile(max_tokens=1_000_000)).messages == written["compiled"]
        assert rt.store.statistics().state_values_read - before > len(written["summaries"]), "every record read"  # type: ignore[arg-type]
        assert m.get_summaries_in_range() == written["summaries"]


def test_an_outline_reads_back_as_written_and_a_value_of_any_other_shape_reads_as_none() -> None:
    outline = Outline(
        erasures=1,
        taken=9,
        next_n=7,
        chunk_count=4,
        owned_count=40,
        owned=((1, 41),),
        owned_other=("m-x",),
        chunks=(("31", None), ("21", "L1-3")),
        summaries=("L1-1", "L1-2", "L2-5"),
        newest=((40, "31"),),
    )
    assert Outline.from_json(json.loads(json.dumps(outline.to_json()))) == outline
    good = outline.to_json()
    for name, bad in [
        ("taken", -1),
        ("taken", True),
        ("owned", [[5, 5]]),
        ("owned", [[1, 2, 3]]),
        ("chunks", [["", None]]),
        ("chunks", [["31", 7]]),
        ("summaries", ["L1-1", ""]),
        ("newest", [["40", "31"]]),
        ("owned_other", "m-x"),
    ]:
        assert Outline.from_json({**good, name: bad}) is None, (name, bad)
    assert Outline.from_json({k: v for k, v in good.items() if k != "next_n"}) is None
    assert Outline.from_json(["not", "an", "outline"]) is None


async def test_a_manager_running_long_holds_its_frontier_not_what_it_wrote(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """In one process, compressing as a host runs: each time the strategy writes an outline its
    memory lets go of what the outline would not name (it reads those records back when asked),
    so the records it holds stay about as many at 2,800 messages as at 700, and what it answers
    is what a manager opened afresh on the store answers."""
    path = str(tmp_path / "long.db")
    kind = strategy()
    held: dict[int, int] = {}
    async with open_runtime(path, model=ExtractiveModel(keep_requests=0)) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        m = await rt.open_manager(NS, strategy=kind)
        for i in range(2_800):
            await host.add_message("user", [text(f"message {i:05d} " + "x" * 40)])
            if i % 50 == 49:
                await m.drain()
            if i + 1 in (700, 2_800):
                memory = kind.tracker.memory
                held[i + 1] = len(memory.chunks) + len(memory.summaries)
        written = {
            "compiled": (await m.compile(max_tokens=1_000_000)).messages,
            "summaries": m.get_summaries_in_range(),
            "found": m.search_summaries("message"),
            "searched": await m.search("message 00003", kind="memory", limit=50),
        }
        records = len(rt.store.state_keys("main", f"{NS}/"))
    assert held[2_800] <= held[700] + 2 * OUTLINE_EVERY, held
    assert held[2_800] < records // 4, (held, records)
    async with open_runtime(path, model=ExtractiveModel(keep_requests=0), message_cache=16) as rt:
        m = await rt.open_manager(NS, strategy=strategy())
        assert (await m.compile(max_tokens=1_000_000)).messages == written["compiled"]
        assert m.get_summaries_in_range() == written["summaries"]
        assert m.search_summaries("message") == written["found"]
        assert await m.search("message 00003", kind="memory", limit=50) == written["searched"]


async def test_an_outline_names_a_run_of_owned_ids_each_stretch_not_each_chunk(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A live host writes the strategy's records between its messages, so each chunk's ids were
    a run of their own: the outline grew with the chunks, and every outline written stayed in
    the log. Bridged where the chunks' messages stand side by side in the view, its runs stay
    as few at 2,800 messages as at 700."""
    for messages in (700, 2_800):
        path = str(tmp_path / f"{messages}.db")
        await write(path, messages)
        async with open_store(path) as store:
            outline = store.get_state("main", f"{NS}/autobiographical/outline")
            chunks = len(store.state_keys("main", f"{NS}/autobiographical/chunk/"))
        assert len(outline["owned"]) <= 2, (messages, chunks, outline["owned"])
        assert chunks > 100


async def test_an_edit_that_brings_a_message_between_bridged_chunks_reads_the_runs_exactly(store_path: str) -> None:
    """Ann's namespace compresses a history in which every fifth message is bob's alone (not in
    ann's view), so the outline's runs bridge them. One of them is then edited to be for
    everyone: a manager opened from that outline compiles as one that read every record, with
    the edited message in it."""
    async with open_runtime(store_path, model=ExtractiveModel(keep_requests=0)) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        m = await rt.open_manager(NS, strategy=strategy(), view_reader="ann")
        hidden = []
        for i in range(600):
            if i % 5 == 2:
                hidden.append((await host.add_message("user", [text(f"for bob alone {i:05d} " + "z" * 40, ["bob"])])).id)
            else:
                await host.add_message("user", [text(f"message {i:05d} " + "x" * 40)])
            if i % 50 == 49:
                await m.drain()
        await m.drain()
        outline = rt.store.get_state("main", f"{NS}/autobiographical/outline")
        assert len(outline["owned"]) <= 2, outline["owned"]
        await host.edit_message(hidden[20], [text("now for everyone " + "w" * 40)])
    _reads, compiled = await reopen_reads(store_path, reader="ann")
    assert "now for everyone" in str(compiled)
    async with open_store(store_path) as store:  # the same store with no outline to trust: read whole
        await store.set_states("main", {f"{NS}/autobiographical/outline": {"not": "an outline"}})
    _reads, whole = await reopen_reads(store_path, reader="ann")
    assert compiled == whole

