"""The parts of the in-memory model (store/_model.py): one branch's records, the index of which
branch holds each message, and the values and markers the model answers with. Pure logic."""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol, TypeVar

import attrs

from ._errors import ArgumentTypeError, InvalidArgumentError, StoreFailedError
from ._messages import Message
from ._seers import Seers

__all__ = [
    "LARGEST_AUDIENCE_BITS",
    "AudienceBlock",
    "BranchInfo",
    "GapBlocks",
    "HELD_GAP_BLOCKS",
    "MISSING",
    "RecordTypeError",
    "Row",
    "StoredRows",
    "UNREADABLE",
    "Branch",
    "Owners",
    "ReadAhead",
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

    def states_matching(
        self, prefix: str, upper: str, words: Sequence[str]
    ) -> tuple[Sequence[tuple[int, str]], Sequence[tuple[int, str, str]]] | None:
        """What the search index says of the state records whose keys are from ``prefix`` up to
        ``upper`` (excluded), in one snapshot: ``(id, key)`` of those it holds that hold every
        one of ``words`` (a search's words), and ``(id, key, body)`` of every such record from
        the first it has not reached; ``None`` when the index does not hold every state record
        it reached (no index, or one made before it held them)."""
        ...

    def disclosure_page(self, after: int, limit: int) -> Sequence[tuple[int, str]]:
        """``(id, body)`` of the first ``limit`` disclosure records with ids above ``after``, in id order."""
        ...

    def disclosures_holding(self, message_id: int) -> Sequence[tuple[int, str]]:
        """``(id, body)`` of the disclosure records some run of which may hold ``message_id`` (at
        least those), in id order."""
        ...

    def gap_sequences(self, branch: str, first: int, last: int, before: int) -> Sequence[int]:
        """The sequences, in order, of the records of ``branch`` other than messages that take a
        sequence of it (edits, states) with a sequence from ``first`` to ``last`` (both
        included) and an id under ``before``."""
        ...


def prefix_end(prefix: str) -> str | None:
    """The first string, in code point order, past every key that starts with ``prefix`` (not
    empty): the keys under it are those from ``prefix`` up to it, excluded. ``None`` when the
    last character of ``prefix`` is the last code point (nothing of the same length follows)."""
    last = ord(prefix[-1])
    return prefix[:-1] + chr(last + 1) if last < 0x10FFFF else None


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


#: Blocks of gap sequences (``GapBlocks``) kept read back at once, the least recently used
#: leaving first (those holding a record not yet committed stay).
HELD_GAP_BLOCKS: Final = 16


class GapBlocks:
    """Where the records of a model's stored branches that are not messages (edits, states: the
    *gaps* among a branch's message sequences) stand, by block of ``1 << bits`` sequences: each
    branch counts its gaps a block (:meth:`Branch.count_gaps`), and a block's sequences are read
    from the database when a position inside it is first asked, and kept, at most
    ``held`` blocks of every branch together, the least recently used leaving first. A block
    holding a gap written here and not yet committed stays until it is (the database could not
    give it back), as does one holding a sequence no record holds (only a file changed outside
    asides skips one), for good.

    ``read(branch, first, last, before)`` gives the sequences of a branch's gaps from ``first`` to
    ``last`` with a record id under ``before`` (``StoredRows.gap_sequences``); ``before`` is the
    model's next record id unless a caller says."""

    __slots__ = ("bits", "held", "blocks_read", "_read", "_next_id", "_blocks", "_pins")

    def __init__(self, read: Callable[[str, int, int, int], Sequence[int]], next_id: Callable[[], int], bits: int) -> None:
        self.bits = bits
        self.held = HELD_GAP_BLOCKS
        #: Blocks read from the database since the open (``StoreStatistics.gap_blocks_read``).
        self.blocks_read = 0
        self._read = read
        self._next_id = next_id
        # (branch, block) -> (each gap's sequence, how many of the block's messages precede it)
        self._blocks: OrderedDict[tuple[str, int], tuple[array[int], array[int]]] = OrderedDict()
        # (branch, block) -> the newest record id of a gap written into it here (inf: for good)
        self._pins: dict[tuple[str, int], float] = {}

    def block(self, branch: Branch, k: int, before: int | None = None) -> tuple[array[int], array[int]]:
        """The ``k``-th block of ``branch`` holding a gap: its gaps' sequences, and how many of the
        block's messages precede each; read (gaps with an id under ``before``) when not held.
        Raises ``StoreFailedError`` when the database holds another number of them than the
        branch counted (only a store changed outside asides does)."""
        number = branch.gap_numbers[k]
        key = (branch.name, number)
        found = self._blocks.get(key)
        if found is not None:
            self._blocks.move_to_end(key)
            return found
        start = branch.block_start(number)
        expected = branch.gaps_through[k] - branch.gaps_before(k)
        read = self._read(branch.name, start, ((number + 1) << self.bits) - 1, self._next_id() if before is None else before)
        if len(read) != expected:
            raise StoreFailedError(
                f"branch {branch.name!r} holds {len(read)} records other than messages from sequence {start}, not the {expected} "
                "counted at the open (the store was changed outside asides)"
            )
        self.blocks_read += 1
        seqs = array("q", read)
        found = self._blocks[key] = (seqs, array("q", (seq - start - j for j, seq in enumerate(seqs))))
        self._evict()
        return found

    def hold(self, branch: Branch, number: int, seqs: array[int], befores: array[int]) -> None:
        """A block made here (no gap of it is in the database yet)."""
        self._blocks[(branch.name, number)] = (seqs, befores)
        self._evict()

    def pin(self, branch: Branch, number: int, record_id: float) -> None:
        """The block holds a gap of record ``record_id`` (``math.inf``: of no record), not yet
        committed: kept until it is."""
        key = (branch.name, number)
        self._pins[key] = max(self._pins.get(key, 0), record_id)

    def committed(self, record_id: int) -> None:
        """Every record up to ``record_id`` is committed."""
        if self._pins:
            for key in [key for key, newest in self._pins.items() if newest <= record_id]:
                del self._pins[key]
            self._evict()

    def _evict(self) -> None:
        """Forget the blocks used longest ago beyond ``held``, but a pinned one and the one used
        last (whose caller is about to read or pin it)."""
        if len(self._blocks) <= self.held:
            return
        for key in list(self._blocks)[:-1]:
            if len(self._blocks) <= self.held:
                return
            if key not in self._pins:
                del self._blocks[key]


class ReadAhead:
    """Which neighbours a read of a message that missed the cache reads with it: none, until
    the misses walk one branch a message at a time, one way (as a compile's walk back from the
    newest message does); then, each time the walk reaches past what was read ahead, twice as
    many as the last time, up to a limit, in the walk's direction. A walk over ``n`` messages so
    takes about ``log2(min(n, limit)) + n / limit`` reads instead of ``n``, and reads fewer
    messages it never reaches than it reached, and fewer than ``limit``; a read out of the
    walk's way starts over with none."""

    __slots__ = ("_branch", "_index", "_step", "_window")

    def __init__(self) -> None:
        self._branch: str | None = None
        self._index = 0  # the position of the last miss
        self._step = 0  # the walk's direction (+1 or -1), 0 before it has one
        self._window = 1  # how many positions the last miss read

    def plan(self, branch: str, index: int, limit: int) -> range:
        """The positions of ``branch`` to read for a miss at ``index`` (holding ``index``; at most
        ``limit`` of them, at least one), not clipped to the branch."""
        step, window = 0, 1
        if branch == self._branch:
            if self._step == 0 and abs(index - self._index) == 1:
                step, window = index - self._index, 2
            elif self._step != 0 and index == self._index + self._step * self._window:
                step, window = self._step, self._window * 2
        window = max(1, min(window, limit))
        self._branch, self._index, self._step, self._window = branch, index, step, window
        return range(index, index + window) if step >= 0 else range(index - window + 1, index + 1)


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
        gaps: GapBlocks | None = None,
    ) -> None:
        self.name = name
        #: Whether its messages stay in the database (positions from the sequence, entries a
        #: cache), or are held in memory (``own``, ``own_ids``, ``own_seqs``): a stored branch
        #: reads where its gaps stand through ``gaps``.
        self.stored = gaps is not None
        self.gaps = gaps
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
        # A stored branch: how many messages it holds; the blocks of sequences (``GapBlocks``)
        # that hold its other records (edits, states: gaps), in order, with how many gaps they
        # and the blocks before them hold and how many messages precede each; and the messages
        # read back (a cache the model bounds, or pinned until committed), by index.
        self.count = 0
        self.gap_numbers: array[int] = array("q")
        self.gaps_through: array[int] = array("q")
        self.gap_messages_before: array[int] = array("q")
        self.entries: dict[int, Message | tuple[int, str]] = {}  # a message, or its record id and text
        # message id -> [(seq, content or JSON text)] of edits made on this branch
        self.edits: dict[str, list[tuple[int, Any]]] = {}
        self.edit_log: list[str] = []
        #: How many entries of ``edit_log`` an erasure made (a message erased, which views hear
        #: of as of an edit), not an edit.
        self.erasures_logged = 0
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
        return limit - self.fork_sequence - self._gaps_upto(limit)

    def seq_of(self, index: int) -> int:
        """The sequence of its ``index``-th own message."""
        if not self.stored:
            return self.own_seqs[index]
        k = bisect_right(self.gap_messages_before, index) - 1
        if k < 0:
            return self.fork_sequence + 1 + index
        assert self.gaps is not None
        bits = self.gaps.bits
        number = self.gap_numbers[k]
        through = self.gaps_through
        start = self.block_start(number)
        local = index - self.gap_messages_before[k]
        if local >= ((number + 1) << bits) - start - (through[k] - self.gaps_before(k)):
            return self.fork_sequence + 1 + index + through[k]  # after the block
        _seqs, befores = self.gaps.block(self, k)
        return start + local + bisect_right(befores, local)

    def index_of_seq(self, seq: int) -> int | None:
        """The index of its own message at ``seq``, or ``None`` when no message holds it."""
        if not self.stored:
            found = bisect_right(self.own_seqs, seq) - 1
            return found if found >= 0 and self.own_seqs[found] == seq else None
        if seq <= self.fork_sequence:
            return None
        assert self.gaps is not None
        k = bisect_right(self.gap_numbers, seq >> self.gaps.bits)
        if k and self.gap_numbers[k - 1] == seq >> self.gaps.bits:
            seqs, _befores = self.gaps.block(self, k - 1)
            found = bisect_left(seqs, seq)
            if found < len(seqs) and seqs[found] == seq:
                return None
            gaps = self.gaps_before(k - 1) + found
        else:
            gaps = self.gaps_before(k)
        index = seq - self.fork_sequence - 1 - gaps
        return index if index < self.count else None

    def _gaps_upto(self, seq: int) -> int:
        """How many of its gaps have a sequence of at most ``seq``."""
        assert self.gaps is not None
        number = seq >> self.gaps.bits
        k = bisect_right(self.gap_numbers, number)
        if not k:
            return 0
        if self.gap_numbers[k - 1] < number or seq >= ((number + 1) << self.gaps.bits) - 1:
            return self.gaps_through[k - 1]
        seqs, _befores = self.gaps.block(self, k - 1)
        return self.gaps_before(k - 1) + bisect_right(seqs, seq)

    def gaps_before(self, k: int) -> int:
        """How many gaps its blocks before its ``k``-th block holding a gap hold."""
        return self.gaps_through[k - 1] if k else 0

    def block_start(self, number: int) -> int:
        """The first of its own sequences in block ``number`` (of ``GapBlocks.bits``)."""
        assert self.gaps is not None
        return max(number << self.gaps.bits, self.fork_sequence + 1)

    @property
    def gap_count(self) -> int:
        """How many gaps it holds."""
        return self.gaps_through[-1] if self.gaps_through else 0

    def count_gaps(self, counts: Iterable[tuple[int, int]]) -> None:
        """At an open, before any gap is added: how many gaps each block of its sequences holds
        (``(block, count)``, in any order)."""
        assert self.gaps is not None and not self.gap_numbers
        total = 0
        for number, count in sorted(counts):
            if count <= 0:
                continue
            self.gap_numbers.append(number)
            self.gap_messages_before.append(self.block_start(number) - self.fork_sequence - 1 - total)
            total += count
            self.gaps_through.append(total)

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

    def add_gap(self, seq: int, record_id: float) -> None:
        """A stored branch's record other than a message, at ``seq``, after every other: the
        sequences between it and the record before it are messages (each record takes the next
        sequence). ``record_id`` keeps its block held until it is committed."""
        before = seq - self.fork_sequence - 1 - self.gap_count
        if before < self.count:  # an out-of-order record cannot be placed: refuse it, as a bad type
            raise RecordTypeError(f"a record at sequence {seq} of branch {self.name!r} comes after a later one")
        self.count = before
        self._append_gap(seq, record_id)

    def _append_gap(self, seq: int, record_id: float) -> None:
        gaps = self.gaps
        assert gaps is not None
        number = seq >> gaps.bits
        start = self.block_start(number)
        if self.gap_numbers and self.gap_numbers[-1] == number:
            k = len(self.gap_numbers) - 1
            # Its gaps before this one (none of which waits for a commit when it is not held).
            seqs, befores = gaps.block(self, k, before=None if record_id == math.inf else int(record_id))
            befores.append(seq - start - len(seqs))
            seqs.append(seq)
            self.gaps_through[k] += 1
        else:
            total = self.gap_count
            self.gap_numbers.append(number)
            self.gap_messages_before.append(start - self.fork_sequence - 1 - total)
            self.gaps_through.append(total + 1)
            gaps.hold(self, number, array("q", (seq,)), array("q", (seq - start,)))
        gaps.pin(self, number, record_id)

    def add_message(self, seq: int) -> int:
        """A stored branch's message at ``seq``: its index. A sequence skipped before it (only a
        file changed outside asides skips one) counts as a record other than a message."""
        expected = self.fork_sequence + 1 + self.count + self.gap_count
        if seq < expected:
            raise RecordTypeError(f"a message at sequence {seq} of branch {self.name!r} comes after a later record")
        for skipped in range(expected, seq):
            self._append_gap(skipped, math.inf)
        self.count += 1
        return self.count - 1

    def end_open(self, head: int) -> None:
        """A stored branch read at an open: its head; every sequence after its last other record
        up to the head holds a message."""
        self.head = max(self.head, head)
        self.count = max(self.count, self.head - self.fork_sequence - self.gap_count)

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
