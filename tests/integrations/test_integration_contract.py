"""The contract every integration keeps (issue 31, items 3 to 5), held once against all three: the
LangChain middleware, the Pydantic AI history and the OpenAI Agents session, each through the
small adapter in ``tests/integrations/integration_adapters.py`` (a new integration joins by adding one).

1. A host's redaction reaches the agent it hides something from: what an agent gets back of its
   own lines comes from what its reader sees now, never from a copy kept when they were written.
2. An erased line never comes back in a later request.
3. Readers named like a shared role are refused when the integration object is made.
4. Tool calls are private by default, and ``private_tool_calls=False`` makes them public text
   naming the agent; the option is the same everywhere.
5. Another agent's lines reach an agent as lines naming the speaker.
6. System prompts are never written to the log.
7. A run cancelled mid-way leaves no call without its result, and no write half done.

Every test runs each framework on both store backends (``store_path``), in the runtime's own
asyncio loop (the frameworks run on asyncio), offline.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from integration_adapters import ADAPTERS, SYSTEM, TOOL_SECRET, Adapter, Agent, answer_of, call_text, calls_of, well_formed, words

from asides import ArgumentTypeError, InvalidNameError, PassthroughStrategy, Tombstone, ToolResultBlock, ToolUseBlock, open_runtime, text
from asides.integrations import ReservedReaderError

LOOKUP = call_text("lookup", {"city": "Oslo"})


@pytest.fixture(params=sorted(ADAPTERS))
def framework(request: pytest.FixtureRequest) -> Adapter:
    adapter = ADAPTERS[request.param]
    adapter.available()
    return adapter


def run(store_path: str, scenario: Callable[[Any], Awaitable[Any]]) -> Any:
    """``scenario(rt)`` in a runtime on ``store_path``, under asyncio."""

    async def main() -> Any:
        async with open_runtime(store_path) as rt:
            return await scenario(rt)

    return asyncio.run(main())


def private_lines(rt: Any, agent: Agent, reader: str) -> list[Any]:
    """The stored messages of ``reader`` that are for some readers only."""
    return [
        m for m in rt.store.messages(agent.branch) if m.participant == reader and any(getattr(b, "audience", None) for b in m.content)
    ]


# -- 1. Redaction ---------------------------------------------------------------------------------


def test_a_hosts_redaction_of_a_private_call_is_what_the_agent_gets_back(framework, store_path):
    """A host edits ann's private tool call and its result (same audience, ``[redacted by host]``):
    every later request of ann's holds the redacted text, never the call or its result."""

    async def scenario(rt: Any) -> None:
        ann = await framework.make(rt, "ann")
        await ann.run("Ann, the weather in Oslo?", call=True)
        private = private_lines(rt, ann, "ann")
        assert private, "the call and its result were written for ann alone"
        host = await rt.open_manager("host", strategy=PassthroughStrategy(), branch=ann.branch)
        for message in private:
            await host.edit_message(message.id, [text("[redacted by host]", audience=["ann"])])
        await ann.run("Ann, anything else?")
        later = ann.requests[-1]
        assert "[redacted by host]" in words(later)
        assert TOOL_SECRET not in words(later) and LOOKUP not in calls_of(later), later
        well_formed(later)
        for message in private:  # nor does a read of the message serve a copy of what was edited away
            assert TOOL_SECRET not in json.dumps(dict(rt.store.get_message(ann.branch, message.id).metadata), default=str)

    run(store_path, scenario)


# -- 2. Erasure -----------------------------------------------------------------------------------


def test_an_erased_line_never_comes_back(framework, store_path):
    """The host erases ann's private call and its result, and the user's line asking for it: no
    later request of ann's holds any of them."""

    async def scenario(rt: Any) -> None:
        ann = await framework.make(rt, "ann")
        await ann.run("Ann, the weather in Oslo? ERASE-ME", call=True)
        asked = [m for m in rt.store.messages(ann.branch) if "ERASE-ME" in repr(m.content)]
        erased = [*private_lines(rt, ann, "ann"), *asked]
        assert len(erased) >= 2
        await rt.erase([m.id for m in erased], reason="the user asked")
        assert all(isinstance(rt.tombstone(m.id), Tombstone) for m in erased)
        await ann.run("Ann, anything else?")
        later = ann.requests[-1]
        assert "ERASE-ME" not in words(later) and TOOL_SECRET not in words(later) and LOOKUP not in calls_of(later), later
        well_formed(later)

    run(store_path, scenario)


# -- 3. Reserved reader names ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["user", "System", "DEVELOPER", "assistant"])
def test_a_reader_named_like_a_shared_role_is_refused_when_made(framework, store_path, name):
    """Refused with ``ReservedReaderError`` (an ``InvalidNameError``, path ``reader``) when the
    integration object is made, writing nothing."""

    async def scenario(rt: Any) -> None:
        with pytest.raises(ReservedReaderError) as refused:
            await framework.make(rt, name)
        assert isinstance(refused.value, InvalidNameError) and refused.value.path == "reader"
        assert repr(name) in str(refused.value)
        assert [b.name for b in rt.list_branches()] == ["main"] and rt.store.length("main") == 0

    run(store_path, scenario)


def test_the_refusal_is_one_error_wherever_it_is_imported_from(framework):
    """``ReservedReaderError`` has one home, ``asides.integrations``; each integration's package
    gives the same class."""
    import importlib

    package = importlib.import_module(f"asides.integrations.{framework.name}")
    assert package.ReservedReaderError is ReservedReaderError
    assert ReservedReaderError.__module__ == "asides.integrations"


# -- 4. Private tool calls ------------------------------------------------------------------------


async def ann_then_bob(rt: Any, framework: Adapter, **options: Any) -> tuple[Agent, Agent]:
    """ann looks the weather up and answers; bob answers; ann speaks again."""
    ann = await framework.make(rt, "ann", **options)
    bob = await framework.make(rt, "bob")
    await ann.run("Ann, the weather in Oslo?", call=True)
    await bob.run("Bob, anything to add?")
    await ann.run("Ann, thanks.")
    return ann, bob


def test_tool_calls_are_private_by_default(framework, store_path):
    """By default another agent's requests hold nothing of ann's call or its result, while ann
    gets hers back as a call answered by its result."""

    async def scenario(rt: Any) -> None:
        ann, bob = await ann_then_bob(rt, framework)
        seen_by_bob = words(bob.requests[-1])
        assert "lookup" not in seen_by_bob and TOOL_SECRET not in seen_by_bob, seen_by_bob
        assert LOOKUP in calls_of(ann.requests[-1])
        assert TOOL_SECRET in words(ann.requests[-1])
        well_formed(ann.requests[-1])
        assert ann.integration.private_tool_calls is True

    run(store_path, scenario)


def test_public_tool_calls_reach_others_as_text_naming_the_agent(framework, store_path):
    """With ``private_tool_calls=False`` bob reads ann's call as text naming her, never as a call
    of his own; ann still gets hers back as a call."""

    async def scenario(rt: Any) -> None:
        ann, bob = await ann_then_bob(rt, framework, private_tool_calls=False)
        assert ann.integration.private_tool_calls is False
        seen_by_bob = bob.requests[-1]
        assert '[ann called tool lookup {"city":"Oslo"}]' in words(seen_by_bob)
        assert TOOL_SECRET in words(seen_by_bob) and not calls_of(seen_by_bob)
        assert LOOKUP in calls_of(ann.requests[-1])
        well_formed(seen_by_bob)
        well_formed(ann.requests[-1])

    run(store_path, scenario)


def test_private_tool_calls_must_be_a_bool(framework, store_path):
    async def scenario(rt: Any) -> None:
        with pytest.raises(ArgumentTypeError) as refused:
            await framework.make(rt, "ann", private_tool_calls="yes")
        assert refused.value.path == "private_tool_calls"

    run(store_path, scenario)


# -- 5. Other agents' lines are named -------------------------------------------------------------


def test_another_agents_answer_names_its_speaker(framework, store_path):
    async def scenario(rt: Any) -> None:
        ann, bob = await ann_then_bob(rt, framework)
        assert f"ann: {answer_of('ann')}" in words(bob.requests[-1])
        assert f"bob: {answer_of('bob')}" in words(ann.requests[-1])

    run(store_path, scenario)


# -- 6. System prompts ----------------------------------------------------------------------------


def test_system_prompts_are_never_written(framework, store_path):
    async def scenario(rt: Any) -> None:
        ann, bob = await ann_then_bob(rt, framework, private_tool_calls=False)
        logged = repr([(m.participant, m.content, dict(m.metadata)) for m in rt.store.messages(ann.branch)])
        assert SYSTEM not in logged, logged
        assert answer_of("ann") in logged and answer_of("bob") in logged

    run(store_path, scenario)


# -- 7. Cancellation ------------------------------------------------------------------------------


def test_a_run_cancelled_while_its_tool_runs_leaves_no_call_behind(framework, store_path):
    """Cancelled while its tool runs, a run leaves its input in the log and nothing of the call:
    the agent's next request is well formed and holds no call."""

    async def scenario(rt: Any) -> None:
        ann = await framework.make(rt, "ann")
        ann.gate.armed = True
        task = asyncio.ensure_future(ann.run("Ann, the weather in Oslo?", call=True))
        with anyio.fail_after(60):
            await ann.gate.entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        ann.gate.armed = False
        await ann.run("Ann, never mind.")
        later = ann.requests[-1]
        assert "Ann, the weather in Oslo?" in words(later) and "Ann, never mind." in words(later)
        assert not calls_of(later) and TOOL_SECRET not in words(later), later
        well_formed(later)

    run(store_path, scenario)


def test_a_run_cancelled_while_it_writes_leaves_no_batch_half_written(framework, store_path):
    """Cancelled just after its call was written and before the result (public calls: two
    messages), a run's write still finishes: the log holds the call with its result, and the
    agent's next request is well formed."""

    async def scenario(rt: Any) -> None:
        ann = await framework.make(rt, "ann", private_tool_calls=False)
        start = rt.store.length(ann.branch)
        task = asyncio.ensure_future(ann.run("Ann, the weather in Oslo?", call=True))
        with anyio.fail_after(60):
            while rt.store.length(ann.branch) < start + 2 and not task.done():  # the input, then the call
                await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        await ann.run("Ann, never mind.")  # waits for any write still under way
        blocks = [b for m in rt.store.messages(ann.branch) for b in m.content]
        calls = {b.id for b in blocks if isinstance(b, ToolUseBlock)}
        results = {b.tool_use_id for b in blocks if isinstance(b, ToolResultBlock)}
        assert calls and calls == results, (calls, results)
        well_formed(ann.requests[-1])

    run(store_path, scenario)
