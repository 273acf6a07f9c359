"""The passthrough selection, kept up to date instead of rebuilt (pure logic, no I/O).

A :class:`SuffixIndex` covers the newest messages of one view, as far back as a compile has
needed: what each compiles to and what it costs, with running totals. When the view only gained
messages since the last compile, only the new ones are priced and appended; an edit starts the
coverage afresh from the newest message, reusing the compiled form of every message it did not
change (an edit prices exactly the messages it changed). Finding the longest suffix that fits a
budget is a binary search over the totals, and the selection is a copy of the cached entries
from there on. Messages older than any compile has needed are never read.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable
from typing import Protocol

from ..store._blocks import ContentBlock
from ..store._messages import Message
from ._base import CompiledMessage, Selection, SourceEntry
from ._repair import Emitted
from ._tokens import Estimator, MessageCosts

__all__ = ["MessageForms", "SuffixIndex", "ViewReads"]

#: Positions an index covers beyond what selections need before it cuts its coverage back.
SLACK = 256

Emit = Callable[[Message], list[Emitted]]
Price = Callable[[Emitted, Message], int]


class ViewReads(Protocol):
    """What the index reads of a view."""

    @property
    def revision(self) -> tuple[int, int]: ...

    def length(self) -> int: ...

    def slice(self, start: int, stop: int | None = None) -> tuple[Message, ...]: ...


Forms = dict[str, tuple[Message, list[Emitted], int]]  # message id -> (message, its items, cost)


class MessageForms:
    """What the views of one branch work out from single messages under one estimator, kept
    once for all of them (``MessageView.branch_state``): each view message's compiled form and
    cost, when no tool call is hidden (by message id, checked by identity: readers who see a
    message alike read the very same object); each message's estimate (``costs``); and each
    compiled message's (``estimates``, by the object, checked by identity); and the provenance
    bodies of the messages every reader sees whole (``bodies``: message id -> that body, the
    stored content, and whether it is a shard of a body; each view pops the messages edited
    since it last looked before it reads)."""

    __slots__ = ("costs", "forms", "estimates", "bodies")

    def __init__(self, estimator: Estimator | None) -> None:
        self.costs = MessageCosts(estimator)
        self.forms: Forms = {}
        self.estimates: dict[int, tuple[CompiledMessage, int]] = {}
        self.bodies: dict[str, tuple[tuple[ContentBlock, ...], bool]] = {}


class SuffixIndex:
    """The compiled forms and costs of the newest messages of one view, with running totals."""

    def __init__(self) -> None:
        self._key: object = None
        self._view: object = None  # what the view reads (held, so that its identity is never another's)
        self._last: tuple[int, int, Selection] | None = None  # (where it starts, how many, the selection)
        self._revision: tuple[int, int] = (-1, -1)
        self._lo = 0  # the oldest view position covered
        self._hi = 0  # one past the newest position covered (the view's length when last read)
        self._totals = array("q", [0])  # _totals[k]: the cost of positions [lo, lo + k)
        self._starts = array("q", [0])  # _starts[k]: where position lo + k's items start in the flat lists
        self._compiled: list[CompiledMessage] = []
        self._sources: list[SourceEntry] = []
        self._incomplete: list[tuple[int, str]] = []  # (position, id) of raw items not whole
        self._ids: list[str] = []  # _ids[k]: the id of the message at position lo + k
        self._own_forms: Forms = {}  # for its key, forgotten when the key changes
        self._forms = self._own_forms  # where the forms of the latest select are kept
        #: The most positions a selection needed since the coverage was last cut back.
        self._widest = 0

    def select(
        self, key: object, view: ViewReads, budget: int, emit: Emit, price: Price, *, source: object = None, forms: Forms | None = None
    ) -> Selection:
        """The longest suffix of ``view`` whose cost fits ``budget`` (empty when the newest message
        alone does not fit). ``key`` names everything else the compiled forms depend on (the
        tool calls the view hides): when it changes, everything is priced again. ``source`` is
        what ``view`` reads (by default the view itself): views reading the same source at the
        same revision read the same messages, so one index serves them all; the same selection,
        asked again with nothing changed, is the same object. ``forms`` is where to keep the
        compiled forms, by message id (checked by identity): forms other indexes share
        (:class:`MessageForms`), which the caller keeps for this ``key`` alone; by default the
        index's own, which it forgets when the key changes."""
        self._forms = self._own_forms if forms is None else forms
        self._follow(key, view if source is None else source, view, emit, price)
        total = self._totals[-1]
        first = bisect_left(self._totals, total - budget)
        if first == 0 and self._lo > 0:
            self._extend_back(view, budget, emit, price)
            total = self._totals[-1]
            first = bisect_left(self._totals, total - budget)
        covered = len(self._ids)
        self._widest = max(self._widest, covered - first)
        if covered > 4 * self._widest + SLACK:
            dropped = covered - 2 * self._widest
            self._forget(dropped)
            first -= dropped
            self._widest = len(self._ids) - first
        start = self._starts[first]
        last = self._last
        if last is not None and last[0] == start and last[1] == len(self._compiled):
            return last[2]
        position = self._lo + first
        incomplete = frozenset(i for p, i in self._incomplete if p >= position)
        selection = Selection(tuple(self._compiled[start:]), tuple(self._sources[start:]), incomplete)
        self._last = (start, len(self._compiled), selection)
        return selection

    def _follow(self, key: object, source: object, view: ViewReads, emit: Emit, price: Price) -> None:
        revision = view.revision
        if key != self._key:
            self._own_forms.clear()  # made for another key (forms given are their caller's to keep right)
            self._reset(view.length())
        elif source is not self._view:
            self._reset(view.length())  # another view (a move, or a manager reusing this strategy)
        elif revision == self._revision:
            return
        elif revision[1] == self._revision[1] and revision[0] >= self._revision[0]:
            length = view.length()  # only appends since: add the new messages
            for offset, message in enumerate(view.slice(self._hi, length)):
                self._append(self._hi + offset, message, emit, price)
            self._hi = length
        else:
            self._reset(view.length())  # an edit: cover afresh (unchanged forms are reused)
        self._key, self._revision, self._view = key, revision, source

    def covered_ids(self) -> list[str]:
        """The ids of the messages the index covers now, oldest first."""
        return self._ids

    def _reset(self, length: int) -> None:
        self._last = None
        self._lo = self._hi = length
        self._totals, self._starts = array("q", [0]), array("q", [0])
        self._compiled, self._sources, self._incomplete, self._ids = [], [], [], []

    def _forget(self, count: int) -> None:
        """Stop covering the oldest ``count`` positions (and their forms): the coverage follows
        what selections need, never the view's whole length since the first compile."""
        base_total, base_start = self._totals[count], self._starts[count]
        gone = self._ids[:count]
        self._totals = array("q", (t - base_total for t in self._totals[count:]))
        self._starts = array("q", (s - base_start for s in self._starts[count:]))
        self._compiled, self._sources = self._compiled[base_start:], self._sources[base_start:]
        self._ids = self._ids[count:]
        self._lo += count
        self._incomplete = [(p, i) for p, i in self._incomplete if p >= self._lo]
        for message_id in gone:
            self._forms.pop(message_id, None)
        if len(self._forms) > 2 * len(self._ids) + SLACK:  # forms kept across an edit's new coverage
            kept = set(self._ids)
            for message_id in [i for i in self._forms if i not in kept]:
                del self._forms[message_id]  # in place: other indexes may share the dict
        self._last = None

    def _form(self, message: Message, emit: Emit, price: Price) -> tuple[list[Emitted], int]:
        known = self._forms.get(message.id)
        if known is not None and known[0] is message:
            return known[1], known[2]
        emitted = emit(message)
        cost = sum(price(item, message) for item in emitted)
        self._forms[message.id] = (message, emitted, cost)
        return emitted, cost

    def _append(self, position: int, message: Message, emit: Emit, price: Price) -> None:
        emitted, cost = self._form(message, emit, price)
        for item in emitted:
            self._compiled.append(item.message)
            self._sources.append(item.source)
            if not item.complete and item.source.kind == "raw":
                self._incomplete.extend((position, i) for i in item.source.message_ids)
        self._totals.append(self._totals[-1] + cost)
        self._starts.append(len(self._compiled))
        self._ids.append(message.id)
        self._last = None

    def _extend_back(self, view: ViewReads, budget: int, emit: Emit, price: Price) -> None:
        """Cover older messages, newest first, while the whole covered stretch fits ``budget``
        (and one more, so that the search can tell where the fit ends)."""
        total = self._totals[-1]
        lo = self._lo
        older: list[tuple[int, Message, list[Emitted], int]] = []
        step = 64
        while lo > 0 and total <= budget:
            batch = view.slice(max(0, lo - step), lo)
            for message in reversed(batch):
                lo -= 1
                emitted, cost = self._form(message, emit, price)
                older.append((lo, message, emitted, cost))
                total += cost
                if total > budget:
                    break
            step *= 2
        if not older:
            return
        tail_compiled, tail_sources, tail_incomplete, tail_ids = self._compiled, self._sources, self._incomplete, self._ids
        tail_totals, tail_starts = self._totals, self._starts
        self._reset(self._hi)
        self._lo = lo
        for position, message, _emitted, _cost in reversed(older):
            self._append(position, message, emit, price)
        base_total, base_start = self._totals[-1], self._starts[-1]
        self._totals.extend(base_total + t for t in tail_totals[1:])
        self._starts.extend(base_start + s for s in tail_starts[1:])
        self._compiled.extend(tail_compiled)
        self._sources.extend(tail_sources)
        self._incomplete.extend(tail_incomplete)
        self._ids.extend(tail_ids)
