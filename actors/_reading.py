"""A manager's compiles: what its reader is to be sent now, and the record of what each compile
showed (``Runtime.disclosures``).

:class:`Compiles` is one part of a ``ContextManager``: it holds the manager's binding and the
compile's cache (what the previous compile worked out, reused when it still holds), and runs each
compile as one command of the namespace actor: the catch-up, the strategy's ``select`` and the
assembly run in the actor's task.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..strategies._base import Injection, MessageInjection, SelectOptions, SourceEntry, check_budget, check_injections
from ._binding import Binding
from ._compiled import AssemblyCache, CompiledContext, assemble, injection_cost
from ._protocol import Compile
from ._tracing import span

__all__ = ["Compiles"]


class Compiles:
    """The compiles of one manager (see the module docstring)."""

    def __init__(self, binding: Binding) -> None:
        self._binding = binding
        self._assembly = AssemblyCache()  # the previous compile's raw part, reused when it can be
        self._assembly_view = binding.view  # the view the cache was made for
        self._last_disclosed: str | None = None  # the way of the last compile recorded (_disclose)

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

        async def in_the_actor() -> CompiledContext:
            binding.check(action)
            # One context for the compile: the catch-up's, when it made one (a preview's state
            # is read-only, so a preview makes its own).
            ctx = await binding.catch_up()
            if ctx is None or preview:
                ctx = binding.context(preview=preview)
            selection = await binding.strategy.select(ctx, budget, options)
            compiled = assemble(
                selection,
                injections=checked,
                message_injections=checked_messages,
                view=binding.view,
                reader=binding.view_reader,
                estimator=estimator,
                cache=self._cache(),
            )
            await self._disclose(selection.sources, "preview" if preview else "compile")
            return compiled

        return await binding.actor.execute(Compile(), in_the_actor)

    def _cache(self) -> AssemblyCache:
        """The assembly cache, new once the view was replaced (a move, an erasure)."""
        if self._assembly_view is not self._binding.view:
            self._assembly_view = self._binding.view
            self._assembly = AssemblyCache()
            self._last_disclosed = None
        return self._assembly

    async def _disclose(self, sources: Sequence[SourceEntry], via: str) -> None:
        """Record which messages a compile showed (raw, or through a summary), and to whom
        (``Runtime.disclosures``). Only entries the assembly cache did not reuse from the
        previous compile of the same way are looked at: those were recorded then, so a compile
        after one new message looks at one entry."""
        if not self._binding.core.records_disclosures:
            return
        reused = self._assembly.reused if self._last_disclosed == via else 0
        self._last_disclosed = via
        await self._binding.disclose([i for entry in sources[reused:] for i in entry.message_ids], via)
