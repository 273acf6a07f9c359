"""``AsidesMiddleware``: a LangChain v1 agent (``create_agent``) on asides' shared log."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import BaseMessage

from ...actors._errors import AsidesError
from .._log_agent import LogAgent
from .._loop import LoopHandle
from ._convert import is_system, messages_of, said_of

__all__ = ["AsidesMiddleware", "LoopError", "KEY"]

KEY = "langchain"
"""The metadata key of the messages this integration writes, and its name in a runtime."""


class LoopError(AsidesError, RuntimeError):
    """The middleware was made, or called synchronously, where it cannot reach its runtime's
    event loop without blocking it."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class AsidesMiddleware(AgentMiddleware):
    """An ``AgentMiddleware`` that makes a ``create_agent`` agent the reader ``reader`` of the
    runtime's shared log, with its memories and its claim in ``namespace``.

    On each model call it writes the messages of the agent's state the log does not hold yet
    (the user's input, the agent's answers, its tool calls and results; never a system message),
    then replaces the request's messages with the agent's compile for its reader: its own turns
    and its memories as ``AIMessage`` s, every other speaker's lines as ``HumanMessage`` s naming
    the speaker, other agents' tool calls as text. When the agent finishes, its last answer is
    written too. With ``private_tool_calls`` (the default) the agent's tool calls and their
    results are for its reader alone; its answers are public. A host's edit of the agent's lines
    (a redaction) is what the agent gets back from then on. ``reader`` may not be named like a
    role every agent shares (``user``, ``system``, ``developer``, ``assistant``, in any case:
    :class:`~asides.integrations.ReservedReaderError`). ``strategy`` (default
    ``PassthroughStrategy()``) decides what the compile holds; a compressing one does what
    ``SummarizationMiddleware`` would, in the agent's own voice and its reader's view.

    Make it inside the runtime's block, in the runtime's event loop (``asyncio.run`` of a
    function that does ``async with open_runtime(...)``), and run the agent with ``ainvoke`` /
    ``astream`` in that loop. ``invoke`` / ``stream`` from another thread work too: each model
    call hops into the runtime's loop and blocks only that thread. ``invoke`` in the loop's own
    thread is refused with :class:`LoopError` (it would block the loop the log runs in).
    """

    def __init__(self, runtime: Any, namespace: str, *, reader: str, strategy: Any = None, private_tool_calls: bool = True) -> None:
        super().__init__()
        self._agent = LogAgent(runtime, namespace, reader=reader, strategy=strategy, key=KEY, private_tool_calls=private_tool_calls)
        try:
            self._loop = LoopHandle.here(runtime.start_soon)
        except Exception:
            raise LoopError(
                "AsidesMiddleware", "make it inside the runtime's block, in its event loop (async with open_runtime(...))"
            ) from None

    @property
    def name(self) -> str:
        return f"AsidesMiddleware[{self._agent.reader}]"

    @property
    def reader(self) -> str:
        """The reader this agent is."""
        return self._agent.reader

    @property
    def private_tool_calls(self) -> bool:
        """Whether the agent's tool calls and their results are for its reader alone."""
        return self._agent.private_tool_calls

    @property
    def namespace(self) -> str:
        return self._agent.namespace

    # -- the work, in the runtime's loop ----------------------------------------------------------

    async def _record(self, messages: Sequence[BaseMessage]) -> None:
        await self._agent.record([said_of(m, self._agent.reader) for m in messages])

    async def _request(self, messages: Sequence[BaseMessage]) -> list[Any]:
        own_system = [m for m in messages if is_system(m)]
        return own_system + messages_of(await self._agent.plan())

    async def _compiled(self, messages: Sequence[BaseMessage]) -> list[Any]:
        await self._record(messages)
        return await self._request(messages)

    def _blocking(self, action: str) -> None:
        if self._loop.on_loop_thread:
            raise LoopError(
                action, "a synchronous call in the runtime's own event loop thread would block it: use ainvoke or astream there"
            )

    # -- the middleware hooks ---------------------------------------------------------------------

    async def awrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> ModelResponse:
        messages = list(request.messages)
        await self._loop.finish(lambda: self._record(messages))
        compiled = await self._loop.run(lambda: self._request(messages))
        return await handler(request.override(messages=compiled))

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        self._blocking("invoke")
        messages = list(request.messages)
        compiled = self._loop.run_blocking(lambda: self._compiled(messages))
        return handler(request.override(messages=compiled))

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = list(state["messages"])
        await self._loop.finish(lambda: self._record(messages))
        return None

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        self._blocking("invoke")
        messages = list(state["messages"])
        self._loop.run_blocking(lambda: self._record(messages))
        return None

    async def drain(self) -> None:
        """Wait until the strategy's background compression has caught up."""
        await self._loop.run(self._agent.drain)

    async def aclose(self) -> None:
        """Close the agent's manager (leaving the runtime's block closes it too)."""
        await self._loop.run(self._agent.aclose)
