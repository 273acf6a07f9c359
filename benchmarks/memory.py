"""Resident memory per message, and the time to open a store, at 200,000 and 1,000,000 messages.

    python -m benchmarks memory [--quick]      (--quick: 200,000 only)

For each size N, in a temporary directory:

1. a child process builds the store: N messages of 300 bytes of text (``open_store`` and
   ``append_messages`` in batches of 10,000), then closes it;
2. the parent reads, with ``sqlite3``, what the file stores: the rows, the bytes of their
   ``body`` column (each message's JSON: participant, blocks, metadata, timestamp) and the file
   size;
3. a fresh child process imports asides, collects garbage and reads its resident set size
   (``VmRSS`` in ``/proc/self/status``) as the baseline; then it times ``open_runtime`` (which
   replays the log into memory), ``open_manager`` with ``PassthroughStrategy`` and a first
   ``compile()`` (default budget: 100,000 tokens, so the newest messages), and a second compile;
   and reads ``VmRSS`` (after a collection) and the peak, ``VmHWM``.

Resident memory per message is (RSS after the first compile - baseline) / N, set against the
stored body bytes per message (the goal: at most 2×) and against the 300 bytes of text each
message holds. "Open" is ``open_runtime`` + ``open_manager`` + the first compile (the goal: under
5 s at 1,000,000).
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from typing import Any

from ._common import MESSAGE_BYTES, Goal, count, message_text, participant, print_goals, print_table, progress, section

BUILD_BATCH = 10_000


def rss_kib(field: str = "VmRSS") -> int:
    """A field of ``/proc/self/status`` in KiB (Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


# -- the children ---------------------------------------------------------------------------------


async def _build(path: str, size: int) -> None:
    from asides import text
    from asides.lowlevel import open_store

    async with open_store(path) as store:
        for first in range(0, size, BUILD_BATCH):
            batch = min(BUILD_BATCH, size - first)
            await store.append_messages("main", [(participant(i), (text(message_text(i)),), None) for i in range(first, first + batch)])


async def _open(path: str) -> dict[str, Any]:
    from asides import PassthroughStrategy, open_runtime

    gc.collect()
    baseline = rss_kib()
    out: dict[str, Any] = {"baseline_kib": baseline}
    t0 = time.perf_counter()
    async with open_runtime(path) as runtime:
        out["open_runtime_s"] = time.perf_counter() - t0
        out["messages"] = runtime.store.head("main")
        gc.collect()
        out["after_open_kib"] = rss_kib()
        t1 = time.perf_counter()
        manager = await runtime.open_manager("bench", strategy=PassthroughStrategy())
        out["open_manager_s"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        compiled = await manager.compile()
        out["first_compile_s"] = time.perf_counter() - t1
        out["compiled_messages"] = len(compiled.messages)
        t1 = time.perf_counter()
        await manager.compile()
        out["second_compile_s"] = time.perf_counter() - t1
        del compiled
        gc.collect()
        out["after_compile_kib"] = rss_kib()
        out["peak_kib"] = rss_kib("VmHWM")
        await manager.aclose()
    return out


def child(argv: list[str]) -> None:
    """``build PATH N`` or ``open PATH``; ``open`` prints one JSON line."""
    import trio

    if argv[0] == "build":
        trio.run(_build, argv[1], int(argv[2]))
    elif argv[0] == "open":
        print(json.dumps(trio.run(_open, argv[1])))
    else:
        raise SystemExit(f"unknown child command {argv[0]!r}")


def _run_child(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--child", *args], capture_output=True, text=True, check=False, cwd=_root()
    )
    if done.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{done.stderr}")
    return done.stdout


def _root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- the parent -----------------------------------------------------------------------------------


def stored(path: str) -> dict[str, int]:
    """Rows, body bytes and file bytes of a closed store file."""
    connection = sqlite3.connect(path)
    try:
        rows, body = connection.execute("SELECT COUNT(*), SUM(LENGTH(CAST(body AS BLOB))) FROM log").fetchone()
    finally:
        connection.close()
    files = sum(os.path.getsize(path + suffix) for suffix in ("", "-wal") if os.path.exists(path + suffix))
    return {"rows": rows, "body_bytes": body, "file_bytes": files}


def measure(sizes: tuple[int, ...]) -> dict[int, dict[str, Any]]:
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="asides-memory-") as directory:
        for size in sizes:
            path = os.path.join(directory, f"store-{size}.db")
            progress(f"building {size:,} messages")
            t0 = time.perf_counter()
            _run_child("build", path, str(size))
            build_s = time.perf_counter() - t0
            progress(f"opening {size:,} messages")
            opened = json.loads(_run_child("open", path).strip().splitlines()[-1])
            results[size] = {"build_s": build_s, **stored(path), **opened}
            os.remove(path)
    return results


def report(results: dict[int, dict[str, Any]]) -> list[Goal]:
    headers = [
        "messages",
        "stored body B/msg",
        "RSS B/msg",
        "RSS ÷ stored",
        "RSS ÷ text",
        "peak B/msg",
        "open_runtime",
        "open_manager",
        "1st compile",
        "open total",
        "2nd compile",
        "build",
    ]
    rows = []
    goals: list[Goal] = []
    for size, r in results.items():
        n = r["messages"]
        rss = (r["after_compile_kib"] - r["baseline_kib"]) * 1024 / n
        peak = (r["peak_kib"] - r["baseline_kib"]) * 1024 / n
        body = r["body_bytes"] / n
        total = r["open_runtime_s"] + r["open_manager_s"] + r["first_compile_s"]
        rows.append(
            [
                f"{n:,}",
                f"{body:.0f}",
                f"{rss:.0f}",
                f"{rss / body:.2f}×",
                f"{rss / MESSAGE_BYTES:.2f}×",
                f"{peak:.0f}",
                f"{r['open_runtime_s']:.2f} s",
                f"{r['open_manager_s'] * 1e3:.1f} ms",
                f"{r['first_compile_s'] * 1e3:.1f} ms",
                f"{total:.2f} s",
                f"{r['second_compile_s'] * 1e3:.1f} ms",
                f"{r['build_s']:.0f} s",
            ]
        )
        goals.append(
            Goal(
                f"resident memory @{count(size)} ≤ 2× the stored bytes",
                f"{rss / body:.2f}× ({rss:.0f} B vs {body:.0f} B a message)",
                rss <= 2 * body,
            )
        )
        if size >= 1_000_000:
            goals.append(Goal(f"open @{count(size)} (open_runtime + first compile) < 5 s", f"{total:.2f} s", total < 5))
    if not any(size >= 1_000_000 for size in results):
        goals.append(Goal("open @1000k (open_runtime + first compile) < 5 s", "(full mode only)", None))
    print_table(headers, rows)
    print(
        "RSS = resident set growth from a fresh process's baseline (asides imported) to after the first compile,\n"
        "per message; peak = VmHWM growth (the replay holds every row at once); stored = the body column\n"
        f"(the message's JSON); text = the {MESSAGE_BYTES} bytes of text each message holds. The compile has the\n"
        "default budget (100,000 tokens): the newest messages, not the whole history."
    )
    print()
    return goals


def run(quick: bool) -> dict[int, dict[str, Any]]:
    sizes = (200_000,) if quick else (200_000, 1_000_000)
    section(f"Memory and open time ({'quick: 200k only' if quick else 'full'})")
    sys.stdout.flush()
    results = measure(sizes)
    print_goals("Goals (the performance issue)", report(results))
    return results


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        run("--quick" in sys.argv)
