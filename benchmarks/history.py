"""A long history (issue 33, item 6): open, first compile, writes and memory at 100,000,
1,000,000 and 10,000,000 messages, next to the OpenAI Agents SDK's ``SQLiteSession``.

    python -m benchmarks history [--quick]      (--quick: 100,000 and 1,000,000 messages)

``--quick`` measures 100,000 and 1,000,000 messages; the full part adds 10,000,000.

At each size N, in a temporary directory:

1. a child process builds the store: N messages of 300 bytes of text, ``user`` and ``assistant``
   alternating, every 100th also holding a block private to ``ann`` (100 bytes); through
   ``asides.lowlevel.open_store`` and ``store.append_messages("main", batch)`` in batches of
   50,000 (the fastest honest route in the codebase: ``asides import`` appends through the same
   call, after reading the whole file), then has the store index everything for search
   (``store.index_search()``, timed apart), as the store of a host that has run a while is.
   The peer's stores are built first, every size's in one
   child (importing ``agents`` takes seconds): a ``SQLiteSession`` holding N items (``{"role",
   "content"}`` dicts, the same texts) through its own ``add_items``, 50,000 items a call, fast
   enough not to need its schema written directly. Both build times are printed.
2. fresh child processes, one measurement each, on that one store (each imports asides, collects
   garbage and reads ``VmRSS`` in ``/proc/self/status`` as its baseline; resident growth is
   ``VmRSS`` after a collection minus that baseline; peak growth is ``VmHWM`` minus it):

   - *no reader*: ``open_runtime(path)`` + ``open_manager("agents/plain",
     strategy=PassthroughStrategy())`` + the first ``compile()`` (default budget: the newest
     100,000 tokens): wall time and resident growth;
   - *reader ann*: the same with ``open_manager("agents/ann", ..., view_reader="ann")`` (its
     first open claims the namespace: one state write, inside the timed open);
   - *50 readers*: ``reader-0`` ... ``reader-49``, one manager each (namespaces
     ``agents/reader-K``), each compiled once: wall time and resident growth, set against the
     *reader ann* process's (one reader manager);
   - *add_message*: after the reader-ann open and first compile, 200 ``add_message`` calls (300
     bytes each), each timed: the mean;
   - *compile after one new message*: after that open, 50 rounds of one ``add_message``
     (untimed) and one ``compile()`` (timed): the mean.

   - *writes with a private line*: in one process, a host manager (no reader) and reader
     managers (``w-0`` ...), each compiled once: 100 ``add_message`` calls through the host with
     one reader manager open, 100 with 200 open, 100 with one, 100 with 200, each timed, message
     ``k`` holding a block for everyone and one private to ``w-(k mod 200)``: the median of each
     case's 200.

   The last three run last, as they write (650 messages in all); the counts printed are what
   each process opened.
3. a fresh child process opens the peer: ``SQLiteSession("bench", path)`` and
   ``get_items(limit=100)`` (the newest 100 items): wall time and resident growth from a
   baseline taken after importing ``agents``.

The goals (issue 33) are judged in this one run: at the largest size, the reader-ann open and
first compile under 1 s × (this machine's ``sum(range(1000))`` µs ÷ 10 µs) (3.1 s on a machine
where it takes 31 µs) and its resident growth under 300 MB; from the smallest to the largest
size the open time within 1.5×, the resident growth within 1.3× and the compile after one new
message within 1.2×; 50 readers within 2× the resident growth of one; at the largest size, a
write with a private line with 200 reader managers open within 1.3× one with one open. A store file's open reads
no message: it reads the records other than messages, each branch's head, and how many messages
that may name a reader (one in a hundred here) each block of 16,384 sequences holds, by who sees
them (docs/DESIGN.md, "The store"): a row a block. The 50 readers are named by no audience, so
they read one view (that of no reader) and share what compiles work out from it (docs/DESIGN.md,
"Readers who see alike"); readers each named in the history are ``python -m benchmarks readers``.

The stores are built first, two at a time (the largest first), then measured one process at a
time. The quick part takes under two minutes on an idle 2-core machine: 115 s where
``sum(range(1000))`` takes 14.3 µs (2026-12-07, 15:49 UTC), most of it building the
1,000,000-message store and its search index.
The full part adds 10,000,000 messages: its build alone takes minutes. A measurement whose child fails, for memory or anything else, is
printed as failed and its goals as not measured.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ._common import Goal, count, duration, message_text, participant, print_goals, print_table, progress, python_speed, ratio, section

BUILD_BATCH = 50_000
READER = "ann"
PRIVATE_EVERY = 100
READERS = 50
WRITE_READERS = 200
ADDS = 200
COMPILES = 50
PEER_LIMIT = 100
QUICK_SIZES = (100_000, 1_000_000)
FULL_SIZES = (100_000, 1_000_000, 10_000_000)

#: The goals of issue 33, item 6.
OPEN_GOAL_S_PER_10_US = 1.0  # open + first compile under 1 s per 10 µs of sum(range(1000))
RSS_GOAL_MB = 300.0
OPEN_GROWTH = 1.5
RSS_GROWTH = 1.3
COMPILE_GROWTH = 1.2
READERS_GOAL = 2.0
WRITE_READERS_GOAL = 1.3


def rss_kib(field: str = "VmRSS") -> int:
    """A field of ``/proc/self/status`` in KiB (Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def blocks_of(i: int) -> tuple[Any, ...]:
    """Message ``i``'s blocks: 300 bytes of text; every 100th also a block private to ann."""
    from asides import text

    if i % PRIVATE_EVERY == 0:
        return (text(message_text(i)), text(f"for {READER} only: {message_text(i + 1, 100)}", [READER]))
    return (text(message_text(i)),)


# -- the children: asides (under Trio, its reference backend) ---------------------------------------


async def _build(path: str, size: int) -> dict[str, Any]:
    from asides.lowlevel import open_store

    t0 = time.perf_counter()
    async with open_store(path) as store:
        for first in range(0, size, BUILD_BATCH):
            batch = range(first, min(size, first + BUILD_BATCH))
            await store.append_messages("main", [(participant(i), blocks_of(i), None) for i in batch])
        built = time.perf_counter() - t0
        # As a store that has run for a while is: its search index caught up. Else the indexer
        # catches up in the background of every process that opens it, and its batches fall on
        # whatever is timed there.
        await store.index_search()
    return {"seconds": built, "index_s": time.perf_counter() - t0 - built}


def _baseline() -> int:
    gc.collect()
    return rss_kib()


def _memory(out: dict[str, Any], baseline: int) -> None:
    gc.collect()
    out["rss_kib"] = rss_kib() - baseline
    out["peak_kib"] = rss_kib("VmHWM") - baseline


async def _open(path: str, reader: str) -> dict[str, Any]:
    """``open_runtime`` + ``open_manager`` + first compile, for ``reader`` (``-``: none)."""
    from asides import PassthroughStrategy, open_runtime

    view_reader = None if reader == "-" else reader
    baseline = _baseline()
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    async with open_runtime(path) as runtime:
        out["open_runtime_s"] = time.perf_counter() - t0
        manager = await runtime.open_manager(
            f"agents/{view_reader or 'plain'}", strategy=PassthroughStrategy(), view_reader=view_reader
        )
        t1 = time.perf_counter()
        compiled = await manager.compile()
        out["compile_s"] = time.perf_counter() - t1
        out["seconds"] = time.perf_counter() - t0
        out["messages"] = runtime.store.length("main")
        out["compiled"] = len(compiled.messages)
        del compiled
        _memory(out, baseline)
        await manager.aclose()
    return out


async def _readers(path: str, readers: int) -> dict[str, Any]:
    """``readers`` reader managers (``reader-0`` ...), each compiled once, all kept open."""
    from asides import PassthroughStrategy, open_runtime

    baseline = _baseline()
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    async with open_runtime(path) as runtime:
        out["open_runtime_s"] = time.perf_counter() - t0
        opened = []
        compiling = 0.0
        for k in range(readers):
            manager = await runtime.open_manager(f"agents/reader-{k}", strategy=PassthroughStrategy(), view_reader=f"reader-{k}")
            t1 = time.perf_counter()
            await manager.compile()
            compiling += time.perf_counter() - t1
            opened.append(manager)
        out["compile_s"] = compiling
        out["seconds"] = time.perf_counter() - t0
        out["messages"] = runtime.store.length("main")
        out["managers"] = len(opened)
        _memory(out, baseline)
        for manager in opened:
            await manager.aclose()
    return out


async def _writes(path: str, what: str, rounds: int) -> dict[str, Any]:
    """After the reader-ann open and first compile: ``add`` times ``rounds`` add_message calls;
    ``compile`` times ``rounds`` compiles, each after one new message (written untimed)."""
    from asides import PassthroughStrategy, open_runtime, text

    out: dict[str, Any] = {}
    async with open_runtime(path) as runtime:
        manager = await runtime.open_manager(f"agents/{READER}", strategy=PassthroughStrategy(), view_reader=READER)
        await manager.compile()
        head = runtime.store.length("main")
        out["messages"] = head
        gc.collect()
        times: list[float] = []
        for k in range(rounds):
            i = head + k
            if what == "add":
                t0 = time.perf_counter()
                await manager.add_message(participant(i), [text(message_text(i))])
                times.append(time.perf_counter() - t0)
            else:
                await manager.add_message(participant(i), [text(message_text(i))])
                t0 = time.perf_counter()
                compiled = await manager.compile()
                times.append(time.perf_counter() - t0)
                out["compiled"] = len(compiled.messages)
        out["mean_s"] = sum(times) / len(times)
        out["max_s"] = max(times)
        out["count"] = len(times)
        await manager.aclose()
    return out


async def _reader_writes(path: str, readers: int, rounds: int) -> dict[str, Any]:
    """A host manager (no reader) and one reader manager (``w-0``), compiled once; then four
    phases of ``rounds`` timed ``add_message`` calls through the host, message ``k`` holding a
    block of 300 bytes for everyone and one private to ``w-(k mod readers)``: with that one
    reader manager open, then with ``readers`` open (``w-1`` ... opened and each compiled once),
    then with one again (those closed), then with ``readers`` again. Alternated in one process,
    so that what else runs (the search indexer catching up after the build, the machine's load)
    falls on both; each case is the median of its writes."""
    from asides import PassthroughStrategy, open_runtime, text

    out: dict[str, Any] = {}
    async with open_runtime(path) as runtime:
        host = await runtime.open_manager("agents/host", strategy=PassthroughStrategy())
        first = await runtime.open_manager("agents/w-0", strategy=PassthroughStrategy(), view_reader="w-0")
        await first.compile()
        out["messages"] = runtime.store.length("main")
        times: dict[str, list[float]] = {"one": [], "many": []}
        written = 0
        for case in ("one", "many", "one", "many"):
            others = []
            if case == "many":
                for k in range(1, readers):
                    manager = await runtime.open_manager(f"agents/w-{k}", strategy=PassthroughStrategy(), view_reader=f"w-{k}")
                    await manager.compile()
                    others.append(manager)
            gc.collect()
            head = runtime.store.length("main")
            for k in range(rounds):
                i = head + k
                private = f"w-{written % readers}"
                written += 1
                blocks = [text(message_text(i)), text(f"for {private} only: {message_text(i + 1, 100)}", [private])]
                t0 = time.perf_counter()
                await host.add_message(participant(i), blocks)
                times[case].append(time.perf_counter() - t0)
            for manager in others:
                await manager.aclose()
        for case, taken in times.items():
            taken.sort()
            out[case] = {"median_s": taken[len(taken) // 2], "count": len(taken), "managers": 1 if case == "one" else readers}
        for manager in (host, first):
            await manager.aclose()
    return out


# -- the children: the peer (under asyncio) ---------------------------------------------------------


async def _peer_build(paths_and_sizes: list[str]) -> dict[str, Any]:
    """Every size's peer store in one process (``agents`` takes seconds to import): the seconds
    each took, by path."""
    from agents.memory import SQLiteSession

    from ._peer_libraries import item

    out: dict[str, Any] = {}
    for path, size in zip(paths_and_sizes[::2], map(int, paths_and_sizes[1::2]), strict=True):
        t0 = time.perf_counter()
        session = SQLiteSession("bench", path)
        try:
            for first in range(0, size, BUILD_BATCH):
                await session.add_items([item(i) for i in range(first, min(size, first + BUILD_BATCH))])  # type: ignore[misc]
        finally:
            session.close()
        out[path] = {"seconds": time.perf_counter() - t0}
    return out


async def _peer_open(path: str) -> dict[str, Any]:
    from agents.memory import SQLiteSession

    baseline = _baseline()
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    session = SQLiteSession("bench", path)
    items = await session.get_items(limit=PEER_LIMIT)
    out["seconds"] = time.perf_counter() - t0
    if len(items) != PEER_LIMIT:
        raise RuntimeError(f"get_items(limit={PEER_LIMIT}) gave {len(items)} items")
    del items
    _memory(out, baseline)
    session.close()
    return out


def child(argv: list[str]) -> None:
    """One command; prints one JSON line. ``build PATH N``, ``open PATH READER|-``,
    ``readers PATH K``, ``writes PATH add|compile ROUNDS``, ``peer-build PATH N [PATH N ...]``,
    ``peer-open PATH``."""
    import asyncio

    import trio

    command, path, *rest = argv
    if command == "build":
        out = trio.run(_build, path, int(rest[0]))
    elif command == "open":
        out = trio.run(_open, path, rest[0])
    elif command == "readers":
        out = trio.run(_readers, path, int(rest[0]))
    elif command == "writes":
        out = trio.run(_writes, path, rest[0], int(rest[1]))
    elif command == "reader-writes":
        out = trio.run(_reader_writes, path, int(rest[0]), int(rest[1]))
    elif command == "peer-build":
        out = asyncio.run(_peer_build([path, *rest]))
    elif command == "peer-open":
        out = asyncio.run(_peer_open(path))
    else:
        raise SystemExit(f"unknown child command {command!r}")
    print(json.dumps(out))


def _run_child(*args: str, module: str = "benchmarks.history") -> dict[str, Any]:
    """A child's JSON answer, or ``{"error": ...}`` if it failed (killed for memory, say): a
    failed measurement is printed as failed, not the end of the part. ``module`` is the part
    whose ``--child`` runs it (the search part's children are its own)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = [sys.executable, "-m", module, "--child", *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=root)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        why = f"killed by signal {-done.returncode}" if done.returncode < 0 else last
        progress(f"child {args[0]} failed: {why}")
        return {"error": why[:80]}
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the parent ---------------------------------------------------------------------------------------


def _run_children(jobs: Sequence[tuple[str, ...]], at_once: int = 2) -> list[dict[str, Any]]:
    """The answers of the children ``jobs`` (each ``_run_child``'s arguments), run ``at_once`` at
    a time, in the order given: builds, which nothing is timed beside."""
    with ThreadPoolExecutor(max_workers=at_once) as pool:
        return list(pool.map(lambda job: _run_child(*job), jobs))


def measure(sizes: Sequence[int]) -> dict[int, dict[str, dict[str, Any]]]:
    """Every measurement at every size, each in a fresh child process. The stores are built
    first, two at a time (the largest first), then measured one process at a time."""
    results: dict[int, dict[str, dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="asides-history-") as directory:
        peer_paths = {size: os.path.join(directory, f"agents-{size}.db") for size in sizes}
        paths = {size: os.path.join(directory, f"store-{size}.db") for size in sizes}
        shown = ", ".join(f"{size:,}" for size in sizes)
        progress(f"building stores of {shown} messages and SQLiteSession stores of as many items, two at a time")
        descending = sorted(sizes, reverse=True)
        peer_build = ("peer-build", *(str(x) for size in sizes for x in (peer_paths[size], size)))
        built, *answers = _run_children([peer_build, *(("build", paths[size], str(size)) for size in descending)])
        builds = dict(zip(descending, answers, strict=True))
        for size in sizes:
            path = paths[size]
            peer_path = peer_paths[size]
            r: dict[str, dict[str, Any]] = {"peer_build": built.get(peer_path, built)}
            r["build"] = builds[size]
            if "error" not in r["build"]:
                progress(f"{size:,}: open, no reader")
                r["plain"] = _run_child("open", path, "-")
                progress(f"{size:,}: open, reader {READER}")
                r["reader"] = _run_child("open", path, READER)
                progress(f"{size:,}: {READERS} reader managers")
                r["readers"] = _run_child("readers", path, str(READERS))
                progress(f"{size:,}: {ADDS} add_message")
                r["add"] = _run_child("writes", path, "add", str(ADDS))
                progress(f"{size:,}: {COMPILES} compiles after one new message")
                r["compile"] = _run_child("writes", path, "compile", str(COMPILES))
                progress(f"{size:,}: writes with a private line, 1 and {WRITE_READERS} reader managers open, alternated")
                r["w1"], r["wmany"] = _split(_run_child("reader-writes", path, str(WRITE_READERS), str(ADDS // 2)))
            _remove(path)
            if "error" not in r["peer_build"]:
                progress(f"{size:,}: SQLiteSession open + get_items(limit={PEER_LIMIT})")
                r["peer"] = _run_child("peer-open", peer_path)
            _remove(peer_path)
            results[size] = r
    return results


def _split(found: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The reader-writes child's two cases, each as its own measurement."""
    if "error" in found:
        return found, found
    return tuple({"messages": found["messages"], "mean_s": found[case]["median_s"], **found[case]} for case in ("one", "many"))  # type: ignore[return-value]


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)


def _get(r: dict[str, dict[str, Any]], case: str, key: str) -> float | None:
    value = r.get(case, {}).get(key)
    return None if value is None else float(value)


def _mb(kib: float | None) -> str:
    return "-" if kib is None else f"{kib / 1024:.0f} MB" if kib >= 10 * 1024 else f"{kib / 1024:.1f} MB"


def _time(seconds: float | None) -> str:
    return "-" if seconds is None else duration(seconds)


def _failed(r: dict[str, dict[str, Any]], case: str) -> str | None:
    if case not in r:
        return "not run (no store)"
    error = r[case].get("error")
    return None if error is None else f"failed: {error}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else ratio(a, b)


def report_size(size: int, r: dict[str, dict[str, Any]]) -> None:
    """One table for one size."""
    build = _get(r, "build", "seconds")
    peer_build = _get(r, "peer_build", "seconds")
    print(
        f"{count(size)} messages (store built in {_time(build) if build is not None else _failed(r, 'build')}, "
        f"indexed for search in {_time(_get(r, 'build', 'index_s'))}; "
        f"SQLiteSession built through add_items in {_time(peer_build) if peer_build is not None else _failed(r, 'peer_build')})"
    )
    headers = ["case", "messages", "wall time", "of it: open_runtime", "1st compile(s)", "RSS growth", "peak growth"]
    cases = [
        ("plain", "asides open_runtime + open_manager + 1st compile, no reader", "seconds"),
        ("reader", f"asides open_runtime + open_manager + 1st compile, reader {READER}", "seconds"),
        ("readers", f"asides {READERS} reader managers, each compiled once", "seconds"),
        ("add", f"asides add_message (mean of {ADDS}, after the open)", "mean_s"),
        ("compile", f"asides compile after one new message (mean of {COMPILES})", "mean_s"),
        ("w1", f"asides add_message with a private line, 1 reader manager open (median of {ADDS})", "mean_s"),
        ("wmany", f"the same, {WRITE_READERS} reader managers open", "mean_s"),
        ("peer", f"SQLiteSession open + get_items(limit={PEER_LIMIT}), newest {PEER_LIMIT} read", "seconds"),
    ]
    rows = []
    for case, name, key in cases:
        failed = _failed(r, case)
        if failed is not None:
            rows.append([name, "-", failed, "-", "-", "-", "-"])
            continue
        m = r[case]
        n = size if case == "peer" else m.get("messages")
        rows.append(
            [
                name,
                f"{n:,}" if n is not None else "-",
                _time(m[key]),
                _time(m.get("open_runtime_s")),
                _time(m.get("compile_s")),
                _mb(m.get("rss_kib")),
                _mb(m.get("peak_kib")),
            ]
        )
    rows.append(
        [
            f"asides (reader {READER}) ÷ SQLiteSession",
            "",
            _ratio(_get(r, "reader", "seconds"), _get(r, "peer", "seconds")),
            "",
            "",
            _ratio(_get(r, "reader", "rss_kib"), _get(r, "peer", "rss_kib")),
            "",
        ]
    )
    rows.append(
        [
            f"{READERS} readers ÷ one reader (reader {READER})",
            "",
            "",
            "",
            "",
            _ratio(_get(r, "readers", "rss_kib"), _get(r, "reader", "rss_kib")),
            "",
        ]
    )
    print_table(headers, rows)
    print()


def report(results: dict[int, dict[str, dict[str, Any]]], python_s: float) -> list[Goal]:
    """The tables, the ratios between sizes, and the goals judged on them."""
    for size, r in results.items():
        report_size(size, r)
    sizes = list(results)
    small, large = sizes[0], sizes[-1]
    quantities = [
        ("open + 1st compile, reader (time)", "reader", "seconds", _time),
        ("of it: 1st compile, reader (time)", "reader", "compile_s", _time),
        ("open + 1st compile, no reader (time)", "plain", "seconds", _time),
        ("open + 1st compile, reader (RSS growth)", "reader", "rss_kib", _mb),
        (f"{READERS} reader managers (RSS growth)", "readers", "rss_kib", _mb),
        ("add_message (mean)", "add", "mean_s", _time),
        ("compile after one new message (mean)", "compile", "mean_s", _time),
        (f"add_message, {WRITE_READERS} reader managers open", "wmany", "mean_s", _time),
        ("SQLiteSession open + read 100 (time)", "peer", "seconds", _time),
    ]
    headers = ["growth", *(count(s) for s in sizes), *(f"{count(b)} ÷ {count(a)}" for a, b in zip(sizes, sizes[1:], strict=False))]
    if len(sizes) > 2:
        headers.append(f"{count(large)} ÷ {count(small)}")
    rows = []
    for name, case, key, show in quantities:
        values = [_get(results[s], case, key) for s in sizes]
        row = [name, *(show(v) for v in values), *(_ratio(b, a) for a, b in zip(values, values[1:], strict=False))]
        if len(sizes) > 2:
            row.append(_ratio(values[-1], values[0]))
        rows.append(row)
    print_table(headers, rows)
    print(
        "RSS growth = VmRSS after a collection minus VmRSS after importing asides (agents for SQLiteSession),\n"
        "in a fresh process; peak = VmHWM minus the same baseline. A compile has the default budget (100,000\n"
        "tokens): the newest messages, not the whole history."
    )
    print()
    return goals(results, python_s)


def goals(results: dict[int, dict[str, dict[str, Any]]], python_s: float) -> list[Goal]:
    sizes = list(results)
    small, large = sizes[0], sizes[-1]
    big = results[large]
    limit_s = OPEN_GOAL_S_PER_10_US * (python_s * 1e6 / 10)
    out: list[Goal] = []

    def judged(goal: str, value: float | None, limit: float, shown: str) -> None:
        out.append(Goal(goal, shown if value is not None else "(failed)", None if value is None else value < limit))

    open_s = _get(big, "reader", "seconds")
    judged(
        f"open + 1st compile @{count(large)} < {limit_s:.2f} s (1 s × {python_s * 1e6:.1f} µs ÷ 10 µs)",
        open_s,
        limit_s,
        _time(open_s),
    )
    rss = _get(big, "reader", "rss_kib")
    judged(f"resident growth @{count(large)} < {RSS_GOAL_MB:.0f} MB", None if rss is None else rss / 1024, RSS_GOAL_MB, _mb(rss))
    span = f"{count(large)} ÷ {count(small)}"
    for what, case, key, limit in (
        ("open + 1st compile time", "reader", "seconds", OPEN_GROWTH),
        ("resident growth", "reader", "rss_kib", RSS_GROWTH),
        ("compile after one new message", "compile", "mean_s", COMPILE_GROWTH),
    ):
        a, b = _get(results[small], case, key), _get(big, case, key)
        value = None if a is None or b is None or a <= 0 else b / a
        out.append(
            Goal(
                f"{what}, {span} ≤ {limit:g}×",
                "(failed)" if value is None else f"{value:.2f}×",
                None if value is None or len(sizes) < 2 else value <= limit,
            )
        )
    one_w, many_w = _get(big, "w1", "mean_s"), _get(big, "wmany", "mean_s")
    out.append(
        _ratio_goal(
            f"add_message @{count(large)}, {WRITE_READERS} reader managers open ≤ {WRITE_READERS_GOAL:g}× with one",
            many_w,
            one_w,
            WRITE_READERS_GOAL,
            _time,
        )
    )
    for size, r in results.items():
        one, many = _get(r, "reader", "rss_kib"), _get(r, "readers", "rss_kib")
        out.append(
            _ratio_goal(f"{READERS} readers @{count(size)} ≤ {READERS_GOAL:g}× one reader's resident growth", many, one, READERS_GOAL, _mb)
        )
    return out


def _ratio_goal(goal: str, many: float | None, one: float | None, limit: float, show: Callable[[float | None], str]) -> Goal:
    """The goal that ``many`` is at most ``limit`` times ``one``, both shown."""
    value = None if one is None or many is None or one <= 0 else many / one
    shown = "(failed)" if value is None else f"{value:.2f}× ({show(many)} vs {show(one)})"
    return Goal(goal, shown, None if value is None else value <= limit)


def run(quick: bool, sizes: Sequence[int] | None = None) -> dict[int, dict[str, dict[str, Any]]]:
    """``sizes`` (ascending) overrides the mode's (the tests run tiny ones)."""
    chosen = tuple(sizes) if sizes is not None else QUICK_SIZES if quick else FULL_SIZES
    mode = "quick" if quick else "full"
    started = time.perf_counter()
    section(f"A long history ({mode}: {', '.join(count(s) for s in chosen)} messages; issue 33, item 6)")
    python_s = python_speed()
    print(f"sum(range(1000)) on this machine: {python_s * 1e6:.2f} µs (best of 5)")
    print()
    sys.stdout.flush()
    results = measure(chosen)
    report_goals = report(results, python_s)
    print_goals("Goals (issue 33, item 6)", report_goals)
    print(f"history part: {time.perf_counter() - started:.0f} s")
    return results


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        run("--quick" in sys.argv)
