"""The passthrough selection, kept up to date instead of rebuilt (pure logic, no I/O).

A :class:`SuffixIndex` remembers, for the messages of one view, what each compiles to and what it
costs, with running totals. When the view only gained messages since the last compile, only the
new ones are priced; an edit, or a change in which tool calls the view hides, re-prices from the
first message that changed, reusing the compiled form of every message that did not (an edit
prices exactly the messages it changed). Finding the longest suffix that fits a budget is then a binary search,
and the selection is a copy of the cached entries from there on.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable

from ..store._messages import Message
from ._base import CompiledMessage, Selection, SourceEntry
from ._repair import Emitted

__all__ = ["SuffixIndex"]

Emit = Callable[[Message], list[Emitted]]
Price = Callable[[Emitted, Message], int]


class SuffixIndex:
    """Per-message compiled forms and costs of one view, with running totals."""

    def __init__(self) -> None:
        self._key: object = None
        self._messages: tuple[Message, ...] = ()
        self._totals: list[int] = [0]  # _totals[i]: the cost of messages [0, i)
        self._starts: list[int] = [0]  # _starts[i]: where message i's items start in the flat lists
        self._compiled: list[CompiledMessage] = []
        self._sources: list[SourceEntry] = []
        self._incomplete: list[tuple[int, str]] = []  # (message position, id) of items not whole
        self._forms: dict[str, tuple[Message, list[Emitted], int]] = {}  # id -> (message, its items, cost)
        self.priced = 0  # messages priced since this index was made (for work counts)

    def update(self, key: object, messages: tuple[Message, ...], emit: Emit, price: Price) -> None:
        """Bring the index up to date with ``messages`` (the view's, oldest first). ``key`` names
        everything else the compiled forms depend on (the view, and the tool calls it hides):
        when it changes, everything is priced again."""
        old = self._messages
        if key != self._key:
            keep = 0
            self._forms.clear()
        elif messages is old:
            return
        else:
            keep = _common_prefix(old, messages)
        self._truncate(keep)
        for position in range(keep, len(messages)):
            self._add(position, messages[position], emit, price)
        self._key = key
        self._messages = messages

    def select(self, budget: int) -> Selection:
        """The longest suffix whose cost fits ``budget`` (empty when the newest message alone
        does not fit)."""
        count = len(self._messages)
        total = self._totals[count]
        first = bisect_left(self._totals, total - budget, 0, count + 1)
        start = self._starts[first]
        incomplete = frozenset(i for position, i in self._incomplete if position >= first)
        return Selection(tuple(self._compiled[start:]), tuple(self._sources[start:]), incomplete)

    def _truncate(self, keep: int) -> None:
        start = self._starts[keep]
        del self._totals[keep + 1 :]
        del self._starts[keep + 1 :]
        del self._compiled[start:]
        del self._sources[start:]
        self._incomplete = [(p, i) for p, i in self._incomplete if p < keep]

    def _add(self, position: int, message: Message, emit: Emit, price: Price) -> None:
        known = self._forms.get(message.id)
        if known is not None and known[0] is message:
            emitted, cost = known[1], known[2]
        else:
            emitted = emit(message)
            cost = sum(price(item, message) for item in emitted)
            self._forms[message.id] = (message, emitted, cost)
            self.priced += 1
        for item in emitted:
            self._compiled.append(item.message)
            self._sources.append(item.source)
            if not item.complete and item.source.kind == "raw":
                self._incomplete.extend((position, i) for i in item.source.message_ids)
        self._totals.append(self._totals[-1] + cost)
        self._starts.append(len(self._compiled))


def _common_prefix(old: tuple[Message, ...], new: tuple[Message, ...]) -> int:
    """How many leading messages ``old`` and ``new`` share."""
    limit = min(len(old), len(new))
    if new[:limit] == old[:limit]:  # the usual case, the view only grew: one comparison in C
        return limit
    for index in range(limit):
        if old[index] is not new[index] and old[index] != new[index]:
            return index
    return limit
