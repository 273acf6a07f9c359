"""``python -m benchmarks disclosures``: what recording disclosures costs (issue 23).

Two stores of 20,000 messages (300 bytes each), one runtime recording disclosures (the default)
and one with ``record_disclosures=False``, each with a passthrough manager. Both take a first
compile of the whole history (the recording one writes one record naming 20,000 ids, as runs).
Then, in alternating blocks: append one message, then time a passthrough compile of the whole
history (the compile alone). Goals: the recording arm's median compile at most 5% above the
other's; a few bytes per newly disclosed message (the record's body bytes over the messages it
names; a record after one new message names one).

Then what an open pays for the records: store files of N messages with one disclosure record
each (what a manager that compiled after every message leaves: ``Store.record_disclosure``, one
new id each), at two sizes (20,000 and 200,000 quick; 100,000 and 1,000,000 full), each opened
by ``open_runtime`` in a fresh process (``--child open PATH``, three times; the median is
shown): the time, the resident memory it added, and what it read. Goal: the open at the larger
size within 1.5× of the smaller's.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import trio

from ._common import Goal, interleave, message_text, participant, print_goals, print_table, progress, ratio
from .history import _baseline, _memory, _remove, _run_child

FULL = {"max_tokens": 100_000_000, "reserve_for_response": 0}


async def _build(rt: object, n: int) -> None:
    from asides.actors._runtime import internal_store  # the store below the actors, on purpose
    from asides.store import text

    store = internal_store(rt)

    for start in range(0, n, 2000):
        await store.append_messages("main", [(participant(i), (text(message_text(i)),), None) for i in range(start, min(n, start + 2000))])


def _disclosure_bytes(records: list[tuple[int, str, int, str, str | None, str]]) -> list[int]:
    return [len(body.encode()) for _id, _b, _s, kind, _r, body in records if kind == "disclosure"]


async def measure(n: int, rounds: int, budget_s: float) -> dict[str, object]:
    from asides import PassthroughStrategy, open_runtime, text

    with tempfile.TemporaryDirectory() as folder:
        async with (
            open_runtime(os.path.join(folder, "on.db")) as on,
            open_runtime(os.path.join(folder, "off.db"), record_disclosures=False) as off,
        ):
            managers = {}
            for name, rt in (("recording", on), ("not recording", off)):
                await _build(rt, n)
                managers[name] = await rt.open_manager("bench", strategy=PassthroughStrategy())
                await managers[name].compile(**FULL)  # the first compile: everything is new
            first = _disclosure_bytes(await on.store.records())
            counter = [n]

            def series(name: str):  # type: ignore[no-untyped-def]
                manager = managers[name]

                async def one(_i: int) -> float:
                    counter[0] += 1
                    await manager.add_message(participant(counter[0]), [text(message_text(counter[0]))])
                    started = time.perf_counter()
                    await manager.compile(**FULL)
                    return time.perf_counter() - started

                return one

            stats = await interleave({name: series(name) for name in managers}, rounds, budget_s, block=5)
            later = _disclosure_bytes(await on.store.records())[len(first) :]
    return {"first": first, "later": later, "stats": stats, "n": n}


async def _build_compiled(path: str, n: int) -> dict[str, Any]:
    """``n`` messages, then one disclosure record for each, naming it alone."""
    from asides.lowlevel import open_store
    from asides.store import text

    started = time.perf_counter()
    async with open_store(path) as store:
        ids: list[str] = []
        for start in range(0, n, 10_000):
            batch = range(start, min(n, start + 10_000))
            written = await store.append_messages("main", [(participant(i), (text(message_text(i)),), None) for i in batch])
            ids.extend(m.id for m in written)
        for message_id in ids:
            await store.record_disclosure("bench", "ann", "main", "compile", [message_id])
    return {"seconds": time.perf_counter() - started}


async def _open(path: str) -> dict[str, Any]:
    from asides import open_runtime

    baseline = _baseline()
    started = time.perf_counter()
    async with open_runtime(path) as runtime:
        out: dict[str, Any] = {"seconds": time.perf_counter() - started}
        opened = runtime.store.statistics()
        out["records"] = opened.records_read_at_open
        out["runs"] = opened.disclosed_runs_read_at_open
        out["kept"] = opened.disclosure_records_in_memory
        _memory(out, baseline)
    return out


def child(argv: list[str]) -> None:
    """``build PATH N`` or ``open PATH``, in a fresh process; prints a JSON answer."""
    command, path, *rest = argv
    out = trio.run(_build_compiled, path, int(rest[0])) if command == "build" else trio.run(_open, path)
    print(json.dumps(out))


def measure_opens(sizes: tuple[int, int]) -> dict[int, dict[str, Any]]:
    """The opens of a store of each size, each in a fresh process (the first writing open makes
    what the store lacks; it is not timed)."""
    found: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="asides-disclosures-") as directory:
        for n in sizes:
            path = os.path.join(directory, f"compiled-{n}.db")
            progress(f"building {n:,} messages with a disclosure record each")
            built = _run_child("build", path, str(n), module="benchmarks.disclosures")
            opens = [_run_child("open", path, module="benchmarks.disclosures") for _ in range(3)]
            good = [o for o in opens if "error" not in o]
            found[n] = {"build": built, "opens": good, "error": None if good else opens[0].get("error")}
            _remove(path)
    return found


def _median(opens: list[dict[str, Any]], key: str) -> float:
    return statistics.median(o[key] for o in opens)


def report_opens(found: dict[int, dict[str, Any]]) -> Goal:
    rows = []
    for n, r in found.items():
        if not r["opens"]:
            rows.append([f"{n:,}", f"failed: {r['error']}", "", ""])
            continue
        opens = r["opens"]
        rows.append([
            f"{n:,}",
            f"{_median(opens, 'seconds') * 1000:.0f} ms",
            f"{_median(opens, 'rss_kib') / 1024:.1f} MB",
            f"{opens[-1]['records']:,} records, {opens[-1]['runs']:,} rows of runs; {opens[-1]['kept']:,} records kept",
        ])
    print_table(["messages, a disclosure record each", "open_runtime (median of 3)", "resident memory added", "what the open read"], rows)
    small, large = sorted(found)
    if not found[small]["opens"] or not found[large]["opens"]:
        return Goal(f"open at {large:,} within 1.5× of {small:,}", "failed", False)
    first, second = _median(found[small]["opens"], "seconds"), _median(found[large]["opens"], "seconds")
    return Goal(f"open at {large:,} within 1.5× of {small:,} (a disclosure record each)", ratio(second, first), second <= 1.5 * first)


def run(quick: bool) -> None:
    print("\nDisclosures\n===========")
    n = 20_000
    result = trio.run(measure, n, 60 if quick else 400, 30.0 if quick else 240.0)
    stats = result["stats"]
    on, off = stats["recording"], stats["not recording"]  # type: ignore[index]
    first, later = result["first"], result["later"]
    print_table(
        ["passthrough compile of 20k, after one new message", "median (p90, n)"],
        [["recording disclosures", on.cell()], ["record_disclosures=False", off.cell()]],
    )
    overhead = on.median / off.median - 1 if off.median else 0.0
    per_first = sum(first) / n  # type: ignore[arg-type]
    per_later = sum(later) / max(1, len(later))  # type: ignore[arg-type]
    print(
        f"first compile: {len(first)} record(s), {sum(first)} body bytes for {n} messages ({per_first:.3f} bytes a message); "  # type: ignore[arg-type]
        f"each later compile: one record of {per_later:.0f} body bytes naming its one new message "
        f"(a row also holds its id, kind and sequence: about 20 bytes more in SQLite)"
    )
    opens_goal = report_opens(measure_opens((20_000, 200_000) if quick else (100_000, 1_000_000)))
    print_goals(
        "Goals (issue 23)",
        [
            Goal(
                "recording costs at most 5% on a passthrough compile at 20k",
                f"{overhead * 100:+.1f}% ({ratio(on.median, off.median)})",
                overhead <= 0.05,
            ),
            Goal("a few bytes per newly disclosed message (bulk)", f"{per_first:.3f} bytes a message", per_first <= 8),
            opens_goal,
        ],
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
    else:
        run("--quick" in sys.argv)
