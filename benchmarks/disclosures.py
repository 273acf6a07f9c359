"""``python -m benchmarks disclosures``: what recording disclosures costs (issue 23).

Two stores of 20,000 messages (300 bytes each), one runtime recording disclosures (the default)
and one with ``record_disclosures=False``, each with a passthrough manager. Both take a first
compile of the whole history (the recording one writes one record naming 20,000 ids, as runs).
Then, in alternating blocks: append one message, then time a passthrough compile of the whole
history (the compile alone). Goals: the recording arm's median compile at most 5% above the
other's; a few bytes per newly disclosed message (the record's body bytes over the messages it
names; a record after one new message names one).
"""

from __future__ import annotations

import os
import tempfile
import time

import trio

from ._common import Goal, interleave, message_text, participant, print_goals, print_table, ratio

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
    print_goals(
        "Goals (issue 23)",
        [
            Goal(
                "recording costs at most 5% on a passthrough compile at 20k",
                f"{overhead * 100:+.1f}% ({ratio(on.median, off.median)})",
                overhead <= 0.05,
            ),
            Goal("a few bytes per newly disclosed message (bulk)", f"{per_first:.3f} bytes a message", per_first <= 8),
        ],
    )
