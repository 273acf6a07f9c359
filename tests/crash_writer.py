"""Child process for tests/store/test_store_crash.py (SPEC S1, S4).

Every acknowledged write is printed on its own line and flushed, only after the call that made
it returned (so it is durable), until the parent kills the process.

``python tests/crash_writer.py PATH`` opens the store at PATH and writes until it is killed:
four Trio tasks append messages concurrently (one of them on the branch ``side``, one in batches
of three), and every fifth write of a task is also a state record:

    M <branch> <id> <sequence> <task> <n>     a message
    S <branch> <key> <value> <sequence>       a state record

``python tests/crash_writer.py PATH --runtime ROUND BULK_AFTER`` opens a runtime on PATH and runs
many writers at once through it, each printing what the runtime acknowledged (ROUND keeps the
names of one run apart from earlier runs on the same file):

    A <branch> <id> <audience|-> <text>               add_message returned
    C <branch> <namespace> <reader>                   open_manager returned, having claimed
    X <branch> <namespace> <index> <source id>        append_context_entry returned (a copy)
    E <branch> <id> <version>                         edit_message returned
    F <branch> <namespace> <floor>                    the floor was at least this, durably
    S <branch> <namespace> <summary key> <sha256>     this summary record was stored, durably
    B start <k>                                       a batch of BULK rows was handed to the store
    T <n>                                             progress while that batch commits
    B done <k>                                        that batch returned

A floor or summary is read from memory and printed only after a later write of the same store
returned: commits go out in order, so everything in memory before that write is on disk. The
batch starts once BULK_AFTER other lines were printed (``-1``: never).

``python tests/crash_writer.py PATH --hold`` opens the store, writes one message, prints
``READY <id>`` and then waits until it is killed (for the lock test).

``python tests/crash_writer.py --serve`` runs writers one after another, each a forked copy of
this process, which has imported Trio and asides once and opened nothing (an interpreter started
per writer spends most of its CPU on those imports). Each line read from stdin is a JSON list,
a writer's arguments after the script's name; the copy prints ``PID <pid>``, then writes and
prints as that writer would; once it has ended (killed, as a rule), this process prints
``EXIT <status>`` (-9: SIGKILL) and reads the next line. It ends at the end of its input.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import traceback
from typing import Any

import trio

from asides import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy, content_for_reader, open_runtime, text
from asides.actors._runtime import internal_store  # below the API on purpose: Runtime.store reads only
from asides.lowlevel import open_store

PAD = "x" * 200
TASKS = 4
LIMIT = 1_000_000  # the parent kills the child long before this
BULK = 3_000
APPENDERS = 4
AUDIENCES: tuple[tuple[str, ...] | None, ...] = (None, ("ann",), ("bob",), ("ann", "bob"))


class Printer:
    """Prints acknowledgements; counts them so the bulk batch can start after some."""

    def __init__(self, bulk_after: int = -1) -> None:
        self.count = 0
        self.bulk_after = bulk_after
        self.bulk_due = trio.Event()

    def say(self, line: str) -> None:
        try:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except BrokenPipeError:  # the parent went away: stop writing
            os._exit(0)
        self.count += 1
        if 0 <= self.bulk_after <= self.count:
            self.bulk_due.set()


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


# -- store mode -------------------------------------------------------------------------------------


def content_for(task: int, n: float) -> tuple:
    return (text(f"task {task} message {n} {PAD}"),)


async def writer(store, task: int, out: Printer) -> None:
    branch = "side" if task == 3 else "main"
    for n in range(LIMIT):
        if task == 2 and n % 2 == 0:
            items = [(f"task{task}", content_for(task, n + i / 10), {"task": task, "n": n + i / 10}) for i in range(3)]
            for message in await store.append_messages(branch, items):
                out.say(f"M {branch} {message.id} {message.sequence} {task} {message.metadata['n']}")
        else:
            message = await store.append_message(branch, f"task{task}", content_for(task, n), {"task": task, "n": n})
            out.say(f"M {branch} {message.id} {message.sequence} {task} {n}")
        if n % 5 == 4:
            key = f"task/{task}"
            sequence = await store.set_state(branch, key, n)
            out.say(f"S {branch} {key} {n} {sequence}")


async def write_until_killed(path: str) -> None:
    out = Printer()
    async with open_store(path) as store:
        if not store.has_branch("side"):
            await store.create_branch("side", "main")
        async with trio.open_nursery() as nursery:
            for task in range(TASKS):
                nursery.start_soon(writer, store, task, out)


# -- runtime mode -----------------------------------------------------------------------------------


def audience_name(audience: tuple[str, ...] | None) -> str:
    return "-" if audience is None else ",".join(audience)


async def appender(rt, round_: int, k: int, out: Printer) -> None:
    """Messages with random audiences, through a manager with no reader."""
    branch = "side" if k % 2 else "main"
    manager = await rt.open_manager(f"host/{k}", strategy=PassthroughStrategy(), branch=branch)
    for n in range(LIMIT):
        audience = AUDIENCES[(n + k) % len(AUDIENCES)]
        body = f"r{round_}-t{k}-n{n}"
        message = await manager.add_message("user", [text(f"{body} {PAD}", audience)])
        out.say(f"A {branch} {message.id} {audience_name(audience)} {body}")


def edited(message_id: str, version: int) -> list[Any]:
    """The content of version ``version`` of an edited message: the same audiences, new text."""
    return [
        text(f"edit {message_id} v{version}"),
        text(f"ann-only {message_id} v{version}", ("ann",)),
        text(f"BOB-ONLY {message_id} v{version}", ("bob",)),
    ]


async def editor(rt, round_: int, out: Printer) -> None:
    """Messages copied into ann's context log, then edited again and again: each edit rewrites
    the copy in the same commit."""
    namespace = f"copies/{round_}"
    ann = await rt.open_manager(namespace, strategy=PassthroughStrategy(), view_reader="ann")
    out.say(f"C main {namespace} ann")
    for n in range(LIMIT):
        message = await ann.add_message("user", [text(f"to edit r{round_} n{n}")])
        out.say(f"A main {message.id} - to-edit")
        first = edited(message.id, 0)
        message = await ann.edit_message(message.id, first)
        out.say(f"E main {message.id} 0")
        seen = content_for_reader(message.content, "ann")
        entry = await ann.append_context_entry(seen, source_message_id=message.id)
        out.say(f"X main {namespace} {entry.index} {message.id}")
        for version in range(1, 4):
            await ann.edit_message(message.id, edited(message.id, version))
            out.say(f"E main {message.id} {version}")


async def claimer(rt, round_: int, out: Printer) -> None:
    """Managers opened with readers on fresh namespaces: each open claims one."""
    readers = ("ann", "bob", "cleo")
    for n in range(LIMIT):
        namespace, reader = f"claims/{round_}/{n}", readers[n % 3]
        branch = "side" if n % 2 else "main"
        manager = await rt.open_manager(namespace, strategy=PassthroughStrategy(), view_reader=reader, branch=branch)
        out.say(f"C {branch} {namespace} {reader}")
        await manager.aclose()


async def compressor(rt, round_: int, out: Printer) -> None:
    """ann's memory, on a branch of its own (``memory``): an autobiographical manager with small
    chunks compresses while messages come (each compression read raises her floor first); every
    few messages it drains, and her floor and summaries are printed once a later write returned."""
    namespace = f"memory/{round_}"
    strategy = AutobiographicalStrategy(
        target_chunk_tokens=40, head_window_tokens=0, recent_window_tokens=0, holdback_chunks=0, hierarchical=False
    )
    ann = await rt.open_manager(namespace, strategy=strategy, view_reader="ann", branch="memory", model=ExtractiveModel())
    out.say(f"C memory {namespace} ann")
    store = rt.store
    prefix = f"{namespace}/autobiographical/summary/"
    printed: set[str] = set()
    for n in itertools.count():
        blocks = [text(f"memory r{round_} n{n}. {PAD}"), text(f"ann-secret r{round_} n{n}.", ("ann",))]
        if n % 2:
            blocks.append(text(f"BOB-ONLY memory r{round_} n{n}.", ("bob",)))
        if n % 8 == 7:
            await ann.drain()
        # what is in memory now is durable once the next write returned
        floor = store.get_state("memory", f"{namespace}/narrowing-floor")
        summaries = store.state_items("memory", prefix)
        message = await ann.add_message("user", blocks)
        out.say(f"A memory {message.id} - memory")
        if floor is not None:
            out.say(f"F memory {namespace} {floor}")
        for key, value in summaries.items():
            if key not in printed:
                printed.add(key)
                out.say(f"S memory {namespace} {key} {digest(value)}")


async def bulk(rt, round_: int, out: Printer) -> None:
    """One batch of BULK messages in one commit (more rows than one statement takes, so the
    store writes it as a multi-statement transaction), once enough other lines were printed."""
    await out.bulk_due.wait()
    store = internal_store(rt)
    if not store.has_branch("bulk"):
        await store.create_branch("bulk", "main")
    items = [("bulk", (text(f"bulk r{round_} i{i}"),), {"bulk": round_, "i": i}) for i in range(BULK)]
    out.say(f"B start {round_}")
    done = trio.Event()

    async def ticker() -> None:
        # progress lines while the batch commits (no other write can return meanwhile), so the
        # parent can place its kill inside the transaction
        for n in itertools.count():
            await trio.sleep(0)
            if done.is_set():
                return
            out.say(f"T {n}")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        await store.append_messages("bulk", items)
        done.set()
    out.say(f"B done {round_}")


async def run_until_killed(path: str, round_: int, bulk_after: int) -> None:
    out = Printer(bulk_after)
    async with open_runtime(path) as rt:
        for branch in ("side", "memory"):
            if not rt.store.has_branch(branch):
                opener = await rt.open_manager("setup", strategy=PassthroughStrategy())
                await opener.fork(branch)
                await opener.aclose()
        async with trio.open_nursery() as nursery:
            for k in range(APPENDERS):
                nursery.start_soon(appender, rt, round_, k, out)
            nursery.start_soon(editor, rt, round_, out)
            nursery.start_soon(claimer, rt, round_, out)
            nursery.start_soon(compressor, rt, round_, out)
            if bulk_after >= 0:
                nursery.start_soon(bulk, rt, round_, out)


# -- hold mode --------------------------------------------------------------------------------------


async def hold(path: str) -> None:
    async with open_store(path) as store:
        message = await store.append_message("main", "holder", (text("held"),))
        Printer().say(f"READY {message.id}")
        await trio.sleep_forever()


def serve() -> None:
    while command := sys.stdin.readline():
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # a writer reads nothing
                Printer().say(f"PID {os.getpid()}")
                main([sys.argv[0], *json.loads(command)])
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        print(f"EXIT {os.waitstatus_to_exitcode(status)}", flush=True)


def main(argv: list[str]) -> None:
    if argv[1:] == ["--serve"]:
        serve()
    elif len(argv) == 2:
        trio.run(write_until_killed, argv[1])
    elif len(argv) == 3 and argv[2] == "--hold":
        trio.run(hold, argv[1])
    elif len(argv) == 5 and argv[2] == "--runtime":
        trio.run(run_until_killed, argv[1], int(argv[3]), int(argv[4]))
    else:
        sys.exit("usage: python tests/crash_writer.py PATH [--hold | --runtime ROUND BULK_AFTER] | --serve")


if __name__ == "__main__":
    main(sys.argv)
