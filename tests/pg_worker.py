"""Child process for tests/actors/test_postgres_processes.py: one process of several sharing one
PostgreSQL store. It prints one line per acknowledged result, flushed, only after the store
returned it (so it is durable); the parent reads them.

``python tests/pg_worker.py race URL INDEX``
    Opens a runtime and prints ``READY``; then for each line ``go R`` on stdin tries to claim
    namespace ``race/R`` for reader ``p<INDEX>`` and prints ``R <R> claimed`` or
    ``R <R> refused <recorded reader>``; ``quit`` ends it.

``python tests/pg_worker.py work URL INDEX COUNT [COMPRESS]``
    Writes COUNT messages through a no-reader manager, each with blocks for some of ann, bob and
    cleo and a block for everyone (each block holds a unique marker ``M<INDEX>x<n>``), with a
    manager of ``agents/<reader>`` open for each reader; the ones named in COMPRESS (comma
    separated) compress with the offline extractive model. Every fourth message it edits one of
    its own (widening or narrowing an audience, which may be refused) and compiles for a reader.
    Prints::

        A <id> <sequence> <json content>      a message acknowledged
        E <id> <json content>                 an edit acknowledged
        DONE

``python tests/pg_worker.py crash URL INDEX``
    Appends messages until killed, printing ``A <id> <sequence>`` after each.

``python tests/pg_worker.py hold URL``
    Writes 30 messages and opens ``agents/s`` for ann with a model that never answers, then
    prints ``HOLDING`` once its request is out (it holds the namespace's compression lease) and
    waits until killed.

``python tests/pg_worker.py watch URL``
    Prints ``READY``, then ``HEARD <id> <time.time()>`` for each message another process
    commits, as this process's store hears of it (no sync, no polling). ``compile`` on stdin
    prints ``C <json list of the compile's texts>``; ``quit`` ends it.
"""

from __future__ import annotations

import json
import os
import sys
import time

import trio

from asides import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy, open_runtime
from asides.actors import NarrowingRefusedError, ReaderClaimError
from asides.actors._runtime import internal_store  # below the API on purpose: Runtime.store reads only
from asides.store import content_to_json, text
from asides.store._sqlite import MessagesAppended

READERS = ("ann", "bob", "cleo")


def say(line: str) -> None:
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        os._exit(0)


async def lines():
    stdin = trio.wrap_file(sys.stdin)
    while True:
        line = await stdin.readline()
        if not line:
            return
        yield line.strip()


async def race(url: str, index: int) -> None:
    async with open_runtime(url) as rt:
        say("READY")
        async for line in lines():
            if line == "quit":
                return
            _, number = line.split()
            try:
                await rt.open_manager(f"race/{number}", strategy=PassthroughStrategy(), view_reader=f"p{index}")
                say(f"R {number} claimed")
            except ReaderClaimError as exc:
                say(f"R {number} refused {exc.recorded}")


def audiences(index: int, n: int) -> list[list[str] | None]:
    """The audiences of message ``n``'s blocks: private ones first (the extractive model
    summarises a message's first sentence), then one for everyone."""
    picks: list[list[str] | None] = [[READERS[n % 3]]]
    if n % 2:
        picks.append([READERS[(n + index) % 3], READERS[(n + 1) % 3]])
    return [*picks, None]


async def work(url: str, index: int, count: int, compress: list[str]) -> None:
    model = ExtractiveModel()
    async with open_runtime(url) as rt:
        writer = await rt.open_manager(f"writers/{index}", strategy=PassthroughStrategy())
        mine = {}
        for reader in READERS:
            strategy = AutobiographicalStrategy(target_chunk_tokens=200, head_window_tokens=0, recent_window_tokens=0)
            mine[reader] = await rt.open_manager(
                f"agents/{reader}", strategy=strategy, view_reader=reader, model=model if reader in compress else None
            )
        written = []
        marker = 0
        for n in range(count):
            blocks = []
            for audience in audiences(index, n):
                blocks.append(text(f"M{index}x{marker} from process {index}, message {n}. {'words ' * 12}", audience))
                marker += 1
            message = await writer.add_message(f"p{index}", blocks)
            written.append(message)
            say(f"A {message.id} {message.sequence} {json.dumps(content_to_json(message.content))}")
            if n % 4 == 3:
                reader = READERS[n % 3]
                target = written[(n * 7) % len(written)]
                current = rt.store.get_message("main", target.id)
                edited = []
                for block in current.content:
                    audience = block.audience
                    if audience is not None and reader in audience and len(audience) > 1:
                        audience = tuple(a for a in audience if a != reader)  # narrow: hide from the own reader
                    elif audience is not None and reader not in audience:
                        audience = (*audience, reader)  # widen
                    edited.append(text(block.text, audience))
                try:
                    after = await mine[reader].edit_message(target.id, edited)
                    say(f"E {after.id} {json.dumps(content_to_json(after.content))}")
                except NarrowingRefusedError:
                    pass
                await mine[reader].compile(max_tokens=1_000_000, reserve_for_response=0)
        for reader in compress:
            with trio.move_on_after(60):
                await mine[reader].drain()
        say("DONE")


async def crash(url: str, index: int) -> None:
    async with open_runtime(url) as rt:
        writer = await rt.open_manager(f"writers/{index}", strategy=PassthroughStrategy())
        n = 0
        while True:
            message = await writer.add_message(f"p{index}", [text(f"crash writer {index} message {n} {'x' * 100}")])
            say(f"A {message.id} {message.sequence}")
            n += 1


class NeverAnswers:
    """A model whose requests never end; ``asked`` is set once one is out."""

    def __init__(self) -> None:
        self.asked = trio.Event()

    async def complete(self, request: object) -> object:
        self.asked.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")


async def hold(url: str) -> None:
    model = NeverAnswers()
    async with open_runtime(url) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        for i in range(30):
            await host.add_message("user", [text(f"Message {i}. {'filler words ' * 20}")])
        strategy = AutobiographicalStrategy(target_chunk_tokens=300, head_window_tokens=0, recent_window_tokens=0)
        await rt.open_manager("agents/s", strategy=strategy, view_reader="ann", model=model)
        await model.asked.wait()
        say("HOLDING")
        await trio.sleep_forever()


async def watch(url: str) -> None:
    async with open_runtime(url) as rt:

        def heard(event: object) -> None:
            if isinstance(event, MessagesAppended):
                now = time.time()
                for message in event.messages:
                    say(f"HEARD {message.id} {now:.6f}")

        internal_store(rt).add_listener(heard)
        reading = await rt.open_manager("watcher", strategy=PassthroughStrategy())
        say("READY")
        async for line in lines():
            if line == "quit":
                return
            if line == "compile":
                compiled = await reading.compile()
                say("C " + json.dumps([b.text for m in compiled.messages for b in m.content]))


def main() -> None:
    mode, url = sys.argv[1], sys.argv[2]
    if mode == "race":
        trio.run(race, url, int(sys.argv[3]))
    elif mode == "work":
        compress = sys.argv[5].split(",") if len(sys.argv) > 5 and sys.argv[5] else []
        trio.run(work, url, int(sys.argv[3]), int(sys.argv[4]), compress)
    elif mode == "crash":
        trio.run(crash, url, int(sys.argv[3]))
    elif mode == "hold":
        trio.run(hold, url)
    elif mode == "watch":
        trio.run(watch, url)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
