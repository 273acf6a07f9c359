"""``asides export`` reads and writes a branch a page at a time: what it holds follows the page,
not the branch's length, and its output is every message in order, erased ones left out."""

from __future__ import annotations

import json
import os
import sys
import tracemalloc

import trio
from helpers import writable_store

from asides._cli._main import main
from asides.actors import open_runtime
from asides.store import text


async def _build(path: str, count: int) -> None:
    async with open_runtime(path) as rt:
        store = writable_store(rt)
        for first in range(0, count, 1000):
            await store.append_messages("main", [("user", (text(f"line {i} " + "x" * 100),), None) for i in range(first, first + 1000)])
        await rt.erase([store.model.id_at("main", 1)], reason="test")


def _peak_of_export(path: str, out: str) -> int:
    """The most memory Python held while ``asides export`` wrote ``path`` to the file ``out``."""
    with open(out, "w", encoding="utf-8") as sink:
        real, sys.stdout = sys.stdout, sink
        tracemalloc.start()
        try:
            assert main(["export", path]) == 0
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            sys.stdout = real


def test_an_export_holds_no_more_for_a_longer_branch(tmp_path):
    peaks = {}
    for count in (2000, 8000):
        path, out = str(tmp_path / f"export-{count}.db"), str(tmp_path / f"export-{count}.jsonl")
        trio.run(_build, path, count)
        peaks[count] = _peak_of_export(path, out)
        with open(out, encoding="utf-8") as written:
            texts = [json.loads(line)["content"][0]["text"].split(" ")[1] for line in written]
        assert texts == [str(i) for i in range(count) if i != 1]
        assert os.path.getsize(out) > count * 100
    assert peaks[8000] < 1.5 * peaks[2000], peaks
