"""A manager's compiles: what its reader is to be sent now, and the record of what each compile
showed (``Runtime.disclosures``).

:class:`Compiles` is one part of a ``ContextManager``: it holds the manager's binding and the
compile's cache (what the previous compile worked out, reused when it still holds), and runs each
compile as one command of the namespace actor: the catch-up, the strategy's ``select`` and the
assembly run in the actor's task.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..strategies._base import Injection, MessageInjection, SelectOptions, check_budget, check_injections
from ._binding import Binding
from ._commands import Compile
from ._compiled import AssemblyCache, CompiledContext, injection_cost
from ._tracing import span

__all__ = ["Compiles"]


class Compiles:
    """The compiles of one manager (see the module docstring)."""

    def __init__(self, binding: Binding) -> None:
        self._binding = binding
        #: The previous compile's raw part, reused when it can be (it forgets a replaced view).
        self._assembly = AssemblyCache()

    async def compile(
        self,
        action: str,
        max_tokens: int,
        reserve_for_response: int,
        injections: Sequence[Injection],
        message_injections: Sequence[MessageInjection],
        *,
        preview: bool,
    ) -> CompiledContext:
        """What the reader is to be sent now (``preview``: writing nothing). Refuses, before the
        strategy selects anything, an audience in any injection and a negative budget."""
        binding = self._binding
        with span(
            "preview" if preview else "compile",
            namespace=binding.namespace,
            reader=binding.view_reader,
            branch=binding.branch,
            strategy=binding.strategy_name,
        ) as traced:
            compiled = await self._compile(action, max_tokens, reserve_for_response, injections, message_injections, preview=preview)
            traced.set("messages", len(compiled.messages))
            traced.set("tokens", compiled.token_estimate)
            return compiled

    async def _compile(
        self,
        action: str,
        max_tokens: int,
        reserve_for_response: int,
        injections: Sequence[Injection],
        message_injections: Sequence[MessageInjection],
        *,
        preview: bool,
    ) -> CompiledContext:
        binding = self._binding
        binding.check(action)
        check_budget(max_tokens, reserve_for_response)
        checked, checked_messages = check_injections(injections, message_injections)
        estimator = binding.estimator()
        budget = max(0, max_tokens - reserve_for_response - injection_cost(checked, checked_messages, estimator))
        options = SelectOptions(
            preview=preview, max_tokens=max_tokens, reserve_for_response=reserve_for_response, message_injections=checked_messages
        )
        await binding.store.sync()  # on a shared store: every message committed before this call
        command = Compile(binding, action, budget, options, checked, checked_messages, estimator, self._assembly)
        compiled: CompiledContext = await binding.actor.send(command)
        return compiled
