"""A manager's edits and its namespace's context log.

:class:`Edits` is one part of a ``ContextManager``: it holds the manager's binding and sends the
namespace actor an :class:`~._commands.Edit` or an :class:`~._commands.AppendContextEntry`
command; what each does (the narrowing rules, checked again at commit, and the context-log
copies an edit rewrites; the entry's number) is the actor's (``actors/_namespace.py``).
"""

from __future__ import annotations

from ..store._blocks import ContentBlock
from ..store._messages import Message
from ._binding import Binding
from ._commands import AppendContextEntry, Edit
from ._values import ContextEntry

__all__ = ["Edits"]


class Edits:
    """The edits and the context log of one manager (see the module docstring)."""

    def __init__(self, binding: Binding) -> None:
        self._binding = binding

    async def edit_message(self, message_id: str, blocks: tuple[ContentBlock, ...]) -> Message:
        """Replace a message's content (checked already) on the manager's branch, keeping its id
        and sequence. Refused, leaving the message unchanged, when it would narrow an audience
        where the narrowing rules say so (``NarrowingRefusedError``)."""
        binding = self._binding
        edited: Message = await binding.actor.send(Edit(binding, message_id, blocks))
        return edited

    async def append_context_entry(self, blocks: tuple[ContentBlock, ...], source_message_id: str | None) -> ContextEntry:
        """Append an entry (checked already) to the namespace's context log on the branch."""
        binding = self._binding
        entry: ContextEntry = await binding.actor.send(AppendContextEntry(binding, blocks, source_message_id))
        return entry

    def context_entries(self) -> tuple[ContextEntry, ...]:
        """The namespace's context log on the branch, oldest first (dropped entries left out)."""
        self._binding.check("get_context_entries", started=False)
        return self._binding.core.context_log.entries(self._binding.branch, self._binding.namespace)
