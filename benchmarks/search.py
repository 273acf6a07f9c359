"""Search (docs/search.md): ``ContextManager.search`` at 100,000 and 1,000,000 messages against a
scan of the reader's view, the background build of the index for a store made before it, and
what the index costs a write.

    python -m benchmarks search [--quick]      (--quick: 50,000 and 500,000 messages)

At each size N, in a temporary directory, each step in a fresh child process:

1. *build*: N messages of 300 bytes of text, ``user`` and ``assistant`` alternating, through
   ``asides.lowlevel.open_store`` and ``store.append_messages`` in batches of 50,000 (as the
   history part builds its stores). Every 100th message also holds a line private to another
   reader, ``bob`` (100 bytes), which the searching reader ``ann`` never sees. The rare word
   ``zephyr`` ends the text of message 7 and of every 50,000th after it (2 messages at 100k, 20
   at 1M, all seen by ann), and also ends bob's private line in message 25,000 and every
   50,000th after it (candidates the index finds and ann's view must turn down). The store is
   written **with no index**: a private switch in this child (``SqliteJournal.prepare_index``
   replaced by its ``read_index_state``) makes no index tables, so the store is exactly one made
   before the index, what ``_drop_index`` in tests/actors/test_search.py makes by dropping them.
2. *index build* (goal 2): ``open_runtime(path)``, a writing open, creates the empty index and
   its indexer builds it from the first record in the background. Meanwhile a writer task calls
   ``add_message`` (300 bytes, a manager with no reader) every 50 ms, each timed, until the
   indexer has caught up (fewer than 200 records waiting); then the same writer makes 100 more
   timed writes, at the same pace, with no build running. A heartbeat task (a 2 ms sleep in a
   loop) records how late the event loop wakes it, and each indexer statement is timed (the
   driver's ``execute`` wrapped, benchmark-only). *One commit* is the median of the writes with
   no build running: a lone ``add_message`` commits its one record in one statement (store
   file, ``synchronous=NORMAL``), so its wall time is one commit plus the manager's bookkeeping,
   and a write made to wait for one other commit of the same size takes about twice as long. So
   "never delayed by more than one commit" is judged as: the slowest write during the build
   (and its 99th percentile) at most 2 × that median.
3. *search* (goal 1): ``open_runtime`` + ``open_manager("agents/ann", view_reader="ann")``; the
   index has caught up (step 2). Two queries: **rare** (``zephyr``: a handful of hits) and
   **common-ish** (``deploy 421``: about one message in 80). The first search of each is timed
   alone (cold), then both are searched in alternation (``limit=10``, the default): median and
   90th percentile. Then the *scan*: iterate ``manager.view_messages()`` and keep each message
   whose visible text (its text blocks) holds every query word (the index's words: runs of
   letters and digits, case-folded), as a host without an index would. Its hits are checked
   against ``search(query, limit=1000)``.
4. *writes* (goal 3, at the largest size only): ``add_message`` through the ``ann`` manager,
   without the index and with it, in alternating fresh processes. *Without* is a private switch
   of this benchmark only: ``SqliteJournal._indexed`` set to False at the open (right after
   ``prepare_index``), so ``serving()`` starts no indexer, which is all the index adds to a
   write (the index tables stay, untouched; a store file's write path is otherwise the same).
   *With*: the child waits for the indexer to catch up, then writes (untimed) until the indexer
   has just run, so nothing waits for it; then it times 2,000 writes and goes on writing (timed,
   counted) until the indexer has run after the last of them, so the window ends as it began and
   holds the indexing of every record written in it (printed: indexed of written). The cost per
   write is the window's wall time ÷ the writes in it: the writer waits for the indexer's
   statements, which run on the same connection between two commits. *Without* warms up with 200
   untimed writes and times 2,000.

The goals, judged in this one run: a search at the larger size within 2× a search at the
smaller, and at least 20× faster than the scan at the larger (each for both queries: the
common-ish one reads about one message in 80 through the view, so its cost grows with N by
design, docs/search.md "Costs"); the slowest write during the build at the larger size within 2×
one commit, and its p99 too; a write with the index within 1.3× one without.

The full part measures 100,000 and 1,000,000 messages (304 s on a busy 2-core machine, load 3:
the 1M store's build, its index's build and four scans of it take most of it), 50 searches of
each query, 2 scans of each, 3 pairs of write processes. ``--quick`` measures 50,000 and 500,000
messages (the same tenfold step; at 100k and 1M it took 177 s), 10 searches, 1 scan of each
query and 1 pair of write processes: 106 s at load 3.
"""

from __future__ import annotations

import gc
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import attrs

from ._common import Goal, count, duration, interleave, message_text, participant, print_goals, print_table, progress, ratio, section
from .history import BUILD_BATCH, _remove, _run_child

READER = "ann"
OTHER = "bob"
PRIVATE_EVERY = 100
RARE = "zephyr"
RARE_EVERY = 50_000
RARE_AT = 7  # ann sees it in messages 7, 50,007, ...
RARE_HIDDEN_AT = 25_000  # and bob's line holds it in 25,000, 75,000, ...
QUERIES = {"rare": RARE, "common-ish": "deploy 421"}

#: The goals.
SEARCH_GROWTH = 2.0  # a search at 1M ≤ 2× one at 100k
SCAN_SPEEDUP = 20.0  # and ≥ 20× faster than a scan of the view
WRITE_DELAY = 2.0  # a write during the build ≤ one commit late: ≤ 2× one commit
WRITE_COST = 1.3  # a write with the index ≤ 1.3× one without


@attrs.frozen
class SearchSettings:
    sizes: tuple[int, ...] = (100_000, 1_000_000)
    searches: int = 50  # of each query, after the first
    budget_s: float = 30.0  # for the searches of one size
    scans: int = 2  # of each query
    interval_s: float = 0.05  # between two writes during the build
    idle_writes: int = 100  # after the build
    writes: int = 2000  # in each write process (a multiple of 200: the indexer runs every 200)
    pairs: int = 3  # of write processes, without and with the index


#: Quick: 50,000 and 500,000 messages (the same tenfold step; 100,000 and 1,000,000 take three
#: minutes even with one scan, most of it building and scanning the 1M store).
QUICK = SearchSettings(sizes=(50_000, 500_000), searches=10, budget_s=10.0, scans=1, pairs=1)
FULL = SearchSettings()


def blocks_of(i: int) -> tuple[Any, ...]:
    """Message ``i``'s blocks: 300 bytes of text, the rare word ending it in every 50,000th; every
    100th also a line private to bob, the rare word ending it in every 50,000th."""
    from asides import text

    body = message_text(i)
    if i % RARE_EVERY == RARE_AT:
        body = body[: len(body) - len(RARE) - 1] + " " + RARE
    if i % PRIVATE_EVERY != 0:
        return (text(body),)
    private = f"for {OTHER} only: {message_text(i + 1, 100)}"
    if i % RARE_EVERY == RARE_HIDDEN_AT:
        private += " " + RARE
    return (text(body), text(private, [OTHER]))


def rare_hits(size: int) -> int:
    """How many messages of ``size`` hold the rare word for ann."""
    return len(range(RARE_AT, size, RARE_EVERY))


# -- benchmark-only switches on the store file's journal ------------------------------------------


def switch_index(mode: str, statements: list[float] | None = None) -> list[Any]:
    """Patch ``SqliteJournal.prepare_index`` for this process (private, benchmark only) and return
    a list that will hold each journal opened for writing. ``on``: as the library does (with
    ``statements``, each indexer statement's duration is appended to it); ``off``: the index
    tables are made or kept but ``_indexed`` is False, so no indexer runs; ``none``: no index
    tables are made (a store as one made before the index)."""
    from asides.store._sqlite import SqliteJournal

    original = SqliteJournal.prepare_index
    opened: list[Any] = []

    async def prepare_index(self: Any) -> None:
        opened.append(self)
        if mode == "none":
            await self.read_index_state()
            return
        await original(self)
        if mode == "off":
            self._indexed = False
        elif statements is not None:
            execute = self._driver.execute

            async def timed(sql: str, params: Sequence[Any] = ()) -> Any:
                if not sql.startswith("INSERT INTO search "):
                    return await execute(sql, params)
                t0 = time.perf_counter()
                try:
                    return await execute(sql, params)
                finally:
                    statements.append(time.perf_counter() - t0)

            self._driver.execute = timed

    SqliteJournal.prepare_index = prepare_index  # type: ignore[method-assign]
    return opened


def waiting(journal: Any) -> int:
    """Records the journal's indexer has not reached."""
    return int(journal._model.next_id - journal._index_reached)


async def caught_up(journal: Any) -> float:
    """Wait until the indexer is idle (fewer than a batch's trigger waiting); the seconds waited."""
    import trio

    from asides.store._search import INDEX_EVERY

    t0 = time.perf_counter()
    while waiting(journal) >= INDEX_EVERY:
        await trio.sleep(0.001)
    return time.perf_counter() - t0


def _series(seconds: Sequence[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    if not ordered:
        return {"count": 0}
    return {
        "count": len(ordered),
        "median": ordered[len(ordered) // 2],
        "p99": ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))],
        "max": ordered[-1],
        "mean": sum(ordered) / len(ordered),
    }


# -- the children (under Trio) -------------------------------------------------------------------------


async def _build(path: str, size: int) -> dict[str, Any]:
    from asides.lowlevel import open_store

    switch_index("none")
    t0 = time.perf_counter()
    async with open_store(path) as store:
        for first in range(0, size, BUILD_BATCH):
            batch = range(first, min(size, first + BUILD_BATCH))
            await store.append_messages("main", [(participant(i), blocks_of(i), None) for i in batch])
    return {"seconds": time.perf_counter() - t0}


async def _index(path: str, interval_s: float, idle_writes: int) -> dict[str, Any]:
    """Goal 2: the background build of the index, with a paced writer timing each write."""
    import trio

    from asides import PassthroughStrategy, open_runtime, text

    statements: list[float] = []
    opened = switch_index("on", statements)
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    async with open_runtime(path) as runtime:
        journal = opened[0]
        out["open_s"] = time.perf_counter() - t0
        host = await runtime.open_manager("host", strategy=PassthroughStrategy())
        out["messages"] = runtime.store.length("main")
        out["records"] = journal._model.next_id - 1
        stalls: list[float] = []
        done = trio.Event()

        async def heartbeat() -> None:
            while not done.is_set():
                t = time.perf_counter()
                await trio.sleep(0.002)
                stalls.append(time.perf_counter() - t - 0.002)

        async def write(i: int) -> float:
            await trio.sleep(interval_s)
            t = time.perf_counter()
            await host.add_message(participant(i), [text(message_text(i))])
            return time.perf_counter() - t

        during: list[float] = []
        idle: list[float] = []
        i = out["messages"]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(heartbeat)
            from asides.store._search import INDEX_EVERY

            while waiting(journal) >= INDEX_EVERY:
                during.append(await write(i))
                i += 1
            out["build_s"] = time.perf_counter() - t0 - out["open_s"]
            out["stall_build_s"] = max(stalls, default=0.0)
            stalls.clear()
            out["statements"] = _series(statements)
            for _ in range(idle_writes):
                idle.append(await write(i))
                i += 1
            out["stall_idle_s"] = max(stalls, default=0.0)
            done.set()
        out["during"] = _series(during)
        out["idle"] = _series(idle)
        await host.aclose()
    return out


def scan(manager: Any, words: Sequence[str]) -> list[str]:
    """What a host without an index does: every message of the reader's view, its visible text
    tested for every word. The ids of the messages that hold them all."""
    from asides import TextBlock

    word = re.compile(r"[^\W_]+")
    found = []
    for message in manager.view_messages():
        visible = "\n".join(block.text for block in message.content if isinstance(block, TextBlock))
        present = set(word.findall(visible.casefold()))
        if all(w in present for w in words):
            found.append(message.id)
    return found


async def _search(path: str, searches: int, budget_s: float, scans: int) -> dict[str, Any]:
    """Goal 1: searches of both queries, then scans of the view for them, in one process."""
    from asides import PassthroughStrategy, open_runtime
    from asides.store._search import query_words

    opened = switch_index("on")
    out: dict[str, Any] = {}
    async with open_runtime(path) as runtime:
        journal = opened[0]
        manager = await runtime.open_manager(f"agents/{READER}", strategy=PassthroughStrategy(), view_reader=READER)
        out["waited_s"] = await caught_up(journal)
        out["messages"] = runtime.store.length("main")
        out["unindexed"] = waiting(journal)
        gc.collect()
        for name, query in QUERIES.items():
            t = time.perf_counter()
            hits = await manager.search(query)
            out[f"{name}_first_s"] = time.perf_counter() - t
            out[f"{name}_returned"] = len(hits)

        def one(query: str) -> Any:
            async def round_(_i: int) -> float:
                t = time.perf_counter()
                await manager.search(query)
                return time.perf_counter() - t

            return round_

        stats = await interleave({name: one(query) for name, query in QUERIES.items()}, searches, budget_s, block=5)
        for name, query in QUERIES.items():
            out[f"{name}_search"] = attrs.asdict(stats[name])
            words = query_words(query)
            out[f"{name}_candidates"] = len((await journal.search_candidates(words)).ids)
            found = {hit.id for hit in await manager.search(query, limit=1000)}
            times = []
            for _ in range(scans):
                gc.collect()
                t = time.perf_counter()
                scanned = scan(manager, words)
                times.append(time.perf_counter() - t)
            out[f"{name}_scan"] = _series(times)
            out[f"{name}_hits"] = len(scanned)
            agree = found == set(scanned) if len(scanned) <= 1000 else len(found) == 1000 and found <= set(scanned)
            if not agree:
                raise RuntimeError(f"search({query!r}) found {len(found)} messages, the scan {len(scanned)}, not the same")
        await manager.aclose()
    return out


async def _writes(path: str, mode: str, writes: int) -> dict[str, Any]:
    """Goal 3: ``writes`` timed add_message calls, with the index (``on``) or without (``off``)."""
    import trio

    from asides import PassthroughStrategy, open_runtime, text
    from asides.store._search import INDEX_EVERY

    opened = switch_index(mode)
    out: dict[str, Any] = {"mode": mode}
    async with open_runtime(path) as runtime:
        journal = opened[0]
        manager = await runtime.open_manager(f"agents/{READER}", strategy=PassthroughStrategy(), view_reader=READER)
        i = runtime.store.length("main")
        out["messages"] = i
        if mode == "on":
            out["waited_s"] = await caught_up(journal)
        # Untimed: with the index, write until the indexer has just run (nothing waits for it
        # then); without it, as many writes as it takes to trigger it once, for the same warm-up.
        mark, warm = journal._index_reached, 0
        while warm < INDEX_EVERY if mode == "off" else journal._index_reached == mark:
            await manager.add_message(participant(i), [text(message_text(i))])
            i, warm = i + 1, warm + 1
            await trio.sleep(0)
        reached, head = journal._index_reached, journal._model.next_id
        gc.collect()
        # Timed: ``writes`` writes and, with the index, on until the indexer has run after the
        # last of them, so the window ends as it began (nothing waiting) and holds the indexing
        # of every write in it; the writes past ``writes`` are counted too.
        times: list[float] = []
        t0 = time.perf_counter()
        while True:
            t = time.perf_counter()
            await manager.add_message(participant(i), [text(message_text(i))])
            times.append(time.perf_counter() - t)
            i += 1
            if len(times) == writes:
                mark = journal._index_reached
            if len(times) >= writes and (mode == "off" or journal._index_reached != mark):
                break
        out["total_s"] = time.perf_counter() - t0
        out["written"] = journal._model.next_id - head
        out["indexed"] = journal._index_reached - reached
        out["add"] = _series(times)
        await manager.aclose()
    return out


def child(argv: list[str]) -> None:
    """One command; prints one JSON line. ``build PATH N``, ``index PATH INTERVAL IDLE``,
    ``search PATH SEARCHES BUDGET SCANS``, ``writes PATH on|off WRITES``."""
    import json

    import trio

    command, path, *rest = argv
    if command == "build":
        out = trio.run(_build, path, int(rest[0]))
    elif command == "index":
        out = trio.run(_index, path, float(rest[0]), int(rest[1]))
    elif command == "search":
        out = trio.run(_search, path, int(rest[0]), float(rest[1]), int(rest[2]))
    elif command == "writes":
        out = trio.run(_writes, path, rest[0], int(rest[1]))
    else:
        raise SystemExit(f"unknown child command {command!r}")
    print(json.dumps(out))


def _child(*args: str) -> dict[str, Any]:
    return _run_child(*args, module="benchmarks.search")


# -- the parent ---------------------------------------------------------------------------------------


def measure(settings: SearchSettings) -> dict[int, dict[str, Any]]:
    """Every step at every size, each in a fresh child process (see the module docstring)."""
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="asides-search-") as directory:
        for size in settings.sizes:
            path = os.path.join(directory, f"store-{size}.db")
            r: dict[str, Any] = {}
            progress(f"building {size:,} messages with no index")
            r["build"] = _child("build", path, str(size))
            if "error" not in r["build"]:
                progress(f"{size:,}: the index's background build, a write every {settings.interval_s * 1e3:.0f} ms")
                r["index"] = _child("index", path, str(settings.interval_s), str(settings.idle_writes))
                progress(f"{size:,}: searches and scans, reader {READER}")
                r["search"] = _child("search", path, str(settings.searches), str(settings.budget_s), str(settings.scans))
                if size == settings.sizes[-1]:
                    r["writes"] = []
                    for pair in range(settings.pairs):
                        for mode in ("off", "on"):
                            progress(f"{size:,}: {settings.writes} add_message, index {mode} ({pair + 1} of {settings.pairs})")
                            r["writes"].append(_child("writes", path, mode, str(settings.writes)))
            _remove(path)
            results[size] = r
    return results


def _time(seconds: float | None) -> str:
    return "-" if seconds is None else duration(seconds)


def _get(r: dict[str, Any], *keys: str) -> Any:
    value: Any = r
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _per_write(runs: Sequence[dict[str, Any]], mode: str) -> float | None:
    """Seconds per write over every process of ``mode``: their windows' wall time ÷ their writes."""
    done = [w for w in runs if w.get("mode") == mode and "error" not in w]
    if not done:
        return None
    return sum(w["total_s"] for w in done) / sum(w["add"]["count"] for w in done)


def report(results: dict[int, dict[str, Any]]) -> None:
    sizes = list(results)
    print(f"Stores: N messages of 300 bytes; every {PRIVATE_EVERY}th also a line for {OTHER} only; searched as {READER}.")
    for size in sizes:
        r = results[size]
        print(f"  {count(size)}: built with no index in {_time(_get(r, 'build', 'seconds')) if 'seconds' in r['build'] else r['build']}")
    print()

    print(f"Search (reader {READER}, limit=10) against a scan of {READER}'s view_messages()")
    headers = ["query", "messages", f"{READER}'s hits", "index candidates", "1st search", "search (median, p90)", "scan", "scan ÷ search"]
    rows = []
    for name, query in QUERIES.items():
        for size in sizes:
            s = results[size].get("search", {})
            if "error" in s or not s:
                rows.append([f"{name}: {query}", count(size), "-", "-", "-", s.get("error", "not run"), "-", "-"])
                continue
            searched, scanned = s[f"{name}_search"], s[f"{name}_scan"]
            rows.append(
                [
                    f"{name}: {query}",
                    f"{s['messages']:,}",
                    f"{s[f'{name}_hits']:,}",
                    f"{s[f'{name}_candidates']:,}",
                    _time(s[f"{name}_first_s"]),
                    f"{_time(searched['median'])} ({_time(searched['p90'])}, n={searched['count']})",
                    _time(scanned["median"]),
                    ratio(scanned["median"], searched["median"]),
                ]
            )
    print_table(headers, rows)
    print(
        "index candidates: messages some version of which holds every word, for any reader (bob's lines\n"
        "included); each is read through ann's view. The scan's hits are checked against search(limit=1000)."
    )
    print()

    print("The index's background build for a store made before it, with a paced writer (add_message, no reader)")
    headers = [
        "messages",
        "build",
        "indexer statements (median, max)",
        "writes during it",
        "median",
        "p99",
        "max",
        "one commit (median, no build)",
        "max ÷ one commit",
        "loop's longest stall",
    ]
    rows = []
    for size in sizes:
        x = results[size].get("index", {})
        if "error" in x or not x:
            rows.append([count(size), x.get("error", "not run"), *["-"] * 8])
            continue
        st, during, idle = x["statements"], x["during"], x["idle"]
        rows.append(
            [
                f"{x['messages']:,}",
                _time(x["build_s"]),
                f"{st['count']:,}: {_time(st.get('median'))}, {_time(st.get('max'))}",
                f"{during['count']:,}",
                _time(during.get("median")),
                _time(during.get("p99")),
                _time(during.get("max")),
                _time(idle.get("median")),
                ratio(during["max"], idle["median"]) if during["count"] else "-",
                f"{_time(x['stall_build_s'])} ({_time(x['stall_idle_s'])} after)",
            ]
        )
    print_table(headers, rows)
    print(
        "build: from the writing open's end until fewer than 200 records wait. One commit: the median of the\n"
        "same writer's add_message, same pace, once the build is done (a lone add_message is one commit of one\n"
        "record). The loop's longest stall: how late a 2 ms sleep woke, during the build (and after it)."
    )
    print()

    runs = results[sizes[-1]].get("writes", [])
    if runs:
        print(f"add_message at {count(sizes[-1])}, with the index and without it (private switch: SqliteJournal._indexed = False)")
        headers = ["process", "index", "writes", "per write (total ÷ writes)", "add_message median", "p99", "max", "indexed in the window"]
        rows = []
        for k, w in enumerate(runs):
            if "error" in w:
                rows.append([str(k + 1), "-", "-", w["error"], "-", "-", "-", "-"])
                continue
            rows.append(
                [
                    str(k + 1),
                    w["mode"],
                    f"{w['add']['count']:,}",
                    _time(w["total_s"] / w["add"]["count"]),
                    _time(w["add"]["median"]),
                    _time(w["add"]["p99"]),
                    _time(w["add"]["max"]),
                    f"{w['indexed']:,} of {w['written']:,} records" if w["mode"] == "on" else "-",
                ]
            )
        on, off = _per_write(runs, "on"), _per_write(runs, "off")
        rows.append(["with ÷ without", "", "", "-" if on is None or off is None else ratio(on, off), "", "", "", ""])
        print_table(headers, rows)
        print("per write: the process's timed writes and, with the index, the indexer's catching up after the last one.")
        print()


def goals(results: dict[int, dict[str, Any]]) -> list[Goal]:
    sizes = list(results)
    small, large = sizes[0], sizes[-1]
    span = f"{count(large)} ÷ {count(small)}"
    out: list[Goal] = []
    for name in QUERIES:
        a = _get(results[small], "search", f"{name}_search", "median")
        b = _get(results[large], "search", f"{name}_search", "median")
        value = None if a is None or b is None or a <= 0 else b / a
        out.append(
            Goal(
                f"search ({name}), {span} ≤ {SEARCH_GROWTH:g}×",
                "(failed)" if value is None else f"{value:.2f}× ({_time(b)} vs {_time(a)})",
                None if value is None or len(sizes) < 2 else value <= SEARCH_GROWTH,
            )
        )
    for name in QUERIES:
        b = _get(results[large], "search", f"{name}_search", "median")
        scanned = _get(results[large], "search", f"{name}_scan", "median")
        value = None if b is None or scanned is None or b <= 0 else scanned / b
        out.append(
            Goal(
                f"search ({name}) @{count(large)} ≥ {SCAN_SPEEDUP:g}× faster than the scan",
                "(failed)" if value is None else f"{value:.0f}× ({_time(scanned)} vs {_time(b)})",
                None if value is None else value >= SCAN_SPEEDUP,
            )
        )
    x = results[large].get("index", {})
    for which in ("max", "p99"):
        late = _get(x, "during", which)
        one = _get(x, "idle", "median")
        value = None if late is None or one is None or one <= 0 else late / one
        out.append(
            Goal(
                f"{'slowest' if which == 'max' else 'p99'} write during the build @{count(large)} ≤ {WRITE_DELAY:g}× one commit",
                "(failed)" if value is None else f"{value:.1f}× ({_time(late)} vs {_time(one)})",
                None if value is None else value <= WRITE_DELAY,
            )
        )
    on, off = _per_write(results[large].get("writes", []), "on"), _per_write(results[large].get("writes", []), "off")
    value = None if on is None or off is None or off <= 0 else on / off
    out.append(
        Goal(
            f"a write with the index @{count(large)} ≤ {WRITE_COST:g}× one without",
            "(failed)" if value is None else f"{value:.2f}× ({_time(on)} vs {_time(off)})",
            None if value is None else value <= WRITE_COST,
        )
    )
    return out


def run(quick: bool, settings: SearchSettings | None = None) -> dict[int, dict[str, Any]]:
    """``settings`` overrides the mode's (the tests run tiny ones)."""
    chosen = settings or (QUICK if quick else FULL)
    started = time.perf_counter()
    section(f"Search ({'quick' if quick else 'full'}: {', '.join(count(s) for s in chosen.sizes)} messages)")
    sys.stdout.flush()
    results = measure(chosen)
    report(results)
    print_goals("Goals (search)", goals(results))
    print(f"search part: {time.perf_counter() - started:.0f} s")
    return results


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        run("--quick" in sys.argv)
