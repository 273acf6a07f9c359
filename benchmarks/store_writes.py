"""Store write cost and open time against history length (SPEC S3, S5).

    python benchmarks/store_writes.py [--sizes 2000,20000,200000] [--sequential 500]
                                      [--writers 16] [--per-writer 100] [--repeat 3]

For each size N: build a fresh store file holding N messages of about 300 bytes (written with
``append_messages`` in large batches), close it, then

- open: time to reopen it (``open_store`` until the block is entered: reading and replaying
  every row into the in-memory model), and the time of a first read of the newest 20 messages;
- sequential: one writer doing ``--sequential`` durable ``append_message`` calls; the median
  latency per call;
- concurrent: ``--writers`` Trio tasks doing ``--per-writer`` durable appends each; wall time
  divided by the number of writes, the median per-call latency, and how many commits they
  shared.

Each size is measured ``--repeat`` times (each run reopens the file, so N grows by ~2,100 writes
per run) and the best value of each figure is shown, to damp noise from a shared machine.

Goal (the issue): per-write cost flat in N; opening 200,000 messages under 2 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import trio  # noqa: E402

from asides.lowlevel import open_store  # noqa: E402
from asides.store import text  # noqa: E402

BUILD_BATCH = 10_000
WARMUP = 20
# A stored row of about 300 bytes: the body JSON (participant, one text block, metadata,
# timestamp) plus the other columns.
FILLER = "lorem ipsum dolor sit amet " * 8


def content(i: int) -> tuple:
    return (text(f"message {i:07d} {FILLER}"[:200]),)


async def build(path: str, n: int) -> float:
    start = time.perf_counter()
    async with open_store(path) as store:
        for first in range(0, n, BUILD_BATCH):
            count = min(BUILD_BATCH, n - first)
            await store.append_messages(
                "main", [("user" if i % 2 else "assistant", content(first + i), {"i": first + i}) for i in range(count)]
            )
        assert store.head("main") == n
    return time.perf_counter() - start


async def measure(path: str, n: int, sequential: int, writers: int, per_writer: int) -> dict[str, float]:
    started = time.perf_counter()
    async with open_store(path) as store:
        opened = time.perf_counter() - started
        t = time.perf_counter()
        tail = store.messages("main", -20)
        first_read = time.perf_counter() - t
        assert len(tail) == min(20, n) and store.head("main") >= n
        start_head = store.head("main")

        for i in range(WARMUP):
            await store.append_message("main", "warmup", content(i))

        latencies = []
        for i in range(sequential):
            t = time.perf_counter()
            await store.append_message("main", "user", content(i))
            latencies.append(time.perf_counter() - t)
        seq_median = statistics.median(latencies)

        call_latencies: list[float] = []

        async def writer(w: int) -> None:
            for i in range(per_writer):
                t = time.perf_counter()
                await store.append_message("main", f"writer{w}", content(i))
                call_latencies.append(time.perf_counter() - t)

        commits = store.statistics().commits
        t = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for w in range(writers):
                nursery.start_soon(writer, w)
        wall = time.perf_counter() - t
        total = writers * per_writer
        shared = store.statistics().commits - commits
        assert store.head("main") == start_head + WARMUP + sequential + total
    return {
        "open_ms": opened * 1e3,
        "first_read_ms": first_read * 1e3,
        "seq_us": seq_median * 1e6,
        "conc_per_write_us": wall / total * 1e6,
        "conc_median_us": statistics.median(call_latencies) * 1e6,
        "commits": shared,
        "writes": total,
    }


async def run(sizes: list[int], sequential: int, writers: int, per_writer: int, repeat: int) -> None:
    print(
        f"store_writes: {sequential} sequential writes; {writers} writers x {per_writer} concurrent writes; "
        f"best of {repeat} runs (each reopens the file); Python {sys.version.split()[0]}, trio {trio.__version__}, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    header = (
        f"{'N':>8} | {'build s':>7} | {'file MB':>7} | {'open ms':>8} | {'1st read ms':>11} | "
        f"{'seq µs/write':>12} | {'conc µs/write':>13} | {'conc µs/call':>12} | {'commits':>9}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="asides-bench-") as directory:
        for n in sizes:
            path = os.path.join(directory, f"store-{n}.db")
            built = await build(path, n)
            size_mb = sum(os.path.getsize(path + suffix) for suffix in ("", "-wal") if os.path.exists(path + suffix)) / 1e6
            runs = [await measure(path, n, sequential, writers, per_writer) for _ in range(repeat)]
            r = {key: min(run[key] for run in runs) for key in runs[0]}  # best of the repeats
            print(
                f"{n:>8} | {built:>7.2f} | {size_mb:>7.1f} | {r['open_ms']:>8.1f} | {r['first_read_ms']:>11.3f} | "
                f"{r['seq_us']:>12.0f} | {r['conc_per_write_us']:>13.0f} | {r['conc_median_us']:>12.0f} | "
                f"{int(r['commits']):>4}/{int(r['writes']):<4}",
                flush=True,
            )
    print(
        "seq = median latency of one durable append_message with one writer; conc µs/write = wall time / writes "
        "with concurrent writers; conc µs/call = their median call latency; commits = commits they shared / writes."
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="2000,20000,200000", help="comma-separated history lengths")
    parser.add_argument("--sequential", type=int, default=500, help="sequential writes to time")
    parser.add_argument("--writers", type=int, default=16, help="concurrent writer tasks")
    parser.add_argument("--per-writer", type=int, default=100, help="writes per concurrent writer")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size; the best of each figure is shown")
    args = parser.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    trio.run(run, sizes, args.sequential, args.writers, args.per_writer, max(1, args.repeat))


if __name__ == "__main__":
    main()
