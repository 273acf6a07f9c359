"""Views of a branch's messages: the branch's messages, then ``view_filter``, then the reader view.

Pure logic over the in-memory model; no I/O. A :class:`MessageView` is what a strategy reads
(``ctx.view``). Positions index the view's own list; messages keep their ids and sequences.

The reader's view of a message: its content as :func:`content_for_reader`
gives it; if that hid any block, the message's thinking blocks are left out too (a signed thinking
block vouches for its turn as written); a message left with nothing is left out of the view.

A damaged stored message (old or foreign data holding a block that could not be decoded, or no
content at all) is read fail-closed: its unreadable blocks are hidden from every reader. When
nothing readable is left of it, a reader sees nothing of it if its record may name a reader
anywhere; otherwise (always, on a branch that never held an audience) it keeps its place as
:data:`UNREADABLE_MESSAGE`, a placeholder that holds nothing of it. So every view agrees on its
positions before and after such a message is first decoded, and a strategy's reads never mix two
lists.

Fast path: while no block with an audience was ever stored on the branch and there is
no ``view_filter``, the view reads the branch directly and returns the stored objects themselves.

A reader's view is computed, not kept (:class:`SparseProjection`, every view with no
``view_filter``): only a message whose stored body may name a reader, or one edited or erased,
can read otherwise for a reader than as stored, and the model indexes those
(``LogModel.audience_entries``, ``LogModel.edited_ids``). The view holds and decodes them
alone: where the reader sees nothing of one, and the reader's copy of each it sees otherwise.
Every other message is read from the branch when asked. So opening a view, and bringing it up
to date after a write, cost what may differ for the reader, never the branch's length, and a
read costs what it returns. A view with a ``view_filter`` must ask the filter of every message:
it keeps the maintained list of its own (:class:`Projection`), built once and then kept up to
date incrementally (a write costs it one message, not a pass over history).

Shared projections: views made with the same :class:`Projections` (a runtime keeps one for its
store) share one projection per branch and reader when they have no ``view_filter``. Across
readers, a branch's projected copies are shared too: readers who see a message alike get the
same copy (:class:`BranchCopies`), so what each reader holds of its own is what differs for it,
never a copy of every message. Both are held weakly: they go with the last view that uses them.
Every read is still checked by the view that makes it.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import attrs

from ._blocks import ContentBlock, TextBlock, ToolResultBlock, ToolUseBlock, content_for_reader, is_thinking
from ._messages import Message
from ._pages import MessagePages

if TYPE_CHECKING:
    from ._model import LogModel

FETCH_BATCH = 900  # bodies read in one go by a long read (as ``store._model.FETCH_BATCH``)

__all__ = [
    "BranchCopies",
    "MessageView",
    "Projection",
    "Projections",
    "SparseProjection",
    "ViewFilter",
    "reader_view",
    "content_for_reader",
    "reader_body",
    "UNREADABLE_MESSAGE",
]

#: What a view shows in place of a damaged stored message that names no reader and of which
#: nothing readable is left (see the module docstring).
UNREADABLE_MESSAGE = "[a stored message here could not be read]"

ViewFilter = Callable[[Message], bool]
T = TypeVar("T")


def reader_body(message: Message, reader: str | None) -> tuple[ContentBlock, ...]:
    """What ``reader`` may see of ``message``'s content, thinking included (a provenance raw body)."""
    return content_for_reader(message.content, reader)


def reader_view(message: Message, reader: str | None) -> tuple[Message | None, bool]:
    """The reader's view of ``message`` and whether thinking was left out because of a hidden block.

    Returns ``(None, ...)`` when the reader sees nothing of it. When nothing is hidden or
    stripped, the very same message object comes back.
    """
    content = message.content
    if not content:
        return None, False  # no empty message is ever compiled (A3)
    return _view_of_visible(message, content_for_reader(content, reader))


def _view_of_visible(message: Message, visible: tuple[ContentBlock, ...]) -> tuple[Message | None, bool]:
    """:func:`reader_view` given what the reader may see of the message's blocks."""
    content = message.content
    if visible is content:
        return message, False
    dropped_thinking = False
    if len(visible) < len(content) and any(is_thinking(b) for b in visible):
        visible = tuple(b for b in visible if not is_thinking(b))
        dropped_thinking = True
    if not visible:
        return None, dropped_thinking
    return attrs.evolve(message, content=visible), dropped_thinking


class BranchCopies:
    """The projected copies of one branch's messages, shared by every reader: readers who see a
    message alike (the same blocks) get the same copy. Kept for a message while its stored
    object is the one they were made from (an edit makes them afresh) and while that object is
    alive: once the model's message cache lets it go and nothing else holds it, its copies go
    too, so they are bounded by the messages in use, not by the history."""

    __slots__ = ("_by_id", "derived", "__weakref__")

    def __init__(self) -> None:
        #: message id -> (a weak reference to the stored message, [(what a reader sees of its
        #: blocks, its view, thinking dropped)])
        self._by_id: dict[str, tuple[weakref.ref[Message], list[tuple[tuple[ContentBlock, ...], Message | None, bool]]]] = {}
        #: What every view of the branch works out from single messages and shares, by what it
        #: depends on besides them (MessageView.branch_state).
        self.derived: dict[Hashable, Any] = {}

    def view_of(self, message: Message, reader: str | None) -> tuple[Message | None, bool]:
        """:func:`reader_view`, the copy shared with every reader who sees the message alike."""
        content = message.content
        if not content:
            return None, False
        visible = content_for_reader(content, reader)
        if visible is content:
            return message, False
        known = self._by_id.get(message.id)
        if known is None or known[0]() is not message:
            known = (weakref.ref(message, _forget_copies(self._by_id, message.id)), [])
            self._by_id[message.id] = known
        for seen, projected, dropped in known[1]:
            if seen == visible:
                return projected, dropped
        projected, dropped = _view_of_visible(message, visible)
        known[1].append((visible, projected, dropped))
        return projected, dropped

    def __len__(self) -> int:
        """How many projected copies (or placeholders for nothing) are held."""
        return sum(len(variants) for _stored, variants in self._by_id.values())


def _forget_copies(by_id: dict[str, Any], message_id: str) -> Callable[[weakref.ref[Message]], None]:
    """What drops a message's copies once its stored object is gone (unless newer copies, made
    from another object, took the place)."""

    def forget(gone: weakref.ref[Message]) -> None:
        known = by_id.get(message_id)
        if known is not None and known[0] is gone:
            del by_id[message_id]

    return forget


def _no_check() -> None:
    return None


def _sequence(message: Message) -> int:
    return message.sequence


class Projection:
    """The maintained list of one reader's view of one branch (see the module docstring): the
    messages it holds, oldest first, and what it hid. Shared by every view of that reader and
    branch with no ``view_filter`` made with one :class:`Projections`; a view with a filter, or
    made without a :class:`Projections`, has one of its own. It reads the model only; the views
    check every read."""

    __slots__ = (
        "_model",
        "branch",
        "reader",
        "_filter",
        "_copies",
        "built",
        "items",
        "thinking_dropped",
        "_hidden_of",
        "hidden_uses",
        "hidden_results",
        "_seen_length",
        "_seen_edits",
        "_all",
        "_plain_all",
        "_plain_key",
        "moves",
        "derived",
        "__weakref__",
    )

    def __init__(
        self, model: LogModel, branch: str, reader: str | None, view_filter: ViewFilter | None, copies: BranchCopies | None = None
    ) -> None:
        self._model = model
        self.branch = branch
        self.reader = reader
        self._filter = view_filter
        self._copies = copies if copies is not None else BranchCopies()
        self.built = False
        self.items: list[Message] = []  # ordered by sequence
        self.thinking_dropped: set[str] = set()
        # Tool ids of blocks on the branch that the view hides (by filter or reader view).
        self._hidden_of: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.hidden_uses: Counter[str] = Counter()
        self.hidden_results: Counter[str] = Counter()
        self._seen_length = 0
        self._seen_edits = 0
        self._all: tuple[Message, ...] | None = None
        self._plain_all: tuple[Message, ...] | None = None
        self._plain_key: tuple[int, int] | None = None
        #: Counts the changes that moved a position the view already had: a message it held left
        #: it, or one it did not hold came in, other than at its end (an erasure aside, which
        #: the model counts). A sequence of the view's messages is stale once it changes.
        self.moves = 0
        #: What the views reading this projection work out from its messages and share, by what
        #: it depends on besides them (MessageView.shared_state); it goes with the projection.
        self.derived: dict[Hashable, Any] = {}

    @property
    def branch_copies(self) -> BranchCopies:
        """The projected copies of the branch's messages it shares with the branch's other views."""
        return self._copies

    @property
    def plain(self) -> bool:
        """Whether reads go straight to the branch (no filter, no audience ever stored)."""
        return not self.built and self._filter is None and not self._model.may_hold_audience(self.branch)

    def _shown(self, message: Message) -> tuple[Message | None, bool]:
        """The reader's view of a stored message (the filter aside), damaged ones included, and
        whether thinking was left out because a block was hidden."""
        projected, dropped = self._copies.view_of(message, self.reader)
        if projected is None and self._model.is_erased(message.id):
            return None, False  # an erased message is left out of every view (store/_erasure.py)
        if projected is None and self._model.damaged(message.content) is False:
            projected = attrs.evolve(message, content=(TextBlock(UNREADABLE_MESSAGE),))
        return projected, dropped

    def plain_one(self, message: Message) -> Message:
        """A message read on the plain path: the stored object itself, unless it is damaged."""
        if message.content and (not self._model.holds_damaged or self._model.damaged(message.content) is None):
            return message
        shown, dropped = self._shown(message)
        if dropped:
            self.thinking_dropped.add(message.id)
        # On a branch that never held an audience no record names a reader, so something is
        # always shown; the placeholder keeps the place (fail-closed) should that ever not hold.
        return shown if shown is not None else attrs.evolve(message, content=(TextBlock(UNREADABLE_MESSAGE),))

    def plain_many(self, messages: list[Message]) -> tuple[Message, ...]:
        if not self._model.holds_damaged:
            return tuple(messages)
        return tuple(self.plain_one(m) for m in messages)

    def plain_all(self) -> tuple[Message, ...]:
        """Every message of the branch on the plain path (kept until the branch changes)."""
        key = (self._model.length(self.branch), self._model.edit_count(self.branch))
        if self._plain_all is None or self._plain_key != key:
            previous, previous_key = self._plain_all, self._plain_key
            if previous is not None and previous_key is not None and previous_key[1] == key[1] and previous_key[0] <= key[0]:
                # Only appends since: extend the tuple instead of reading every message again.
                self._plain_all = previous + self.plain_many(self._model.slice(self.branch, previous_key[0]))
            else:
                self._plain_all = self.plain_many(self._model.slice(self.branch, 0))
            self._plain_key = key
        return self._plain_all

    def built_all(self) -> tuple[Message, ...]:
        if self._all is None:
            self._all = tuple(self.items)
        return self._all

    def _project(self, message: Message) -> Message | None:
        if self._filter is not None and not self._filter(message):
            projected, dropped = None, False
        else:
            projected, dropped = self._shown(message)
        if dropped:
            self.thinking_dropped.add(message.id)
        else:
            self.thinking_dropped.discard(message.id)
        self._note_hidden(message, projected)
        return projected

    def _note_hidden(self, stored: Message, projected: Message | None) -> None:
        old = self._hidden_of.pop(stored.id, None)
        if old is not None:
            self.hidden_uses.subtract(old[0])
            self.hidden_results.subtract(old[1])
        if projected is stored:
            return
        shown = projected.content if projected is not None else ()
        shown_uses = {b.id for b in shown if isinstance(b, ToolUseBlock)}
        shown_results = {b.tool_use_id for b in shown if isinstance(b, ToolResultBlock)}
        uses = tuple(b.id for b in stored.content if isinstance(b, ToolUseBlock) and b.id not in shown_uses)
        results = tuple(b.tool_use_id for b in stored.content if isinstance(b, ToolResultBlock) and b.tool_use_id not in shown_results)
        if uses or results:
            self._hidden_of[stored.id] = (uses, results)
            self.hidden_uses.update(uses)
            self.hidden_results.update(results)

    # -- reads, after :meth:`sync` (the plain path while nothing is maintained) ----------------

    def read_length(self) -> int:
        return len(self.items) if self.built else self._model.length(self.branch)

    def read_all(self) -> tuple[Message, ...]:
        return self.built_all() if self.built else self.plain_all()

    def read_slice(self, start: int | None, stop: int | None) -> tuple[Message, ...]:
        if self.built:
            return tuple(self.items[start:stop])
        return self.plain_many(self._model.slice(self.branch, 0 if start is None else start, stop))

    def read_at(self, index: int) -> Message:
        return self.items[index] if self.built else self.plain_one(self._model.at(self.branch, index))

    def read_id_at(self, index: int) -> str:
        return self.items[index].id if self.built else self._model.id_at(self.branch, index)

    def read_position_of(self, message_id: str) -> int | None:
        if not self.built:
            return self._model.position_of(self.branch, message_id)
        stored = self._model.get(self.branch, message_id)
        return None if stored is None else self.index_of(stored.sequence)

    def hidden_ids(self) -> tuple[frozenset[str], frozenset[str]]:
        return (
            frozenset(k for k, n in self.hidden_uses.items() if n > 0),
            frozenset(k for k, n in self.hidden_results.items() if n > 0),
        )

    def index_of(self, sequence: int) -> int | None:
        """The position of the message with ``sequence`` in the maintained list, or ``None``."""
        index = bisect_left(self.items, sequence, key=_sequence)
        if index < len(self.items) and self.items[index].sequence == sequence:
            return index
        return None

    def sync(self) -> None:
        """Bring the maintained list up to date with the branch (appends, then edits)."""
        if not self.built:
            if self._filter is None and not self._model.may_hold_audience(self.branch):
                return
            self.built = True
        model, branch = self._model, self.branch
        length = model.length(branch)
        if length > self._seen_length:
            for message in model.slice(branch, self._seen_length, length):
                projected = self._project(message)
                if projected is not None:
                    self.items.append(projected)
            self._seen_length = length
            self._all = None
        edits = model.edit_count(branch)
        if edits > self._seen_edits:
            items = self.items
            for message_id in dict.fromkeys(model.edits_since(branch, self._seen_edits)):
                stored = model.get(branch, message_id)
                if stored is None:
                    continue
                projected = self._project(stored)
                index = bisect_left(items, stored.sequence, key=_sequence)
                present = index < len(items) and items[index].sequence == stored.sequence
                if projected is None:
                    if present:
                        del items[index]
                        self.moves += 1
                elif present:
                    items[index] = projected
                else:
                    items.insert(index, projected)
                    self.moves += 1
            self._seen_edits = edits
            self._all = None


class _Span:
    """A stretch ``[lo, hi)`` of a branch's positions in one reader's view: how many of its
    messages the reader sees nothing of (``hidden``) and, once read, which (``removed``, sorted
    branch positions, with ``gaps[k] = removed[k] - lo - k``: how a position of the view within
    the stretch finds its branch position)."""

    __slots__ = ("lo", "hi", "hidden", "removed", "gaps")

    def __init__(self, lo: int, hi: int, hidden: int, removed: list[int] | None) -> None:
        self.lo, self.hi, self.hidden = lo, hi, hidden
        self.removed = removed
        self.gaps = None if removed is None else [p - lo - k for k, p in enumerate(removed)]

    def index_of(self, position: int) -> int | None:
        """Where ``position`` stands among the removed ones (read), or ``None`` if it is none."""
        removed = self.removed
        assert removed is not None
        k = bisect_left(removed, position)
        return k if k < len(removed) and removed[k] == position else None

    def holds_removed(self, position: int) -> bool:
        return self.index_of(position) is not None

    def add(self, position: int) -> bool:
        """The reader sees nothing of the message at ``position`` (read); whether that is new."""
        removed, gaps = self.removed, self.gaps
        assert removed is not None and gaps is not None
        index = bisect_left(removed, position)
        if index < len(removed) and removed[index] == position:
            return False
        removed.insert(index, position)
        gaps.insert(index, position - self.lo - index)
        for j in range(index + 1, len(gaps)):
            gaps[j] -= 1
        self.hidden += 1
        return True

    def discard(self, position: int) -> bool:
        """The reader sees something of the message at ``position`` (read); whether it was removed."""
        removed, gaps = self.removed, self.gaps
        assert removed is not None and gaps is not None
        index = self.index_of(position)
        if index is None:
            return False
        del removed[index]
        del gaps[index]
        for j in range(index, len(gaps)):
            gaps[j] += 1
        self.hidden -= 1
        return True


class SparseProjection(Projection):
    """One reader's view of one branch with no ``view_filter``, computed rather than kept: the
    view is the branch less the messages the reader sees nothing of, and with its own copy of
    the ones it sees otherwise than stored. Only the messages whose stored body may name a
    reader, and the edited ones (an erasure counts as one), can be either
    (``LogModel.audience_spans``, ``LogModel.audience_entries``, ``LogModel.edited_ids``).

    The view cuts the branch into stretches (:class:`_Span`, the model's blocks of sequences).
    For a stretch whose messages all say who sees them it needs only how many of them the
    reader sees nothing of, which the model counts by block; it reads which they are when a
    read first reaches the stretch. It reads at once, and decodes to place, the stretches
    holding a message that does not say (tool blocks, thinking, images, damaged content) or an
    edited one. Every other message is read from the branch when asked, as on the plain path.
    So its memory and the work of opening it follow the blocks that hold messages that may name
    a reader and the stretches it read, never the branch's length; a read costs what it returns
    and the stretches it reaches."""

    __slots__ = ("_spans", "_los", "_starts", "_before", "_dirty", "_hidden", "copies", "_seen_erasures", "_started")

    def __init__(self, model: LogModel, branch: str, reader: str | None, copies: BranchCopies | None = None) -> None:
        super().__init__(model, branch, reader, None, copies)
        self._spans: list[_Span] = []  # covering positions 0 to the length seen, in order
        self._los: list[int] = []  # each span's lo
        self._before: list[int] = []  # how many messages the spans before each hide
        self._starts: list[int] = []  # the view position of each span's lo
        self._dirty = 0  # the first span whose _before and _starts are stale
        self._hidden = 0  # how many messages every span hides
        self.copies: dict[int, Message] = {}  # branch position -> the reader's copy, where it differs
        self._seen_erasures = 0
        self._started = False

    @property
    def plain(self) -> bool:
        return not self._started and not self._model.may_hold_audience(self.branch)

    def sync(self) -> None:
        """Bring it up to date with the branch: the messages written since that may name a
        reader, then the edited ones (an erasure starts it afresh)."""
        model, branch = self._model, self.branch
        if not self._started:
            if not model.may_hold_audience(branch):
                return
            self._start()
            return
        if model.erasure_count != self._seen_erasures:
            self._reset()
            self._start()
            return
        length = model.length(branch)
        if length > self._seen_length:
            self._extend(self._seen_length, length)
            self._seen_length = length
            self._all = None
        edits = model.edit_count(branch)
        if edits > self._seen_edits:
            for message_id in dict.fromkeys(model.edits_since(branch, self._seen_edits)):
                edited = model.position_of(branch, message_id)
                if edited is not None:
                    was_removed = self._removed_at(edited)
                    self._unplace(edited)
                    self._place(edited)
                    if self._removed_at(edited) != was_removed:
                        self.moves += 1
            self._seen_edits = edits
            self._all = None

    def _reset(self) -> None:
        self.moves += 1
        self._spans, self._los, self._before, self._starts = [], [], [], []
        self._dirty = self._hidden = 0
        self.copies = {}
        self.thinking_dropped.clear()
        self._hidden_of.clear()
        self.hidden_uses.clear()
        self.hidden_results.clear()
        self._all = None

    def _start(self) -> None:
        model, branch, reader = self._model, self.branch, self.reader
        self._started = True
        self._seen_erasures = model.erasure_count
        self._seen_length = model.length(branch)
        self._seen_edits = model.edit_count(branch)
        edited: set[int] = set()
        for message_id in model.edited_ids(branch):
            position = model.position_of(branch, message_id)
            if position is not None:
                edited.add(position)
        marks = sorted(edited)
        # A stretch whose messages all say who sees them (store/_seers.py) is counted, undecoded,
        # and read when a read reaches it; the reader's copy of a message it sees is made when
        # that message is read (``_message``). A stretch with a message that does not say, or
        # an edited one, is read now, and those messages decoded to be placed.
        decoded: list[int] = []
        for lo, hi, counts in model.audience_spans(branch):
            has_edit = bisect_left(marks, lo) < bisect_left(marks, hi)
            if counts is not None and not has_edit and None not in counts:
                hidden = sum(n for seers, n in counts.items() if seers is not None and seers.sees_nothing(reader))
                self._append_span(_Span(lo, hi, hidden, None))
            else:
                self._append_span(self._read_span(lo, hi, edited, decoded))
        for position in sorted(set(decoded) | edited):
            self._place(position)
        # Until now the view read the branch as it is; an edited message it no longer holds
        # moved the positions after it (one that only now has an audience was appended since).
        if any(self._removed_at(position) for position in edited):
            self.moves += 1
        self._all = None

    def _read_span(self, lo: int, hi: int, edited: set[int] | frozenset[int], decoded: list[int]) -> _Span:
        """The stretch ``[lo, hi)`` with which messages the reader sees nothing of, read from the
        model: the ones that do not say, and the edited ones, are left to ``decoded`` (the caller
        places them once the stretch is in place)."""
        removed: list[int] = []
        for position, seers in self._model.audience_entries(self.branch, lo, hi):
            if position in edited:
                continue
            if seers is None:
                decoded.append(position)
            elif seers.sees_nothing(self.reader):
                removed.append(position)
        return _Span(lo, hi, len(removed), removed)

    def _append_span(self, span: _Span) -> None:
        self._spans.append(span)
        self._los.append(span.lo)
        self._before.append(0)
        self._starts.append(0)
        self._hidden += span.hidden
        self._dirty = min(self._dirty, len(self._spans) - 1)

    def _extend(self, start: int, stop: int) -> None:
        """The branch grew from ``start`` to ``stop``: the new positions join the last stretch
        (read first, when it was only counted), or make the first one."""
        decoded: list[int] = []
        fresh = self._read_span(start, stop, frozenset(), decoded)
        if not self._spans:
            self._append_span(fresh)
        else:
            k = len(self._spans) - 1
            last = self._ensure(k)
            assert last.hi == start
            last.hi = stop
            for position in fresh.removed or ():  # newer than every one it holds: added at its end
                last.add(position)
            self._hidden += fresh.hidden
            self._dirty = min(self._dirty, k + 1)
        for position in decoded:
            self._place(position)

    def _span_at(self, position: int) -> int:
        return bisect_right(self._los, position) - 1

    def _ensure(self, k: int) -> _Span:
        """Span ``k``, with which messages the reader sees nothing of read, when it was only
        counted (it then holds no edited message and none that does not say)."""
        span = self._spans[k]
        if span.removed is not None:
            return span
        decoded: list[int] = []
        read = self._read_span(span.lo, span.hi, frozenset(), decoded)
        span.removed, span.gaps = read.removed, read.gaps
        if read.hidden != span.hidden:  # the counts and the messages disagree: the messages win
            self._model.report(None, f"a count of the messages the reader {self.reader!r} sees nothing of disagreed with them")
            self._hidden += read.hidden - span.hidden
            span.hidden = read.hidden
            self._dirty = min(self._dirty, k + 1)
            self.moves += 1
            self._all = None
        for position in decoded:
            self._place(position)
        return span

    def _refresh(self) -> None:
        """Bring ``_before`` and ``_starts`` up to date from the first stale span on, if any is."""
        spans, before, starts = self._spans, self._before, self._starts
        k = self._dirty
        if k >= len(spans):
            return
        hidden = before[k - 1] + spans[k - 1].hidden if k > 0 else 0
        for j in range(k, len(spans)):
            before[j] = hidden
            starts[j] = spans[j].lo - hidden
            hidden += spans[j].hidden
        self._dirty = len(spans)

    def _removed_at(self, position: int) -> bool:
        k = self._span_at(position)
        if k < 0 or self._spans[k].hidden == 0 and self._spans[k].removed is None:
            return False
        return self._ensure(k).holds_removed(position)

    def _place(self, position: int) -> None:
        stored = self._model.at(self.branch, position)
        projected = self._project(stored)
        if projected is None:
            self._remove(position)
        elif projected is not stored:
            self.copies[position] = projected

    def _remove(self, position: int) -> None:
        """The reader sees nothing of the message at ``position``."""
        k = self._span_at(position)
        if self._ensure(k).add(position):
            self._hidden += 1
            self._dirty = min(self._dirty, k + 1)

    def _unplace(self, position: int) -> None:
        self.copies.pop(position, None)
        k = self._span_at(position)
        if k >= 0 and self._ensure(k).discard(position):
            self._hidden -= 1
            self._dirty = min(self._dirty, k + 1)

    # -- reads, after :meth:`sync` ---------------------------------------------------------------

    def _message(self, position: int) -> Message:
        found = self.copies.get(position)
        if found is not None:
            return found
        stored = self._model.at(self.branch, position)
        if not self._model.may_differ(self.branch, position):
            return self.plain_one(stored)
        # Placed by who sees something of it (``_start``): the reader's copy, made now.
        projected = self._project(stored)
        if projected is None:  # its body's summary disagrees with its blocks: fail-closed
            self._model.report(int(stored.id) if stored.id.isdigit() else None, "who sees the message disagrees with its blocks")
            return attrs.evolve(stored, content=(TextBlock(UNREADABLE_MESSAGE),))
        return projected

    def _position(self, index: int) -> int:
        """The branch position of the view's ``index`` (0 <= index < length)."""
        self._refresh()
        k = bisect_right(self._starts, index) - 1
        if k < 0:
            return index
        span = self._spans[k]
        local = index - self._starts[k]
        if local >= span.hi - span.lo - span.hidden:  # past the stretch (only the last one)
            return index + self._before[k] + span.hidden
        if span.hidden == 0:
            return span.lo + local
        span = self._ensure(k)
        if self._dirty < len(self._spans):  # reading it changed what it hides: look again
            return self._position(index)
        assert span.gaps is not None
        return span.lo + local + bisect_right(span.gaps, local)

    def _index(self, index: int) -> int:
        length = self.read_length()
        if index < 0:
            index += length
        if not 0 <= index < length:
            raise IndexError(index)
        return index

    def read_length(self) -> int:
        return self._model.length(self.branch) - self._hidden

    def read_all(self) -> tuple[Message, ...]:
        if not self._started:
            return self.plain_all()
        if self._all is None:
            self._all = self.read_slice(0, None)
        return self._all

    def read_slice(self, start: int | None, stop: int | None) -> tuple[Message, ...]:
        if not self._started:
            return super().read_slice(start, stop)
        first, end, _ = slice(start, stop).indices(self.read_length())
        if first >= end:
            return ()
        position = self._position(first)
        spans = self._spans
        k = max(self._span_at(position), 0)
        out: list[Message] = []
        model, branch = self._model, self.branch
        for count in range(end - first):
            if count % FETCH_BATCH == 0:  # the bodies the next batch needs, and no more, in one read
                model.prefetch(branch, position, self._position(min(end, first + count + FETCH_BATCH) - 1) + 1)
            out.append(self._message(position))
            position += 1
            while True:  # past the messages the reader sees nothing of
                while k + 1 < len(spans) and spans[k + 1].lo <= position:
                    k += 1
                span = spans[k]
                if span.hidden == 0 or position >= span.hi or not self._ensure(k).holds_removed(position):
                    break
                position += 1
        return tuple(out)

    def read_at(self, index: int) -> Message:
        if not self._started:
            return super().read_at(index)
        return self._message(self._position(self._index(index)))

    def read_id_at(self, index: int) -> str:
        if not self._started:
            return super().read_id_at(index)
        return self._model.id_at(self.branch, self._position(self._index(index)))

    def read_position_of(self, message_id: str) -> int | None:
        position = self._model.position_of(self.branch, message_id)
        if position is None or not self._started:
            return position
        k = self._span_at(position)
        if k < 0:
            return position
        span = self._spans[k]
        if span.hidden:
            span = self._ensure(k)
        self._refresh()
        if not span.hidden:
            return position - self._before[k]
        assert span.removed is not None
        if span.holds_removed(position):
            return None
        return position - self._before[k] - bisect_left(span.removed, position)


class Projections:
    """What the views of one store's model share (a runtime keeps one): a :class:`Projection`
    per branch and reader for views with no filter, and a :class:`BranchCopies` per branch. Held
    weakly: each goes once no view holds it, so a reader's projection lives as long as a view
    of that reader does."""

    def __init__(self, model: LogModel) -> None:
        self._model = model
        self._lists: weakref.WeakValueDictionary[tuple[str, str | None], Projection] = weakref.WeakValueDictionary()
        self._copies: weakref.WeakValueDictionary[str, BranchCopies] = weakref.WeakValueDictionary()

    @property
    def model(self) -> LogModel:
        return self._model

    def copies(self, branch: str) -> BranchCopies:
        copies = self._copies.get(branch)
        if copies is None:
            copies = self._copies[branch] = BranchCopies()
        return copies

    def projection(self, branch: str, reader: str | None, view_filter: ViewFilter | None) -> Projection:
        """The projection a view of ``reader`` on ``branch`` reads: the shared one when there is
        no filter, a new one of its own otherwise. A reader no audience on the branch names (as
        far as the model can tell: ``LogModel.reader_named``) sees exactly what a view for no
        reader sees, so it reads that projection, and what is worked out from it is shared."""
        if view_filter is not None:
            return Projection(self._model, branch, reader, view_filter, self.copies(branch))
        if reader is not None and not self._model.reader_named(branch, reader):
            reader = None
        key = (branch, reader)
        projection = self._lists.get(key)
        if projection is None:
            projection = self._lists[key] = SparseProjection(self._model, branch, reader, self.copies(branch))
        return projection

    def __len__(self) -> int:
        """How many shared projections are alive."""
        return len(self._lists)


def _kept(derived: dict[Hashable, Any], key: Hashable, make: Callable[[], T]) -> T:
    """``derived[key]``, made by ``make`` the first time."""
    found = derived.get(key)
    if found is None:
        found = derived[key] = make()
    return cast(T, found)


class MessageView:
    """The reader's view of one branch, as a strategy reads it.

    Every read first calls ``check`` (the namespace's reader check), which raises when
    the manager this view belongs to may no longer read. With ``shared``, the view reads the
    projection it shares with every other view of its reader and branch (see the module
    docstring); without, it keeps one of its own.
    """

    __slots__ = ("_model", "branch", "reader", "_check", "_p", "_shared", "_names_seen", "_switches", "_filtered")

    def __init__(
        self,
        model: LogModel,
        branch: str,
        *,
        reader: str | None,
        view_filter: ViewFilter | None = None,
        check: Callable[[], None] | None = None,
        shared: Projections | None = None,
    ) -> None:
        self._model = model
        self.branch = branch
        self.reader = reader
        self._check = check or _no_check
        #: Where to ask again for this view's projection once a reader it shares one with for
        #: being named by no audience may be named (the model's names grew).
        self._shared = shared if shared is not None and view_filter is None and reader is not None else None
        self._names_seen = model.names_version
        self._switches = 0
        self._filtered = view_filter is not None
        if shared is not None:
            self._p = shared.projection(branch, reader, view_filter)
        elif view_filter is None:
            self._p = SparseProjection(model, branch, reader)
        else:
            self._p = Projection(model, branch, reader, view_filter)

    # -- internals ---------------------------------------------------------------------------

    def _current(self) -> Projection:
        """The projection to read now: a view sharing the projection of no reader, because no
        audience named its reader, takes its reader's own once one may (an audience written since
        names it). What it read so far is the same in both (the reader was named nowhere), and
        what made the difference is a message or an edit the view's revision counts."""
        shared = self._shared
        if shared is not None and self._names_seen != self._model.names_version:
            self._names_seen = self._model.names_version
            found = shared.projection(self.branch, self.reader, None)
            if found is not self._p:
                self._p = found
                self._switches += 1
        return self._p

    @property
    def plain(self) -> bool:
        """Whether reads go straight to the branch (no filter, no audience ever stored)."""
        return self._current().plain

    @property
    def projection(self) -> Projection:
        """The projection this view reads (shared with the views that see alike: its reader's,
        or, while no audience names its reader, those of no reader and of every reader named by
        none)."""
        return self._current()

    def shared_state(self, key: Hashable, make: Callable[[], T]) -> T:
        """The state kept under ``key`` for the projection this view reads now, made by ``make``
        the first time: one object for every view that reads that projection, so for every view
        that sees alike (see :attr:`projection`). ``key`` names everything the state depends on
        besides the projection's messages (a strategy, its estimator); the state must follow
        the view's revision and the model's erasures itself, and may not depend on which view
        or manager asks (their readers see alike, but are not the same reader)."""
        return _kept(self._current().derived, key, make)

    def branch_state(self, key: Hashable, make: Callable[[], T]) -> T:
        """The state kept under ``key`` for every view of this view's branch (whatever its
        reader), made by ``make`` the first time. For what is worked out from one message object
        alone (its compiled form, its estimate): readers who see a message alike read the very
        same object, so such state, looked up by that object (by id, checked by identity), is
        right for each of them; it must not depend on anything else of the view."""
        return _kept(self._current().branch_copies.derived, key, make)

    # -- reads (each checked) ----------------------------------------------------------------

    def _synced(self) -> Projection:
        """The projection, checked and brought up to date. Which list it reads changes only
        with a write to the branch (the first audience block), never while nothing is written:
        every list places every message alike, damaged ones included (see the module
        docstring), so a strategy's reads never mix two lists."""
        self._check()
        p = self._current()
        p.sync()
        return p

    def length(self) -> int:
        """How many messages the view holds."""
        return self._synced().read_length()

    def get_all(self) -> tuple[Message, ...]:
        """Every message of the view, oldest first."""
        return self._synced().read_all()

    def pages(self, source: str) -> MessagePages:
        """Every message of the view, oldest first, as a :class:`MessagePages` that reads them a
        page at a time; ``source`` names the call that asked, for its errors."""
        length = self._synced().read_length()

        def read(start: int, stop: int) -> tuple[Message, ...]:
            return self._synced().read_slice(start, stop)

        def stamp() -> tuple[int, int, int]:
            return (self._model.erasure_count, self._switches, self._current().moves)

        return MessagePages(source, length, read, stamp)

    def get_from(self, index: int) -> tuple[Message, ...]:
        """The messages from position ``index`` on (negative counts from the end)."""
        return self._synced().read_slice(index, None)

    def get_tail(self, count: int) -> tuple[Message, ...]:
        """The newest ``count`` messages, oldest first."""
        if count <= 0:
            self._check()
            return ()
        return self._synced().read_slice(-count, None)

    def at(self, index: int) -> Message:
        """The message at position ``index``."""
        return self._synced().read_at(index)

    def id_at(self, index: int) -> str:
        """The id of the message at position ``index`` (cheaper than :meth:`at`)."""
        return self._synced().read_id_at(index)

    @property
    def erasures(self) -> int:
        """How many erasures the store has seen: what was worked out from the view before one
        may no longer hold."""
        return self._model.erasure_count

    @property
    def as_written(self) -> bool:
        """Whether every message this view holds is the one its reader saw when it was written,
        in the same place: no message of the branch (or of an ancestor) edited, none erased in
        the store, and no view filter. While it holds, a message's position never changes, and a
        message once in the view stays in it."""
        return self._model.erasure_count == 0 and self.in_written_order

    @property
    def in_written_order(self) -> bool:
        """Whether every message this view holds is the one its reader saw when it was written,
        in the order written, with no message come between two of them: no message of the
        branch (or of an ancestor) edited and no view filter. Erasures may have taken messages
        out (:attr:`erasures` counts them), moving those after back, so two messages side by side
        when written are side by side still unless one between them was erased; a message
        never comes back, and none comes between."""
        return not self._filtered and self._model.edits_in_lineage(self.branch, erasures=False) == 0

    @property
    def revision(self) -> tuple[int, int]:
        """Changes when the branch gains messages (first) or edits (second)."""
        return (self._model.length(self.branch), self._model.edit_count(self.branch))

    def slice(self, start: int, stop: int | None = None) -> tuple[Message, ...]:
        """Messages at positions ``start`` to ``stop`` (exclusive)."""
        return self._synced().read_slice(start, stop)

    def position_of(self, message_id: str) -> int | None:
        """The position of ``message_id`` in this view, or ``None`` when the view does not hold it."""
        return self._synced().read_position_of(message_id)

    def get(self, message_id: str) -> Message | None:
        """The view's message with that id, or ``None`` when the view does not hold it."""
        p = self._synced()
        position = p.read_position_of(message_id)
        return None if position is None else p.read_at(position)

    def sequence_of(self, message_id: str) -> int | None:
        """The sequence of the view's message with that id, or ``None``."""
        message = self.get(message_id)
        return None if message is None else message.sequence

    def hidden_tool_ids(self) -> tuple[frozenset[str], frozenset[str]]:
        """Ids of tool calls, and of the calls answered by tool results, that are on the branch
        but hidden from this view. Both empty on the plain fast path."""
        return self._synced().hidden_ids()

    def edited_since(self, count: int) -> list[str]:
        """Ids of the messages edited on the branch after its first ``count`` edits, in order
        (``revision[1]`` is how many there are)."""
        self._check()
        return self._model.edits_since(self.branch, count)

    def thinking_dropped_ids(self) -> frozenset[str]:
        """Ids of the messages whose thinking the view left out because it hid another block."""
        return frozenset(self._synced().thinking_dropped)

    def thinking_dropped(self, message_id: str) -> bool:
        """Whether the view left out this message's thinking because it hid another block (A4.1)."""
        return message_id in self._synced().thinking_dropped

    def stored(self, message_id: str) -> Message | None:
        """The message as stored on the branch (audience fields included); not reader-filtered."""
        self._check()
        return self._model.get(self.branch, message_id)

    def __repr__(self) -> str:
        return f"<MessageView {self.branch} reader={self.reader!r} plain={self.plain}>"
