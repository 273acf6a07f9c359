"""``AsidesPlugin``: each ADK agent's model gets its own reader's view of the session.

ADK builds a model request's contents from the session's events as they are, for every agent
alike. The plugin replaces them, in ``before_model_callback``, with the compile of the agent's
reader (the reader is the agent's name) on the session's branch, rendered as ADK contents from the
neutral plan every integration renders (``integrations/_shared.py``):

* the agent's own turns and its memories in the ``model`` role, its own tool calls as function
  calls answered by their function responses;
* every other speaker's lines in the ``user`` role, named (``bob: The room is booked.``); their
  tool calls and results only where they are public (``private_tool_calls=False``), and as text;
* never a line whose audience does not name the agent.

The system instruction (``llm_request.config.system_instruction``) is the agent's own and is
never written to the log. The plugin also records which agent is running
(:data:`CURRENT_AGENT`), in ``before_model_callback`` and ``before_tool_callback``, in the task
that runs the model call or the tool: the memory service answers a search for that agent.
An agent named like a role every agent shares is refused before its run
(:class:`~asides.integrations.ReservedReaderError`).
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any, Protocol

from google.adk.agents.base_agent import BaseAgent
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from ...strategies._provider_plan import PlanCall, PlanImage, PlanResult, PlanText, Segment
from .._rules import agent_reader
from ._events import plan_result_response

if TYPE_CHECKING:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.sessions.session import Session
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.tool_context import ToolContext

__all__ = ["CURRENT_AGENT", "AsidesPlugin", "contents_of", "check_agents"]

CURRENT_AGENT: contextvars.ContextVar[str | None] = contextvars.ContextVar("asides_adk_current_agent", default=None)
"""The agent whose model call or tool runs in this task (set by :class:`AsidesPlugin`)."""


class _Views(Protocol):
    """What the plugin needs of its session service (``AsidesSessionService.view``)."""

    async def view(self, session: Session, agent: str) -> list[Segment]: ...


def check_agents(agent: object) -> None:
    """Refuse an agent tree where an agent is named like a role every agent shares (its name is
    its reader's: :func:`~.._rules.agent_reader`); a node that is no agent is passed over."""
    if not isinstance(agent, BaseAgent):
        return
    agent_reader(agent.name)
    for sub in agent.sub_agents:
        check_agents(sub)


def _image(item: PlanImage) -> types.Part:
    import base64

    block = item.block
    if block.data is not None:
        return types.Part(inline_data=types.Blob(mime_type=block.media_type, data=base64.b64decode(block.data)))
    return types.Part(file_data=types.FileData(mime_type=block.media_type, file_uri=block.url))


def contents_of(segments: list[Segment]) -> list[types.Content]:
    """The ADK contents of a plan: an ``assistant`` segment as one ``model`` content (texts, then
    function calls); a ``user`` segment as ``user`` contents, function responses apart from text."""
    out: list[types.Content] = []
    names: dict[str, str] = {}
    for segment in segments:
        if segment.role == "assistant":
            parts: list[types.Part] = [types.Part(text=i.text) for i in segment.items if isinstance(i, PlanText)]
            for item in segment.items:
                if isinstance(item, PlanCall):
                    call = item.block
                    names[call.id] = call.name
                    parts.append(types.Part(function_call=types.FunctionCall(id=call.id, name=call.name, args=dict(call.input))))
            if parts:
                out.append(types.Content(role="model", parts=parts))
            continue
        run: list[types.Part] = []
        run_is_results = False
        for item in segment.items:
            if isinstance(item, PlanResult):
                response = plan_result_response(names.get(item.tool_use_id, "tool"), item.tool_use_id, item.content)
                part = types.Part(function_response=response)
                is_result = True
            elif isinstance(item, PlanText):
                part, is_result = types.Part(text=item.text), False
            elif isinstance(item, PlanImage):
                part, is_result = _image(item), False
            else:
                continue
            if run and is_result != run_is_results:
                out.append(types.Content(role="user", parts=run))
                run = []
            run.append(part)
            run_is_results = is_result
        if run:
            out.append(types.Content(role="user", parts=run))
    return out


class AsidesPlugin(BasePlugin):
    """The plugin of an :class:`~asides.integrations.adk.AsidesSessionService`
    (``service.plugin()``): give it to the ``Runner`` (``plugins=[service.plugin()]``) whose
    session service is that service. See the module docstring."""

    def __init__(self, service: _Views, name: str = "asides") -> None:
        super().__init__(name)
        self.service = service

    @staticmethod
    def reader_of(agent: BaseAgent | str) -> str:
        """The reader an agent is: its name. Refuses a name like a role every agent shares
        (:class:`~asides.integrations.ReservedReaderError`), so a host may check a name before
        it builds the agent."""
        return agent_reader(agent if isinstance(agent, str) else agent.name)

    @staticmethod
    def check_agents(agent: BaseAgent) -> None:
        """Refuse ``agent``'s tree when an agent in it is named like a role every agent shares
        (:class:`~asides.integrations.ReservedReaderError`): its name is its reader's. The plugin
        checks every run's tree before the run; call it when the tree is built to be refused
        there, before anything was written."""
        check_agents(agent)

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> types.Content | None:
        check_agents(invocation_context.agent)
        return None

    async def before_model_callback(self, *, callback_context: CallbackContext, llm_request: LlmRequest) -> LlmResponse | None:
        agent = callback_context.agent_name
        CURRENT_AGENT.set(agent)
        llm_request.contents = contents_of(await self.service.view(callback_context.session, agent))
        return None

    async def before_tool_callback(self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext) -> dict[str, Any] | None:
        CURRENT_AGENT.set(tool_context.agent_name)
        return None
