"""Handoffs in the OpenAI Agents SDK: ``RunConfig(call_model_input_filter=session.call_model_input_filter)``
sends the agent a handoff reaches its own view, not the transcript the run carries.

Two agents and a handoff between them, offline (``ScriptedAgentModel`` records every input it
was given), on both store backends: the receiving agent never gets the first agent's private
line or tool output, gets the shared lines and the run's input, and keeps its own tool calls
within its turn; the session's own agent is sent what it would be without the filter."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled

from asides import open_runtime
from asides.integrations import ReservedReaderError
from asides.integrations.openai_agents import AsidesSession, ScriptedAgentModel
from tests.helpers import sibling_store

set_tracing_disabled(True)

SECRET_LINE = "triage only: the code is PRIVATE-7"
TOOL_SECRET = "TOOLSECRET-42"


@function_tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{TOOL_SECRET} for {city}"


def seen(inputs: list[list[Any]]) -> list[str]:
    """Each input as text, its item and call ids made alike (the scripted model numbers them
    across the process)."""
    return [re.sub(r"(call|fc|msg)_\d+", r"\1_n", json.dumps(inp, default=str)) for inp in inputs]


def agents(*, billing_name: str = "billing") -> tuple[Agent[Any], ScriptedAgentModel, ScriptedAgentModel]:
    billing_model = ScriptedAgentModel([ScriptedAgentModel.call("lookup", {"city": "Rome"})], "Refund done.")
    billing = Agent(name=billing_name, instructions="You bill.", model=billing_model, tools=[lookup])
    triage_model = ScriptedAgentModel(
        [ScriptedAgentModel.call("lookup", {"city": "Oslo"})],
        [ScriptedAgentModel.call(f"transfer_to_{billing_name.lower()}", {})],
    )
    triage = Agent(name="triage", instructions="You triage.", model=triage_model, tools=[lookup], handoffs=[billing])
    return triage, triage_model, billing_model


async def _run(store_path: str, *, private_tool_calls: bool = True, with_filter: bool = True, billing_name: str = "billing") -> Any:
    async with open_runtime(store_path) as rt:
        session = await AsidesSession.bound_to(rt, "desk", reader="triage", private_tool_calls=private_tool_calls)
        await session.add_items([{"role": "user", "content": "Hello, both of you."}])
        await session.add_items([{"role": "user", "content": SECRET_LINE}], audience=["triage"])
        triage, triage_model, billing_model = agents(billing_name=billing_name)
        config = RunConfig(call_model_input_filter=session.call_model_input_filter) if with_filter else RunConfig()
        result = await Runner.run(triage, "I need a refund.", session=session, run_config=config)
        session.close()
        return result, triage_model.inputs, billing_model.inputs


def test_the_receiving_agent_is_sent_its_own_view(store_path):
    result, triage_inputs, billing_inputs = asyncio.run(_run(store_path))
    assert result.final_output == "Refund done."
    first, second = seen(billing_inputs)
    for sent in (first, second):
        assert "Hello, both of you." in sent and "I need a refund." in sent
        assert "PRIVATE-7" not in sent, "the first agent's private line reached the second"
        assert "Oslo" not in sent and f"{TOOL_SECRET} for Oslo" not in sent, "the first agent's tool call reached the second"
    assert "Rome" in second and f"{TOOL_SECRET} for Rome" in second, "the receiving agent keeps its own tool call in its turn"
    assert any("PRIVATE-7" in sent for sent in seen(triage_inputs)), "the session's own agent sees its private line"


def test_the_sessions_own_agent_is_sent_what_it_would_be_without_the_filter(store_path):
    _result, with_filter, _billing = asyncio.run(_run(store_path))
    _result, without, _billing = asyncio.run(_run(sibling_store(store_path, "again"), with_filter=False))
    assert seen(with_filter) == seen(without)


def test_without_the_filter_the_transcript_leaks_which_is_why_it_exists(store_path):
    _result, _triage, billing_inputs = asyncio.run(_run(store_path, with_filter=False))
    assert any(f"{TOOL_SECRET} for Oslo" in sent for sent in seen(billing_inputs))


def test_with_public_tool_calls_the_first_agents_calls_are_sent(store_path):
    _result, _triage, billing_inputs = asyncio.run(_run(store_path, private_tool_calls=False))
    assert all("PRIVATE-7" not in sent for sent in seen(billing_inputs))
    assert any("Oslo" in sent for sent in seen(billing_inputs))


def test_an_agent_named_like_a_shared_role_is_refused(store_path):
    with pytest.raises(ReservedReaderError):
        asyncio.run(_run(store_path, billing_name="Assistant"))
