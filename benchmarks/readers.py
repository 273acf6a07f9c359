"""Memory of many reader managers on one store (issue 19, item 8): 50 readers over 20,000
messages against the same store with one reader.

    python -m benchmarks readers [--quick]      (--quick: 2,000 messages)

In a temporary directory a child process builds the store: N messages of 300 bytes of text,
``user`` and ``assistant`` alternating; every fourth one also holds a private block for one of
the readers (``reader-0`` ... ``reader-49`` in turn, so each reader is the audience of N/200
messages). Then, for each
case, a fresh child process opens the store under ``tracemalloc``, opens the case's managers
(``PassthroughStrategy``, one per reader, each with its ``view_reader``), has each read its whole
view (``view_messages()``) and compile (the default budget: the newest messages), keeps every
manager open, collects garbage and reads the traced bytes (``tracemalloc.get_traced_memory()``),
as well as the resident set growth (``VmRSS``).

Cases: one reader; 50 managers of one reader; 50 readers, one manager each. The memory of a
case counts everything the runtime holds then, the store's log included; the goal is that 50
readers hold at most 3 times the memory of one (not 50 times): what differs per reader is
kept, not a copy of every message.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from ._common import Goal, count, message_text, participant, print_goals, print_table, progress, section

READERS = 50
BUILD_BATCH = 2_000
GOAL_RATIO = 3.0
CASES = (("one reader", 1, 1), ("50 managers, one reader", 50, 1), ("50 readers", 50, 50))


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("VmRSS not in /proc/self/status")


def reader_name(i: int) -> str:
    return f"reader-{i % READERS}"


def blocks_of(i: int) -> list[Any]:
    """The blocks of message ``i`` (see the module docstring)."""
    from asides import text

    blocks: list[Any] = [text(message_text(i))]
    if i % 4 == 0:
        blocks.append(text(f"private to {reader_name(i // 4)}: {message_text(i + 1, 80)}", [reader_name(i // 4)]))
    return blocks


async def _build(path: str, size: int) -> None:
    from asides.lowlevel import open_store

    async with open_store(path) as store:
        for first in range(0, size, BUILD_BATCH):
            batch = range(first, min(size, first + BUILD_BATCH))
            await store.append_messages("main", [(participant(i), tuple(blocks_of(i)), None) for i in batch])


async def _open(path: str, managers: int, readers: int) -> dict[str, Any]:
    import tracemalloc

    from asides import PassthroughStrategy, open_runtime

    gc.collect()
    baseline_rss = rss_kib()
    tracemalloc.start()
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    async with open_runtime(path, read_only=True) as runtime:  # claims in memory only: every case reads one store
        gc.collect()
        out["store_bytes"] = tracemalloc.get_traced_memory()[0]
        opened = []
        seen = 0
        for i in range(managers):
            manager = await runtime.open_manager(f"agents/{i}", strategy=PassthroughStrategy(), view_reader=reader_name(i % readers))
            seen += len(manager.view_messages())
            await manager.compile()
            opened.append(manager)
        gc.collect()
        out["traced_bytes"] = tracemalloc.get_traced_memory()[0]
        out["rss_kib"] = rss_kib() - baseline_rss
        out["messages"] = runtime.store.head("main")
        out["viewed"] = seen
        out["seconds"] = time.perf_counter() - t0
        for manager in opened:
            await manager.aclose()
    tracemalloc.stop()
    return out


def child(argv: list[str]) -> None:
    """``build PATH N`` or ``open PATH MANAGERS READERS``; ``open`` prints one JSON line."""
    import trio

    if argv[0] == "build":
        trio.run(_build, argv[1], int(argv[2]))
    elif argv[0] == "open":
        print(json.dumps(trio.run(_open, argv[1], int(argv[2]), int(argv[3]))))
    else:
        raise SystemExit(f"unknown child command {argv[0]!r}")


def _run_child(*args: str) -> str:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = [sys.executable, "-m", "benchmarks.readers", "--child", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=root)
    if done.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{done.stderr}")
    return done.stdout


def measure(size: int) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="asides-readers-") as directory:
        path = os.path.join(directory, "store.db")
        progress(f"building {size:,} messages")
        _run_child("build", path, str(size))
        for name, managers, readers in CASES:
            progress(f"opening {name}")
            results[name] = json.loads(_run_child("open", path, str(managers), str(readers)).strip().splitlines()[-1])
    return results


def report(results: dict[str, dict[str, Any]]) -> list[Goal]:
    one = results["one reader"]
    headers = ["case", "messages", "traced MB", "÷ one reader", "each manager after the first", "RSS growth MB", "time"]
    rows = []
    for name, managers, _readers in CASES:
        r = results[name]
        if managers > 1:
            extra = (r["traced_bytes"] - one["traced_bytes"]) / (managers - 1)
            each = f"{extra / 1e3:.0f} KB ({extra / r['messages']:.0f} B a message)"
        else:
            each = "-"
        rows.append(
            [
                name,
                f"{r['messages']:,}",
                f"{r['traced_bytes'] / 1e6:.1f}",
                f"{r['traced_bytes'] / one['traced_bytes']:.2f}×",
                each,
                f"{r['rss_kib'] / 1024:.1f}",
                f"{r['seconds']:.1f} s",
            ]
        )
    print_table(headers, rows)
    print(
        "traced = Python heap held (tracemalloc, after a collection) with every manager open: the store's log\n"
        "(its messages decoded by the first read) plus what the managers, their views and their strategies'\n"
        "compile caches hold; each manager has read its whole view and compiled once (the default budget).\n"
        "RSS growth = resident set growth from the child's baseline (tracemalloc's own bookkeeping included)."
    )
    print()
    many = results["50 readers"]["traced_bytes"] / one["traced_bytes"]
    same = results["50 managers, one reader"]["traced_bytes"] / one["traced_bytes"]
    size = count(one["messages"])
    # The goal is set at 20,000 messages: at fewer, each manager's compile caches (bounded by its
    # budget, the newest 1,200 or so messages here) outweigh the log, so the quick run only shows
    # the ratio.
    full = one["messages"] >= 20_000
    return [
        Goal(f"50 readers @{size} ≤ {GOAL_RATIO:g}× the memory of one reader", f"{many:.2f}×", many <= GOAL_RATIO if full else None),
        Goal(f"50 managers of one reader @{size} ≤ {GOAL_RATIO:g}× one reader's", f"{same:.2f}×", same <= GOAL_RATIO if full else None),
    ]


def run(quick: bool) -> dict[str, dict[str, Any]]:
    size = 2_000 if quick else 20_000
    section(f"Reader managers' memory ({'quick: 2k messages' if quick else 'full: 20k messages'}, {READERS} readers)")
    sys.stdout.flush()
    results = measure(size)
    print_goals("Goals (issue 19, item 8)", report(results))
    return results


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        run("--quick" in sys.argv)
