"""Many tasks race to claim one namespace for different readers; one wins, the losers write nothing.

A simulation under Trio's ``MockClock`` (simulated time: the sleeps below take no real time).
``--tasks N`` tasks (default 20) each sleep a simulated delay, some of them equal, and then open
a manager of ``agents/shared`` for a reader of their own (``reader-<i>``). The first open claims
the namespace for its reader (one state write); every other open is refused with
``ReaderClaimError`` naming both readers, having written nothing (an open that
claims nothing writes nothing).

The script prints the simulated time of each open, the winner and each loser's error, then the
proof: the store holds exactly one reader record, the branch head rose by exactly one during the
race, and every state record in the store (dumped, then again after reopening the file) is the
winner's claim. It exits 1 if any of that fails.

Several tasks wake at the first instant, so the claim itself is a real race. Trio deliberately
picks the order of tasks that are ready at the same instant at random, so *which* of them wins
varies from run to run (the README's "Examples" shows one run's output); the times, the number
of winners (one) and the proof never do.

Run it: ``python examples/racing_opens.py [--tasks N]``. It uses a
temporary store file, no network and no model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import trio
import trio.testing

from asides import PassthroughStrategy, ReaderClaimError, open_runtime, text

NAMESPACE = "agents/shared"


def delay_of(task: int) -> float:
    """Simulated seconds task ``task`` waits before its open: 0.1 s to 0.5 s, five tasks a step."""
    return 0.1 * (1 + (task * 3) % 5)


async def race(path: str, tasks: int) -> bool:
    winners: list[tuple[float, str]] = []
    losers: list[tuple[float, str, str]] = []

    async with open_runtime(path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        await host.add_message("host", [text("Whoever opens agents/shared first gets it.")])
        before = rt.store.head("main")

        async def contender(task: int) -> None:
            reader = f"reader-{task}"
            await trio.sleep(delay_of(task))
            # The time the open starts: the winner's open returns only once its claim is durable,
            # and the mock clock jumps ahead while the commit is out.
            started = trio.current_time()
            try:
                await rt.open_manager(NAMESPACE, strategy=PassthroughStrategy(), view_reader=reader)
            except ReaderClaimError as error:
                losers.append((started, reader, str(error)))
            else:
                winners.append((started, reader))

        async with trio.open_nursery() as nursery:
            for task in range(tasks):
                nursery.start_soon(contender, task)

        after = rt.store.head("main")
        states = rt.store.state_items("main")

    first = min(delay_of(task) for task in range(tasks))
    tied = [f"reader-{task}" for task in range(tasks) if delay_of(task) == first]
    print(f"{tasks} tasks open {NAMESPACE!r}, each for its own reader; {len(tied)} of them at the first instant:")
    print(f"  {', '.join(tied)}")
    for when, reader in winners:
        print(f"winner: {reader}, whose open started at t={when:.1f}s (simulated)")
    for when, reader, error in sorted(losers, key=lambda item: (item[0], int(item[1].split("-")[1]))):
        print(f"  refused {reader} (open at t={when:.1f}s): ReaderClaimError: {error}")

    # The proof that the losers wrote nothing.
    winner = winners[0][1] if len(winners) == 1 else None
    readers = {key: value for key, value in states.items() if key.endswith("/reader")}
    print(f"reader records in the store: {json.dumps(readers)}")
    print(f"branch head: {before} before the race, {after} after it (rose by {after - before})")
    print(f"all state records: {json.dumps(states, sort_keys=True)}")
    async with open_runtime(path) as reopened:
        on_disk = reopened.store.state_items("main")
    print(f"all state records after reopening the file: {json.dumps(on_disk, sort_keys=True)}")
    proved = (
        len(winners) == 1
        and len(losers) == tasks - 1
        and winner in tied
        and after - before == 1
        and states == on_disk == {f"{NAMESPACE}/reader": winner}
    )
    if proved:
        print(f"the {len(losers)} losers wrote nothing: one claim ({winner}), one write, no other record")
    else:
        print("PROOF FAILED: the race left more than the winner's claim")
    return proved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20, help="how many tasks race (default 20)")
    args = parser.parse_args()
    if args.tasks < 2:
        parser.error("--tasks needs at least 2 tasks to make a race")
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "race.db")
        clock = trio.testing.MockClock(autojump_threshold=0)
        proved = trio.run(race, path, args.tasks, clock=clock)
    return 0 if proved else 1


if __name__ == "__main__":
    sys.exit(main())
