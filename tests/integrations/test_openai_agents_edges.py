"""``AsidesSession`` at its edges: issue 19 (items 1, 2 and 4) and issue 21 (items 4 and 6).

Sections:
  1. One conversation per session id (issue 19.1): the id-to-branch mapping is injective, and an
     open whose branch records another id is refused
  2. An edit retires the stored item (issue 19.2): ``get_items`` and ``pop_item`` serve what the
     reader may see now; context-log copies and compiles follow the edit too
  3. Readers named like a shared role (issue 19.4) are refused
  4. ``ScriptedAgentModel`` takes its replies one by one (issue 21.4)
  5. The SDK's Runner needs asyncio (issue 21.6); the README's SDK snippet runs offline as shown

Every test on a store runs on both backends (``store_path``), in a host's own runtime
(``AsidesSession.bound_to``), unless it is about the path-built session.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from agents import Agent, Runner, set_tracing_disabled
from hypothesis import given, settings
from hypothesis import strategies as st

from asides import (
    ArgumentTypeError,
    AsidesError,
    AutobiographicalStrategy,
    InvalidNameError,
    PassthroughStrategy,
    TextBlock,
    open_runtime,
)
from asides.integrations.openai_agents import (
    AsidesSession,
    AsyncioRequiredError,
    ConversationMismatchError,
    ReservedReaderError,
    ScriptedAgentModel,
)
from tests.helpers import writable_store

set_tracing_disabled(True)

# The SDK under Trio leaves its own cleanup coroutine unawaited (it cannot start an asyncio task).
pytestmark = pytest.mark.filterwarnings("ignore:coroutine '_close_runner_owned_model_provider:RuntimeWarning")

ROOT = Path(__file__).resolve().parents[2]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def texts(items: list[Any]) -> list[str]:
    """The text of each message item (a string content, or its text parts joined)."""
    return [c if isinstance(c := i.get("content"), str) else "".join(p.get("text", "") for p in c) for i in items]


# -- 1. One conversation per session id -----------------------------------------------------------


@pytest.mark.parametrize("victim_id", ["victim\nconversation", "v" * 300], ids=["control-character", "too-long"])
async def test_an_id_spelled_as_a_hashed_branch_name_gets_a_conversation_of_its_own(store_path, victim_id):
    """Issue 19.1: an id that cannot be a branch name is hashed to ``openai-agents/~<digest>``; the
    valid id ``"~<digest>"`` is hashed too, so it never reaches the victim's conversation."""
    async with open_runtime(store_path) as rt:
        victim = await AsidesSession.bound_to(rt, victim_id, reader="ann")
        await victim.add_items([user("VICTIM-SECRET")])
        assert victim.branch.startswith("openai-agents/~")
        spelled = victim.branch.removeprefix("openai-agents/")
        intruder = await AsidesSession.bound_to(rt, spelled, reader="ann")
        assert intruder.branch != victim.branch
        assert intruder.branch.startswith("openai-agents/~")
        assert "VICTIM-SECRET" not in json.dumps(await intruder.get_items())
        assert await victim.get_items() == [user("VICTIM-SECRET")]
        # an id starting with "~" is never used as it is, even one no hashed name could be
        tilde = await AsidesSession.bound_to(rt, "~team", reader="ann")
        assert tilde.branch != "openai-agents/~team" and tilde.branch.startswith("openai-agents/~")
        for session in (victim, intruder, tilde):
            session.close()


SESSION_IDS = st.lists(
    st.one_of(
        st.text(max_size=6),  # control characters included
        st.text(max_size=4).map(lambda t: "~" + t),
        st.text(alphabet="ab~", min_size=240, max_size=250),  # around the name limit
    ),
    min_size=1,
    max_size=4,
    unique=True,
)


@settings(max_examples=10, deadline=None)
@given(SESSION_IDS)
def test_property_every_session_id_has_a_conversation_of_its_own(ids):
    """Issue 19.1, as an invariant: distinct ids, together with each one's hashed name spelled as
    an id (``"~"`` and the digest an attacker can compute), get distinct branches, and each
    session's ``get_items`` holds its own line only."""
    spelled = ["~" + hashlib.sha256(i.encode("utf-8")).hexdigest()[:32] for i in ids]
    every = list(dict.fromkeys(ids + spelled))

    async def main() -> None:
        async with open_runtime(":memory:") as rt:
            sessions = [await AsidesSession.bound_to(rt, i) for i in every]
            for n, session in enumerate(sessions):
                await session.add_items([user(f"MARK-{n}")])
            assert len({s.branch for s in sessions}) == len(sessions)
            for n, session in enumerate(sessions):
                assert texts(await session.get_items()) == [f"MARK-{n}"], every[n]

    trio.run(main)


async def test_plain_ids_keep_their_branch_names(store_path):
    """An id that is a branch name and does not start with ``~`` names its branch as it is."""
    async with open_runtime(store_path) as rt:
        session = await AsidesSession.bound_to(rt, "room-7/west wing", reader="ann")
        assert session.branch == "openai-agents/room-7/west wing"
        session.close()


async def test_an_open_whose_branch_records_another_id_is_refused(store_path):
    """Issue 19.1: a conversation's branch that records another session id (or none: a branch a
    host made itself) is refused, naming both, and nothing is written."""
    async with open_runtime(store_path) as rt:
        await writable_store(rt).create_branch("openai-agents/room", "main", 0, meta={"openai_agents_session": "another room"})
        await writable_store(rt).create_branch("openai-agents/hosts-own", "main", 0)
        head = rt.store.head("openai-agents/room")
        with pytest.raises(ConversationMismatchError) as refused:
            await AsidesSession.bound_to(rt, "room", reader="ann")
        assert isinstance(refused.value, AsidesError)
        assert "'room'" in str(refused.value) and "'another room'" in str(refused.value)
        assert refused.value.path == "session_id"
        with pytest.raises(ConversationMismatchError, match="records no session id"):
            await AsidesSession.bound_to(rt, "hosts-own")
        assert rt.store.head("openai-agents/room") == head
        assert rt.store.state_items("openai-agents/room") == {}


def test_a_path_built_session_is_refused_too(tmp_path):
    """The path-built ``AsidesSession`` refuses the same open, and leaves its store usable."""
    db = str(tmp_path / "room.db")

    async def make_branch() -> None:
        async with open_runtime(db) as rt:
            await writable_store(rt).create_branch("openai-agents/room", "main", 0, meta={"openai_agents_session": "another room"})

    trio.run(make_branch)
    with pytest.raises(ConversationMismatchError):
        AsidesSession("room", db)
    other = AsidesSession("elsewhere", db)
    asyncio.run(other.add_items([user("fine")]))
    other.close()


# -- 2. An edit retires the stored item ------------------------------------------------------------


async def test_an_edit_is_what_every_reader_gets(store_path):
    """Issue 19.2: ann's private item widened by a host's edit into a public notice, and a
    public item with ``hunter2`` redacted: every agent's ``get_items`` gives the edited content,
    never the item as it was added."""
    async with open_runtime(store_path) as rt:
        ann = await AsidesSession.bound_to(rt, "room", reader="ann")
        bob = await AsidesSession.bound_to(rt, "room", reader="bob")
        cleo = await AsidesSession.bound_to(rt, "room", reader="cleo")
        await ann.add_items([user("ANN-ONLY: the door code is 4417")], audience=["ann"])
        await bob.add_items([said("the wifi password is hunter2")])
        assert await cleo.get_items() == [user("bob: the wifi password is hunter2")]
        host = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=ann.branch)
        private, public = host.get_all_messages()
        await host.edit_message(private.id, [TextBlock("[a private line was here]")])
        await host.edit_message(public.id, [TextBlock("the wifi password is [redacted]")])
        for session in (ann, bob, cleo):
            got = json.dumps(await session.get_items())
            assert "4417" not in got and "hunter2" not in got, session
        assert await cleo.get_items() == [user("[a private line was here]"), user("bob: the wifi password is [redacted]")]
        assert await bob.get_items() == [user("[a private line was here]"), said("the wifi password is [redacted]")]
        # popping the edited item gives it as it reads now, not as it was added
        assert await bob.pop_item() == said("the wifi password is [redacted]")
        for session in (ann, bob, cleo):
            session.close()


async def test_an_edit_back_to_the_same_content_still_retires_the_item(store_path):
    """The stored item is served only while its message was never edited: an edit that writes
    the very same content still retires it (the item's extra fields go, the text stays)."""
    async with open_runtime(store_path) as rt:
        ann = await AsidesSession.bound_to(rt, "room", reader="ann")
        item = {"type": "message", "role": "assistant", "id": "msg_1", "content": [{"type": "output_text", "text": "hi"}]}
        await ann.add_items([item])
        assert await ann.get_items() == [item]
        host = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=ann.branch)
        (message,) = host.get_all_messages()
        await host.edit_message(message.id, message.content)
        assert await ann.get_items() == [said("hi")]
        ann.close()


async def test_an_edit_of_one_shard_retires_the_whole_item(store_path):
    """A long item stored as shards: an edit of its last shard (where the secret was) retires the
    item, so no shard brings the whole item back."""
    strategy = AutobiographicalStrategy(target_chunk_tokens=40, adaptive_resolution=True)
    async with open_runtime(store_path) as rt:
        ann = await AsidesSession.bound_to(rt, "room", reader="ann", strategy=strategy)
        bob = await AsidesSession.bound_to(rt, "room", reader="bob")
        text = "Plain words go on and on about the venue. " * 30 + "The wifi password is hunter2."
        await ann.add_items([user(text)])
        host = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=ann.branch)
        shards = host.get_all_messages()
        assert len(shards) > 1, "the item was stored as shards"
        assert await bob.get_items() == [user(text)]
        last = shards[-1]
        (block,) = last.content
        assert isinstance(block, TextBlock) and "hunter2" in block.text
        await host.edit_message(last.id, [TextBlock(block.text.replace("hunter2", "[redacted]"))])
        for session in (ann, bob):
            got = json.dumps(await session.get_items())
            assert "hunter2" not in got and "[redacted]" in got
        ann.close()
        bob.close()


ITEM_KINDS = ("user", "said", "call", "output")


def marked_item(kind: str, marker: str) -> dict[str, Any]:
    if kind == "user":
        return user(f"{marker} says the user")
    if kind == "said":
        return said(f"{marker} says the agent")
    if kind == "call":
        return {"type": "function_call", "call_id": f"c-{marker}", "name": "vault", "arguments": json.dumps({"code": marker})}
    return {"type": "function_call_output", "call_id": f"c-{marker}", "output": f"opened with {marker}"}


STEPS = st.lists(
    st.tuples(st.sampled_from(("ann", "bob", None)), st.sampled_from(ITEM_KINDS), st.sampled_from((None, "ann", "bob")), st.booleans()),
    min_size=1,
    max_size=6,
)


@settings(max_examples=15, deadline=None)
@given(STEPS)
def test_property_get_items_holds_only_what_the_reader_sees_now(steps):
    """Issue 19.2, as an invariant: items of every kind by any agent, private or not, some then
    edited by a host into a public notice: each agent's ``get_items`` holds no marker that its
    reader's view of the branch (``view_messages``, after the edits) does not hold."""

    async def main() -> None:
        async with open_runtime(":memory:") as rt:
            sessions = {r: await AsidesSession.bound_to(rt, "room", reader=r) for r in ("ann", "bob", None)}
            host = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=sessions["ann"].branch)
            to_edit = []
            for n, (speaker, kind, audience, edit) in enumerate(steps):
                marker = f"MARK{n}X"
                await sessions[speaker].add_items([marked_item(kind, marker)], audience=[audience] if audience else None)
                if edit:
                    to_edit.append(host.get_all_messages()[-1].id)
            for n, message_id in enumerate(to_edit):
                await host.edit_message(message_id, [TextBlock(f"[notice {n}]")])
            markers = [f"MARK{n}X" for n in range(len(steps))]
            for reader, session in sessions.items():
                view = await rt.open_manager(f"view-{reader}", strategy=PassthroughStrategy(), view_reader=reader, branch=session.branch)
                seen = repr([m.content for m in view.view_messages()])
                got = json.dumps(await session.get_items())
                leaked = [m for m in markers if m in got and m not in seen]
                assert not leaked, (reader, leaked, got)

    trio.run(main)


async def test_context_log_copies_and_compiles_follow_an_edit(store_path):
    """Issue 19.2, the rest of the library: a context-log copy of a message, a reader's compile
    and its provider forms all give the edited content after a redaction."""
    async with open_runtime(store_path) as rt:
        bob = await AsidesSession.bound_to(rt, "room", reader="bob")
        await bob.add_items([said("the wifi password is hunter2")])
        notes = await rt.open_manager("notes", strategy=PassthroughStrategy(), view_reader="cleo", branch=bob.branch)
        (message,) = notes.get_all_messages()
        await notes.append_context_entry(message.content, source_message_id=message.id)
        host = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=bob.branch)
        await host.edit_message(message.id, [TextBlock("the wifi password is [redacted]")])
        entries = notes.get_context_entries()
        assert entries and "hunter2" not in repr(entries) and "[redacted]" in repr(entries)
        ctx = await notes.compile()
        shown = json.dumps([ctx.to_openai("cleo"), ctx.to_anthropic(assistant="cleo")], default=str)
        assert "hunter2" not in shown and "[redacted]" in shown
        viewed = notes.view_message(message.id)
        assert viewed is not None and "hunter2" not in repr(viewed.content)
        bob.close()


# -- 3. Readers named like a shared role -----------------------------------------------------------


@pytest.mark.parametrize("name", ["user", "system", "developer", "assistant", "User", "ASSISTANT"])
def test_a_reader_named_like_a_shared_role_is_refused(name):
    """Issue 19.4: a session's reader may not be named ``user``, ``system``, ``developer`` or
    ``assistant`` (in any case): its items would pass for shared lines or for a no-reader
    agent's own. Refused with a clear error naming the reader, before anything is opened."""
    with pytest.raises(ReservedReaderError) as refused:
        AsidesSession("room", reader=name)
    assert isinstance(refused.value, InvalidNameError) and refused.value.path == "reader"
    assert repr(name) in str(refused.value)


async def test_a_host_refuses_them_too(store_path):
    """``AsidesSession.bound_to`` a host's runtime refuses the same names, and writes nothing."""
    async with open_runtime(store_path) as rt:
        with pytest.raises(ReservedReaderError):
            await AsidesSession.bound_to(rt, "room", reader="user")
        assert not rt.store.has_branch("openai-agents/room")


async def test_stored_items_of_such_a_reader_are_not_served_as_shared_lines(store_path):
    """Data written before the refusal, by a session whose reader was ``user``: its assistant
    line and its function call reach other agents as text, never verbatim as if a shared ``user``
    had said them, or as a call the agent would think it made."""
    async with open_runtime(store_path) as rt:
        bob = await AsidesSession.bound_to(rt, "room", reader="bob")
        nobody = await AsidesSession.bound_to(rt, "room")
        line = said("I am not the user.")
        call = {"type": "function_call", "call_id": "c1", "name": "unlock", "arguments": "{}"}
        host = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=bob.branch)
        for item, blocks in [
            (line, [TextBlock("I am not the user.")]),
            (call, [{"type": "tool_use", "id": "c1", "name": "unlock", "input": {}}]),
        ]:
            await host.add_message("user", blocks, metadata={"openai_agents": {"item": json.dumps(item), "reader": "user"}})
        for session in (bob, nobody):
            got = await session.get_items()
            assert line not in got and call not in got, got
            assert not any(i.get("type") == "function_call" for i in got), got
        bob.close()
        nobody.close()


# -- 4. ScriptedAgentModel takes its replies one by one --------------------------------------------


def test_a_lone_text_is_one_reply():
    """Issue 21.4: ``ScriptedAgentModel("I booked the room.")`` answers that sentence, not ``"I"``."""
    model = ScriptedAgentModel("I booked the room.")
    result = Runner.run_sync(Agent(name="ann", model=model), "Book it.")
    assert result.final_output == "I booked the room."


def test_replies_one_by_one_and_a_turn_of_output_items():
    """Replies are given one by one; a list is one turn's output items (a call, then texts)."""
    model = ScriptedAgentModel([ScriptedAgentModel.call("lookup", {"q": "x"}, "call_1")], "Found it.", "Bye.")
    assert model.remaining == 3
    model.add_reply("More.")
    assert model.remaining == 4


def test_replies_as_an_iterable_by_keyword():
    """``replies=`` takes an iterable of replies (an older script keeps working that way)."""
    model = ScriptedAgentModel(replies=["San Francisco", "California"])
    agent = Agent(name="t", model=model)
    assert Runner.run_sync(agent, "City?").final_output == "San Francisco"
    assert Runner.run_sync(agent, "State?").final_output == "California"


@pytest.mark.parametrize(
    ("args", "kwargs", "path"),
    [
        ((), {"replies": "I booked the room."}, "replies"),
        ((["San Francisco", "California"],), {}, "replies"),
        (([],), {}, "replies"),
        (("a", []), {}, "replies[1]"),
        (([ScriptedAgentModel.message("x"), ["nested"]],), {}, "replies[0][1]"),
        ((42,), {}, "replies[0]"),
        (("a",), {"replies": ["b"]}, "replies"),
        ((), {"replies": [3]}, "replies[0]"),
        ((), {"default": "not callable"}, "default"),
    ],
    ids=["lone-str-iterable", "old-lone-list", "old-empty-list", "empty-turn", "nested-list", "int", "both", "bad-in-iterable", "default"],
)
def test_scripted_agent_model_refusals(args, kwargs, path):
    """A lone str where an iterable was meant, a lone list of texts (the old script form: is it
    two replies or one turn of two messages?), and what is no reply are refused with
    ``ArgumentTypeError`` naming the place."""
    with pytest.raises(ArgumentTypeError) as refused:
        ScriptedAgentModel(*args, **kwargs)
    assert refused.value.path == path


# -- 5. The SDK's Runner needs asyncio; the README snippet ------------------------------------------


def asyncio_refusal(raised: BaseException) -> AsyncioRequiredError | None:
    """The ``AsyncioRequiredError`` in ``raised``'s chain. The SDK's Runner, under Trio, meets
    it at its first session call, then fails again in its own cleanup (``asyncio.create_task``
    in a ``finally``) with ``RuntimeError: no running event loop``, whose context it is."""
    seen: BaseException | None = raised
    while seen is not None:
        if isinstance(seen, AsyncioRequiredError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


async def test_the_runner_under_trio_is_refused_clearly_before_anything_is_written(store_path, caplog):
    """Issue 21.6: the docs' "Inside a host's own runtime" example under ``trio.run``: the Runner
    (asyncio only) is refused at its first session call with ``AsyncioRequiredError``, which says
    what to do (also logged, since the SDK's own cleanup raises over it), and nothing is written.
    Running the Runner in a worker thread, as the error says, works."""
    async with open_runtime(store_path) as rt:
        ann = await AsidesSession.bound_to(rt, "workshop", reader="ann")
        agent = Agent(name="ann", model=ScriptedAgentModel("Hello back."))
        with pytest.raises(BaseException) as raised:
            await Runner.run(agent, "Hello", session=ann)
        refusal = asyncio_refusal(raised.value)
        assert refusal is not None, raised.value
        assert "asyncio" in str(refusal) and "trio.to_thread.run_sync" in str(refusal)
        assert str(refusal) in caplog.text
        assert await ann.get_items() == []
        result = await trio.to_thread.run_sync(functools.partial(Runner.run_sync, agent, "Hello", session=ann))
        assert result.final_output == "Hello back."
        assert texts(await ann.get_items()) == ["Hello", "Hello back."]
        ann.close()


def test_a_path_built_session_under_trio_refuses_the_runner_too(tmp_path):
    """The same refusal for a session built from a path; its own calls under Trio still work."""
    session = AsidesSession("workshop", str(tmp_path / "room.db"))

    async def main() -> None:
        with pytest.raises(BaseException) as raised:
            await Runner.run(Agent(name="ann", model=ScriptedAgentModel("x")), "Hello", session=session)
        assert asyncio_refusal(raised.value) is not None
        assert await session.get_items() == []
        await session.add_items([user("direct")])
        assert await session.get_items() == [user("direct")]

    trio.run(main)
    session.close()


def test_the_runner_under_asyncio_is_not_refused(tmp_path):
    """Under asyncio the Runner's calls (which carry its run context) go through as before."""
    session = AsidesSession("workshop", str(tmp_path / "room.db"))
    result = asyncio.run(Runner.run(Agent(name="ann", model=ScriptedAgentModel("Hi.")), "Hello", session=session))
    assert result.final_output == "Hi."
    assert texts(asyncio.run(session.get_items())) == ["Hello", "Hi."]
    session.close()


def readme_sdk_snippet() -> str:
    """The first Python block of the README's section "With the OpenAI Agents SDK"."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## With the OpenAI Agents SDK\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the section holds a Python block"
    return found.group(1)


def test_the_readme_sdk_snippet_runs_offline_as_shown(tmp_path):
    """Issue 21.6: the README's SDK snippet, as it stands, runs offline (no API key, no top-level
    ``await``) in a fresh directory, and bob's agent never sees ann's private line."""
    snippet = readme_sdk_snippet()
    assert "asyncio.run(main())" in snippet and "ScriptedAgentModel" in snippet
    compile(snippet, "README.md", "exec")  # no top-level await
    script = tmp_path / "snippet.py"
    script.write_text(snippet, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, result.stderr
    assert "OPENAI_API_KEY" not in result.stderr, "the snippet asks for no credentials"
    assert (tmp_path / "room.db").exists()
    assert "4417" not in result.stdout and "bob sees:" in result.stdout


async def test_an_edit_drops_the_saved_item_from_every_read(store_path):
    """Issue 19.2, every other place that serves metadata: after the edit, no read of the message
    (a reader's ``view_message``, ``get_message``, ``get_all_messages``, and the same after a
    reopen) holds the item as it was added."""
    async with open_runtime(store_path) as rt:
        ann = await AsidesSession.bound_to(rt, "room", reader="ann")
        await ann.add_items([user("ANN-ONLY: the door code is 4417")], audience=["ann"])
        host = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=ann.branch)
        (private,) = host.get_all_messages()
        await host.edit_message(private.id, [TextBlock("[a private line was here]")])
        bob = await rt.open_manager("agents/bob-view", strategy=PassthroughStrategy(), branch=ann.branch, view_reader="bob")
        reads = [bob.view_message(private.id), host.get_message(private.id), *host.get_all_messages(), *bob.view_messages()]
        assert all("4417" not in repr(message) for message in reads), reads
        ann.close()
    async with open_runtime(store_path) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=ann.branch)
        assert all("4417" not in repr(message) for message in host.get_all_messages())
