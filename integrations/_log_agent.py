"""One framework agent on the shared log: what the LangChain middleware and the Pydantic AI
history both are underneath.

A :class:`LogAgent` is a reader's manager of one namespace on ``main``, opened on first use in
the runtime's event loop (its strategy, default ``PassthroughStrategy()``, serves this agent
alone). It does two things, each in the runtime's loop:

* :meth:`LogAgent.record` writes the framework messages the log does not hold yet (by their
  framework ids, see ``integrations/_shared.py``), in order, batched by :func:`_shared.batches`
  (private tool calls with their results); a batch that could not be stored is refused before
  anything is written (``integrations/_rules.py``). The runtime's lock of the branch is held
  while it looks and writes, so a message two agents of this runtime both hold is written once.
  The integration runs it with ``LoopHandle.finish``: a caller cancelled meanwhile leaves no
  batch half written;
* :meth:`LogAgent.plan` compiles for the reader (the whole selection: the strategy decides what
  it holds) and returns the neutral plan the integration renders in its framework's messages.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import anyio

from ..actors._manager import ContextManager
from ..actors._runtime import internal_store
from ..store._errors import ArgumentTypeError
from ..strategies._passthrough import PassthroughStrategy
from ..strategies._provider_plan import Segment
from ._rules import agent_reader, check_private_tool_calls, edited_messages, write_batch
from ._shared import Said, batches, hub, plan_for, prepare

__all__ = ["LogAgent", "UNBOUNDED"]

log = logging.getLogger("asides.integrations")

UNBOUNDED = 2**62  # the budget of an agent's compile: everything its strategy selects
BRANCH = "main"


class LogAgent:
    """A reader on the shared log for an integration named ``key`` (see the module docstring).
    Refuses a runtime that is none, a namespace that is no string, a reader named like a shared
    role (:class:`~._rules.ReservedReaderError`) and a ``private_tool_calls`` that is no bool."""

    def __init__(self, runtime: Any, namespace: str, *, reader: str, strategy: Any, key: str, private_tool_calls: bool) -> None:
        if not hasattr(runtime, "open_manager") or not hasattr(runtime, "start_soon"):
            raise ArgumentTypeError("runtime", f"must be an asides Runtime (from open_runtime), not {type(runtime).__name__}")
        if not isinstance(namespace, str):
            raise ArgumentTypeError("namespace", f"must be a string, not {type(namespace).__name__}")
        self.reader = agent_reader(reader)
        self.private_tool_calls = check_private_tool_calls(private_tool_calls)
        self.runtime = runtime
        self.namespace = namespace
        self.strategy = PassthroughStrategy() if strategy is None else strategy
        self.key = key
        self._manager: ContextManager | None = None
        self._opening = anyio.Lock()
        self._logged = hub(runtime, key, BRANCH)

    async def manager(self) -> ContextManager:
        """The agent's manager, opened on first use."""
        async with self._opening:
            if self._manager is None or self._manager.closed:
                self._manager = await self.runtime.open_manager(self.namespace, strategy=self.strategy, view_reader=self.reader)
            return self._manager

    async def record(self, said: Sequence[Said | None]) -> int:
        """Write the messages of ``said`` the log does not hold yet; returns how many asides
        messages were written. ``None`` entries (messages never written) are skipped; a message
        with no framework id is logged as skipped."""
        manager = await self.manager()
        store = self.runtime.store
        async with self._logged.lock:
            self._logged.refresh(store)
            new: list[Said] = []
            for one in said:
                if one is None:
                    continue
                if one.id is None:
                    log.warning("%s: a message with no id was not written to the log (reader %s)", self.key, self.reader)
                    continue
                if one.id not in self._logged:
                    new.append(one)
            prepared = [
                prepare(group, key=self.key, reader=self.reader, audience=audience)
                for group, audience in batches(new, reader=self.reader, private_tool_calls=self.private_tool_calls)
            ]
            await write_batch(manager, prepared)
            self._logged.refresh(store)
            return len(prepared)

    async def plan(self) -> list[Segment]:
        """The agent's compile as the neutral plan (see ``integrations/_shared.py``)."""
        manager = await self.manager()
        ctx = await manager.compile(max_tokens=UNBOUNDED, reserve_for_response=0)
        store = self.runtime.store
        edited = edited_messages(internal_store(self.runtime), BRANCH)
        return plan_for(ctx, key=self.key, reader=self.reader, stored=lambda i: store.get_message(BRANCH, i), edited=edited)

    async def drain(self) -> None:
        """Wait until the agent's strategy has caught up with its background compression."""
        await (await self.manager()).drain()

    async def aclose(self) -> None:
        async with self._opening:
            manager, self._manager = self._manager, None
        if manager is not None:
            await manager.aclose()
