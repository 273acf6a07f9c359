"""One small adapter per agent framework, for ``tests/integrations/test_integration_contract.py``: the contract
every integration keeps is written once against :class:`Adapter`, and a new integration joins it
by adding an adapter here.

An adapter makes an agent on a runtime (its integration object made with the options given) and
runs one turn of it, offline: the model answers ``Answer from <reader>.``, or, asked to call,
first calls ``lookup(city="Oslo")`` and answers once the result is back. The tool's result holds
``TOOL-SECRET-4417``; the agent's system prompt (or instructions) is ``SYSTEM-<reader>``. Every
request the agent's model receives is kept as neutral :data:`Entry` s, so the contract reads all
three frameworks alike. A :class:`Gate` may hold the tool until the test lets it go.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

Entry = tuple[str, str, str]
"""One piece of a model request: ``(kind, call id, text)``, ``kind`` one of ``system``, ``user``,
``assistant`` (the call id ``""``), ``call`` (text: the tool's name and its arguments as JSON) and
``result`` (text: the result)."""

TOOL_SECRET = "TOOL-SECRET-4417"
SYSTEM = "SYSTEM-"


def answer_of(reader: str) -> str:
    return f"Answer from {reader}."


def tool_result(city: str) -> str:
    return f"{city}: sunny, {TOOL_SECRET}"


def call_text(name: str, args: Any) -> str:
    return f"{name} {json.dumps(args, sort_keys=True)}"


@dataclass
class Gate:
    """Holds the tool, when armed, until released: ``entered`` is set once the tool waits."""

    armed: bool = False
    entered: anyio.Event = field(default_factory=anyio.Event)
    released: anyio.Event = field(default_factory=anyio.Event)

    async def pass_through(self) -> None:
        if self.armed:
            self.entered.set()
            await self.released.wait()


class Agent:
    """One framework's agent: its integration object (``AsidesMiddleware``, ``AsidesHistory``,
    ``AsidesSession``), the branch its lines are written on, every request its model received,
    and the gate its tool passes."""

    integration: Any
    branch: str

    def __init__(self, reader: str) -> None:
        self.reader = reader
        self.gate = Gate()
        self.requests: list[list[Entry]] = []
        self.calling = False  # whether the model calls the tool before it answers, this turn
        self._turns = 0

    def next_call_id(self) -> str:
        self._turns += 1
        return f"{self.reader}-call-{self._turns}"

    async def run(self, text: str, *, call: bool = False) -> None:
        """One turn: ``text`` in, the model's answer (after one tool call, with ``call``) out."""
        self.calling = call
        await self._run(text)

    async def _run(self, text: str) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Adapter:
    """A framework: its name, the module it needs, and how an agent of it is made on a runtime
    (``options`` go to the integration object)."""

    name: str
    needs: str
    make_agent: Callable[..., Awaitable[Agent]]

    def available(self) -> None:
        """Skip the test when the framework is not installed."""
        import pytest

        pytest.importorskip(self.needs)

    async def make(self, rt: Any, reader: str, **options: Any) -> Agent:
        return await self.make_agent(rt, reader, **options)


# -- LangChain ------------------------------------------------------------------------------------


class LangChainAgent(Agent):
    def __init__(self, rt: Any, reader: str, options: dict[str, Any]) -> None:
        super().__init__(reader)
        from langchain.agents import create_agent
        from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
        from langchain_core.tools import tool

        from asides.integrations.langchain import AsidesMiddleware, ScriptedChatModel

        self.integration = AsidesMiddleware(rt, f"agents/{reader}", reader=reader, **options)
        self.branch = "main"
        gate = self.gate

        @tool
        async def lookup(city: str) -> str:
            """The weather in a city."""
            await gate.pass_through()
            return tool_result(city)

        def answer(messages: list[BaseMessage]) -> AIMessage | str:
            self.requests.append(self._entries(messages))
            if self.calling and not isinstance(messages[-1], ToolMessage):
                call = {"name": "lookup", "args": {"city": "Oslo"}, "id": self.next_call_id(), "type": "tool_call"}
                return AIMessage("", tool_calls=[call])
            return answer_of(reader)

        model = ScriptedChatModel(answer=answer)
        self._agent = create_agent(model, tools=[lookup], system_prompt=f"{SYSTEM}{reader}", middleware=[self.integration])

    @staticmethod
    def _entries(messages: list[Any]) -> list[Entry]:
        from langchain_core.messages import AIMessage, SystemMessage, ToolMessage

        out: list[Entry] = []
        for m in messages:
            if isinstance(m, AIMessage):
                if m.content:
                    out.append(("assistant", "", str(m.content)))
                out.extend(("call", c["id"] or "", call_text(c["name"], c["args"])) for c in m.tool_calls)
            elif isinstance(m, ToolMessage):
                out.append(("result", m.tool_call_id, str(m.content)))
            else:
                out.append(("system" if isinstance(m, SystemMessage) else "user", "", str(m.content)))
        return out

    async def _run(self, text: str) -> None:
        from langchain_core.messages import HumanMessage

        await self._agent.ainvoke({"messages": [HumanMessage(text)]})


async def langchain_agent(rt: Any, reader: str, **options: Any) -> Agent:
    return LangChainAgent(rt, reader, options)


# -- Pydantic AI ----------------------------------------------------------------------------------


class PydanticAIAgent(Agent):
    def __init__(self, rt: Any, reader: str, options: dict[str, Any]) -> None:
        super().__init__(reader)
        from pydantic_ai import Agent as PydanticAgent
        from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        from asides.integrations.pydantic_ai import AsidesHistory

        self.integration = AsidesHistory(rt, f"agents/{reader}", reader=reader, **options)
        self.branch = "main"
        gate = self.gate

        def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            self.requests.append(self._entries(messages))
            last = messages[-1]
            returned = isinstance(last, ModelRequest) and any(isinstance(p, ToolReturnPart) for p in last.parts)
            if self.calling and not returned:
                return ModelResponse(parts=[ToolCallPart("lookup", {"city": "Oslo"}, tool_call_id=self.next_call_id())])
            return ModelResponse(parts=[TextPart(answer_of(reader))])

        self._agent: Any = PydanticAgent(FunctionModel(answer), system_prompt=f"{SYSTEM}{reader}", capabilities=[self.integration])

        @self._agent.tool_plain
        async def lookup(city: str) -> str:
            """The weather in a city."""
            await gate.pass_through()
            return tool_result(city)

    @staticmethod
    def _entries(messages: list[Any]) -> list[Entry]:
        from pydantic_ai.messages import ModelResponse, SystemPromptPart, TextPart, ToolCallPart, ToolReturnPart, UserPromptPart

        out: list[Entry] = []
        for m in messages:
            for p in m.parts:
                if isinstance(m, ModelResponse):
                    if isinstance(p, TextPart):
                        out.append(("assistant", "", p.content))
                    elif isinstance(p, ToolCallPart):
                        out.append(("call", p.tool_call_id, call_text(p.tool_name, p.args_as_dict())))
                elif isinstance(p, ToolReturnPart):
                    out.append(("result", p.tool_call_id, str(p.content)))
                elif isinstance(p, SystemPromptPart):
                    out.append(("system", "", p.content))
                elif isinstance(p, UserPromptPart):
                    out.append(("user", "", str(p.content)))
        return out

    async def _run(self, text: str) -> None:
        await self._agent.run(text)


async def pydantic_ai_agent(rt: Any, reader: str, **options: Any) -> Agent:
    return PydanticAIAgent(rt, reader, options)


# -- OpenAI Agents SDK ----------------------------------------------------------------------------


class OpenAIAgentsAgent(Agent):
    def __init__(self, session: Any, reader: str) -> None:
        super().__init__(reader)
        from agents import Agent as SDKAgent
        from agents import function_tool

        from asides.integrations.openai_agents import ScriptedAgentModel

        self.integration = session
        self.branch = session.branch
        gate = self.gate

        @function_tool
        async def lookup(city: str) -> str:
            """The weather in a city."""
            await gate.pass_through()
            return tool_result(city)

        def answer(items: list[Any]) -> Any:
            self.requests.append(self._entries(items))
            if self.calling and items[-1].get("type") != "function_call_output":
                return [ScriptedAgentModel.call("lookup", {"city": "Oslo"}, call_id=self.next_call_id())]
            return answer_of(reader)

        model = ScriptedAgentModel(default=answer)
        self._agent = SDKAgent(name=reader, instructions=f"{SYSTEM}{reader}", model=model, tools=[lookup])

    @staticmethod
    def _entries(items: list[Any]) -> list[Entry]:
        out: list[Entry] = []
        for item in items:
            kind = item.get("type")
            if kind == "function_call":
                out.append(("call", item["call_id"], call_text(item["name"], json.loads(item["arguments"] or "{}"))))
            elif kind == "function_call_output":
                out.append(("result", item["call_id"], str(item["output"])))
            elif item.get("role") in ("user", "assistant", "system", "developer"):
                content = item.get("content")
                if not isinstance(content, str):
                    content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
                role = "system" if item["role"] in ("system", "developer") else item["role"]
                out.append((role, "", content))
        return out

    async def _run(self, text: str) -> None:
        from agents import Runner

        await Runner.run(self._agent, text, session=self.integration)


async def openai_agents_agent(rt: Any, reader: str, **options: Any) -> Agent:
    from agents import set_tracing_disabled

    from asides.integrations.openai_agents import AsidesSession

    set_tracing_disabled(True)
    session = await AsidesSession.bound_to(rt, "room", reader=reader, **options)
    return OpenAIAgentsAgent(session, reader)


# -- Google ADK -----------------------------------------------------------------------------------


class AdkAgent(Agent):
    """An ADK agent alone in its ``Runner``, on the session ``room`` every agent shares; its
    integration object is its ``AsidesSessionService`` (made with the options given)."""

    def __init__(self, service: Any, reader: str, branch: str) -> None:
        super().__init__(reader)
        from google.adk.agents import LlmAgent
        from google.adk.apps import App
        from google.adk.runners import Runner

        from asides.integrations.adk import ScriptedAdkModel

        self.integration = service
        self.branch = branch
        gate = self.gate

        async def lookup(city: str) -> str:
            """The weather in a city."""
            await gate.pass_through()
            return tool_result(city)

        def answer(request: Any) -> Any:
            self.requests.append(self._entries(request))
            last = request.contents[-1] if request.contents else None
            returned = last is not None and any(p.function_response for p in last.parts or [])
            if self.calling and not returned:
                return ScriptedAdkModel.call("lookup", {"city": "Oslo"}, call_id=self.next_call_id())
            return answer_of(reader)

        agent = LlmAgent(name=reader, model=ScriptedAdkModel(answer=answer), instruction=f"{SYSTEM}{reader}", tools=[lookup])
        app = App(name="room", root_agent=agent, plugins=[service.plugin()])
        self._runner = Runner(app=app, session_service=service)

    @staticmethod
    def _entries(request: Any) -> list[Entry]:
        out: list[Entry] = []
        system = request.config.system_instruction if request.config else None
        if system:
            out.append(("system", "", str(system)))
        for content in request.contents:
            for part in content.parts or []:
                if part.function_call is not None:
                    call = part.function_call
                    out.append(("call", call.id or "", call_text(call.name, dict(call.args or {}))))
                elif part.function_response is not None:
                    response = part.function_response.response or {}
                    out.append(("result", part.function_response.id or "", str(response.get("result", response))))
                elif part.text:
                    out.append(("assistant" if content.role == "model" else "user", "", part.text))
        return out

    async def _run(self, text: str) -> None:
        from google.genai import types

        message = types.Content(role="user", parts=[types.Part(text=text)])
        async for _ in self._runner.run_async(user_id="u", session_id="room", new_message=message):
            pass


async def adk_agent(rt: Any, reader: str, **options: Any) -> Agent:
    from asides.integrations.adk import AsidesPlugin, AsidesSessionService

    service = AsidesSessionService(rt, **options)
    AsidesPlugin.reader_of(reader)  # an agent's reader is its name: refused before the agent is built
    if await service.get_session(app_name="room", user_id="u", session_id="room") is None:
        await service.create_session(app_name="room", user_id="u", session_id="room")
    branch = await service.session_branch(app_name="room", user_id="u", session_id="room")
    assert branch is not None
    return AdkAgent(service, reader, branch)


ADAPTERS = {
    a.name: a
    for a in (
        Adapter("langchain", "langchain.agents", langchain_agent),
        Adapter("pydantic_ai", "pydantic_ai", pydantic_ai_agent),
        Adapter("openai_agents", "agents", openai_agents_agent),
        Adapter("adk", "google.adk", adk_agent),
    )
}
"""Every integration the contract holds, by name."""


# -- reading requests -----------------------------------------------------------------------------


def words(entries: list[Entry]) -> str:
    """A request as one text, for "holds" / "never holds" checks."""
    return "\n".join(f"{kind} {ident} {text}" for kind, ident, text in entries)


def calls_of(entries: list[Entry]) -> list[str]:
    return [text for kind, _, text in entries if kind == "call"]


def well_formed(entries: list[Entry]) -> None:
    """Every call is answered by its result before anything else is said, and every result
    answers a call just made."""
    open_calls: set[str] = set()
    for kind, ident, text in entries:
        if kind == "result":
            assert ident in open_calls, f"a result with no call just before it: {text!r}"
            open_calls.discard(ident)
        elif kind == "call":
            open_calls.add(ident)
        elif kind != "system":
            assert not open_calls, f"calls {sorted(open_calls)} not answered before {text!r}"
    assert not open_calls, f"calls {sorted(open_calls)} never answered"
