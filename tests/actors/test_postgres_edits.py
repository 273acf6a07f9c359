"""An edit's context-log rewrites on a shared store: they are computed again at commit, after
every earlier commit of every process, so a copy of the message that another process added in
between is rewritten too (never left holding the old content). The last test, on both backends,
checks that an edit that cannot settle its rewrites gives up having written nothing."""

from __future__ import annotations

import pytest

from asides import PassthroughStrategy, open_runtime, text


def entry_texts(manager) -> list[list[str]]:
    return [[b.text for b in entry.content] for entry in manager.get_context_entries()]


async def test_an_edit_rewrites_a_copy_another_process_made_after_the_edit_was_called(pg_url, deaf):
    async with open_runtime(pg_url) as here, open_runtime(pg_url) as there:
        ann = await here.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        message = await ann.add_message("user", [text("hello"), text("for ann", ["ann"])])
        await there.store.sync()
        bob = await there.open_manager("agents/bob", strategy=PassthroughStrategy(), view_reader="bob")
        bob.get_context_entries()  # the other runtime has looked at the context logs already

        # ann's runtime copies the message into ann's context log; bob's runtime has not heard of it
        await ann.append_context_entry([text("hello"), text("for ann")], source_message_id=message.id)
        assert there.store.get_state("main", "agents/ann/context/0") is None, "the premise: not heard of yet"

        await bob.edit_message(message.id, [text("hello again"), text("for ann", ["ann"])])

        await here.store.sync()
        assert entry_texts(ann) == [["hello again", "for ann"]]  # ann's view of the new content


async def test_an_edit_whose_rewrites_keep_moving_gives_up_having_written_nothing(store_path, monkeypatch):
    """Both backends. When the rewrites differ at every commit (forced here: each computation of
    them gives a new answer, as other processes copying the message without pause would), the
    edit stops after its tries with StoreFailedError, and the store is exactly as before."""
    from helpers import dump

    from asides import StoreFailedError
    from asides.actors._context_log import ContextLog  # test-only: the runtime's private plumbing

    async with open_runtime(store_path) as rt:
        ann = await rt.open_manager("agents/ann", strategy=PassthroughStrategy(), view_reader="ann")
        message = await ann.add_message("user", [text("hello")])
        await ann.append_context_entry([text("hello")], source_message_id=message.id)
        calls = []

        def ever_new_copies(self, branch, message_id, stored, content):
            calls.append(message_id)
            rewrite = {"content": [{"type": "text", "text": f"rewrite {len(calls)}"}], "source_message_id": message_id}
            return {"agents/ann/context/0": rewrite}

        monkeypatch.setattr(ContextLog, "rewrites", ever_new_copies)
        before = dump(rt.store)
        with pytest.raises(StoreFailedError, match="raced other processes' context-log writes"):
            await ann.edit_message(message.id, [text("hello again")])
        assert dump(rt.store) == before
        assert len(calls) == 2 * 5  # each try computed the rewrites twice: when called, and at commit
        assert ann.get_message(message.id).content[0].text == "hello"
