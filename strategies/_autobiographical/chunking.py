"""Cutting the compressible frontier into chunks. Pure logic.

Walk the compressible messages in position order with a running chunk: a gap (a head message or
a chunk's message between two frontier messages) closes the running chunk whatever its size; a
chunk closes when it costs at least ``target`` tokens AND holds at least four messages AND its
last message holds no tool call. What remains is the trailing open chunk. Boundaries depend only
on the view, so the walk can be resumed where it stopped as the frontier grows.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ...store._messages import Message
from .regions import Regions, ViewLike, has_call

__all__ = ["MIN_CHUNK_MESSAGES", "FrontierWalk", "frontier_start"]

MIN_CHUNK_MESSAGES = 4


@attrs.define
class FrontierWalk:
    """The walk's state: where it stopped, the running (trailing) chunk, and the chunks it closed
    that are not written yet."""

    position: int = 0
    running: list[Message] = attrs.Factory(list)
    running_cost: int = 0
    last_position: int = -1
    closable: list[list[Message]] = attrs.Factory(list)

    def close_running(self) -> None:
        if self.running:
            self.closable.append(self.running)
        self.running = []
        self.running_cost = 0

    def advance(
        self,
        view: ViewLike,
        regions: Regions,
        *,
        owned: Callable[[str], bool],
        cost: Callable[[Message], int],
        target: int,
    ) -> None:
        """Examine positions from where the walk stopped up to the recent window's start."""
        end = min(regions.rs, view.length())
        p = self.position
        while p < end:
            if regions.in_head(p):
                p = regions.he
                continue
            if not regions.compressible(p):
                p += 1
                continue
            message_id = view.id_at(p)
            if owned(message_id):
                # A chunk's message after the running chunk is a gap: close it now rather than at
                # the next frontier message, which may never come (the messages an erasure left
                # between two chunks are summarised again).
                self.close_running()
                p += 1
                continue
            message = view.at(p)
            if self.running and p != self.last_position + 1:
                self.close_running()  # a gap: a chunk never spans one
            self.running.append(message)
            self.running_cost += cost(message)
            self.last_position = p
            if self.running_cost >= target and len(self.running) >= MIN_CHUNK_MESSAGES and not has_call(message):
                self.close_running()
            p += 1
        self.position = max(self.position, end)

    def trailing_closable(self) -> bool:
        """Whether the trailing open chunk could close as it is (Knowledge's trailing close)."""
        return len(self.running) >= MIN_CHUNK_MESSAGES and not has_call(self.running[-1])


def frontier_start(
    view: ViewLike,
    regions: Regions,
    chunk_spans: list[tuple[str, str, int]],
    position_of: Callable[[str], int | None],
) -> int:
    """The first position from which a walk must look: every compressible position before it is
    owned by a closed chunk. ``chunk_spans`` is ``(first id, last id, message count)`` per chunk
    in order; a chunk whose span in the view holds more messages than it owns has an unowned
    message inside it (a widened audience), so the walk starts there."""
    p = 0
    for first_id, last_id, count in chunk_spans:
        first, last = position_of(first_id), position_of(last_id)
        if first is None or last is None:
            continue
        for q in range(p, first):
            if regions.compressible(q):
                return q
        if last - first + 1 > count:
            return max(p, first)
        p = max(p, last + 1)
    return p
