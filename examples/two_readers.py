"""Two agents sharing one conversation, each compiling only what is meant for it.

Two managers over one store, ann's in namespace
``agents/ann`` and bob's in ``agents/bob``, both with ``PassthroughStrategy`` and each compiling
for its own reader (``view_reader``). One message holds a block for ann, a block for bob and a
block for both. Each reader's compile holds its own block and the shared one, and no compiled
block carries an audience; ``get_all_messages()`` still returns the message as stored, audiences
included.

Run it: ``python examples/two_readers.py``. It uses a temporary store
file, no network and no model.
"""

from __future__ import annotations

import json
import os
import tempfile

import trio

from asides import PassthroughStrategy, open_runtime, text
from asides.lowlevel import content_to_json


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        async with open_runtime(os.path.join(directory, "store.db")) as runtime:
            ann = await runtime.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
            bob = await runtime.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
            await ann.add_message(
                "user",
                [
                    text("[for ann]", audience=["ann"]),
                    text("[for bob]", audience=["bob"]),
                    text("Hello, both."),
                ],
            )
            for name, manager in (("ann", ann), ("bob", bob)):
                compiled = await manager.compile(max_tokens=1_000_000, reserve_for_response=0)
                blocks = [block for message in compiled.messages for block in message.content]
                texts = [block.text for block in blocks]
                with_audience = any(getattr(block, "audience", None) is not None for block in blocks)
                print(f"{name}'s compile: {json.dumps(texts)}; any block with an audience: {with_audience}")
            (stored,) = ann.get_all_messages()
            print(f"stored message (get_all_messages): {json.dumps(content_to_json(stored.content))}")


if __name__ == "__main__":
    trio.run(main)
