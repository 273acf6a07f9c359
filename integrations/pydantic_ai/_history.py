"""``AsidesHistory``: a Pydantic AI agent's message history from asides' shared log."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelRequest

from ...actors._errors import AsidesError
from .._log_agent import LogAgent
from .._loop import LoopHandle
from ._convert import messages_of, said_of, system_parts

__all__ = ["AsidesHistory", "LoopError", "KEY"]

KEY = "pydantic_ai"
"""The metadata key of the messages this integration writes, and its name in a runtime."""


class LoopError(AsidesError, RuntimeError):
    """``AsidesHistory`` was made outside its runtime's event loop."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


@dataclass(init=False, repr=False)
class AsidesHistory(AbstractCapability[Any]):
    """A Pydantic AI capability (``Agent(model, capabilities=[AsidesHistory(...)])``) that makes
    the agent the reader ``reader`` of the runtime's shared log, with its memories and its claim
    in ``namespace``.

    Before each model request it writes the run's new messages the log does not hold yet (the
    user's prompt, the agent's responses, its tool calls and their results; never a system
    prompt), then sends the model the agent's compile for its reader instead of the run's
    history: its own turns and memories as ``ModelResponse`` s, every other speaker's lines in
    ``ModelRequest`` s naming the speaker, other agents' tool calls as text; the agent's own system
    prompt parts lead the first request. The run's history itself (``result.all_messages()``)
    is left as Pydantic AI keeps it. When the run ends, its last response is written too. With
    ``private_tool_calls`` (the default) the agent's tool calls and their results are for its
    reader alone; its answers are public. A host's edit of the agent's lines (a redaction) is
    what the agent gets back from then on. ``reader`` may not be named like a role every agent
    shares (``user``, ``system``, ``developer``, ``assistant``, in any case:
    :class:`~asides.integrations.ReservedReaderError`). ``strategy`` (default ``PassthroughStrategy()``)
    decides what the compile holds. Pass no ``message_history`` to a run: the log is the history.

    Make it inside the runtime's block, in its event loop; run the agent there (``await
    agent.run(...)``), or with ``run_sync`` in another thread (each request then hops into the
    runtime's loop, blocking only that thread).
    """

    _agent: LogAgent = field(repr=False)
    _loop: LoopHandle = field(repr=False)

    def __init__(self, runtime: Any, namespace: str, *, reader: str, strategy: Any = None, private_tool_calls: bool = True) -> None:
        self._agent = LogAgent(runtime, namespace, reader=reader, strategy=strategy, key=KEY, private_tool_calls=private_tool_calls)
        try:
            self._loop = LoopHandle.here(runtime.start_soon)
        except Exception:
            raise LoopError(
                "AsidesHistory", "make it inside the runtime's block, in its event loop (async with open_runtime(...))"
            ) from None

    def __repr__(self) -> str:
        return f"<AsidesHistory reader={self._agent.reader!r} namespace={self._agent.namespace!r}>"

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a runtime: not built from a spec

    @property
    def reader(self) -> str:
        return self._agent.reader

    @property
    def private_tool_calls(self) -> bool:
        """Whether the agent's tool calls and their results are for its reader alone."""
        return self._agent.private_tool_calls

    @property
    def namespace(self) -> str:
        return self._agent.namespace

    # -- the work, in the runtime's loop ----------------------------------------------------------

    def _said(self, messages: list[ModelMessage], run_id: str | None) -> list[Any]:
        """The lines of the run's own messages (those of its ``run_id``), named by their place."""
        lines: list[Any] = []
        n = 0
        for message in messages:
            if run_id is not None and getattr(message, "run_id", None) != run_id:
                continue
            lines.extend(said_of(message, f"{run_id}/{n}", self._agent.reader))
            n += 1
        return lines

    async def _record(self, messages: list[ModelMessage], run_id: str | None) -> None:
        await self._agent.record(self._said(messages, run_id))

    async def _compiled(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        compiled = messages_of(await self._agent.plan())
        own_system = [p for m in messages for p in system_parts(m)]
        if own_system:
            if compiled and isinstance(compiled[0], ModelRequest):
                first = compiled[0]
                compiled[0] = ModelRequest(parts=[*own_system, *first.parts])
            else:
                compiled.insert(0, ModelRequest(parts=own_system))
        last = messages[-1] if messages else None
        if isinstance(last, ModelRequest) and compiled and isinstance(compiled[-1], ModelRequest):
            compiled[-1].instructions = last.instructions
        return compiled

    # -- the capability's hooks -------------------------------------------------------------------

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        messages = list(request_context.messages)
        run_id = ctx.run_id
        await self._loop.finish(lambda: self._record(messages, run_id))
        request_context.messages = await self._loop.run(lambda: self._compiled(messages))
        return request_context

    async def after_run(self, ctx: Any, *, result: Any) -> Any:
        messages = list(result.all_messages())
        run_id = ctx.run_id
        await self._loop.finish(lambda: self._record(messages, run_id))
        return result

    async def drain(self) -> None:
        """Wait until the strategy's background compression has caught up."""
        await self._loop.run(self._agent.drain)

    async def aclose(self) -> None:
        """Close the agent's manager (leaving the runtime's block closes it too)."""
        await self._loop.run(self._agent.aclose)
