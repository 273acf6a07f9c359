"""The public API from asyncio (SPEC 2: Trio is the reference backend; ``open_runtime`` also works
under asyncio, where aiosqlite runs directly).

A plain (sync) test that drives the whole run with ``anyio.run(..., backend="asyncio")``, so it
is independent of the suite's Trio mode. SPEC ids: 3.2, A1, A2, A5, R1, R3, D2, S1.
"""

from __future__ import annotations

import anyio
import sniffio

from asides.actors import ReaderClaimError, open_runtime
from asides.store import text
from asides.strategies._passthrough import PassthroughStrategy


def _texts(compiled) -> list[str]:
    return [b.text for m in compiled.messages for b in m.content]


def _audiences(messages) -> list[tuple[str, tuple[str, ...] | None]]:
    return [(b.text, b.audience) for m in messages for b in m.content]


STORED = [("[for ann]", ("ann",)), ("[for bob]", ("bob",)), ("Hello, both.", None)]


def test_two_readers_and_reopen_under_asyncio(store_path):
    """Under asyncio: a file runtime, managers for ann and bob, one message with a private block
    for each; each compile holds only its own reader's block (and the plain one, no audience on
    any compiled block); the claims refuse the other reader; after closing, a reopen under asyncio
    finds the message (audiences as stored, A5), the claims, and the same compiles."""
    path = store_path
    seen: dict[str, object] = {}

    async def main() -> None:
        seen["backend"] = sniffio.current_async_library()
        async with open_runtime(path) as rt:
            ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
            async with rt.manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob") as bob:
                message = await ann.add_message("user", [text("[for ann]", ["ann"]), text("[for bob]", ["bob"]), text("Hello, both.")])
                assert message.sequence == 3  # two claims, then the message
                for manager, own in ((ann, "[for ann]"), (bob, "[for bob]")):
                    compiled = await manager.compile()
                    assert _texts(compiled) == [own, "Hello, both."]
                    assert all(b.audience is None for m in compiled.messages for b in m.content)
                assert _audiences(bob.get_all_messages()) == STORED
                try:
                    await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="bob")
                except ReaderClaimError:
                    seen["refused"] = True
            await ann.aclose()

        async with open_runtime(path) as rt:
            assert rt.store.get_state("main", "agents/ann/reader") == "ann"
            assert rt.store.get_state("main", "agents/bob/reader") == "bob"
            async with rt.manager("agents/ann", strategy=PassthroughStrategy()) as ann:
                assert ann.view_reader == "ann"  # R3: the record, after reopen
                stored = ann.get_all_messages()
                assert [m.id for m in stored] == [message.id]
                assert _audiences(stored) == STORED
                assert _texts(await ann.compile()) == ["[for ann]", "Hello, both."]
            async with rt.manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob") as bob:
                assert _texts(await bob.compile()) == ["[for bob]", "Hello, both."]
            async with rt.manager("agents/carol", strategy=PassthroughStrategy()) as nobody:
                assert _texts(await nobody.compile()) == ["Hello, both."]

    anyio.run(main, backend="asyncio")
    assert seen == {"backend": "asyncio", "refused": True}
