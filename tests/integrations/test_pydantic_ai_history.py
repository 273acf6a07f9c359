"""``AsidesHistory``: Pydantic AI agents on the shared log (issue 24, item 2).

Each agent runs offline on Pydantic AI's ``FunctionModel``, whose function records the messages
the model receives; a two-agent conversation with private lines checks that each agent's model
input holds exactly its reader's view.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from asides import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy, open_runtime, text
from asides.integrations.pydantic_ai import AsidesHistory, LoopError

_ids = itertools.count()


def recording(name: str, seen: dict[str, list[list[ModelMessage]]], *, calls: bool) -> FunctionModel:
    """A model that records its input; with ``calls`` it looks the weather up before answering."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.setdefault(name, []).append(list(messages))
        last = messages[-1]
        returned = isinstance(last, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in last.parts)
        if calls and not returned:
            return ModelResponse(parts=[ToolCallPart("lookup", {"city": "Oslo"}, tool_call_id=f"call-{next(_ids)}")])
        return ModelResponse(parts=[TextPart(f"{name}: done.")])

    return FunctionModel(answer)


def shown(messages: list[ModelMessage]) -> list[tuple[str, list[tuple[str, Any]]]]:
    out = []
    for m in messages:
        parts: list[tuple[str, Any]] = []
        for p in m.parts:
            if isinstance(p, ToolCallPart):
                parts.append(("call", (p.tool_name, p.args_as_dict())))
            elif isinstance(p, (SystemPromptPart, UserPromptPart, TextPart, ToolReturnPart)):
                parts.append((p.part_kind, p.content))
            else:
                parts.append((p.part_kind, None))
        out.append(("request" if isinstance(m, ModelRequest) else "response", parts))
    return out


def everything(requests: list[list[ModelMessage]]) -> str:
    return repr([shown(r) for r in requests])


def make(rt: Any, name: str, seen: dict[str, Any], *, calls: bool, strategy: Any = None) -> tuple[Agent[None, str], AsidesHistory]:
    history = AsidesHistory(rt, f"agents/{name}", reader=name, strategy=strategy)
    agent: Agent[None, str] = Agent(recording(name, seen, calls=calls), system_prompt=f"SYSTEM-{name}", capabilities=[history])

    @agent.tool_plain
    def lookup(city: str) -> str:
        """The weather in a city."""
        return f"{city}: sunny, 21 degrees"

    return agent, history


async def conversation(store: str) -> dict[str, Any]:
    seen: dict[str, list[list[ModelMessage]]] = {}
    async with open_runtime(store) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        await host.add_message("user", [text("BRIEF-ANN: the client is Acme.", audience=["ann"])])
        await host.add_message("user", [text("BRIEF-BOB: the budget is 9k.", audience=["bob"])])
        ann, _ = make(rt, "ann", seen, calls=True)
        bob, _ = make(rt, "bob", seen, calls=False)
        await ann.run("Ann, the weather in Oslo?")
        await bob.run("Bob, anything to add?")
        await ann.run("Ann, thanks.")
        log = [(m.participant, m.content) for m in rt.store.messages("main")]
    return {**seen, "log": log}


def test_two_agents_each_get_exactly_their_readers_view(store_path: str) -> None:
    """ann's tool call and its result come back to her as a call and a return; bob gets her
    public answer as a line naming her and his own briefing, never hers nor her call; each
    system prompt leads its own agent's first request and is nowhere in the log."""
    seen = asyncio.run(conversation(store_path))
    ann_brief = "BRIEF-ANN: the client is Acme.\n\nAnn, the weather in Oslo?"
    assert shown(seen["ann"][1]) == [
        ("request", [("system-prompt", "SYSTEM-ann"), ("user-prompt", ann_brief)]),
        ("response", [("call", ("lookup", {"city": "Oslo"}))]),
        ("request", [("tool-return", "Oslo: sunny, 21 degrees")]),
    ]
    assert shown(seen["bob"][0]) == [
        (
            "request",
            [
                ("system-prompt", "SYSTEM-bob"),
                ("user-prompt", "BRIEF-BOB: the budget is 9k.\n\nAnn, the weather in Oslo?\n\nann: ann: done.\n\nBob, anything to add?"),
            ],
        )
    ]
    third = shown(seen["ann"][2])
    assert third[-2:] == [
        ("response", [("text", "ann: done.")]),
        ("request", [("user-prompt", "Bob, anything to add?\n\nbob: bob: done.\n\nAnn, thanks.")]),
    ]
    assert "BRIEF-ANN" not in everything(seen["bob"]) and "lookup" not in everything(seen["bob"])
    assert "BRIEF-BOB" not in everything(seen["ann"])
    logged = repr(seen["log"])
    assert "SYSTEM-ann" not in logged and "SYSTEM-bob" not in logged
    private = seen["log"][3][1]
    assert seen["log"][3][0] == "ann" and all(b.audience == ("ann",) for b in private)


def test_each_runs_messages_enter_the_log_once() -> None:
    async def main() -> list[tuple[str, str]]:
        seen: dict[str, Any] = {}
        async with open_runtime() as rt:
            agent, _ = make(rt, "ann", seen, calls=False)
            first = await agent.run("one")
            await agent.run("two", message_history=first.all_messages())  # an earlier run's messages are not written again
            return [(m.participant, m.content[0].text) for m in rt.store.messages("main")]

    assert asyncio.run(main()) == [("user", "one"), ("ann", "ann: done."), ("user", "two"), ("ann", "ann: done.")]


def test_compression_memories_are_the_agents_own_and_keep_readers_apart() -> None:
    def strategy(name: str) -> AutobiographicalStrategy:
        return AutobiographicalStrategy(
            target_chunk_tokens=60, head_window_tokens=60, recent_window_tokens=120, summary_target_tokens=20, summary_participant=name
        )

    async def main() -> dict[str, list[list[ModelMessage]]]:
        seen: dict[str, list[list[ModelMessage]]] = {}
        async with open_runtime(model=ExtractiveModel()) as rt:
            host = await rt.open_manager("host", strategy=PassthroughStrategy())
            agents = {name: make(rt, name, seen, calls=name == "ann", strategy=strategy(name)) for name in ("ann", "bob")}
            for turn in range(14):
                name = ("ann", "bob")[turn % 2]
                await host.add_message("user", [text(f"SECRET-{name}-{turn} for {name} alone.", audience=[name])])
                agent, history = agents[name]
                await agent.run(f"Turn {turn}: {name}, your view please.")
                await history.drain()
        return seen

    seen = asyncio.run(main())
    assert "SECRET-bob" not in everything(seen["ann"]) and "SECRET-ann" not in everything(seen["bob"])
    assert any(
        isinstance(m, ModelResponse) and any(isinstance(p, TextPart) and "[Recall" in p.content for p in m.parts) for m in seen["bob"][-1]
    )
    for request in seen["ann"]:
        pending: set[str] = set()
        for m in request:
            if isinstance(m, ModelResponse):
                assert not pending
                pending = {p.tool_call_id for p in m.parts if isinstance(p, ToolCallPart)}
            else:
                returned = {p.tool_call_id for p in m.parts if isinstance(p, ToolReturnPart)}
                assert returned == pending, "each call is answered in the very next request"
                pending = set()


def test_run_sync_in_another_thread() -> None:
    async def main() -> tuple[str, list[str]]:
        seen: dict[str, Any] = {}
        async with open_runtime() as rt:
            agent, _ = make(rt, "ann", seen, calls=False)
            result = await asyncio.to_thread(agent.run_sync, "from a thread")
            return result.output, [m.content[0].text for m in rt.store.messages("main")]

    assert asyncio.run(main()) == ("ann: done.", ["from a thread", "ann: done."])


def test_made_outside_the_runtimes_loop_it_is_refused() -> None:
    async def main() -> Any:
        async with open_runtime() as rt:
            return rt

    with pytest.raises(LoopError):
        AsidesHistory(asyncio.run(main()), "a", reader="ann")


def test_the_import_error_names_the_extra() -> None:
    code = "import sys; sys.modules['pydantic_ai'] = None; import asides.integrations.pydantic_ai"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "pip install 'asides[pydantic-ai]'" in done.stderr
