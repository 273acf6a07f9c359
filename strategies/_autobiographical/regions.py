"""Regions of the view, and tool units (a call with the result glued to it). Pure logic over a view-like object
(``length()``, ``at(i)``, ``id_at(i)``).

* head = [hs, he): the opening (or the stretch from the newest topic transition), verbatim;
* recent window = [ts, end) with ts = max(rs, he): the newest stretch, verbatim;
* middle = [0, hs) + [he, ts): compressed history;
* compressible = middle messages older than rs not owned by a closed chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import attrs

from ...store._blocks import ToolUseBlock
from ...store._messages import Message
from .._repair import glued

__all__ = ["Regions", "RecentWindow", "ViewLike", "head_end", "straddle", "has_call", "is_glued"]


class ViewLike(Protocol):
    def length(self) -> int: ...

    def at(self, index: int) -> Message: ...

    def id_at(self, index: int) -> str: ...


def has_call(message: Message) -> bool:
    return any(isinstance(b, ToolUseBlock) for b in message.content)


def is_glued(view: ViewLike, position: int) -> bool:
    """Whether the message at ``position`` holds a result answering a call just before it."""
    return position > 0 and glued(view.at(position - 1).content, view.at(position).content)


@attrs.frozen(slots=True)
class Regions:
    length: int
    hs: int
    he: int
    rs: int

    @property
    def ts(self) -> int:
        return max(self.rs, self.he)

    def in_head(self, p: int) -> bool:
        return self.hs <= p < self.he

    def in_middle(self, p: int) -> bool:
        return p < self.hs or self.he <= p < self.ts

    def compressible(self, p: int) -> bool:
        return p < self.rs and self.in_middle(p)


def head_end(view: ViewLike, hs: int, budget: int, cost: Callable[[Message], int], owned: Callable[[str], bool]) -> int:
    """Walk from ``hs`` unit by unit while the head stays within ``budget``; stop before a unit
    that would exceed it or that holds a message owned by a closed chunk."""
    n = view.length()
    if budget <= 0:
        return hs
    p, total = hs, 0
    while p < n:
        q = p + 1
        while q < n and is_glued(view, q):
            q += 1
        unit = [view.at(i) for i in range(p, q)]
        if any(owned(m.id) for m in unit):
            break
        unit_cost = sum(cost(m) for m in unit)
        if total + unit_cost > budget:
            break
        total += unit_cost
        p = q
    return p


def straddle(view: ViewLike, rs: int, owned: Callable[[str], bool]) -> int:
    """Pull a unit the recent window's start would cut into the window whole, as far as that
    takes in no owned message."""
    while 0 < rs < view.length() and is_glued(view, rs) and not owned(view.id_at(rs - 1)):
        rs -= 1
    return rs


class RecentWindow:
    """The recent window's start, kept up to date as messages arrive (two pointers: cost is
    bounded by the window, not by history). Recompute with :meth:`reset` after edits."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.seen = 0
        self.start = 0
        self.total = 0

    def reset(self, view: ViewLike, cost: Callable[[Message], int], owned: Callable[[str], bool]) -> None:
        n = view.length()
        p, total = n, 0
        while p > 0:
            message = view.at(p - 1)
            if owned(message.id):
                break
            c = cost(message)
            if total + c > self.budget:
                break
            total += c
            p -= 1
        self.seen, self.start, self.total = n, p, total

    def advance(self, view: ViewLike, cost: Callable[[Message], int]) -> None:
        n = view.length()
        for p in range(self.seen, n):
            self.total += cost(view.at(p))
        self.seen = n
        while self.start < n and self.total > self.budget:
            self.total -= cost(view.at(self.start))
            self.start += 1

    def rs(self, view: ViewLike, owned: Callable[[str], bool]) -> int:
        return straddle(view, self.start, owned)
