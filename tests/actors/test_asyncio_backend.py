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


def test_asyncios_own_task_cancel_never_stops_the_store_nor_loses_a_write(store_path):
    """asyncio's own ``Task.cancel()`` reaches through anyio's shielded scopes (a host's
    ``task.cancel()``, ``asyncio.timeout``, a ``TaskGroup`` whose sibling failed). Cancelling
    ``add_message`` tasks at every point of their write (before, at the scheduling point of a
    group commit, while the commit runs) never stops the store: a commit once begun ends. Every
    call that returned has its message, the store works on, and a reopen holds exactly what the
    runtime held (nothing in memory that is not on disk). A cancellation taken while a commit
    ran is delivered once the commit is done: such a call raises ``CancelledError`` with its
    write made (docs/guarantees.md, 5)."""
    import asyncio

    held: dict[str, object] = {}

    async def main() -> None:
        async with open_runtime(store_path) as rt:
            room = await rt.open_manager("room", strategy=PassthroughStrategy())
            returned: list[str] = []
            for i in range(120):
                words = f"line {i}"
                task = asyncio.ensure_future(room.add_message("user", [text(words)]))
                for _ in range(i % 7):
                    await asyncio.sleep(0)
                task.cancel()
                try:
                    await task
                    returned.append(words)
                except asyncio.CancelledError:
                    pass
            stored = [m.content[0].text for m in room.get_all_messages()]
            assert set(returned) <= set(stored), "a call that returned has its message"
            assert len(stored) < 120, "the premise: some cancels landed before their write"
            await room.add_message("user", [text("after")])  # the store never stopped
            held["messages"] = [(m.id, m.content) for m in room.get_all_messages()]
        async with open_runtime(store_path) as again:
            reopened = await again.open_manager("room", strategy=PassthroughStrategy())
            assert [(m.id, m.content) for m in reopened.get_all_messages()] == held["messages"]

    anyio.run(main, backend="asyncio")
