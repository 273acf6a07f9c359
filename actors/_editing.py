"""A manager's edits and its namespace's context log.

:class:`Edits` is one part of a ``ContextManager``: it holds the manager's binding. An edit runs
as one command of the namespace actor: it is checked against the narrowing rules, and its commit
rewrites the context-log copies of the message, checked again at commit (a shared store may have
changed meanwhile). A context-log entry is one command too: the actor numbers it.
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..store._blocks import ContentBlock
from ..store._errors import StoreFailedError, UnknownMessageError
from ..store._messages import Message
from ..store._narrowing import narrowing_of
from ._binding import Binding
from ._errors import NarrowingRefusedError
from ._protocol import ContextEntryWrite, Edit
from ._records import reader_keys
from ._values import ContextEntry

__all__ = ["Edits"]

#: Tries of one edit whose context-log rewrites changed before its commit (another process
#: copied the message, or claimed a namespace holding a copy).
EDIT_ATTEMPTS = 5


class _CopiesMoved(Exception):
    """At commit, the edit's context-log rewrites differed from the ones it was sent with."""


class Edits:
    """The edits and the context log of one manager (see the module docstring)."""

    def __init__(self, binding: Binding) -> None:
        self._binding = binding

    async def edit_message(self, message_id: str, blocks: tuple[ContentBlock, ...]) -> Message:
        """Replace a message's content (checked already) on the manager's branch, keeping its id
        and sequence. Refused, leaving the message unchanged, when it would narrow an audience
        where the narrowing rules say so (``NarrowingRefusedError``)."""
        binding = self._binding
        return await binding.actor.execute(Edit(), lambda: self._edit_in_the_actor(message_id, blocks))

    async def _edit_in_the_actor(self, message_id: str, blocks: tuple[ContentBlock, ...]) -> Message:
        """``edit_message``'s work, in the namespace actor's turn."""
        binding = self._binding
        store, core, branch = binding.store, binding.core, binding.branch
        for _attempt in range(EDIT_ATTEMPTS):
            binding.check("edit_message")
            stored = store.get_message(branch, message_id)
            if stored is None:
                raise UnknownMessageError(message_id, branch)
            self._check_narrowing(stored, blocks)
            copies = core.context_log.rewrites(branch, message_id, stored, blocks)

            def recheck(stored: Message = stored, copies: dict[str, Any] = copies) -> None:
                # At commit, after every earlier commit (on a shared store another process
                # may have raised the floor, claimed a namespace, or copied the message).
                binding.actor.adopt_stored_records()
                current = store.get_message(branch, message_id) or stored
                self._check_narrowing(current, blocks)
                if core.context_log.rewrites(branch, message_id, current, blocks) != copies:
                    raise _CopiesMoved

            try:
                return await store.edit_message(branch, message_id, blocks, states=copies, guard=recheck)
            except _CopiesMoved:
                continue  # nothing was written: compute the rewrites again
        raise StoreFailedError(
            f"editing message {message_id!r} on {branch!r} raced other processes' context-log writes "
            f"{EDIT_ATTEMPTS} times; nothing was written, try again"
        )

    def _check_narrowing(self, stored: Message, blocks: tuple[ContentBlock, ...]) -> None:
        """Refuse an edit that hides a block from a reader where compression may have
        read it, or from anyone but the manager's own reader."""
        narrowing = narrowing_of(stored.content, blocks)
        if not narrowing.hides_anything:
            return
        binding = self._binding
        reader = binding.view_reader

        def refuse(readers: tuple[str, ...], reason: str) -> NoReturn:
            raise NarrowingRefusedError(
                message_id=stored.id, namespace=binding.namespace, branch=binding.branch, readers=readers, reason=reason
            )

        others = tuple(sorted(narrowing.named - ({reader} if reader else set())))
        if reader is None:
            refuse(others, "a manager that compiles for no reader may not hide a block from anyone")
        if narrowing.hides_from_other_than(reader):
            refuse(others, f"only the manager's own reader ({reader!r}) may lose sight of a block through it")
        # Only the own reader loses sight of a block.
        floor = binding.actor.floor
        if not isinstance(floor, int):
            refuse((reader,), "the record of what compression has read cannot be read")
        if stored.sequence <= floor:
            refuse((reader,), f"compression may have read it (the narrowing floor is {floor}, the message's sequence {stored.sequence})")
        for namespace, value in reader_keys(binding.store.model, binding.branch):
            if namespace == binding.namespace:
                continue
            if not isinstance(value, str) or not value:
                refuse((reader,), f"namespace {namespace!r} on this branch has a reader record that cannot be read")
            if value == reader:
                refuse(
                    (reader,),
                    f"namespace {namespace!r} on this branch also compiles for {reader!r}, and its compression cannot be seen from here",
                )

    # -- the context log -------------------------------------------------------------

    async def append_context_entry(self, blocks: tuple[ContentBlock, ...], source_message_id: str | None) -> ContextEntry:
        """Append an entry (checked already) to the namespace's context log on the branch."""
        binding = self._binding

        async def in_the_actor() -> ContextEntry:
            binding.check("append_context_entry", started=False)
            entry = ContextEntry(binding.actor.context_next(), blocks, source_message_id)
            await binding.core.context_log.write(binding.branch, binding.namespace, entry)
            return entry

        return await binding.actor.execute(ContextEntryWrite(), in_the_actor)

    def context_entries(self) -> tuple[ContextEntry, ...]:
        """The namespace's context log on the branch, oldest first (dropped entries left out)."""
        self._binding.check("get_context_entries", started=False)
        return self._binding.core.context_log.entries(self._binding.branch, self._binding.namespace)
