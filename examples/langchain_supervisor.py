"""A LangChain supervisor and two workers on one shared log, each seeing only what is meant for it.

Three agents built with ``langchain.agents.create_agent``, each with an ``AsidesMiddleware`` of
its own: a ``supervisor`` that delegates through two tools, ``ask_researcher`` and
``ask_writer``, and the two workers those tools run. The host gives each worker a private
briefing, written straight to the log with an audience of that worker alone.

What each agent's model is sent is its compile for its reader:

* the supervisor sees the user, the workers' answers (public lines naming them) and its own
  delegations (tool calls and results, private to it by default); never a briefing;
* each worker sees the user's request, the supervisor's task (a ``HumanMessage`` named
  ``supervisor``), the other worker's public answer, and its own briefing; never the other's.

Everything runs offline: the models are ``ScriptedChatModel`` s (LangChain's
``GenericFakeChatModel``, recording every request), whose answers are worked out from what they
are sent. At the end the example checks every request each worker's model received and exits
with status 1 if any held the other worker's briefing.

Run it: ``python examples/langchain_supervisor.py`` (needs ``pip install 'asides[langchain]'``).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from asides import PassthroughStrategy, open_runtime, text
from asides.integrations.langchain import AsidesMiddleware, ScriptedChatModel

BRIEFINGS = {
    "researcher": "BRIEFING-R: the client's real deadline is 12 March; do not tell the writer.",
    "writer": "BRIEFING-W: the client prefers short sentences and no jargon.",
}
QUESTION = "We need a one-paragraph note on heat pumps for the client."


def words(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) for m in messages)


def supervisor_answer(messages: list[BaseMessage]) -> AIMessage:
    """Delegate to the researcher, then to the writer, then report."""
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not results:
        return AIMessage("", tool_calls=[{"name": "ask_researcher", "args": {"task": "Collect three facts on heat pumps."}, "id": "sup-1"}])
    if len(results) == 1:
        return AIMessage("", tool_calls=[{"name": "ask_writer", "args": {"task": "Write the note from the facts."}, "id": "sup-2"}])
    return AIMessage("The note is ready: the writer drafted it from the researcher's facts.")


def worker_answer(name: str):  # type: ignore[no-untyped-def]
    def answer(messages: list[BaseMessage]) -> str:
        seen = words(messages)
        briefed = "(briefed)" if BRIEFINGS[name] in seen else "(no briefing)"
        if name == "researcher":
            return f"Facts {briefed}: heat pumps move heat rather than make it; they work below zero; they pay back in years."
        return f"Draft {briefed}: Heat pumps move heat. They work in the cold. They pay for themselves."

    return answer


async def run() -> dict[str, Any]:
    """Run the conversation; returns each agent's recorded model requests and the log."""
    async with open_runtime() as rt:
        host = await rt.open_manager("host", strategy=PassthroughStrategy())
        for worker, briefing in BRIEFINGS.items():
            await host.add_message("host", [text(briefing, audience=[worker])])

        models = {
            "supervisor": ScriptedChatModel(answer=supervisor_answer),
            "researcher": ScriptedChatModel(answer=worker_answer("researcher")),
            "writer": ScriptedChatModel(answer=worker_answer("writer")),
        }
        workers = {
            name: create_agent(
                models[name], system_prompt=f"You are the {name}.", middleware=[AsidesMiddleware(rt, f"agents/{name}", reader=name)]
            )
            for name in ("researcher", "writer")
        }

        async def delegate(name: str, task: str) -> str:
            result = await workers[name].ainvoke({"messages": [HumanMessage(task, name="supervisor")]})
            return str(result["messages"][-1].content)

        @tool
        async def ask_researcher(task: str) -> str:
            """Give the researcher a task; returns its answer."""
            return await delegate("researcher", task)

        @tool
        async def ask_writer(task: str) -> str:
            """Give the writer a task; returns its answer."""
            return await delegate("writer", task)

        supervisor = create_agent(
            models["supervisor"],
            tools=[ask_researcher, ask_writer],
            system_prompt="You are the supervisor: delegate, then report.",
            middleware=[AsidesMiddleware(rt, "agents/supervisor", reader="supervisor")],
        )
        result = await supervisor.ainvoke({"messages": [HumanMessage(QUESTION)]})
        log = [
            (m.participant, " ".join(getattr(b, "text", "") for b in m.content), [b.audience for b in m.content])
            for m in rt.store.messages("main")
        ]
        return {
            "answer": result["messages"][-1].content,
            "requests": {name: model.requests for name, model in models.items()},
            "log": log,
        }


def leaks(requests: dict[str, list[list[BaseMessage]]]) -> list[str]:
    """Every (agent, request, briefing) where an agent's model input held a briefing not its own."""
    found = []
    for name, made in requests.items():
        for n, messages in enumerate(made):
            for owner, briefing in BRIEFINGS.items():
                if owner != name and briefing in words(messages):
                    found.append(f"{name} request {n} held {owner}'s briefing")
    return found


def main() -> int:
    outcome = asyncio.run(run())
    print("The shared log (participant, text, audiences):")
    for participant, said, audiences in outcome["log"]:
        print(f"  {participant:>10}: {said[:90]}{'…' if len(said) > 90 else ''}  {audiences}")
    for name, made in outcome["requests"].items():
        print(f"\n{name}'s model was called {len(made)} times; its last input:")
        for m in made[-1]:
            calls = [c["name"] for c in getattr(m, "tool_calls", None) or []]
            print(f"  {type(m).__name__}: {str(m.content)[:100]}{' calls ' + str(calls) if calls else ''}")
    print(f"\nAnswer: {outcome['answer']}")
    found = leaks(outcome["requests"])
    if found:
        print("LEAK: " + "; ".join(found))
        return 1
    print("Checked: no worker's model input ever held the other's briefing, and the supervisor's held neither.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
