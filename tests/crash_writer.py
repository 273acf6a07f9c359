"""Child process for tests/test_store_crash.py (SPEC S1, S4).

``python tests/crash_writer.py PATH`` opens the store at PATH and writes until it is killed:
four Trio tasks append messages concurrently (one of them on the branch ``side``, one in batches
of three), and every fifth write of a task is also a state record. Each acknowledged write is
printed on its own line and flushed, only after the store returned it (so it is durable):

    M <branch> <id> <sequence> <task> <n>     a message
    S <branch> <key> <value> <sequence>       a state record

``python tests/crash_writer.py PATH --hold`` opens the store, writes one message, prints
``READY <id>`` and then waits until it is killed (for the lock test).
"""

from __future__ import annotations

import os
import sys

import trio  # noqa: E402

from asides.store import open_store, text  # noqa: E402

PAD = "x" * 200
TASKS = 4
LIMIT = 1_000_000  # the parent kills the child long before this


def say(line: str) -> None:
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the parent went away: stop writing
        os._exit(0)


def content_for(task: int, n: int) -> tuple:
    return (text(f"task {task} message {n} {PAD}"),)


async def writer(store, task: int) -> None:
    branch = "side" if task == 3 else "main"
    for n in range(LIMIT):
        if task == 2 and n % 2 == 0:
            items = [(f"task{task}", content_for(task, n + i / 10), {"task": task, "n": n + i / 10}) for i in range(3)]
            for message in await store.append_messages(branch, items):
                say(f"M {branch} {message.id} {message.sequence} {task} {message.metadata['n']}")
        else:
            message = await store.append_message(branch, f"task{task}", content_for(task, n), {"task": task, "n": n})
            say(f"M {branch} {message.id} {message.sequence} {task} {n}")
        if n % 5 == 4:
            key = f"task/{task}"
            sequence = await store.set_state(branch, key, n)
            say(f"S {branch} {key} {n} {sequence}")


async def write_until_killed(path: str) -> None:
    async with open_store(path) as store:
        if not store.has_branch("side"):
            await store.create_branch("side", "main")
        async with trio.open_nursery() as nursery:
            for task in range(TASKS):
                nursery.start_soon(writer, store, task)


async def hold(path: str) -> None:
    async with open_store(path) as store:
        message = await store.append_message("main", "holder", (text("held"),))
        say(f"READY {message.id}")
        await trio.sleep_forever()


def main(argv: list[str]) -> None:
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--hold"):
        sys.exit("usage: python tests/crash_writer.py PATH [--hold]")
    trio.run(hold if len(argv) == 3 else write_until_killed, argv[1])


if __name__ == "__main__":
    main(sys.argv)
