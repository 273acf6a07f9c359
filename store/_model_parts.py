"""The parts of the in-memory model (store/_model.py): one branch's records, the index of which
branch holds each message, and the values and markers the model answers with. Pure logic."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol, TypeVar

import attrs

from ._errors import ArgumentTypeError, InvalidArgumentError
from ._messages import Message
from ._seers import Seers

__all__ = [
    "LARGEST_AUDIENCE_BITS",
    "AudienceBlock",
    "BranchInfo",
    "MISSING",
    "RecordTypeError",
    "Row",
    "StoredRows",
    "UNREADABLE",
    "Branch",
    "Owners",
    "fork_point",
    "latest",
    "record_of",
]


class RecordTypeError(ValueError):
    """A persisted record with a column of the wrong type (only a file changed outside asides
    holds one). Replay refuses it rather than skip it: a skipped record could be a reader claim."""


class _Marker:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: A state record whose stored JSON could not be read.
UNREADABLE: Final = _Marker("UNREADABLE")
#: No state record under that key on that branch.
MISSING: Final = _Marker("MISSING")


@attrs.frozen(slots=True)
class BranchInfo:
    """A branch: its ``parent`` (``None`` for ``main``), the parent sequence it was forked at,
    and its current ``head`` sequence."""

    name: str
    parent: str | None
    fork_sequence: int
    head: int


@attrs.frozen(slots=True)
class Row:
    """One record as persisted: ``(id, branch, seq, kind, ref, body)``."""

    id: int
    branch: str
    seq: int
    kind: str
    ref: str | None
    body: str

    def as_tuple(self) -> tuple[int, str, int, str, str | None, str]:
        return (self.id, self.branch, self.seq, self.kind, self.ref, self.body)


class StoredRows(Protocol):
    """What a model whose messages stay in the database reads of them, synchronously, from
    committed records (a journal implements it: ``LogModel.read_rows_from``)."""

    def message_rows(self, branch: str, first: int, last: int, bodies: bool) -> Sequence[tuple[int, int, str | None]]:
        """``(id, seq, body)`` of the message records on ``branch`` with sequences from ``first``
        to ``last`` (both included), body ``None`` unless ``bodies``."""
        ...

    def message_places(self, record_ids: Sequence[int]) -> Sequence[tuple[int, str, int]]:
        """``(id, branch, seq)`` of the message records among ``record_ids``."""
        ...

    def all_message_ids(self) -> Sequence[int]:
        """The id of every message record, in id order."""
        ...

    def audience_rows(self, branch: str, first: int, last: int) -> Sequence[tuple[int, str | None, str | None]]:
        """The messages of ``branch`` with a sequence from ``first`` to ``last`` whose body may name
        a reader (at least those), in sequence order: each one's sequence, the summary of who
        sees it its body records (its JSON text, store/_seers.py) or ``None``, and, without a
        summary, its body."""
        ...

    def message_page(self, after: int, limit: int) -> Sequence[tuple[int, str, int, str | None]]:
        """``(id, branch, seq, body)`` of the first ``limit`` message records with ids above ``after``, in id order."""
        ...

    def record_bodies(self, record_ids: Sequence[int]) -> Mapping[int, str]:
        """The body of each committed record among ``record_ids`` (a record the database does
        not hold is left out)."""
        ...

    def state_versions(
        self,
        before: int,
        *,
        keys: Sequence[str] | None = None,
        prefix: str | None = None,
        suffix: str | None = None,
        containing: str | None = None,
        blanked: bool = True,
    ) -> Sequence[tuple[int, str, int, str, bool]]:
        """``(id, branch, seq, key, blanked)`` of every state record with an id under ``before``
        whose key is one of ``keys``, starts with ``prefix``, ends with ``suffix`` or contains
        ``containing`` (the one given; none: every state record); ``blanked`` when an erasure
        blanked its value, or always ``False`` when not asked for (``blanked=False``: then the
        answer comes from the index of state records alone, reading no value)."""
        ...

    def state_sequences_after(self, before: int, branch: str, prefix: str, sequence: int) -> tuple[int, Sequence[tuple[str, int]]]:
        """Of the state records of ``branch`` itself with an id under ``before`` and a key starting
        with ``prefix`` (not empty): how many keys were last written at or before ``sequence``,
        and ``(key, sequence)`` of each key last written after it, counted in the database."""
        ...

    def state_record_page(self, after: int, before: int, limit: int) -> Sequence[tuple[int, str, str, str]]:
        """``(id, branch, key, body)`` of the first ``limit`` state records with ids above
        ``after`` and under ``before`` that no erasure blanked, in id order."""
        ...

    def records_holding(self, record_ids: Sequence[int], words: Sequence[str]) -> Collection[int]:
        """Those of ``record_ids`` whose stored body holds every one of ``words`` (lowercase ASCII)
        in any case, or holds any character past ASCII."""
        ...

    def disclosure_page(self, after: int, limit: int) -> Sequence[tuple[int, str]]:
        """``(id, body)`` of the first ``limit`` disclosure records with ids above ``after``, in id order."""
        ...

    def disclosures_holding(self, message_id: int) -> Sequence[tuple[int, str]]:
        """``(id, body)`` of the disclosure records some run of which may hold ``message_id`` (at
        least those), in id order."""
        ...


def record_of(message_id: str) -> int | None:
    """The record id a message id is the decimal form of, or ``None``."""
    if not (message_id.isascii() and message_id.isdigit()) or (message_id[0] == "0" and message_id != "0"):
        return None
    return int(message_id)


class Owners:
    """Which branch holds each message, and where: two arrays indexed by record id (record ids
    are dense), 16 bytes a record instead of a dict entry of about 240 bytes a message."""

    __slots__ = ("_branches", "_indexes")

    def __init__(self) -> None:
        self._branches: list[Branch | None] = []
        self._indexes: array[int] = array("q")

    def set(self, record_id: int, branch: Branch, index: int) -> None:
        missing = record_id + 1 - len(self._branches)
        if missing > 0:  # grown by half again at least, so appending ids is amortized constant time
            missing = max(missing, len(self._branches) // 2)
            self._branches.extend([None] * missing)
            self._indexes.extend(array("q", bytes(8 * missing)))
        self._branches[record_id] = branch
        self._indexes[record_id] = index

    def get(self, message_id: str) -> tuple[Branch, int] | None:
        record_id = record_of(message_id)
        return None if record_id is None else self.of_record(record_id)

    def of_record(self, record_id: int) -> tuple[Branch, int] | None:
        if record_id >= len(self._branches):
            return None
        branch = self._branches[record_id]
        return None if branch is None else (branch, self._indexes[record_id])


#: The largest block of sequences ``AudienceBlock`` counts: ``1 << LARGEST_AUDIENCE_BITS``.
LARGEST_AUDIENCE_BITS: Final = 14


class AudienceBlock:
    """The messages of one block of a branch's sequences whose stored body may name a reader
    (``LogModel.audience_bits`` sets how many sequences a block spans): how many of them each
    summary of who sees them counts (``None``: a view decodes such a message to place it), and,
    once read, each one's index among the branch's own messages, with its summary."""

    __slots__ = ("counts", "indexes", "seers")

    def __init__(self, loaded: bool) -> None:
        self.counts: dict[Seers | None, int] = {}
        self.indexes: array[int] | None = array("q") if loaded else None
        self.seers: list[Seers | None] | None = [] if loaded else None

    def add(self, index: int, seers: Seers | None) -> None:
        """One more such message, newer than every one it holds; nothing when it holds it
        already (read back from the database with the others, as one written here is when the
        block is read between its commit and this process taking the commit in)."""
        indexes, held = self.indexes, self.seers
        if indexes is not None and held is not None:
            at = len(indexes) if not indexes or indexes[-1] < index else bisect_left(indexes, index)
            if at < len(indexes) and indexes[at] == index:
                return
            indexes.insert(at, index)
            held.insert(at, seers)
        self.counts[seers] = self.counts.get(seers, 0) + 1

    def fill(self, indexes: array[int], seers: list[Seers | None]) -> None:
        """Its messages, as read from the database: they replace the counts too."""
        self.indexes, self.seers = indexes, seers
        counts: dict[Seers | None, int] = {}
        for one in seers:
            counts[one] = counts.get(one, 0) + 1
        self.counts = counts

    def unload(self) -> None:
        """Forget which messages they are (they are read again when asked), keeping the counts."""
        self.indexes = self.seers = None


class Branch:
    """One branch's records. Ancestors are referenced, never copied."""

    def __init__(
        self,
        name: str,
        parent: Branch | None,
        fork_sequence: int,
        meta: Mapping[str, Any] | None = None,
        *,
        record_id: int = 0,
        stored: bool = False,
    ) -> None:
        self.name = name
        #: Whether its messages stay in the database (positions from the sequence, entries a
        #: cache), or are held in memory (``own``, ``own_ids``, ``own_seqs``).
        self.stored = stored
        #: The id of the record that made the branch (0 for ``main``, which none made).
        self.record_id = record_id
        self.meta: Mapping[str, Any] = meta or {}
        self.parent = parent
        self.fork_sequence = fork_sequence
        self.head = fork_sequence
        # Ancestors, root first, each with the newest of its sequences visible here, the number
        # of its own messages visible here, and the position of its first one.
        self.ancestors: list[tuple[Branch, int, int, int]] = []
        if parent is not None:
            offset = 0
            for ancestor, limit, _count, _offset in parent.ancestors:
                limit = min(limit, fork_sequence)
                count = ancestor.count_upto(limit)
                self.ancestors.append((ancestor, limit, count, offset))
                offset += count
            count = parent.count_upto(fork_sequence)
            self.ancestors.append((parent, fork_sequence, count, offset))
            offset += count
            self.base_count = offset
        else:
            self.base_count = 0
        self.segment_starts = [offset for _b, _l, _c, offset in self.ancestors]
        self.ancestor_index = {b.name: i for i, (b, _l, _c, _o) in enumerate(self.ancestors)}
        # A message read back at open stays its JSON text (a str) until first read; its record id
        # and sequence are kept beside it, as machine integers (memory: see docs/benchmarks.md).
        self.own: list[Message | str | None] = []
        self.own_ids: array[int] = array("q")
        self.own_seqs: array[int] = array("q")
        # The messages whose stored body may name a reader (a block with an audience), by block
        # of sequences: what a reader's view of the branch computes from, never the rest. Blocks
        # are made oldest first, so the dict iterates them in order.
        self.audience: dict[int, AudienceBlock] = {}
        # The readers some audience stored on the branch (its own messages and edits) names, as
        # far as the model can tell without decoding: it only grows, and ``names_unknown`` says
        # that some message or edit may name readers not in it (LogModel.reader_named).
        self.names: set[str] = set()
        self.names_unknown = False
        # A stored branch: how many messages it holds, the sequences of its other records (edits,
        # states) in order with how many messages precede each, and the messages read back (a
        # cache the model bounds, or pinned until committed), by index.
        self.count = 0
        self.gaps: array[int] = array("q")
        self.gap_before: array[int] = array("q")
        self.entries: dict[int, Message | tuple[int, str]] = {}  # a message, or its record id and text
        # message id -> [(seq, content or JSON text)] of edits made on this branch
        self.edits: dict[str, list[tuple[int, Any]]] = {}
        self.edit_log: list[str] = []
        # key -> [(seq, record id, value)] of state writes made on this branch
        self.states: dict[str, list[tuple[int, int, Any]]] = {}
        # Ids of messages that have an edit visible here (inherited or own).
        self.edited_ids: set[str] = set()
        self.resolved: dict[str, Message] = {}
        self.may_hold_audience: bool = parent.may_hold_audience if parent is not None else False
        for ancestor, limit, _count, _offset in self.ancestors:
            for message_id, versions in ancestor.edits.items():
                if versions[0][0] <= limit:
                    self.edited_ids.add(message_id)

    # -- positions: every record of a branch takes its next sequence, so on a stored branch a
    # message's index follows from its sequence and the sequences of the other records.

    def own_count(self) -> int:
        return self.count if self.stored else len(self.own)

    def count_upto(self, limit: int) -> int:
        """How many of its own messages have a sequence of at most ``limit``."""
        if not self.stored:
            return bisect_right(self.own_seqs, limit)
        if limit <= self.fork_sequence:
            return 0
        # No more than the head is ever asked (a fork point), so this holds at an open too,
        # before the branch's count is known.
        return limit - self.fork_sequence - bisect_right(self.gaps, limit)

    def seq_of(self, index: int) -> int:
        """The sequence of its ``index``-th own message."""
        if not self.stored:
            return self.own_seqs[index]
        return self.fork_sequence + 1 + index + bisect_right(self.gap_before, index)

    def index_of_seq(self, seq: int) -> int | None:
        """The index of its own message at ``seq``, or ``None`` when no message holds it."""
        if not self.stored:
            found = bisect_right(self.own_seqs, seq) - 1
            return found if found >= 0 and self.own_seqs[found] == seq else None
        gap = bisect_right(self.gaps, seq)
        if seq <= self.fork_sequence or (gap and self.gaps[gap - 1] == seq):
            return None
        index = seq - self.fork_sequence - 1 - gap
        return index if index < self.count else None

    def locate(self, position: int) -> tuple[Branch, int]:
        """The branch holding the message at ``position`` of this one (0 = oldest) and its index
        among that branch's own messages. Raises ``IndexError`` for a position out of range."""
        if position >= self.base_count:
            if position - self.base_count >= self.own_count():
                raise IndexError(position)
            return self, position - self.base_count
        if position < 0:
            raise IndexError(position)
        owner, _limit, _count, offset = self.ancestors[bisect_right(self.segment_starts, position) - 1]
        return owner, position - offset

    def add_gap(self, seq: int) -> None:
        """A stored branch's record other than a message, at ``seq``: the sequences between it
        and the record before it are messages (each record takes the next sequence)."""
        before = seq - self.fork_sequence - 1 - len(self.gaps)
        if before < self.count:  # an out-of-order record cannot be placed: refuse it, as a bad type
            raise RecordTypeError(f"a record at sequence {seq} of branch {self.name!r} comes after a later one")
        self.count = before
        self.gaps.append(seq)
        self.gap_before.append(before)

    def add_message(self, seq: int) -> int:
        """A stored branch's message at ``seq``: its index. A sequence skipped before it (only a
        file changed outside asides skips one) counts as a record other than a message."""
        expected = self.fork_sequence + 1 + self.count + len(self.gaps)
        if seq < expected:
            raise RecordTypeError(f"a message at sequence {seq} of branch {self.name!r} comes after a later record")
        for skipped in range(expected, seq):
            self.gaps.append(skipped)
            self.gap_before.append(self.count)
        self.count += 1
        return self.count - 1

    def end_open(self, head: int) -> None:
        """A stored branch read at an open: its head; every sequence after its last other record
        up to the head holds a message."""
        self.head = max(self.head, head)
        self.count = max(self.count, self.head - self.fork_sequence - len(self.gaps))

    def chain(self) -> Iterator[tuple[Branch, float]]:
        """This branch (no limit) then its ancestors nearest first, each with its visible limit."""
        yield self, float("inf")
        for ancestor, limit, _count, _offset in reversed(self.ancestors):
            yield ancestor, limit

    def info(self) -> BranchInfo:
        return BranchInfo(self.name, self.parent.name if self.parent else None, self.fork_sequence, self.head)


#: A version: a tuple led by its sequence.
T = TypeVar("T", bound=tuple[Any, ...])


def latest(versions: Sequence[T], limit: float) -> T | None:
    """The newest of ``versions`` (tuples in sequence order, each led by its sequence) whose
    sequence is at most ``limit``, or ``None``."""
    if versions[-1][0] <= limit:
        return versions[-1]
    index = bisect_right([version[0] for version in versions], limit)
    return versions[index - 1] if index else None


def fork_point(at_sequence: object, head: int, parent: str) -> int:
    """Where a branch forked from ``parent`` (whose head is ``head``) starts: ``at_sequence``,
    or the head for ``None``. The one check of a fork point, for every path that makes a branch
    (``create_branch`` on either store, ``derive``): an ``int``, not a ``bool`` (``True`` is no
    sequence), from 0 to the head. Refuses a wrong type with :class:`ArgumentTypeError` and a
    value out of range with :class:`InvalidArgumentError`, both at ``at_sequence``."""
    if at_sequence is None:
        return head
    if not isinstance(at_sequence, int) or isinstance(at_sequence, bool):
        raise ArgumentTypeError("at_sequence", f"a fork point is a sequence (an int), not {type(at_sequence).__name__}")
    if not 0 <= at_sequence <= head:
        raise InvalidArgumentError("at_sequence", f"must be between 0 and {head} (the head of {parent!r}), got {at_sequence!r}")
    return at_sequence
