"""A manager's edits and its namespace's context log: an edit is checked against the narrowing
rules and rewrites the context-log copies of the message (part of ``ContextManager``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ..store._arguments import check_message_id
from ..store._blocks import ContentBlock, check_content, coerce_content
from ..store._errors import MalformedContentError, StoreFailedError, UnknownMessageError
from ..store._messages import Message
from ..store._narrowing import narrowing_of
from ._errors import NarrowingRefusedError
from ._manager_parts import ManagerParts
from ._protocol import ContextEntryWrite, Edit
from ._records import reader_keys

if TYPE_CHECKING:
    from ._manager import ContextEntry

__all__ = ["Editing"]

#: Tries of one edit whose context-log rewrites changed before its commit (another process
#: copied the message, or claimed a namespace holding a copy).
EDIT_ATTEMPTS = 5


class _CopiesMoved(Exception):
    """At commit, the edit's context-log rewrites differed from the ones it was sent with."""


class Editing(ManagerParts):
    """Edits and the context log of a :class:`~asides.actors.ContextManager`."""

    async def edit_message(self, message_id: str, content: Sequence[ContentBlock | Mapping[str, Any]]) -> Message:
        """Replace a message's content on this branch, keeping its id and sequence.

        Refused, leaving the message unchanged, when it would narrow an audience where the narrowing rules
        say so (``NarrowingRefusedError``), or when the content is malformed (W1). Copies of the
        message in the context logs of namespaces on this branch are rewritten as each
        namespace's reader sees the new content, and dropped where it sees nothing (P2).
        """
        self._check("edit_message")
        blocks = coerce_content(content)
        check_content(blocks, path="content", allow_audience=True)
        if not blocks:
            raise MalformedContentError("content", "a message needs at least one block")
        return await self._actor.execute(Edit(), lambda: self._edit_in_the_actor(message_id, blocks))

    async def _edit_in_the_actor(self, message_id: str, blocks: tuple[ContentBlock, ...]) -> Message:
        """``edit_message``'s work, in the namespace actor's turn."""
        for _attempt in range(EDIT_ATTEMPTS):
            self._check("edit_message")
            stored = self._store.get_message(self._branch, message_id)
            if stored is None:
                raise UnknownMessageError(message_id, self._branch)
            self._check_narrowing(stored, blocks)
            copies = self._core.context_copies(self._branch, message_id, stored, blocks)

            def recheck(stored: Message = stored, copies: dict[str, Any] = copies) -> None:
                # At commit, after every earlier commit (on a shared store another process
                # may have raised the floor, claimed a namespace, or copied the message).
                self._actor.adopt_stored_records()
                current = self._store.get_message(self._branch, message_id) or stored
                self._check_narrowing(current, blocks)
                if self._core.context_copies(self._branch, message_id, current, blocks) != copies:
                    raise _CopiesMoved

            try:
                return await self._store.edit_message(self._branch, message_id, blocks, states=copies, guard=recheck)
            except _CopiesMoved:
                continue  # nothing was written: compute the rewrites again
        raise StoreFailedError(
            f"editing message {message_id!r} on {self._branch!r} raced other processes' context-log writes "
            f"{EDIT_ATTEMPTS} times; nothing was written, try again"
        )

    def _check_narrowing(self, stored: Message, blocks: tuple[ContentBlock, ...]) -> None:
        """Refuse an edit that hides a block from a reader where compression may have
        read it, or from anyone but the manager's own reader."""
        narrowing = narrowing_of(stored.content, blocks)
        if not narrowing.hides_anything:
            return
        reader = self._reader

        def refuse(readers: tuple[str, ...], reason: str) -> NoReturn:
            raise NarrowingRefusedError(
                message_id=stored.id, namespace=self._namespace, branch=self._branch, readers=readers, reason=reason
            )

        others = tuple(sorted(narrowing.named - ({reader} if reader else set())))
        if reader is None:
            refuse(others, "a manager that compiles for no reader may not hide a block from anyone")
        if narrowing.hides_from_other_than(reader):
            refuse(others, f"only the manager's own reader ({reader!r}) may lose sight of a block through it")
        # Only the own reader loses sight of a block.
        floor = self._actor.floor
        if not isinstance(floor, int):
            refuse((reader,), "the record of what compression has read cannot be read")
        if stored.sequence <= floor:
            refuse((reader,), f"compression may have read it (the narrowing floor is {floor}, the message's sequence {stored.sequence})")
        for namespace, value in reader_keys(self._store.model, self._branch):
            if namespace == self._namespace:
                continue
            if not isinstance(value, str) or not value:
                refuse((reader,), f"namespace {namespace!r} on this branch has a reader record that cannot be read")
            if value == reader:
                refuse(
                    (reader,),
                    f"namespace {namespace!r} on this branch also compiles for {reader!r}, and its compression cannot be seen from here",
                )


    # -- the context log -------------------------------------------------------------

    async def append_context_entry(
        self, content: Sequence[ContentBlock | Mapping[str, Any]], *, source_message_id: str | None = None
    ) -> ContextEntry:
        """Append an entry to this namespace's context log on this branch. An audience anywhere
        in it is refused: no view reads one there."""
        self._check("append_context_entry", started=False)
        blocks = coerce_content(content)
        check_content(blocks, path="content", allow_audience=False)
        if source_message_id is not None:
            check_message_id(source_message_id, "source_message_id")
            if self._store.get_message(self._branch, source_message_id) is None:
                raise UnknownMessageError(source_message_id, self._branch)

        async def in_the_actor() -> ContextEntry:
            self._check("append_context_entry", started=False)
            index = self._actor.context_next()
            from ._manager import ContextEntry  # the manager module imports this one

            entry = ContextEntry(index, blocks, source_message_id)
            await self._core.write_context_entry(self._branch, self._namespace, entry)
            return entry

        return await self._actor.execute(ContextEntryWrite(), in_the_actor)

    def get_context_entries(self) -> tuple[ContextEntry, ...]:
        """This namespace's context log on this branch, oldest first (dropped entries left out)."""
        self._check("get_context_entries", started=False)
        return self._core.context_entries(self._branch, self._namespace)

