"""asides from a plain asyncio program.

Trio is asides's reference backend, but the library runs on anyio, so an asyncio host uses the
same API with no Trio code of its own (under asyncio the store calls aiosqlite directly). This
script opens a runtime on a store file under ``asyncio.run``, opens two agents, ann and bob, each
compiling for its own reader, writes a message with a line for each of them and one for both,
and prints each agent's compile. It then closes the runtime, opens the file again and shows that
the messages, and each namespace's reader, survived: a manager reopened with no ``view_reader``
compiles for the reader its namespace records.

Run it: ``python examples/asyncio_host.py``. It uses a temporary store
file, no network and no model.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile

from asides import PassthroughStrategy, open_runtime, text


def texts(compiled) -> str:
    return json.dumps([f"{m.participant}: {b.text}" for m in compiled.messages for b in m.content])


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "store.db")

        async with open_runtime(path) as rt:
            ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
            bob = await rt.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
            await ann.add_message(
                "user",
                [text("Ann, book the room.", ["ann"]), text("Bob, pay the deposit.", ["bob"]), text("Thanks, both.")],
            )
            await bob.add_message("bob", [text("Deposit paid.")])
            for manager in (ann, bob):
                compiled = await manager.compile(max_tokens=10_000, reserve_for_response=1_000)
                print(f"{manager.view_reader}'s compile (asyncio): {texts(compiled)}")
        # Leaving the block closed both managers and the store.

        async with open_runtime(path) as rt:
            async with rt.manager("agents/bob", strategy=PassthroughStrategy()) as bob:
                stored = bob.get_all_messages()
                print(f"after reopening: {len(stored)} messages survived; agents/bob compiles for {bob.view_reader!r}")
                compiled = await bob.compile(max_tokens=10_000, reserve_for_response=1_000)
                print(f"bob's compile after reopening: {texts(compiled)}")


if __name__ == "__main__":
    asyncio.run(main())
