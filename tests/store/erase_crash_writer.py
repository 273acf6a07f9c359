"""Child process for the kill -9 test of tests/store/test_erasure_crash.py.

``python tests/store/erase_crash_writer.py PATH COUNT`` opens a runtime on PATH, writes COUNT messages
(each holding ``SECRET-<i>`` and padding) plus a context-log copy of each of the first ten, and
prints ``READY``; then it erases all of them in one erasure and prints ``ERASING`` before and
``ERASED`` after, while another task prints ``T <n>`` lines for as long as the erasure runs, so
the parent can kill it at any point of the commit.
"""

from __future__ import annotations

import sys

import trio

from asides import PassthroughStrategy, open_runtime, text
from asides.actors._runtime import internal_store  # below the API on purpose: Runtime.store reads only

PAD = "y" * 400


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(path: str, count: int) -> None:
    async with open_runtime(path) as rt:
        m = await rt.open_manager("ns", strategy=PassthroughStrategy())
        items = [("user", (text(f"SECRET-{i} {PAD}"),), None) for i in range(count)]
        ids = [m.id for m in await internal_store(rt).append_messages("main", items)]
        for message_id in ids[:10]:
            await m.append_context_entry([text(f"copy of {message_id} SECRET-copy")], source_message_id=message_id)
        say("READY")
        done = trio.Event()

        async def ticker() -> None:
            n = 0
            while not done.is_set():
                n += 1
                say(f"T {n}")
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            say("ERASING")
            nursery.start_soon(ticker)
            await rt.erase(ids, reason="crash test")
            done.set()
        say("ERASED")
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, sys.argv[1], int(sys.argv[2]))
