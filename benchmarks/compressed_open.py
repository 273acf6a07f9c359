"""``python -m benchmarks.compressed_open SIZE ... [--old-code DIR]``: what an autobiographical
manager's open and first compile cost over a compressed history, with the strategy's records
written as runs of ids (``message_runs``) or as id lists (``message_ids``, as before runs).

Not one of ``python -m benchmarks``'s parts: a before-and-after measurement of asides against
itself. For each size it builds a store (the ``history`` part's bulk build: 300-byte messages,
every 100th with a line private to ``ann``), then writes the records the strategy would have
written, with no model: a chunk of 25 messages and its level-1 memory of about 2,300 characters
for every 25 messages but the newest 200, and a merge of every 6 memories of a level into one of
the next, at every level. Then, in fresh processes, it times ``open_runtime`` and
``open_manager("agents/bench", strategy=AutobiographicalStrategy())`` + the first
``compile(max_tokens=200_000)``, and the resident memory they add. Then, on the store of runs,
the conversation goes on by 400 messages, which the manager compresses with an offline model
(``ExtractiveModel``), writing an outline of its memory with its first unit, and the open is
timed again: now it reads the outline, the frontier and what was written after the outline. With ``--old-code DIR`` (a
directory holding an ``asides`` package of an older commit, e.g. a ``git worktree`` linked as
``DIR/asides``) the id-list store is also opened by that code.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

PER_CHUNK = 25
MERGE = 6
RAW_TAIL = 200
GO_ON = 400
TEXT = "I remember " + "this stretch went as planned and " * 70


def _rss(field: str = "VmRSS") -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field)


async def _build(path: str, size: int, runs: bool) -> int:
    from asides.lowlevel import open_store

    from .history import _build as build_messages

    await build_messages(path, size)
    async with open_store(path) as store:
        ids = [store.model.id_at("main", p) for p in range(size)]
        seqs = [store.model.at("main", p).sequence for p in range(size)]
        prefix = "agents/bench/autobiographical"

        def covered(first: int, last: int) -> dict[str, Any]:
            if runs:
                return {"message_runs": [[int(ids[first]), last - first + 1]], "first_sequence": seqs[first], "last_sequence": seqs[last]}
            return {"message_ids": ids[first : last + 1], "first_sequence": seqs[first], "last_sequence": seqs[last]}

        records: dict[str, Any] = {}
        n = 0
        level: list[tuple[str, int, int]] = []
        for first in range(0, size - RAW_TAIL, PER_CHUNK):
            last = first + PER_CHUNK - 1
            records[f"{prefix}/chunk/{ids[first]}"] = {"id": ids[first], **covered(first, last)}
            n += 1
            records[f"{prefix}/summary/L1-{n}"] = {"id": f"L1-{n}", "level": 1, "text": TEXT, "chunk": ids[first], **covered(first, last)}
            level.append((f"L1-{n}", first, last))
        depth = 1
        while len(level) >= MERGE:
            merged = []
            for g in range(0, len(level) - len(level) % MERGE, MERGE):
                group = level[g : g + MERGE]
                n += 1
                sid = f"L{depth + 1}-{n}"
                first, last = group[0][1], group[-1][2]
                children = [s for s, _, _ in group]
                record = {"id": sid, "level": depth + 1, "text": TEXT, "children": children}
                records[f"{prefix}/summary/{sid}"] = {**record, **covered(first, last)}
                merged.append((sid, first, last))
            level = merged
            depth += 1
        items = list(records.items())
        for i in range(0, len(items), 2000):
            await store.set_states("main", dict(items[i : i + 2000]))
    if path.startswith(("postgresql:", "postgres:")):
        # As a store grown over time is: its statistics describing the table as it is. The
        # store refreshes them each time the build doubles the log; the state records written
        # after the last of those would wait for autovacuum (docs/postgres.md, "The planner's
        # statistics after a bulk write").
        import psycopg

        with psycopg.connect(path, autocommit=True) as connection:
            connection.execute("ANALYZE asides_log")
    return len(records)


async def _measure(path: str) -> dict[str, Any]:
    from asides import AutobiographicalStrategy, open_runtime

    gc.collect()
    base = _rss()
    t0 = time.perf_counter()
    async with open_runtime(path) as runtime:
        opened = time.perf_counter()
        manager = await runtime.open_manager("agents/bench", strategy=AutobiographicalStrategy())
        compiled = await manager.compile(max_tokens=200_000)
        done = time.perf_counter()
        stats = runtime.store.statistics()
        kinds = [e.kind for e in compiled.provenance.entries]
        gc.collect()
        return {
            "open_runtime_s": round(opened - t0, 3),
            "open_and_first_compile_s": round(done - t0, 3),
            "rss_mb": round((_rss() - base) / 1024, 1),
            "peak_mb": round((_rss("VmHWM") - base) / 1024, 1),
            "records_read_at_open": stats.records_read_at_open,
            "messages_read": stats.messages_read,
            "message_queries": getattr(stats, "message_queries", None),  # None: code before it was counted
            "raw_shown": kinds.count("raw"),
            "memories_shown": kinds.count("summary") // 2,
        }


async def _go_on(path: str) -> bool:
    """The conversation goes on by ``GO_ON`` messages, and the manager compresses them with an
    offline model: its first unit's write carries an outline of its memory (the store holds far
    more than ``OUTLINE_EVERY`` records it had to read whole), which a later open reads instead."""
    from asides import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy, open_runtime, text

    async with open_runtime(path, model=ExtractiveModel(keep_requests=0)) as runtime:
        host = await runtime.open_manager("host", strategy=PassthroughStrategy())
        manager = await runtime.open_manager("agents/bench", strategy=AutobiographicalStrategy())
        for i in range(GO_ON):
            await host.add_message("user", [text(f"later message {i}: " + "words " * 48)])
        await manager.drain()
        return runtime.store.get_state("main", "agents/bench/autobiographical/outline") is not None


def _child(args: list[str], env: dict[str, str] | None = None) -> str:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = [sys.executable, "-m", "benchmarks.compressed_open", *args]
    done = subprocess.run(command, capture_output=True, text=True, cwd=here, env={**os.environ, **(env or {})})
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    return done.stdout.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> None:
    import trio

    parser = argparse.ArgumentParser(prog="python -m benchmarks.compressed_open")
    parser.add_argument("sizes", nargs="*", type=int, default=[100_000, 1_000_000])
    parser.add_argument("--old-code", default=None)
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        verb, path, *rest = options.child
        if verb == "build":
            print(trio.run(_build, path, int(rest[0]), rest[1] == "runs"))
        elif verb == "go-on":
            print(trio.run(_go_on, path))
        else:
            print(json.dumps(trio.run(_measure, path)))
        return
    print(f"python {sys.version.split()[0]}; sum(range(1000)) timed by: python -m timeit 'sum(range(1000))'")
    with tempfile.TemporaryDirectory() as scratch:
        for size in options.sizes:
            for form in ("lists", "runs"):
                path = os.path.join(scratch, f"{size}-{form}.db")
                records = _child(["--child", "build", path, str(size), form])
                print(f"{size:,} messages, {records} records as {form}", flush=True)
                codes = [("this code", None)]
                if form == "lists" and options.old_code:
                    codes.insert(0, ("old code", {"PYTHONPATH": os.path.abspath(options.old_code)}))
                for label, env in codes:
                    for _ in range(2):
                        print(f"  {label}: {_child(['--child', 'measure', path], env)}", flush=True)
                if form == "runs":
                    outlined = _child(["--child", "go-on", path])
                    print(f"  then {GO_ON} messages more, compressed (an outline written: {outlined})", flush=True)
                    for _ in range(2):
                        print(f"  this code, from the outline: {_child(['--child', 'measure', path])}", flush=True)


if __name__ == "__main__":
    main()
