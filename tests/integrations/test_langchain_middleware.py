"""``AsidesMiddleware``: LangChain v1 agents (``create_agent``) on the shared log (issue 24, item 1).

Every agent runs offline on ``ScriptedChatModel`` (LangChain's ``GenericFakeChatModel``, made to
take tools and to record each request), in the runtime's own asyncio loop unless a test says
otherwise. The model's recorded requests are what each agent's model was sent.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from asides import AutobiographicalStrategy, ExtractiveModel, PassthroughStrategy, open_runtime, text
from asides.integrations.langchain import AsidesMiddleware, LoopError, ScriptedChatModel


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny, 21 degrees"


_ids = itertools.count()


def call(city: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "lookup", "args": {"city": city}, "id": f"call-{next(_ids)}", "type": "tool_call"}])


def shown(messages: list[BaseMessage]) -> list[tuple[str, Any]]:
    """A request as (kind, content or calls) pairs."""
    out: list[tuple[str, Any]] = []
    for m in messages:
        if isinstance(m, AIMessage) and m.tool_calls:
            out.append(("ai-calls", [(c["name"], c["args"]) for c in m.tool_calls]))
        elif isinstance(m, ToolMessage):
            out.append(("tool", m.content))
        else:
            out.append((type(m).__name__, m.content))
    return out


def everything(requests: list[list[BaseMessage]]) -> str:
    return "\n".join(str(m.content) + str(getattr(m, "tool_calls", "")) for r in requests for m in r)


def well_formed(messages: list[BaseMessage]) -> None:
    """Every AIMessage's calls are answered right after it; no ToolMessage answers nothing."""
    open_calls: set[str] = set()
    for m in messages:
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in open_calls, f"a result with no call: {m}"
            open_calls.discard(m.tool_call_id)
            continue
        assert not open_calls, f"calls {open_calls} not answered before {m}"
        if isinstance(m, AIMessage):
            open_calls = {c["id"] for c in m.tool_calls}
    assert not open_calls


async def two_agents(store: str, *, private_tool_calls: bool = True) -> dict[str, Any]:
    """ann (with a tool) and bob, each briefed privately by the host, answering in turn."""
    async with open_runtime(store) as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        await host.add_message("user", [text("BRIEF-ANN: the client is Acme.", audience=["ann"])])
        await host.add_message("user", [text("BRIEF-BOB: the budget is 9k.", audience=["bob"])])
        ann_model = ScriptedChatModel(messages=iter([call("Oslo"), "Oslo is sunny."]))
        bob_model = ScriptedChatModel(messages=iter(["Bob: noted."]))
        ann = create_agent(
            ann_model,
            tools=[lookup],
            system_prompt="SYSTEM-ANN",
            middleware=[AsidesMiddleware(rt, "agents/ann", reader="ann", private_tool_calls=private_tool_calls)],
        )
        bob = create_agent(bob_model, system_prompt="SYSTEM-BOB", middleware=[AsidesMiddleware(rt, "agents/bob", reader="bob")])
        await ann.ainvoke({"messages": [HumanMessage("Ann, the weather in Oslo?")]})
        await bob.ainvoke({"messages": [HumanMessage("Bob, anything to add?")]})
        log = [(m.participant, m.content) for m in rt.store.messages("main")]
    return {"ann": ann_model.requests, "bob": bob_model.requests, "log": log}


def test_each_agent_gets_exactly_its_readers_view(store_path: str) -> None:
    """ann's calls and their results are hers alone: she gets them back as calls; bob gets her
    public answer as a line naming her, his own briefing and never hers; each system prompt
    leads its own agent's requests and is nowhere in the log."""
    seen = asyncio.run(two_agents(store_path))
    assert [shown(r) for r in seen["ann"]] == [
        [("SystemMessage", "SYSTEM-ANN"), ("HumanMessage", "BRIEF-ANN: the client is Acme.\n\nAnn, the weather in Oslo?")],
        [
            ("SystemMessage", "SYSTEM-ANN"),
            ("HumanMessage", "BRIEF-ANN: the client is Acme.\n\nAnn, the weather in Oslo?"),
            ("ai-calls", [("lookup", {"city": "Oslo"})]),
            ("tool", "Oslo: sunny, 21 degrees"),
        ],
    ]
    assert [shown(r) for r in seen["bob"]] == [
        [
            ("SystemMessage", "SYSTEM-BOB"),
            ("HumanMessage", "BRIEF-BOB: the budget is 9k.\n\nAnn, the weather in Oslo?\n\nann: Oslo is sunny.\n\nBob, anything to add?"),
        ]
    ]
    bob_text = everything(seen["bob"])
    assert "BRIEF-ANN" not in bob_text and "lookup" not in bob_text and "21 degrees" not in bob_text
    assert "BRIEF-BOB" not in everything(seen["ann"])
    logged = str(seen["log"])
    assert "SYSTEM-ANN" not in logged and "SYSTEM-BOB" not in logged
    participants = [p for p, _ in seen["log"]]
    assert participants == ["user", "user", "user", "ann", "ann", "user", "bob"]


def test_private_tool_calls_are_written_for_the_agent_alone() -> None:
    """The call and its result are one message, every block for ann only; her answer is public."""
    seen = asyncio.run(two_agents(":memory:"))
    (_, private), (_, answer) = seen["log"][3], seen["log"][4]
    assert all(b.audience == ("ann",) for b in private)
    assert "lookup" in private[0].text and "21 degrees" in private[1].text
    assert [b.audience for b in answer] == [None]


def test_public_tool_calls_reach_other_agents_as_text() -> None:
    """With ``private_tool_calls=False`` bob reads ann's call and result as text naming her,
    never as a call of his own; ann still gets hers back as a call."""
    seen = asyncio.run(two_agents(":memory:", private_tool_calls=False))
    (bob_request,) = seen["bob"]
    assert not any(isinstance(m, (ToolMessage, AIMessage)) for m in bob_request)
    human = bob_request[1].content
    assert '[ann called tool lookup {"city":"Oslo"}]' in human
    assert "ann: [tool result" in human
    assert "Oslo: sunny, 21 degrees" in human
    assert ("ai-calls", [("lookup", {"city": "Oslo"})]) in shown(seen["ann"][1])


def test_a_checkpointed_state_is_written_once() -> None:
    """With a checkpointer the state holds every earlier turn; each message enters the log once."""

    async def main() -> list[tuple[str, str]]:
        async with open_runtime() as rt:
            model = ScriptedChatModel(messages=iter(["one", "two", "three"]))
            agent = create_agent(model, checkpointer=InMemorySaver(), middleware=[AsidesMiddleware(rt, "agents/ann", reader="ann")])
            config = {"configurable": {"thread_id": "t"}}
            for line in ("a", "b", "c"):
                await agent.ainvoke({"messages": [HumanMessage(line)]}, config)
            return [(m.participant, m.content[0].text) for m in rt.store.messages("main")]

    assert asyncio.run(main()) == [("user", "a"), ("ann", "one"), ("user", "b"), ("ann", "two"), ("user", "c"), ("ann", "three")]


def test_a_named_human_message_is_said_by_that_name() -> None:
    """A supervisor handing a worker its task names itself; the log says so."""

    async def main() -> list[str]:
        async with open_runtime() as rt:
            agent = create_agent(ScriptedChatModel(messages=iter(["ok"])), middleware=[AsidesMiddleware(rt, "w", reader="worker")])
            await agent.ainvoke({"messages": [HumanMessage("do it", name="supervisor")]})
            return [m.participant for m in rt.store.messages("main")]

    assert asyncio.run(main()) == ["supervisor", "worker"]


def test_compression_keeps_readers_apart_and_calls_with_their_results() -> None:
    """A long conversation under the autobiographical strategy with small windows: memories
    come back as AIMessages, no agent's input ever holds the other's private briefings, and
    every request is well formed (each call answered right after it)."""

    def strategy(name: str) -> AutobiographicalStrategy:
        return AutobiographicalStrategy(
            target_chunk_tokens=60, head_window_tokens=60, recent_window_tokens=120, summary_target_tokens=20, summary_participant=name
        )

    async def main() -> dict[str, list[list[BaseMessage]]]:
        async with open_runtime(model=ExtractiveModel()) as rt:
            host = await rt.open_manager("host", strategy=PassthroughStrategy())
            models = {
                "ann": ScriptedChatModel(messages=itertools.cycle([call("Rome"), "Ann: checked the weather."])),
                "bob": ScriptedChatModel(messages=itertools.cycle(["Bob: fine by me, let us go on."])),
            }
            middleware = {name: AsidesMiddleware(rt, f"agents/{name}", reader=name, strategy=strategy(name)) for name in models}
            agents = {name: create_agent(models[name], tools=[lookup], middleware=[middleware[name]]) for name in models}
            for turn in range(16):
                name = ("ann", "bob")[turn % 2]
                await host.add_message("user", [text(f"SECRET-{name}-{turn} a note for {name} alone.", audience=[name])])
                await agents[name].ainvoke({"messages": [HumanMessage(f"Turn {turn}: {name}, your view please.")]})
                await middleware[name].drain()
            return {name: m.requests for name, m in models.items()}

    seen = asyncio.run(main())
    for name, other in (("ann", "bob"), ("bob", "ann")):
        assert f"SECRET-{other}" not in everything(seen[name])
        for request in seen[name]:
            well_formed([m for m in request if not isinstance(m, SystemMessage)])
    last = seen["bob"][-1]
    assert any(isinstance(m, AIMessage) and "[Recall" in str(m.content) for m in last), "bob's memories speak as himself"


def test_invoke_from_another_thread_hops_into_the_runtimes_loop() -> None:
    """``invoke`` in a worker thread works (each model call runs in the runtime's loop, blocking
    only that thread); ``invoke`` in the loop's own thread is refused, writing nothing."""

    async def main() -> tuple[str, list[str], str]:
        async with open_runtime() as rt:
            model = ScriptedChatModel(messages=iter(["from a thread", "from another loop"]))
            agent = create_agent(model, middleware=[AsidesMiddleware(rt, "agents/ann", reader="ann")])
            result = await asyncio.to_thread(agent.invoke, {"messages": [HumanMessage("hello")]})
            with pytest.raises(LoopError) as refused:
                agent.invoke({"messages": [HumanMessage("not here")]})
            other = {"messages": [HumanMessage("and from another loop")]}
            await asyncio.to_thread(lambda: asyncio.run(agent.ainvoke(other)))
            return result["messages"][-1].content, [m.content[0].text for m in rt.store.messages("main")], str(refused.value)

    answer, log, refusal = asyncio.run(main())
    assert answer == "from a thread"
    assert log == ["hello", "from a thread", "and from another loop", "from another loop"]
    assert "ainvoke" in refusal


def test_astream_writes_and_compiles_as_ainvoke_does() -> None:
    async def main() -> list[str]:
        async with open_runtime() as rt:
            agent = create_agent(ScriptedChatModel(messages=iter(["streamed"])), middleware=[AsidesMiddleware(rt, "a", reader="ann")])
            async for _ in agent.astream({"messages": [HumanMessage("hi")]}):
                pass
            return [m.content[0].text for m in rt.store.messages("main")]

    assert asyncio.run(main()) == ["hi", "streamed"]


def test_made_outside_the_runtimes_loop_it_is_refused() -> None:
    async def main() -> Any:
        async with open_runtime() as rt:
            return rt

    with pytest.raises(LoopError):
        AsidesMiddleware(asyncio.run(main()), "a", reader="ann")


def test_the_import_error_names_the_extra() -> None:
    code = "import sys; sys.modules['langchain'] = None; import asides.integrations.langchain"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "pip install 'asides[langchain]'" in done.stderr


def test_the_supervisor_example_keeps_each_workers_briefing_to_itself() -> None:
    """``examples/langchain_supervisor.py``: a supervisor and two workers built with
    ``create_agent``; no worker's model input ever holds the other's briefing (nor the
    supervisor's either), each worker's holds its own, and the example itself says so."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "langchain_supervisor.py"
    spec = importlib.util.spec_from_file_location("langchain_supervisor", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    outcome = asyncio.run(example.run())
    requests = outcome["requests"]
    assert example.leaks(requests) == []
    assert len(requests["supervisor"]) == 3 and len(requests["researcher"]) == 1 and len(requests["writer"]) == 1
    for worker, briefing in example.BRIEFINGS.items():
        assert all(briefing in example.words(r) for r in requests[worker])
        other = next(b for w, b in example.BRIEFINGS.items() if w != worker)
        assert all(other not in example.words(r) for r in requests[worker])
    writer_input = example.words(requests["writer"][0])
    assert "researcher: Facts" in writer_input and "supervisor: Write the note" in writer_input
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Checked: no worker's model input ever held the other's briefing" in done.stdout


def test_parallel_public_calls_keep_their_results_together() -> None:
    """Two calls in one AIMessage: with ``private_tool_calls=False`` the call is one message and
    both results one more right after it; the agent gets both back, paired."""

    async def main() -> tuple[list[list[BaseMessage]], list[tuple[str, list[str]]]]:
        async with open_runtime() as rt:
            both = AIMessage(
                "",
                tool_calls=[
                    {"name": "lookup", "args": {"city": "Oslo"}, "id": "p1", "type": "tool_call"},
                    {"name": "lookup", "args": {"city": "Rome"}, "id": "p2", "type": "tool_call"},
                ],
            )
            model = ScriptedChatModel(messages=iter([both, "Both sunny."]))
            mw = AsidesMiddleware(rt, "agents/ann", reader="ann", private_tool_calls=False)
            agent = create_agent(model, tools=[lookup], middleware=[mw])
            await agent.ainvoke({"messages": [HumanMessage("Oslo and Rome?")]})
            log = [(m.participant, [type(b).__name__ for b in m.content]) for m in rt.store.messages("main")]
            return model.requests, log

    requests, log = asyncio.run(main())
    assert log == [
        ("user", ["TextBlock"]),
        ("ann", ["ToolUseBlock", "ToolUseBlock"]),
        ("ann", ["ToolResultBlock", "ToolResultBlock"]),
        ("ann", ["TextBlock"]),
    ]
    well_formed(requests[1])
    assert [type(m).__name__ for m in requests[1]] == ["HumanMessage", "AIMessage", "ToolMessage", "ToolMessage"]
