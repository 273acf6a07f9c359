"""``AsidesSession``: the OpenAI Agents SDK's ``Session`` protocol over asides (issue 12, items 3-5),
and its edges: issue 19 (items 1, 2 and 4) and issue 21 (items 4 and 6).

Sections:
  1. Helpers
  2. The SDK's own session tests, ported (run, run_sync, run_streamed; different sessions;
     pop_item; limits; clear_session; unicode; SQL-like text; concurrent access; settings)
  3. Exact round trip of every input item
  4. Several agents on one conversation (privacy; pop_item and clear_session stay in one view)
  5. Compression: memories as assistant messages, then the recent items as they were added
  6. Event loops and threads; one store per file; a host's own runtime
  7. Refusals, closing, and what is stored
  8. The example runs
  9. One conversation per session id (issue 19.1): the id-to-branch mapping is injective, and an
     open whose branch records another id is refused
  10. An edit retires the stored item (issue 19.2): ``get_items`` and ``pop_item`` serve what the
      reader may see now; context-log copies and compiles follow the edit too
  11. Readers named like a shared role (issue 19.4) are refused
  12. ``ScriptedAgentModel`` takes its replies one by one (issue 21.4)
  13. The SDK's Runner needs asyncio (issue 21.6); the README's SDK snippet runs offline as shown

Every test of sections 9 to 13 on a store runs on both backends (``store_path``), in a host's own
runtime (``AsidesSession.bound_to``), unless it is about the path-built session.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import trio
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.memory import Session, SessionSettings
from hypothesis import given, settings
from hypothesis import strategies as st

from asides import (
    ArgumentTypeError,
    AsidesError,
    AutobiographicalStrategy,
    ExtractiveModel,
    InvalidNameError,
    MalformedContentError,
    PassthroughStrategy,
    StoreLockedError,
    TextBlock,
    open_runtime,
)
from asides.integrations.openai_agents import (
    AsidesSession,
    AsyncioRequiredError,
    ConversationMismatchError,
    ReservedReaderError,
    ScriptedAgentModel,
    SessionClosedError,
)
from tests.helpers import writable_store

set_tracing_disabled(True)

ROOT = Path(__file__).resolve().parents[2]

# -- 1. Helpers ---------------------------------------------------------------------------------


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def run(coro_fn: Any, *args: Any) -> Any:
    """Run an async function under its own ``asyncio.run`` (a fresh loop every time)."""
    return asyncio.run(coro_fn(*args))


def run_agent(method: str, agent: Agent[Any], text: str, session: Any) -> Any:
    """One ``Runner`` turn by ``method``: ``run`` in ``asyncio.run``, ``run_sync`` as it is,
    ``run_streamed`` consuming every event."""
    if method == "run":
        return asyncio.run(Runner.run(agent, text, session=session))
    if method == "run_sync":
        return Runner.run_sync(agent, text, session=session)

    async def streamed() -> Any:
        result = Runner.run_streamed(agent, text, session=session)
        async for _event in result.stream_events():
            pass
        # The SDK closes the model provider it made in a task of its own once the run ends:
        # awaited here, so that the loop does not end (and drop it) while it runs.
        others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        await asyncio.gather(*others, return_exceptions=True)
        return result

    return asyncio.run(streamed())


def texts(items: list[Any]) -> list[str]:
    """The text of each message item (a string content, or its text parts joined)."""
    out = []
    for item in items:
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.append("".join(p.get("text", "") for p in content if isinstance(p, dict)))
    return out


def message_texts(items: list[Any]) -> list[str]:
    """The text of each item, every one a message (a string content, or its text parts joined): an
    item without content fails (the sections 9 to 13 use this; ``texts`` skips such items)."""
    return [c if isinstance(c := i.get("content"), str) else "".join(p.get("text", "") for p in c) for i in items]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "sessions.db")


METHODS = ["run", "run_sync", "run_streamed"]

# -- 2. The SDK's own session tests, ported -----------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_basic_conversation(method, db):
    """As the SDK's own test: the second turn's model input holds the first turn, then the new input."""
    session = AsidesSession("conversation-1", db)
    model = ScriptedAgentModel("San Francisco", "California")
    agent = Agent(name="test", model=model)
    assert run_agent(method, agent, "What city is the Golden Gate Bridge in?", session).final_output == "San Francisco"
    assert run_agent(method, agent, "What state is it in?", session).final_output == "California"
    assert texts(model.inputs[1]) == ["What city is the Golden Gate Bridge in?", "San Francisco", "What state is it in?"]
    assert texts(run(session.get_items)) == texts(model.inputs[1]) + ["California"]
    session.close()


@pytest.mark.parametrize("method", METHODS)
def test_different_sessions_are_isolated(method, db):
    """Sessions with different ids on one store never see each other's conversation."""
    model = ScriptedAgentModel("I like cats", "I like dogs", "Yes, you mentioned cats")
    agent = Agent(name="test", model=model)
    one, two = AsidesSession("session_1", db), AsidesSession("session_2", db)
    run_agent(method, agent, "I like cats", one)
    run_agent(method, agent, "I like dogs", two)
    run_agent(method, agent, "What did I say I like?", one)
    assert texts(model.inputs[2]) == ["I like cats", "I like cats", "What did I say I like?"]
    assert texts(run(two.get_items)) == ["I like dogs", "I like dogs"]
    one.close()
    two.close()


def test_add_get_and_clear(db):
    """As the SDK's direct test: items come back in order; after ``clear_session`` there are none."""
    session = AsidesSession("direct", db)

    async def scenario() -> None:
        await session.add_items([user("Hello"), said("Hi there!")])
        assert await session.get_items() == [user("Hello"), said("Hi there!")]
        await session.clear_session()
        assert await session.get_items() == []
        await session.add_items([user("Again")])
        assert await session.get_items() == [user("Again")]

    run(scenario)
    session.close()


def test_pop_item(db):
    """As the SDK's test: the newest item comes off each time, then ``None``."""
    session = AsidesSession("pop", db)

    async def scenario() -> None:
        assert await session.pop_item() is None
        await session.add_items([user("Hello"), said("Hi there!"), user("How are you?")])
        assert await session.pop_item() == user("How are you?")
        assert await session.get_items() == [user("Hello"), said("Hi there!")]
        assert await session.pop_item() == said("Hi there!")
        assert await session.pop_item() == user("Hello")
        assert await session.pop_item() is None
        assert await session.get_items() == []

    run(scenario)
    session.close()


def test_pop_affects_only_its_session(db):
    """As the SDK's test: popping in one conversation leaves another untouched."""
    one, two = AsidesSession("session_1", db), AsidesSession("session_2", db)

    async def scenario() -> None:
        await one.add_items([user("Session 1 message")])
        await two.add_items([user("Session 2 message 1"), user("Session 2 message 2")])
        assert await two.pop_item() == user("Session 2 message 2")
        assert await one.get_items() == [user("Session 1 message")]
        assert await two.get_items() == [user("Session 2 message 1")]

    run(scenario)
    one.close()
    two.close()


def test_get_items_limit(db):
    """As the SDK's test: ``limit`` keeps the newest items in order; 0 gives none; past the end,
    all; a negative limit, all (as the SDK's SQLite session)."""
    session = AsidesSession("limits", db)
    items = [user("Message 1"), said("Response 1"), user("Message 2"), said("Response 2"), user("Message 3"), said("Response 3")]

    async def scenario() -> None:
        await session.add_items(items)
        assert await session.get_items() == items
        assert await session.get_items(limit=2) == items[-2:]
        assert await session.get_items(limit=4) == items[-4:]
        assert await session.get_items(limit=10) == items
        assert await session.get_items(limit=0) == []
        assert await session.get_items(limit=-1) == items

    run(scenario)
    session.close()


def test_unicode(db):
    """Unicode content round-trips."""
    session = AsidesSession("unicode", db)
    items = [user("こんにちは"), said("😊👍"), user("Привет")]

    async def scenario() -> None:
        await session.add_items(items)
        assert await session.get_items() == items

    run(scenario)
    session.close()


def test_sql_like_text(db):
    """Quotes and SQL keywords are text like any other."""
    session = AsidesSession("special_chars", db)
    items = [
        user("O'Reilly"),
        said("DROP TABLE sessions;"),
        user('"SELECT * FROM users WHERE name = "admin";"'),
        said("Robert'); DROP TABLE students;--"),
        user("Normal message"),
    ]

    async def scenario() -> None:
        await session.add_items(items)
        assert await session.get_items() == items

    run(scenario)
    session.close()


def test_concurrent_access_from_threads(db):
    """As the SDK's test: ten writes from five threads, each with its own event loop, all land;
    and two session objects of one conversation in different threads see the same log."""
    session = AsidesSession("concurrent", db)
    items = [user(f"Message {i}") for i in range(10)]

    def add(item: dict[str, Any]) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(session.add_items([item]))
        finally:
            loop.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
        list(pool.map(add, items))
    got = run(session.get_items)
    assert sorted(texts(got)) == sorted(texts(items)) and len(got) == 10
    other = AsidesSession("concurrent", db)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        seen = list(pool.map(lambda s: run(s.get_items), [session, other]))
    assert seen[0] == seen[1] == got
    other.close()
    session.close()


def test_session_settings(db):
    """``session_settings`` defaults to ``SessionSettings()``; a dict is converted as the SDK
    converts it (an unknown key refused); its ``limit`` applies to ``get_items`` and to the
    history the Runner sends; an explicit ``limit`` wins."""
    assert AsidesSession("s0").session_settings == SessionSettings()
    session = AsidesSession("settings", db, session_settings={"limit": 2})
    assert session.session_settings == SessionSettings(limit=2)
    with pytest.raises(TypeError, match="bogus"):
        AsidesSession("settings", db, session_settings={"limit": 2, "bogus": 1})
    items = [user("one"), said("two"), user("three")]
    run(session.add_items, items)
    assert run(session.get_items) == items[-2:]
    assert run(session.get_items, 3) == items
    model = ScriptedAgentModel("four")
    Runner.run_sync(Agent(name="t", model=model), "five", session=session)
    assert texts(model.inputs[0]) == ["two", "three", "five"]
    session.close()


def test_it_is_a_session_of_the_sdk():
    """The SDK's ``Session`` protocol recognises it."""
    session = AsidesSession("protocol")
    assert isinstance(session, Session)
    session.close()


# -- 3. Exact round trip of every input item ----------------------------------------------------

EVERY_ITEM: list[dict[str, Any]] = [
    {"role": "user", "content": "Plan the trip."},
    {"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
    {"role": "system", "content": "You are a planner."},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "This map:"},
            {"type": "input_image", "image_url": "data:image/png;base64,QUJD", "detail": "auto"},
            {"type": "input_file", "file_id": "file_1", "filename": "map.pdf"},
        ],
    },
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Check trains."}], "encrypted_content": "gAAA"},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "trains", "arguments": '{"from": "L"}', "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "3 trains"},
    {"type": "function_call", "call_id": "call_2", "name": "weird", "arguments": "not json"},
    {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "ok"}]},
    {"type": "custom_tool_call", "call_id": "call_3", "name": "patch", "input": "*** Begin"},
    {"type": "custom_tool_call_output", "call_id": "call_3", "output": "applied"},
    {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "call_4",
        "action": {"type": "click", "x": 1, "y": 2},
        "pending_safety_checks": [],
        "status": "completed",
    },
    {
        "type": "computer_call_output",
        "call_id": "call_4",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,QQ=="},
    },
    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "trains"}},
    {"type": "file_search_call", "id": "fs_1", "queries": ["x"], "status": "completed", "results": None},
    {"type": "mcp_call", "id": "mcp_1", "server_label": "s", "name": "n", "arguments": "{}", "output": "o"},
    {"type": "item_reference", "id": "msg_0"},
    {"type": "compaction", "id": "cmp_1", "encrypted_content": "zzz"},
    {"type": "mystery_item_from_the_future", "payload": {"nested": [1, 2.5, None, True, {"k": "ü"}]}},
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [
            {"type": "output_text", "text": "Take the 9:05.", "annotations": [], "logprobs": []},
            {"type": "refusal", "refusal": "No bus."},
        ],
    },
    {"role": "assistant", "content": ""},
    {"role": "user", "content": []},
]


def test_every_item_comes_back_exactly(db):
    """Every Responses input item, unknown types included, comes back from ``get_items`` as an
    equal dict, in order, also after the store is closed and reopened."""
    session = AsidesSession("every item", db)
    run(session.add_items, EVERY_ITEM)
    assert run(session.get_items) == EVERY_ITEM
    session.close()
    reopened = AsidesSession("every item", db)
    assert run(reopened.get_items) == EVERY_ITEM
    assert run(reopened.pop_item) == EVERY_ITEM[-1]
    reopened.close()


def test_returned_items_are_copies(db):
    """Changing what ``get_items`` or ``pop_item`` returned, or what was added, changes nothing stored."""
    session = AsidesSession("copies", db)
    item = {"role": "user", "content": [{"type": "input_text", "text": "a"}]}

    async def scenario() -> None:
        await session.add_items([item])
        item["content"][0]["text"] = "changed"
        got = await session.get_items()
        got[0]["content"][0]["text"] = "changed again"
        assert await session.get_items() == [{"role": "user", "content": [{"type": "input_text", "text": "a"}]}]

    run(scenario)
    session.close()


def test_a_tool_call_turn_round_trips(db):
    """A Runner turn that calls a function tool stores the call and its output; the next turn's
    model input holds them exactly as the SDK produced them."""

    @function_tool
    def trains(origin: str) -> str:
        """Count trains from a city."""
        return f"3 trains from {origin}"

    model = ScriptedAgentModel([ScriptedAgentModel.call("trains", {"origin": "Lisbon"}, "call_t")], "Three trains.", "Yes.")
    agent = Agent(name="planner", model=model, tools=[trains])
    session = AsidesSession("tools", db)
    assert Runner.run_sync(agent, "How many trains?", session=session).final_output == "Three trains."
    Runner.run_sync(agent, "Sure?", session=session)
    stored = run(session.get_items)
    kinds = [i.get("type", "message") for i in stored]
    assert kinds == ["message", "function_call", "function_call_output", "message", "message", "message"]
    assert stored[2]["output"] == "3 trains from Lisbon"
    assert model.inputs[2] == stored[:5]
    session.close()


# -- 4. Several agents on one conversation ------------------------------------------------------


def room(db: str, *readers: str) -> list[AsidesSession]:
    return [AsidesSession("room", db, reader=r) for r in readers]


def test_private_items_reach_only_their_readers(db):
    """An item added with ``audience`` is in the views (and model inputs) of the readers it names
    only; they get it exactly; another agent's own lines come to each agent as user messages
    naming the speaker."""
    ann, bob = room(db, "ann", "bob")

    async def scenario() -> None:
        await ann.add_items([user("Hello, both.")])
        await ann.add_items([user("Ann only: the code is 4417.")], audience=["ann"])
        await ann.add_items([said("Noted.")])
        await bob.add_items([user("Bob only: budget 900.")], audience=["bob"])
        assert await ann.get_items() == [user("Hello, both."), user("Ann only: the code is 4417."), said("Noted.")]
        assert await bob.get_items() == [user("Hello, both."), user("ann: Noted."), user("Bob only: budget 900.")]

    run(scenario)
    model = ScriptedAgentModel("Hi.")
    Runner.run_sync(Agent(name="bob", model=model), "Anything for me?", session=bob)
    assert "4417" not in json.dumps(model.inputs)
    assert "900" in json.dumps(model.inputs)
    for s in (ann, bob):
        s.close()


def test_private_tool_items_stay_private(db):
    """A private tool call and its output (blocks that cannot carry an audience themselves) stay
    out of other agents' views, and come back exactly to their reader."""
    ann, bob = room(db, "ann", "bob")
    call = {"type": "function_call", "call_id": "c1", "name": "vault", "arguments": '{"code": 4417}'}
    output = {"type": "function_call_output", "call_id": "c1", "output": "opened with 4417"}

    async def scenario() -> None:
        await ann.add_items([call, output], audience=["ann"])
        assert await ann.get_items() == [call, output]
        assert await bob.get_items() == []

    run(scenario)
    ann.close()
    bob.close()


def test_pop_item_leaves_other_agents_alone(db):
    """``pop_item`` takes the newest item this agent added, skipping newer ones by others; the
    popped item leaves this agent's view only."""
    ann, bob = room(db, "ann", "bob")

    async def scenario() -> None:
        await ann.add_items([user("Q1"), said("A1")])
        await bob.add_items([said("B1")])
        before = await bob.get_items()
        assert await ann.pop_item() == said("A1")
        assert await ann.get_items() == [user("Q1"), user("bob: B1")]
        assert await bob.get_items() == before == [user("Q1"), user("ann: A1"), said("B1")]
        assert await bob.pop_item() == said("B1")
        assert await ann.get_items() == [user("Q1"), user("bob: B1")]

    run(scenario)
    ann.close()
    bob.close()


def test_clear_session_empties_one_view_only(db):
    """``clear_session`` empties this agent's view; the others keep theirs; what comes later
    (anyone's) is in the cleared view again."""
    ann, bob = room(db, "ann", "bob")

    async def scenario() -> None:
        await ann.add_items([user("old"), said("old answer")])
        await ann.clear_session()
        assert await ann.get_items() == []
        assert await bob.get_items() == [user("old"), user("ann: old answer")]
        await bob.add_items([said("new from bob")])
        assert await ann.get_items() == [user("bob: new from bob")]

    run(scenario)
    ann.close()
    bob.close()


def test_another_object_of_the_same_agent_follows_its_pops(db):
    """Two session objects of one agent: a pop through one leaves the other's view too."""
    first, second = room(db, "ann", "ann")

    async def scenario() -> None:
        await first.add_items([user("a"), said("b")])
        assert await second.pop_item() == said("b")
        assert await first.get_items() == [user("a")]

    run(scenario)
    first.close()
    second.close()


# -- 5. Compression ---------------------------------------------------------------------------


def test_a_compressing_strategy_gives_memories_then_recent_items(db):
    """With ``AutobiographicalStrategy``, ``get_items`` is the agent's compile: its memories as
    assistant messages (in its own voice: never a user turn), then the recent items exactly as
    added; a private line of another reader reaches neither."""
    strategy = AutobiographicalStrategy(target_chunk_tokens=40, head_window_tokens=0, recent_window_tokens=60, holdback_chunks=0)
    ann = AsidesSession("compressed", db, reader="ann", strategy=strategy, model=ExtractiveModel())
    bob = AsidesSession("compressed", db, reader="bob")
    items = []
    for i in range(30):
        items.append(user(f"Question {i}: where does the workshop day {i} meet, and at what time?"))
        items.append(said(f"Answer {i}: in room {i} at {9 + i % 8} o'clock, as agreed."))

    async def scenario() -> None:
        await ann.add_items(items)
        await bob.add_items([user("Bob only: the secret is 5521.")], audience=["bob"])
        await ann.drain()

    run(scenario)
    got = run(ann.get_items)
    memories = [i for i in got if i not in items]
    assert memories, "some history is remembered rather than repeated"
    assert all(m["role"] == "assistant" and "[Recall" in m["content"] for m in memories)
    recent = got[len(memories) :]
    assert got[: len(memories)] == memories
    assert recent == items[len(items) - len(recent) :] and len(recent) < len(items)
    assert "5521" not in json.dumps(got)
    ann.close()
    bob.close()


# -- 6. Event loops and threads; one store per file; a host's own runtime -----------------------


def test_separate_asyncio_runs_and_threads_on_one_session(db):
    """One session object serves one ``asyncio.run`` after another, other threads' loops, and
    ``Runner.run_sync``."""
    session = AsidesSession("loops", db)
    run(session.add_items, [user("from the main thread")])
    worker = threading.Thread(target=lambda: run(session.add_items, [user("from a thread")]))
    worker.start()
    worker.join()
    model = ScriptedAgentModel("ok")
    Runner.run_sync(Agent(name="t", model=model), "from run_sync", session=session)
    assert texts(run(session.get_items)) == ["from the main thread", "from a thread", "from run_sync", "ok"]
    session.close()


async def test_called_from_trio(db):
    """Under Trio (the test's own loop), the session's calls work as under asyncio."""
    session = AsidesSession("trio", db)
    await session.add_items([user("from trio")])
    assert await session.get_items() == [user("from trio")]
    assert await session.pop_item() == user("from trio")
    session.close()


def test_sessions_on_one_file_share_one_store(db):
    """Two session objects on one file share one store (the second open is not refused as a
    second runtime would be); the store stays open until the last one closes; then reopens."""
    one = AsidesSession("shared", db, reader="ann")
    two = AsidesSession("shared", Path(db), reader="bob")
    run(one.add_items, [user("hello")])
    assert run(two.get_items) == [user("hello")]
    one.close()
    assert run(two.get_items) == [user("hello")]
    two.close()
    three = AsidesSession("shared", db)
    assert run(three.get_items) == [user("hello")]
    three.close()


async def test_a_hosts_own_runtime_under_trio(store_path):
    """``AsidesSession.bound_to(runtime, ...)`` gives a session bound to the host's runtime: it works in the
    runtime's loop and from another thread's asyncio loop, and the host's managers see the
    conversation on its branch."""
    async with open_runtime(store_path) as rt:
        ann = await AsidesSession.bound_to(rt, "room", reader="ann")
        bob = await AsidesSession.bound_to(rt, "room", reader="bob", session_settings={"limit": 1})
        await ann.add_items([user("Hi."), said("Hello.")])
        await ann.add_items([user("psst")], audience=["ann"])
        assert await bob.get_items() == [user("ann: Hello.")]
        assert await bob.get_items(limit=5) == [user("Hi."), user("ann: Hello.")]
        host = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=ann.branch)
        assert [m.participant for m in host.get_all_messages()] == ["user", "ann", "user"]
        from_asyncio = await trio.to_thread.run_sync(run, bob.get_items)
        assert from_asyncio == [user("ann: Hello.")]
        ann.close()
        bob.close()
        with pytest.raises(SessionClosedError):
            await bob.get_items()


def test_a_hosts_own_runtime_under_asyncio_with_the_runner(store_path):
    """Under asyncio, a runtime-bound session serves ``Runner.run`` in the runtime's own loop and
    calls from another thread's loop."""

    async def host() -> list[Any]:
        async with open_runtime(store_path) as rt:
            session = await AsidesSession.bound_to(rt, "room", reader="ann")
            model = ScriptedAgentModel("Hello from ann.")
            await Runner.run(Agent(name="ann", model=model), "Hi, ann.", session=session)
            from_thread = await asyncio.to_thread(run, session.get_items)
            session.close()
            return from_thread

    assert texts(asyncio.run(host())) == ["Hi, ann.", "Hello from ann."]


def test_a_trio_runtime_elsewhere_in_the_process_does_not_matter(db):
    """A Trio runtime of the host's own running in another thread does not disturb plain asyncio
    callers of a session."""
    started, stop = threading.Event(), threading.Event()

    async def trio_host() -> None:
        async with open_runtime(str(Path(db).with_name("other.db"))):
            started.set()
            await trio.to_thread.run_sync(stop.wait)

    thread = threading.Thread(target=trio.run, args=(trio_host,))
    thread.start()
    started.wait()
    try:
        session = AsidesSession("plain", db)
        run(session.add_items, [user("x")])
        assert run(session.get_items) == [user("x")]
        session.close()
    finally:
        stop.set()
        thread.join()


async def test_a_session_refused_a_file_its_host_holds_points_to_bound_to(tmp_path):
    pytest.importorskip("agents")
    from asides.integrations.openai_agents import AsidesSession

    path = str(tmp_path / "room.db")
    async with open_runtime(path):
        with pytest.raises(StoreLockedError, match=r"await AsidesSession\.bound_to\(rt, session_id, reader=\.\.\.\)"):
            AsidesSession("workshop", path, reader="ann")


# -- 7. Refusals, closing, and what is stored ---------------------------------------------------


def test_malformed_items_refuse_the_whole_batch(db):
    """An item that is not a JSON object (or holds NaN, or a tuple that would not come back equal)
    refuses the batch with ``MalformedContentError`` naming it, and nothing is written."""
    session = AsidesSession("refusals", db)
    for bad, path in [
        ([user("ok"), "not an item"], "items[1]"),
        ([user("ok"), {"role": "user", "content": float("nan")}], "items[1]"),
        ([{"role": "user", "content": ("a", "tuple")}], "items[0]"),
    ]:
        with pytest.raises(MalformedContentError) as refused:
            run(session.add_items, bad)
        assert refused.value.path == path
    with pytest.raises(MalformedContentError):
        run(session.add_items, user("a dict, not a list"))
    with pytest.raises(ValueError, match="at least one reader"):
        run(lambda: session.add_items([user("x")], audience=[]))
    assert run(session.get_items) == []
    session.close()


def test_bad_arguments_are_refused():
    """A session id that is not a string, and a reader that is not a name, are refused."""
    with pytest.raises(TypeError, match="session_id"):
        AsidesSession(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reader"):
        AsidesSession("x", reader="")


def test_a_closed_session_refuses_calls_and_close_is_idempotent(db):
    """After ``close()`` every call raises ``SessionClosedError``; ``close()`` again is a no-op."""
    session = AsidesSession("closing", db)
    session.close()
    session.close()
    with pytest.raises(SessionClosedError, match="closed"):
        run(session.get_items)


async def test_what_is_stored(store_path):
    """The conversation is the branch ``openai-agents/<id>``; an agent's memories and claim live
    in ``openai-agents/<reader>/<generation>``; each message keeps its item as JSON text."""
    async with open_runtime(store_path) as rt:
        ann = await AsidesSession.bound_to(rt, "room-7", reader="ann")
        await ann.add_items([said("Hello.")])
        assert ann.branch == "openai-agents/room-7" and ann.namespace == "openai-agents/ann/0"
        (message,) = rt.store.messages(ann.branch)
        assert message.participant == "ann"
        assert json.loads(message.metadata["openai_agents"]["item"]) == said("Hello.")
        assert rt.store.get_state(ann.branch, "openai-agents/ann/0/reader") == "ann"
        await ann.clear_session()
        assert ann.namespace == "openai-agents/ann/1"
        assert rt.store.messages("main") == []
        ann.close()


# -- 8. The example runs ------------------------------------------------------------------------


def test_the_example_runs_offline():
    """``python examples/openai_agents_room.py`` exits 0 offline: three agents each with a session
    on one conversation, private lines that reach only their readers, and compression."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "openai_agents_room.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "no private line reached an agent it was not for" in out
    assert "memories" in out


# -- 9. One conversation per session id -----------------------------------------------------------


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
                assert message_texts(await session.get_items()) == [f"MARK-{n}"], every[n]

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


# -- 10. An edit retires the stored item ------------------------------------------------------------


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


# -- 11. Readers named like a shared role -----------------------------------------------------------


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


# -- 12. ScriptedAgentModel takes its replies one by one --------------------------------------------


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


# -- 13. The SDK's Runner needs asyncio; the README snippet ------------------------------------------


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


#: The SDK (0.24) makes a coroutine to close the model provider it owns and, when its run fails
#: at the session's refusal under Trio, never awaits it; whether the garbage collector reports it
#: inside the test or after depends on timing. It is the SDK's object, not asides's: ignored here.
SDK_LEFT_A_COROUTINE = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@SDK_LEFT_A_COROUTINE
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
        assert message_texts(await ann.get_items()) == ["Hello", "Hello back."]
        ann.close()


@SDK_LEFT_A_COROUTINE
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
    assert message_texts(asyncio.run(session.get_items())) == ["Hello", "Hi."]
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
