"""A manager's reads and compiles: the log as stored, the reader's own view of it, and the
compile of what the reader is to be sent (part of ``ContextManager``)."""

from __future__ import annotations

from collections.abc import Sequence

from ..store._messages import Message
from ..strategies._base import Injection, MessageInjection, SelectOptions, SourceEntry, check_budget, check_injections
from ._compiled import CompiledContext, assemble, injection_cost
from ._manager_parts import ManagerParts
from ._protocol import Compile
from ._tracing import span

__all__ = ["Reading"]


class Reading(ManagerParts):
    """Reads and compiles of a :class:`~asides.actors.ContextManager`."""

    # -- reads ---------------------------------------------------------------------------------

    def get_message(self, message_id: str) -> Message | None:
        """The message as stored, or ``None``. An erased message comes back as its tombstone: no
        content, participant ``""``, ``metadata["asides_erased"] = {"at", "reason", "erasure"}``.

        Warning: as stored means with every block, including blocks whose audience leaves out
        this manager's reader. Never pass it to that reader; use :meth:`view_message`.
        """
        self._check("get_message", started=False)
        return self._store.get_message(self._branch, message_id)

    def get_all_messages(self) -> tuple[Message, ...]:
        """Every message on the branch, as stored.

        Warning: this is the whole log, other readers' private blocks included, even on a manager
        bound to a reader. It is for hosts and operators that need the log itself. To show a
        reader its own view, use :meth:`view_messages` (or :meth:`compile`).
        """
        self._check("get_all_messages", started=False)
        messages = self._store.messages(self._branch)
        model = self._store.model
        if model.erasure_count:  # an erased message is left out (its tombstone: Runtime.tombstone)
            return tuple(m for m in messages if not model.is_erased(m.id))
        return tuple(messages)

    def view_message(self, message_id: str) -> Message | None:
        """The message as this manager's reader sees it (blocks meant for other readers left
        out), or ``None`` when the reader sees nothing of it or there is no such message."""
        self._check("view_message", started=False)
        return self._view.get(message_id)

    def view_messages(self) -> tuple[Message, ...]:
        """Every message of the branch as this manager's reader sees it, oldest first."""
        self._check("view_messages", started=False)
        return self._view.get_all()

    # -- compile -------------------------------------------------------------------------------

    async def compile(
        self,
        *,
        max_tokens: int = 100_000,
        reserve_for_response: int = 4_000,
        injections: Sequence[Injection] = (),
        message_injections: Sequence[MessageInjection] = (),
    ) -> CompiledContext:
        """What this manager's reader is to be sent now.

        Refuses, before the strategy selects anything, an audience in any injection (W2) and a
        negative budget. Writes only the strategy state it must (the windowed anchor when it
        moves).
        """
        return await self._compile("compile", max_tokens, reserve_for_response, injections, message_injections, preview=False)

    async def preview_context(
        self,
        *,
        max_tokens: int = 100_000,
        reserve_for_response: int = 4_000,
        injections: Sequence[Injection] = (),
        message_injections: Sequence[MessageInjection] = (),
    ) -> CompiledContext:
        """The compile that :meth:`compile` would return now, without writing anything and
        without raising ``OverBudgetError``."""
        return await self._compile("preview_context", max_tokens, reserve_for_response, injections, message_injections, preview=True)

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
        with span(
            "preview" if preview else "compile",
            namespace=self._namespace,
            reader=self._reader,
            branch=self._branch,
            strategy=self.strategy_name,
        ) as traced:
            compiled = await self._compile_traced(action, max_tokens, reserve_for_response, injections, message_injections, preview=preview)
            traced.set("messages", len(compiled.messages))
            traced.set("tokens", compiled.token_estimate)
            return compiled

    async def _compile_traced(
        self,
        action: str,
        max_tokens: int,
        reserve_for_response: int,
        injections: Sequence[Injection],
        message_injections: Sequence[MessageInjection],
        *,
        preview: bool,
    ) -> CompiledContext:
        self._check(action)
        check_budget(max_tokens, reserve_for_response)
        checked, checked_messages = check_injections(injections, message_injections)
        estimator = self._estimator()
        budget = max(0, max_tokens - reserve_for_response - injection_cost(checked, checked_messages, estimator))
        options = SelectOptions(
            preview=preview, max_tokens=max_tokens, reserve_for_response=reserve_for_response, message_injections=checked_messages
        )
        await self._store.sync()  # on a shared store: every message committed before this call

        async def in_the_actor() -> CompiledContext:
            self._check(action)
            # One context for the compile: the catch-up's, when it made one (a preview's state
            # is read-only, so a preview makes its own).
            ctx = await self._catch_up()
            if ctx is None or preview:
                ctx = self._context(preview=preview)
            selection = await self._strategy.select(ctx, budget, options)
            compiled = assemble(
                selection,
                injections=checked,
                message_injections=checked_messages,
                view=self._view,
                reader=self._reader,
                estimator=estimator,
                cache=self._assembly,
            )
            await self._disclose(selection.sources, "preview" if preview else "compile")
            return compiled

        return await self._actor.execute(Compile(), in_the_actor)

    async def _disclose_request(self, message_ids: Sequence[str], via: str) -> None:
        """Record that ``message_ids`` were shown through ``via`` (a compression request: to the
        model provider) for this manager's reader (``Runtime.disclosures``)."""
        if self._core.records_disclosures:
            await self._store.record_disclosure(self._namespace, self._reader, self._branch, via, message_ids)

    async def _disclose(self, sources: Sequence[SourceEntry], via: str) -> None:
        """Record which messages a compile showed (raw, or through a summary), and to whom
        (``Runtime.disclosures``). Only entries the assembly cache did not reuse from this
        manager's previous compile of the same way are looked at: those were recorded then, so
        a compile after one new message looks at one entry."""
        if not self._core.records_disclosures:
            return
        reused = self._assembly.reused if self._last_disclosed == via else 0
        self._last_disclosed = via
        ids = [i for entry in sources[reused:] for i in entry.message_ids]
        await self._store.record_disclosure(self._namespace, self._reader, self._branch, via, ids)
