"""A store file's open reads its records a page at a time (``REPLAY_PAGE`` records a statement,
in one read transaction), so it never holds the whole log's rows at once; what it opens is the
same store, whatever the page."""

from __future__ import annotations

from typing import Any

import pytest

from asides import PassthroughStrategy, open_runtime, text
from asides.store import _sqlite


async def everything(path: str) -> dict[str, Any]:
    async with open_runtime(path, read_only=True) as rt:
        store = rt.store
        return {
            "branches": [(b.name, b.parent, b.fork_sequence, b.head) for b in rt.list_branches()],
            "messages": {
                b.name: [(m.id, m.sequence, m.participant, m.content) for m in store.messages(b.name)] for b in rt.list_branches()
            },
            "states": {b.name: dict(store.state_items(b.name)) for b in rt.list_branches()},
            "erasures": [(e.number, e.message_ids) for e in rt.erasures()],
            "disclosed": [(d.message_id, d.via) for d in rt.disclosures_to("ann")],
            "compiles": [r.to_json() for r in await rt.compile_records()],
        }


@pytest.mark.sqlite_only("the paging of a store file's open")
async def test_an_open_in_small_pages_reads_the_same_store(store_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        ids = []
        for i in range(23):
            blocks = [text(f"line {i}")] + ([text(f"for bob {i}", audience=["bob"])] if i % 5 == 0 else [])
            ids.append((await ann.add_message("user", blocks)).id)
            if i % 7 == 0:
                await ann.compile()
        await ann.edit_message(ids[3], [text("line 3, edited")])
        await ann.fork("alt")
        await ann.add_message("user", [text("on alt")])
        await rt.erase([ids[4]], reason="asked")
    whole = await everything(store_path)
    assert whole["erasures"] and whole["compiles"] and len(whole["branches"]) == 2
    for page in (1, 3, 50):
        monkeypatch.setattr(_sqlite, "REPLAY_PAGE", page)
        assert await everything(store_path) == whole, page
