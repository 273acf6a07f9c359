"""Benchmark: per-write cost and compile time under AutobiographicalStrategy as history grows.

For each history size N (default 2,000, 20,000 and 200,000 messages) and each of two arms:

* ``no-reader``: a manager that compiles for no reader; no block carries an audience;
* ``reader``: a manager opened with ``view_reader="ann"``; one message in every 100 carries a
  private block ``text(..., audience=["ann"])`` besides its public text;

the script builds a store on a temporary file, then measures.

How the store is built. Every message is about 300 bytes of ASCII text (``user`` and
``assistant`` alternate). A manager of namespace ``bench`` is open for the whole build, under
``AutobiographicalStrategy(target_chunk_tokens=2000, head_window_tokens=4000,
recent_window_tokens=30000)``, with ``ExtractiveModel()`` as the runtime model, so its strategy
hears of every message and its drain runs in the background as on a live host. Two ways:

* ``manager`` (``--build manager``): every message through ``await manager.add_message(...)``,
  one at a time, with ``await manager.drain()`` after every ``--drain-every`` messages;
* ``bulk`` (``--build bulk``): the messages through ``await runtime.store.append_messages("main",
  batch)`` in batches of ``--drain-every`` messages (one commit per batch; the store still tells
  the namespace actor, which feeds every message to the open manager's strategy), with ``await
  manager.drain()`` after every batch. Content is built with ``store.text`` so it is valid; this
  skips only the manager's per-call validation and the per-write commit.

``--build auto`` (the default) builds sizes up to ``--manager-max`` (default 20,000) through the
manager and larger ones in bulk. The printed header and each table say which was used. After the
build a final ``drain()`` leaves no compression pending.

What is measured, once the store is built and drained:

* ``add_message``: ``--writes`` further writes through the manager, one after the other, each
  timed alone (nothing else awaited between them, so the drain the writes wake runs in the
  background and its work lands inside whichever writes it overlaps): median and p90, in µs;
* ``drain``: ``await manager.drain()`` after those writes;
* ``compile``: ``compile(max_tokens=200_000, reserve_for_response=0)`` ``--compiles`` times: the
  first one and the median, in ms, with what the compile holds (messages, raw messages, distinct
  summaries by level, token estimate);
* ``gc``: the garbage collections that ran during the timed writes (a full, generation-2
  collection of a 200,000-message heap takes several hundred ms and lands inside one write;
  ``--gc-freeze`` moves the built heap out of the collector's reach before the writes);
* ``reopen``: the runtime is closed, the file reopened (``open_runtime``, which replays the log
  into memory), a manager opened again (the strategy loads its records), and one compile made:
  each timed.

The ``ExtractiveModel``'s request log (``model.requests``) is cleared after every drain so that
the benchmark process does not keep every compression request in memory; nothing else is touched.

Run from the repository root::

    python benchmarks/compression.py [--sizes 2000,20000,200000] [--writes 200]

Goal (the issue): per-write cost flat in history length; a compile at 20,000 messages under 20 ms.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from contextlib import AsyncExitStack
from typing import Any

# Run from a checkout without installing: put the repository root on the path.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import trio  # noqa: E402

from asides import AutobiographicalStrategy, ExtractiveModel, OverBudgetError, open_runtime, text  # noqa: E402
from asides.actors._runtime import internal_store  # noqa: E402

NAMESPACE = "bench"
READER = "ann"
PRIVATE_EVERY = 100
STRATEGY_OPTIONS = dict(target_chunk_tokens=2000, head_window_tokens=4000, recent_window_tokens=30000)
COMPILE_OPTIONS = dict(max_tokens=200_000, reserve_for_response=0)

_TOPICS = ("the parser", "the cache layer", "the deploy script", "the billing job", "the search index", "the test suite")
_VERBS = ("checked", "rewrote", "profiled", "reviewed", "measured", "fixed")


def _sentence(i: int, salt: int) -> str:
    k = (i * 7 + salt * 13) % 997
    return f"I {_VERBS[k % len(_VERBS)]} {_TOPICS[(k // 7) % len(_TOPICS)]} and saw {k} items in batch {i % 53}."


def _fill(prefix: str, i: int, size: int) -> str:
    parts = [prefix]
    salt = 0
    while sum(len(p) + 1 for p in parts) < size:
        parts.append(_sentence(i, salt))
        salt += 1
    return " ".join(parts)[:size]


def make_message(i: int, with_private: bool) -> tuple[str, list[Any]]:
    """Message ``i``: about 300 bytes of text; in the reader arm, one in every 100 carries a
    private block for ``ann`` (public part ~200 bytes, private ~100 bytes)."""
    participant = "user" if i % 2 == 0 else "assistant"
    if with_private and i % PRIVATE_EVERY == PRIVATE_EVERY // 2:
        public = _fill(f"Message {i} from {participant}, partly private.", i, 200)
        private = _fill(f"Private note {i} for {READER} only.", i + 1, 100)
        return participant, [text(public), text(private, audience=[READER])]
    return participant, [text(_fill(f"Message {i} from {participant}.", i, 300))]


def _strategy() -> AutobiographicalStrategy:
    return AutobiographicalStrategy(**STRATEGY_OPTIONS)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class GcWatch:
    """Counts the garbage collections (and their time) while active."""

    def __init__(self) -> None:
        self.active = False
        self.counts: Counter[int] = Counter()
        self.seconds = 0.0
        self._start = 0.0
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if not self.active:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.counts[info["generation"]] += 1
            self.seconds += time.perf_counter() - self._start

    def reset(self) -> None:
        self.counts.clear()
        self.seconds = 0.0

    def describe(self) -> str:
        gens = ", ".join(f"gen{g}×{self.counts[g]}" for g in sorted(self.counts)) or "none"
        return f"{gens}; {self.seconds * 1000:.1f} ms in gc"


def describe_compile(compiled: Any) -> dict[str, Any]:
    entries = compiled.provenance.entries
    kinds = Counter(e.kind for e in entries)
    summaries = {e.summary_id for e in entries if e.kind == "summary" and e.summary_id}
    levels = Counter(sid.split("-")[0] for sid in summaries)
    return {
        "messages": len(compiled.messages),
        "raw": kinds.get("raw", 0),
        "summaries": len(summaries),
        "levels": " ".join(f"{lv}:{levels[lv]}" for lv in sorted(levels)) or "-",
        "repair": kinds.get("repair", 0),
        "tokens": compiled.token_estimate,
    }


async def timed_compile(manager: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    try:
        compiled = await manager.compile(**COMPILE_OPTIONS)
    except OverBudgetError as exc:
        return time.perf_counter() - t0, exc
    return time.perf_counter() - t0, compiled


async def run_case(size: int, arm: str, build: str, args: argparse.Namespace, gcw: GcWatch) -> dict[str, Any]:
    with_private = arm == "reader"
    reader = READER if with_private else None
    model = ExtractiveModel()
    result: dict[str, Any] = {"size": size, "arm": arm, "build": build}
    requests = 0

    def clear_requests() -> None:
        nonlocal requests
        requests += len(model.requests)
        model.requests.clear()

    with tempfile.TemporaryDirectory(prefix="asides-bench-") as directory:
        path = os.path.join(directory, "store.db")
        async with open_runtime(path, model=model) as runtime:
            manager = await runtime.open_manager(NAMESPACE, strategy=_strategy(), view_reader=reader)

            # -- build -----------------------------------------------------------------------
            t0 = time.perf_counter()
            drain_time = 0.0
            build_writes: list[float] = []
            every = args.drain_every
            if build == "manager":
                for i in range(size):
                    participant, content = make_message(i, with_private)
                    w0 = time.perf_counter()
                    await manager.add_message(participant, content)
                    build_writes.append(time.perf_counter() - w0)
                    if (i + 1) % every == 0 or i + 1 == size:
                        d0 = time.perf_counter()
                        await manager.drain()
                        drain_time += time.perf_counter() - d0
                        clear_requests()
            else:
                for start in range(0, size, every):
                    batch = []
                    for i in range(start, min(size, start + every)):
                        participant, content = make_message(i, with_private)
                        batch.append((participant, tuple(content), None))
                    await internal_store(runtime).append_messages("main", batch)
                    d0 = time.perf_counter()
                    await manager.drain()
                    drain_time += time.perf_counter() - d0
                    clear_requests()
            await manager.drain()
            clear_requests()
            result["build_s"] = time.perf_counter() - t0
            result["build_drain_s"] = drain_time
            if build_writes:
                head = build_writes[: min(2000, len(build_writes))]
                tail = build_writes[-min(2000, len(build_writes)) :]
                result["build_write_first"] = statistics.median(head) * 1e6
                result["build_write_last"] = statistics.median(tail) * 1e6
            result["ready_after_build"] = manager.is_ready()

            # -- writes ----------------------------------------------------------------------
            if args.gc_freeze:
                gc.collect()
                gc.freeze()
            result["load"] = os.getloadavg()[0]
            times: list[float] = []
            gcw.reset()
            gcw.active = True
            for k in range(args.writes):
                i = size + k
                participant, content = make_message(i, with_private)
                w0 = time.perf_counter()
                await manager.add_message(participant, content)
                times.append(time.perf_counter() - w0)
            gcw.active = False
            result["write_median"] = statistics.median(times) * 1e6
            result["write_p90"] = _pct(times, 0.9) * 1e6
            result["write_max"] = max(times) * 1e6
            result["write_gc"] = gcw.describe()
            d0 = time.perf_counter()
            await manager.drain()
            result["drain_after_writes_ms"] = (time.perf_counter() - d0) * 1000
            clear_requests()

            # -- compiles --------------------------------------------------------------------
            compile_times: list[float] = []
            last: Any = None
            for _ in range(args.compiles):
                elapsed, last = await timed_compile(manager)
                compile_times.append(elapsed)
            result["compile_first_ms"] = compile_times[0] * 1000
            result["compile_median_ms"] = statistics.median(compile_times) * 1000
            if isinstance(last, OverBudgetError):
                result["compile_error"] = str(last)
            else:
                result["compile"] = describe_compile(last)
            summaries = manager.get_summaries_in_range()
            result["summaries_stored"] = Counter(s.level for s in summaries)
            result["messages_total"] = len(manager.get_all_messages())
            result["requests"] = requests
            await manager.aclose()
        if args.gc_freeze:
            gc.unfreeze()

        result["file_mb"] = os.path.getsize(path) / 1e6

        # -- reopen --------------------------------------------------------------------------
        gc.collect()
        reopen_model = ExtractiveModel()
        async with AsyncExitStack() as stack:
            t0 = time.perf_counter()
            runtime = await stack.enter_async_context(open_runtime(path, model=reopen_model))
            result["reopen_store_ms"] = (time.perf_counter() - t0) * 1000
            t0 = time.perf_counter()
            manager = await runtime.open_manager(NAMESPACE, strategy=_strategy(), view_reader=reader)
            result["reopen_manager_ms"] = (time.perf_counter() - t0) * 1000
            elapsed, compiled = await timed_compile(manager)
            result["reopen_compile_ms"] = elapsed * 1000
            elapsed2, _ = await timed_compile(manager)
            result["reopen_compile2_ms"] = elapsed2 * 1000
            result["reopen_ready"] = manager.is_ready()
            result["reopen_requests"] = len(reopen_model.requests)
            if not isinstance(compiled, OverBudgetError) and "compile" in result:
                same = describe_compile(compiled) == result["compile"]
                result["reopen_same_compile"] = same
            await manager.aclose()
    result["maxrss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def print_case(r: dict[str, Any]) -> None:
    how = {
        "manager": f"built through manager.add_message, drain() every {ARGS.drain_every} messages",
        "bulk": f"built by runtime.store.append_messages in batches of {ARGS.drain_every}, drain() after each batch",
    }[r["build"]]
    title = f"N = {r['size']:,}  arm = {r['arm']}  ({how})"
    print(title)
    print("-" * len(title))
    rows: list[tuple[str, str]] = []
    line = f"{r['build_s']:.1f} s total, of which {r['build_drain_s']:.1f} s awaiting drain()"
    line += f"; {r['requests']:,} compression requests; ready: {r['ready_after_build']}"
    rows.append(("build", line))
    if "build_write_first" in r:
        rows.append(
            (
                "build add_message",
                f"median {r['build_write_first']:.0f} µs (first 2,000 writes), {r['build_write_last']:.0f} µs (last 2,000)",
            )
        )
    rows.append(
        (
            f"add_message ×{ARGS.writes}",
            f"median {r['write_median']:.0f} µs, p90 {r['write_p90']:.0f} µs, max {r['write_max']:.0f} µs  (gc: {r['write_gc']})",
        )
    )
    rows.append(("drain() after writes", f"{r['drain_after_writes_ms']:.1f} ms"))
    rows.append(
        (
            f"compile ×{ARGS.compiles}",
            f"median {r['compile_median_ms']:.2f} ms (first {r['compile_first_ms']:.2f} ms)",
        )
    )
    if "compile" in r:
        c = r["compile"]
        rows.append(
            (
                "compile holds",
                f"{c['messages']} messages: {c['raw']} raw, {c['summaries']} summaries ({c['levels']}), "
                f"{c['repair']} repair; ~{c['tokens']:,} tokens",
            )
        )
    else:
        rows.append(("compile", f"OverBudgetError: {r['compile_error']}"))
    stored = r["summaries_stored"]
    rows.append(
        (
            "store",
            f"{r['messages_total']:,} messages; summaries stored "
            + (" ".join(f"L{lv}:{stored[lv]}" for lv in sorted(stored)) or "none")
            + f"; file {r['file_mb']:.1f} MB",
        )
    )
    reopen = (
        f"open_runtime {r['reopen_store_ms']:.0f} ms, open_manager {r['reopen_manager_ms']:.0f} ms, "
        f"first compile {r['reopen_compile_ms']:.2f} ms, second {r['reopen_compile2_ms']:.2f} ms"
    )
    rows.append(("reopen", reopen))
    extra = f"ready {r['reopen_ready']}, {r['reopen_requests']} requests"
    if "reopen_same_compile" in r:
        extra += f", same compile shape as before: {r['reopen_same_compile']}"
    rows.append(("after reopen", extra))
    rows.append(("process max RSS", f"{r['maxrss_mb']:.0f} MB"))
    rows.append(("1-min load average", f"{r['load']:.2f} when the timed writes began ({os.cpu_count()} CPUs)"))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")
    print()


def print_summary(results: list[dict[str, Any]]) -> None:
    print("Summary")
    print("=======")
    header = (
        f"{'arm':<10}{'N':>9}  {'build':>7}  {'write med':>10}  {'write p90':>10}  {'drain':>9}  "
        f"{'compile':>9}  {'msgs':>5}  {'summ':>5}  {'reopen':>8}  {'1st cmp':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        c = r.get("compile", {})
        print(
            f"{r['arm']:<10}{r['size']:>9,}  {r['build']:>7}  {r['write_median']:>8.0f}µs  {r['write_p90']:>8.0f}µs  "
            f"{r['drain_after_writes_ms']:>7.1f}ms  {r['compile_median_ms']:>7.2f}ms  {c.get('messages', '-'):>5}  "
            f"{c.get('summaries', '-'):>5}  {r['reopen_store_ms'] + r['reopen_manager_ms']:>6.0f}ms  "
            f"{r['reopen_compile_ms']:>7.2f}ms"
        )
    print("(reopen = open_runtime + open_manager; 1st cmp = first compile after reopen)")


ARGS: argparse.Namespace


async def main(args: argparse.Namespace) -> None:
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    print("asides benchmark: AutobiographicalStrategy with ExtractiveModel")
    print(f"python {platform.python_version()} on {platform.platform()}, trio {trio.__version__}")
    print(f"strategy AutobiographicalStrategy({', '.join(f'{k}={v}' for k, v in STRATEGY_OPTIONS.items())})")
    print("messages: ~300 bytes of ASCII text each, user/assistant alternating; reader arm: view_reader='ann',")
    print(f"  and one message in every {PRIVATE_EVERY} holds a public block (~200 B) and a block with audience=['ann'] (~100 B)")
    print(
        f"build: --build {args.build}: "
        + {
            "manager": "every message through manager.add_message",
            "bulk": "every message through runtime.store.append_messages (batched) with the manager open",
            "auto": f"through manager.add_message up to {args.manager_max:,} messages, "
            "larger sizes through runtime.store.append_messages in batches with the manager open",
        }[args.build]
        + f"; manager.drain() every {args.drain_every} messages, and once at the end"
    )
    print(f"measure: {args.writes} add_message, drain(), {args.compiles} × compile({COMPILE_OPTIONS}), reopen")
    if args.gc_freeze:
        print("gc: gc.collect(); gc.freeze() after each build, so the built heap is never scanned during the timed writes")
    print(f"machine: {os.cpu_count()} CPUs, 1-min load average at start {os.getloadavg()[0]:.2f} (timings are wall-clock)")
    print()
    gcw = GcWatch()
    results = []
    for size in sizes:
        build = args.build if args.build != "auto" else ("manager" if size <= args.manager_max else "bulk")
        for arm in arms:
            result = await run_case(size, arm, build, args, gcw)
            print_case(result)
            results.append(result)
            sys.stdout.flush()
    print_summary(results)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000,20000,200000", help="history sizes, comma-separated")
    parser.add_argument("--writes", type=int, default=200, help="timed add_message calls after the build")
    parser.add_argument("--compiles", type=int, default=20, help="timed compiles")
    parser.add_argument("--arms", default="no-reader,reader", help="arms to run: no-reader, reader")
    parser.add_argument("--build", choices=("auto", "manager", "bulk"), default="auto", help="how history is built")
    parser.add_argument("--manager-max", type=int, default=20000, help="with --build auto: largest size built through the manager")
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() after each build (keeps full collections of the built heap out of the timed writes)",
    )
    parser.add_argument("--drain-every", type=int, default=500, help="drain() every this many messages while building")
    args = parser.parse_args(argv)
    for arm in args.arms.split(","):
        if arm.strip() not in ("no-reader", "reader"):
            parser.error(f"unknown arm {arm!r}")
    if args.writes < 1 or args.compiles < 1 or args.drain_every < 1:
        parser.error("--writes, --compiles and --drain-every must be positive")
    return args


def run(argv: list[str] | None = None) -> None:
    """Parse ``argv`` (default: the command line) and run."""
    global ARGS
    ARGS = parse_args(argv)
    trio.run(main, ARGS)


if __name__ == "__main__":
    run()
