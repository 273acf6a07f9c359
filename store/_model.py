"""The store's in-memory model: branches, their message logs and their state records.

Pure logic, no I/O. A store's journal (``store._journal``) replays every record into it, at open
and as each write takes its place (``store._rows.apply_rows``); all reads are answered from here.

Every write is one *record* with a store-wide record id and, on its branch, the next value of the
branch's sequence. A child branch sees its parent's records up to its fork point and never
anything the parent writes later; nothing is copied at a fork (the child keeps a reference to its
ancestors and the limit up to which each is visible). Message bodies read back at open are kept as
JSON text and decoded on first use, so opening a large store costs one pass over the rows.
"""

from __future__ import annotations

import itertools
import logging
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from functools import partial
from operator import itemgetter
from types import MappingProxyType
from typing import Any, Final

from ._arguments import check_int, check_message_id, check_str
from ._blocks import ContentBlock, has_audience
from ._compile_records import COMPILE
from ._disclosure import DISCLOSURE, DisclosureLog
from ._erasure import (
    ERASURE,
    Erasure,
    MessageErasedError,
    Tombstone,
    UnknownMessagesError,
    derived_from,
    erasure_body,
    parse_erasure,
)
from ._errors import (
    ArgumentTypeError,
    StoreFailedError,
    UnknownBranchError,
)
from ._key_numbers import key_number
from ._message_ids import IdRuns, as_message_ids
from ._messages import Message, edited_version
from ._model_parts import (
    LARGEST_AUDIENCE_BITS,
    MISSING,
    UNREADABLE,
    AudienceBlock,
    Branch,
    BranchInfo,
    GapBlocks,
    Owners,
    ReadAhead,
    RecordTypeError,
    Row,
    StoredRows,
    latest,
    prefix_end,
    record_of,
)
from ._names import check_branch
from ._notes import STRATEGY_NOTE, parse_strategy_note
from ._records import (
    EncodedMessage,
    StoredEdit,
    audience_summary,
    body_may_hold_audience,
    body_names,
    decode_edit,
    decode_message,
    edit_time,
    unsafe_content,
)
from ._search import holds_every, searchable_text, state_text
from ._seers import Seers, named_readers, seers_of
from ._stored_json import GivesAKeyTwice, holds_duplicate, read_stored_json, read_whole_json

__all__ = ["BranchInfo", "LogModel", "RecordTypeError", "Row", "UNREADABLE", "MISSING", "count_context_copies_by", "count_summaries_by"]

log = logging.getLogger("asides.store")

MESSAGE: Final = "message"

#: How many messages read from the database (their bodies left there at open) stay decoded in
#: memory, by default; and how many bodies one read asks the database for at most.
DEFAULT_BODY_CACHE: Final = 20_000  # open_store's DEFAULT_MESSAGE_CACHE
FETCH_BATCH: Final = 900
#: How many messages a read that misses the cache reads ahead at most, besides the one asked
#: (``LogModel._around``): a synchronous read holds up the event loop for the bodies it reads.
READ_AHEAD: Final = 128
#: How many state values read back from the database (their records' bodies left there at
#: open, on a model whose messages stay there too) stay decoded in memory, and how many
#: characters of JSON they may hold together (the newest is kept whatever its size).
STATE_CACHE: Final = 1024
STATE_CACHE_CHARACTERS: Final = 1_000_000
#: How many state keys a model whose messages stay in the database holds the versions of (their
#: sequences and record ids) before a commit lets go of all but those it or a later write
#: wrote: a read reads them again, from the index of state records.
STATE_KEYS_HELD: Final = 8192
#: How many state records an erasure reads from the database at once, looking for those made
#: from what it erases.
ERASURE_PAGE: Final = 2000
#: A model holding its messages keeps each branch's messages that may name a reader in one
#: block (``LogModel.audience_bits``); a model whose messages stay in the database, in blocks of
#: as many sequences as its message cache holds messages (see :func:`audience_bits_for`).
HELD_AUDIENCE_BITS: Final = 62
#: Blocks of such messages read back from the database and kept (the least recently used go).
HELD_AUDIENCE_BLOCKS: Final = 64
#: How many message ids one read of a stored branch's ids reads (``id_at``), and how many such
#: pages stay in memory.
ID_PAGE: Final = 512
ID_PAGES: Final = 64
EDIT: Final = "edit"
STATE: Final = "state"
BRANCH: Final = "branch"
#: The kinds of record that are not a branch's gap: its messages, the record that makes it (at
#: its fork point), and the records of no branch (``ERASURE_BRANCH``). Every other record on a
#: branch (edits, states) takes the branch's next sequence as a message does (``Branch.add_gap``).
NOT_GAPS: Final = (MESSAGE, BRANCH, COMPILE, DISCLOSURE, STRATEGY_NOTE, ERASURE)
#: SQL: whether the log row is a gap (of the branch it names), which a database indexes by
#: branch and sequence for ``StoredRows.gap_sequences`` and ``LogModel.count_gaps``.
GAP_ROW: Final = "kind NOT IN (" + ", ".join(f"'{kind}'" for kind in NOT_GAPS) + ")"


class _InStore:
    """A state version whose value the open left in the database (read when asked for)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<value in the database>"


_IN_STORE: Final = _InStore()


def _state_value(record_id: int, key: str, body: str) -> Any:
    """The value a state record's body holds, read fail-closed: ``UNREADABLE`` (logged) when it
    is not JSON or gives a key twice."""
    try:
        return read_whole_json(body)
    except GivesAKeyTwice:
        log.warning("record %s: state %r gives a key twice; read as unreadable", record_id, key)
    except ValueError:
        log.warning("record %s: state %r is not JSON; read as unreadable", record_id, key)
    return UNREADABLE


def audience_bits_for(cache: int) -> int:
    """How many bits of a sequence number a block of messages that may name a reader spans: the
    largest power of two no larger than ``cache``, from 4 to 16,384 sequences."""
    return max(2, min(LARGEST_AUDIENCE_BITS, cache.bit_length() - 1))


#: The rules that say a state key holds a summary, for the count an erasure keeps of the
#: summaries it invalidated (``Erasure.summaries_invalidated``): the strategies that write
#: summaries hand theirs down (:func:`count_summaries_by`), so the store spells no strategy's keys.
_SUMMARY_RULES: list[Callable[[str], bool]] = []


def count_summaries_by(rule: Callable[[str], bool]) -> None:
    """Count every state record whose key ``rule`` accepts among the summaries an erasure
    invalidates, from now on in this process; a rule given again is counted once. Refuses
    (``ArgumentTypeError`` at ``rule``) what cannot be called, changing nothing."""
    if not callable(rule):
        raise ArgumentTypeError("rule", f"a rule is called with a state key, and {type(rule).__name__} cannot be called")
    if rule not in _SUMMARY_RULES:
        _SUMMARY_RULES.append(rule)


def _is_summary(key: str) -> bool:
    return any(rule(key) for rule in _SUMMARY_RULES)


#: The rules that say a state key holds a context-log copy of a message, for the count an
#: erasure's receipt keeps (``Erasure.context_copies``): the runtime hands its rule down
#: (:func:`count_context_copies_by`), so the store spells no layer's keys.
_COPY_RULES: list[Callable[[str], bool]] = []


def count_context_copies_by(rule: Callable[[str], bool]) -> None:
    """Count every state record whose key ``rule`` accepts among the context-log copies an
    erasure removes, from now on in this process (as :func:`count_summaries_by`)."""
    if not callable(rule):
        raise ArgumentTypeError("rule", f"a rule is called with a state key, and {type(rule).__name__} cannot be called")
    if rule not in _COPY_RULES:
        _COPY_RULES.append(rule)


class LogModel:
    """Every branch of one store, in memory."""

    def __init__(self) -> None:
        self._branches: dict[str, Branch] = {"main": Branch("main", None, 0)}
        self._owner = Owners()
        self._reports: set[tuple[int | None, str]] = set()
        # Content no view may pass on as it is (see ``damaged``), by the identity of its tuple,
        # with whether the record it came from may name a reader.
        self._damaged: dict[int, tuple[tuple[ContentBlock, ...], bool]] = {}
        self._holds_empty = False
        self.next_id = 1
        # Erasures (store/_erasure.py): what remains of each erased message, every erasure in
        # order, and the state records replay found already overwritten (so replaying an
        # erasure record at open need not look for them).
        self._erased: dict[str, Tombstone] = {}
        # The erased ids that are numbers, as runs (``any_erased``).
        self._erased_runs = IdRuns()
        # Every edit record's id and the message it edits, in id order, on any branch (a search
        # reads the messages whose edits its index has not reached: ``edited_since``).
        self._edit_records: list[int] = []
        self._edit_refs: list[str] = []
        self._erasures: list[Erasure] = []
        # When each edit was written, by (branch, sequence), where its record says (``edit_history``).
        self._edit_times: dict[tuple[str, int], float] = {}
        self._nulled_states: set[int] = set()
        #: Who was shown what (store/_disclosure.py).
        self.disclosure_log = DisclosureLog()
        # Strategy notes (store/_notes.py): by branch, then namespace, ``(at, record id, value)``
        # in the order they were written.
        self._strategy_notes: dict[str, dict[str, list[tuple[int, int, Any]]]] = {}
        # Message bodies left in the database at open (``None`` in a branch's ``own``): how to
        # read them (``read_bodies_with``), and the messages decoded from bodies so read, oldest
        # read first, of which at most ``body_cache`` are kept (the rest are read again).
        self._read_bodies: Callable[[Sequence[int]], Mapping[int, str]] | None = None
        self._loaded: OrderedDict[int, tuple[Branch, int]] = OrderedDict()
        self.body_cache = DEFAULT_BODY_CACHE
        # A model whose messages stay in the database (``read_rows_from``): where its rows are
        # read, the messages written here and not yet committed (kept until they are), the
        # newest record known committed, pages of message ids by branch position, and the
        # erasure records an open replays once every branch is whole.
        self._rows: StoredRows | None = None
        self._pinned: dict[int, tuple[Branch, int]] = {}
        self._committed_to = 0
        self._id_pages: OrderedDict[tuple[str, int], array[int]] = OrderedDict()
        self._opening: list[tuple[int, str]] | None = None
        # Where the stored branches' records other than messages stand (``GapBlocks``), and, at
        # an open, the counts of the branches its records have not made yet (``count_gaps``).
        self._gap_blocks: GapBlocks | None = None
        self._gap_counts: dict[str, list[tuple[int, int]]] = {}
        self._stones: dict[str, Message] = {}  # a stored branch's erased messages, as read
        self._seers_shared: dict[Seers, Seers] = {}
        #: A block of messages that may name a reader spans ``1 << audience_bits`` sequences of
        #: its branch; the blocks a model that reads back holds entries of, least recently used
        #: first (``_held_blocks``), and how many it read from the database.
        self.audience_bits = HELD_AUDIENCE_BITS
        self._held_blocks: OrderedDict[tuple[str, int], tuple[Branch, int]] = OrderedDict()
        self.audience_blocks_read = 0
        #: Raised whenever some branch's readers named grow (see :meth:`reader_named`).
        self.names_version = 0
        #: Records read into the model by the open, and messages read back from the database
        #: since (``StoreStatistics``).
        self.opened_records = 0
        self.messages_read = 0
        #: Queries that read message bodies back since the open (``StoreStatistics``), and what
        #: a miss of the cache reads with it (``ReadAhead``).
        self.message_queries = 0
        self._read_ahead = ReadAhead()
        #: State values read back from the database since the open (``StoreStatistics``), and
        #: those kept decoded, least recently used first (at most ``STATE_CACHE``).
        self.state_values_read = 0
        self._state_cache: OrderedDict[int, tuple[Any, int]] = OrderedDict()  # (value, its JSON's length)
        self._state_cache_characters = 0
        # On a model whose messages stay in the database, the values of the state records written
        # here and not yet committed, by record id (then they join the cache above).
        self._states_pinned: dict[int, tuple[Any, int, str]] = {}  # (value, its JSON's length, key)
        # A model whose messages stay in the database reads its state records' keys when a read
        # needs them (``read_rows_from``): whether it holds every one's versions (a model that
        # replayed them all), and else the prefixes, suffixes and parts of keys whose versions it
        # read, and the keys read one by one; and how many versions it read so (``StoreStatistics``).
        self._states_whole = True
        self._state_prefixes: list[str] = []
        self._state_patterns: set[tuple[str, str]] = set()
        self._state_keys_read: set[str] = set()
        self._state_keys_missing: OrderedDict[str, None] = OrderedDict()  # the newest asked for and not found
        self.state_versions_read = 0
        #: At most how many keys' versions a model whose messages stay in the database holds
        #: after a commit, besides those with a version not committed (``STATE_KEYS_HELD``).
        self.state_keys_bound = STATE_KEYS_HELD
        self._state_keys_held = 0  # keys with a list of versions in some branch's ``states``

    # -- replay ---------------------------------------------------------------------------

    def replay(self, rows: Sequence[tuple[int, str, int, str, str | None, str]]) -> None:
        """Rebuild the model from persisted rows, in record-id order. Raises
        :class:`RecordTypeError` for a row whose columns are not of the types a store writes."""
        for record_id, branch_name, seq, kind, ref, body in rows:
            if (
                type(record_id) is not int
                or type(seq) is not int
                or (
                    type(body) is not str
                    and not (body is None and (kind == COMPILE or (kind == MESSAGE and self._reads_back)))
                )
                or type(branch_name) is not str
                or type(kind) is not str
                or (ref is not None and type(ref) is not str)
            ):
                raise RecordTypeError(f"record {record_id!r} has a column of the wrong type (the file was changed outside asides)")
            self.next_id = max(self.next_id, record_id + 1)
            if kind == COMPILE:  # read on demand (Store.compile_records), never kept
                continue
            if kind == DISCLOSURE:
                if not self.disclosure_log.add(record_id, body):
                    log.warning("record %s is a disclosure record that cannot be read; ignored", record_id)
                continue
            if kind == STRATEGY_NOTE:
                note = parse_strategy_note(body)
                if note is None:
                    log.warning("record %s is a strategy note that cannot be read; ignored", record_id)
                else:
                    noted_branch, namespace, at, value = note
                    self._strategy_notes.setdefault(noted_branch, {}).setdefault(namespace, []).append((at, record_id, value))
                continue
            if kind == ERASURE:
                if self._opening is not None:  # once every branch is whole (``end_stored_open``)
                    self._opening.append((record_id, body))
                    continue
                parsed = parse_erasure(body)
                if parsed is None:
                    log.warning("record %s is an erasure record that cannot be read; ignored", record_id)
                else:
                    self.apply_erasure(*parsed)
                continue
            if kind == BRANCH:
                if branch_name not in self._branches:
                    parent = self._branches.get(ref or "")
                    if parent is None:
                        log.warning("record %s forks %r from unknown branch %r; ignored", record_id, branch_name, ref)
                        continue
                    try:
                        meta = read_stored_json(body)
                    except ValueError:
                        meta = {}
                    if not isinstance(meta, dict) or holds_duplicate(meta):
                        meta = {}  # what it was made with cannot be told: as if nothing
                    made = self._branches[branch_name] = Branch(branch_name, parent, seq, meta, record_id=record_id, gaps=parent.gaps)
                    if self._opening is not None:
                        made.count_gaps(self._gap_counts.pop(branch_name, ()))
                continue
            branch = self._branches.get(branch_name)
            if branch is None:
                log.warning("record %s is on unknown branch %r; ignored", record_id, branch_name)
                continue
            branch.head = max(branch.head, seq)
            if branch.stored:
                if kind == MESSAGE:
                    self._replay_stored_message(branch, record_id, seq, body)
                    continue
                if self._opening is None:  # an open counted the gaps it reads (count_gaps)
                    branch.add_gap(seq, record_id)
            if kind == MESSAGE:
                self._owner.set(record_id, branch, len(branch.own))
                branch.own.append(body)  # None: left in the database (read_bodies_with)
                branch.own_ids.append(record_id)
                branch.own_seqs.append(seq)
                if body is not None and body_may_hold_audience(body):
                    branch.may_hold_audience = True
                    self._note_audience(branch, len(branch.own) - 1, seq, None, written=False)
                    self._note_names(branch, body_names(body))
            elif kind == EDIT and ref is not None:
                names: frozenset[str] | None = None
                if body_may_hold_audience(body):  # decoded now (edits are few): who it names
                    content = decode_edit(record_id, body)
                    if unsafe_content(content):
                        self._note_damaged(content, body)
                    names = named_readers(content)
                    branch.edits.setdefault(ref, []).append((seq, content))
                else:
                    branch.edits.setdefault(ref, []).append((seq, StoredEdit(record_id, body)))
                written = edit_time(body)
                if written is not None:
                    self._edit_times[(branch_name, seq)] = written
                self._edit_records.append(record_id)
                self._edit_refs.append(ref)
                branch.edit_log.append(ref)
                branch.edited_ids.add(ref)
                branch.resolved.pop(ref, None)
                if names is not None:
                    branch.may_hold_audience = True
                    self._note_names(branch, names)
            elif kind == STATE and ref is not None:
                value = _state_value(record_id, ref, body)
                if self._rows is not None and value is not None and value is not UNREADABLE:
                    # The database gives it back once committed: held until then, then cached.
                    if record_id > self._committed_to:
                        self._states_pinned[record_id] = (value, len(body), ref)
                    else:
                        self._cache_state(record_id, value, len(body))
                    value = _IN_STORE
                versions = self._versions(branch, ref)
                if not any(version[1] == record_id for version in versions):  # read back already
                    versions.append((seq, record_id, value))
                if self._state_keys_missing.pop(ref, False) is None:  # none before this one
                    self._state_keys_read.add(ref)
                if value is None:
                    self._nulled_states.add(record_id)
            else:
                log.warning("record %s has unknown kind %r; ignored", record_id, kind)

    # -- branches -------------------------------------------------------------------------

    def _branch(self, name: str) -> Branch:
        try:
            return self._branches[name]
        except (KeyError, TypeError):
            if not isinstance(name, str):
                check_branch(name)  # a name of the wrong type: InvalidNameError, naming it
            raise UnknownBranchError(name) from None

    def require_branch(self, name: str) -> None:
        """Refuse an unknown branch (``UnknownBranchError``), or a name of the wrong type."""
        self._branch(name)

    def has_branch(self, name: str) -> bool:
        if not isinstance(name, str):
            check_branch(name)
        return name in self._branches

    def branch_info(self, name: str) -> BranchInfo:
        return self._branch(name).info()

    def branches(self) -> tuple[BranchInfo, ...]:
        return tuple(b.info() for b in self._branches.values())

    def head(self, branch: str) -> int:
        return self._branch(branch).head

    def branch_meta(self, name: str) -> Mapping[str, Any]:
        """What was recorded with the branch when it was made (for example a derivation)."""
        return self._branch(name).meta

    def replay_message(self, record_id: int, branch_name: str, seq: int, encoded: EncodedMessage) -> Message:
        """Replay a committed message record from ``encode_message``'s encoding of it, as
        :meth:`replay` would from its body, without decoding the body again."""
        if record_id >= self.next_id:
            self.next_id = record_id + 1
        return self._add_message(self._branch(branch_name), record_id, seq, encoded)

    def _add_message(self, branch: Branch, record_id: int, seq: int, encoded: EncodedMessage) -> Message:
        participant, content, frozen, stamp, body = encoded
        if seq > branch.head:
            branch.head = seq
        message = Message(str(record_id), seq, participant, content, frozen, stamp)
        if branch.stored:
            index = branch.add_message(seq)
            branch.entries[index] = message
            self._keep(record_id, branch, index)
        else:
            index = len(branch.own)
            self._owner.set(record_id, branch, index)
            branch.own.append(message)
            branch.own_ids.append(record_id)
            branch.own_seqs.append(seq)
        if has_audience(content):
            self._note_audience(branch, index, seq, self._shared_seers(seers_of(content)), written=record_id > self._committed_to)
        self._note_content(branch, content, body)
        return message

    def _note_content(self, branch: Branch, content: tuple[ContentBlock, ...], body: str) -> None:
        """What a written message or edit tells about its branch, as a replay of its record
        would tell it."""
        if has_audience(content):
            branch.may_hold_audience = True
            self._note_names(branch, named_readers(content))
        if unsafe_content(content):
            self._note_damaged(content, body)

    # -- message reads --------------------------------------------------------------------

    def length(self, branch_name: str) -> int:
        branch = self._branch(branch_name)
        return branch.base_count + branch.own_count()

    def may_hold_audience(self, branch_name: str) -> bool:
        """Conservative: false only if no block with an audience was ever stored on the branch."""
        return self._branch(branch_name).may_hold_audience

    # -- the messages that may name a reader, by block ------------------------------------

    @staticmethod
    def _segments(branch: Branch) -> Iterator[tuple[Branch, int, int, bool]]:
        """The stretches of the branch's positions, oldest first: the branch that holds them, the
        position of the first, how many, and whether they are that branch's own (not an
        ancestor's, which the fork point may cut)."""
        for owner, _limit, count, offset in branch.ancestors:
            yield owner, offset, count, False
        yield branch, branch.base_count, branch.own_count(), True

    def audience_spans(self, branch_name: str) -> list[tuple[int, int, Mapping[Seers | None, int] | None]]:
        """The branch's positions cut into stretches ``(start, stop, counts)``, oldest first and
        together covering every position: ``counts`` says how many messages of the stretch whose
        stored body may name a reader each summary of who sees them counts (``None`` as a key:
        decoded to be placed; an empty mapping: none), or is ``None`` when only reading them
        tells (a block a fork point cuts). Costs the blocks that hold such messages, never the
        branch's length; reads nothing from the database."""
        branch = self._branch(branch_name)
        bits = self.audience_bits
        spans: list[tuple[int, int, Mapping[Seers | None, int] | None]] = []
        for owner, offset, count, own in self._segments(branch):
            if count <= 0:
                continue
            last = owner.seq_of(count - 1) >> bits
            done = 0
            for number, block in owner.audience.items():
                if number > last:
                    break
                if not block.counts:
                    continue
                start = owner.count_upto((number << bits) - 1)
                whole = owner.count_upto(((number + 1) << bits) - 1)
                stop = min(count, whole)
                if stop <= start:
                    continue
                if start > done:
                    spans.append((offset + done, offset + start, {}))
                spans.append((offset + start, offset + stop, block.counts if own or whole <= count else None))
                done = stop
            if done < count:
                spans.append((offset + done, offset + count, {}))
        return spans

    def audience_entries(self, branch_name: str, start: int = 0, stop: int | None = None) -> list[tuple[int, Seers | None]]:
        """The positions from ``start`` to ``stop`` of the messages whose stored body may name a
        reader, oldest first (edits aside: :meth:`edited_ids`), each with who sees something of
        that message when that is known without decoding it (store/_seers.py), else ``None``.
        Costs the blocks of sequences those positions fall in (each read from the database when
        it is not held), never the branch's length."""
        branch = self._branch(branch_name)
        total = branch.base_count + branch.own_count()
        stop = total if stop is None else min(stop, total)
        bits = self.audience_bits
        found: list[tuple[int, Seers | None]] = []
        for owner, offset, count, _own in self._segments(branch):
            first, end = max(start - offset, 0), min(stop - offset, count)
            if first >= end:
                continue
            low, high = owner.seq_of(first) >> bits, owner.seq_of(end - 1) >> bits
            if high - low < len(owner.audience):
                blocks = [(n, owner.audience.get(n)) for n in range(low, high + 1)]
            else:
                blocks = [(n, b) for n, b in owner.audience.items() if low <= n <= high]
            for number, block in blocks:
                if block is None or not block.counts:
                    continue
                indexes, seers = self._entries_of(owner, number, block)
                lo, hi = bisect_left(indexes, first), bisect_left(indexes, end)
                found.extend(zip((offset + i for i in indexes[lo:hi]), seers[lo:hi], strict=True))
        return found

    def reader_named(self, branch_name: str, reader: str) -> bool:
        """Whether some audience stored on the branch (its ancestors' messages included) may
        name ``reader``: false only when the model can tell that none does, so that ``reader``
        sees of every message exactly what a view for no reader sees. Conservative (a name once
        named stays named; an audience the model has not decoded may name anyone); costs the
        branch's ancestors, never its length."""
        branch = self._branch(branch_name)
        for owner in itertools.chain((ancestor for ancestor, *_ in branch.ancestors), (branch,)):
            if owner.names_unknown or reader in owner.names:
                return True
        return False

    def audience_census(self, branch_name: str) -> tuple[int, frozenset[str]]:
        """How many messages of the branch, as they read now (edits and erasures included), hold
        a block with an audience (``has_audience``), and every reader the audiences of those
        messages name: what reading and decoding every message would find. Costs the blocks
        that hold messages whose stored body may name a reader, and decodes only the messages
        among them whose body does not say who sees them, those of a block a fork point cuts
        (read, not decoded, when they say) and the edited or erased ones; never the branch's
        length."""
        edited = sorted(p for p in map(partial(self.position_of, branch_name), self.edited_ids(branch_name)) if p is not None)
        count = 0
        names: set[str] = set()

        def decode(position: int) -> None:
            nonlocal count
            content = self.at(branch_name, position).content
            if has_audience(content):
                count += 1
                names.update(named_readers(content))

        for lo, hi, counts in self.audience_spans(branch_name):
            if counts is not None and None not in counts and bisect_left(edited, lo) == bisect_left(edited, hi):
                for seers, number in counts.items():
                    assert seers is not None
                    count += number
                    names.update(seers.names)
                continue
            for position, seers in self.audience_entries(branch_name, lo, hi):
                at = bisect_left(edited, position)
                if at < len(edited) and edited[at] == position:
                    continue  # decoded below, as it reads now
                if seers is None:
                    decode(position)
                else:
                    count += 1
                    names.update(seers.names)
        for position in edited:
            decode(position)
        return count, frozenset(names)

    def _note_names(self, branch: Branch, names: Iterable[str] | None) -> None:
        """Some audience stored on ``branch`` names ``names`` (``None``: readers not known here)."""
        if names is None:
            if not branch.names_unknown:
                branch.names_unknown = True
                self.names_version += 1
            return
        if not branch.names.issuperset(names):
            branch.names.update(names)
            self.names_version += 1

    def may_differ(self, branch_name: str, position: int) -> bool:
        """Whether the message at ``position`` is one whose stored body may name a reader."""
        owner, index = self._branch(branch_name).locate(position)
        number = owner.seq_of(index) >> self.audience_bits
        block = owner.audience.get(number)
        if block is None or not block.counts:
            return False
        indexes, _seers = self._entries_of(owner, number, block)
        found = bisect_left(indexes, index)
        return found < len(indexes) and indexes[found] == index

    def _note_audience(self, branch: Branch, index: int, seq: int, seers: Seers | None, *, written: bool) -> None:
        """The message at ``index`` (sequence ``seq``) of ``branch`` may name a reader. ``written``:
        written here and not yet committed (so not in the database to be read back)."""
        number = seq >> self.audience_bits
        block = branch.audience.get(number)
        if block is None:
            # None of the block's messages was in the database at the open (it counted every
            # one), and every one since came through here.
            block = branch.audience[number] = AudienceBlock(loaded=True)
            if branch.stored:
                self._held_blocks[(branch.name, number)] = (branch, number)
                self._evict_blocks()
        elif block.indexes is None and written:
            self._load_block(branch, number, block)  # the committed ones, before this one
        block.add(index, seers)

    def _entries_of(self, owner: Branch, number: int, block: AudienceBlock) -> tuple[array[int], list[Seers | None]]:
        if block.indexes is None or block.seers is None:
            self._load_block(owner, number, block)
        elif owner.stored:
            self._held_blocks.move_to_end((owner.name, number))
        assert block.indexes is not None and block.seers is not None
        return block.indexes, block.seers

    def _load_block(self, branch: Branch, number: int, block: AudienceBlock) -> None:
        """Read a block's messages that may name a reader from the database: those the model
        has replayed (another process may have committed more, which its replay brings)."""
        rows = self._rows
        if rows is None:  # a model holding its messages holds every block whole
            raise RuntimeError("a block of a branch held in memory was not held")
        first = number << self.audience_bits
        indexes: array[int] = array("q")
        seers: list[Seers | None] = []
        read: dict[str, Seers | None] = {}  # each summary's text read once
        for seq, summary, body in rows.audience_rows(branch.name, first, first + (1 << self.audience_bits) - 1):
            index = branch.index_of_seq(seq)
            names, one = audience_summary(summary, body, read)
            if index is None or not names:
                continue
            indexes.append(index)
            seers.append(self._shared_seers(one))
        block.fill(indexes, seers)
        self.audience_blocks_read += 1
        self._held_blocks[(branch.name, number)] = (branch, number)
        self._held_blocks.move_to_end((branch.name, number))
        self._evict_blocks()

    def _evict_blocks(self) -> None:
        """Forget the entries of the blocks used longest ago beyond :data:`HELD_AUDIENCE_BLOCKS`
        (their counts stay). Not while a message written here waits for its commit: a block
        read back then would lack it."""
        if self._pinned:
            return
        while len(self._held_blocks) > HELD_AUDIENCE_BLOCKS:
            _key, (branch, number) = self._held_blocks.popitem(last=False)
            block = branch.audience.get(number)
            if block is not None:
                block.unload()

    def _shared_seers(self, seers: Seers | None) -> Seers | None:
        """One object for every message seen alike (readers who see alike share it)."""
        if seers is None:
            return None
        return self._seers_shared.setdefault(seers, seers)

    def edited_ids(self, branch_name: str) -> frozenset[str]:
        """Ids of the messages that may read otherwise than their stored body on this branch:
        with an edit visible there (inherited or its own), or erased (on any branch)."""
        return frozenset(self._branch(branch_name).edited_ids) | self._erased.keys()

    def _note_damaged(self, content: tuple[ContentBlock, ...], body: str) -> None:
        if content:
            self._damaged[id(content)] = (content, body_may_hold_audience(body))
        else:  # the empty tuple is one shared object: ``damaged`` answers for it by itself
            self._holds_empty = True

    @property
    def holds_damaged(self) -> bool:
        """Whether any content read or written so far is damaged (see :meth:`damaged`)."""
        return self._holds_empty or bool(self._damaged)

    def damaged(self, content: tuple[ContentBlock, ...]) -> bool | None:
        """``None`` when a view may pass ``content`` on as it is. Otherwise the content is damaged
        (empty, or holding a block that could not be decoded), and the answer says whether the
        record it came from may name a reader anywhere (by the rule that marks a branch as
        holding audiences; always false for empty content).

        A view shows a damaged message without its unreadable blocks. A reader left with nothing
        of one that may name a reader sees nothing of it; one that names no reader (which is all
        of them on a branch that never held an audience) keeps its place in every view as a
        placeholder, so reads before and after it was decoded agree on every position."""
        if not content:
            return False
        if not self._damaged:
            return None
        found = self._damaged.get(id(content))
        return found[1] if found is not None and found[0] is content else None

    def edited_since(self, record_id: int) -> frozenset[int]:
        """The ids (as numbers) of the messages edited by a record with an id of ``record_id`` or
        more, on any branch."""
        start = bisect_left(self._edit_records, record_id)
        return frozenset(int(ref) for ref in self._edit_refs[start:] if ref.isdigit())

    def edit_history(self, branch_name: str, message_id: str) -> list[tuple[int, float | None]]:
        """Every edit of the message this branch sees (its own and its ancestors' up to the fork
        points), oldest first: each edit record's sequence on the branch that holds it, and when
        it was written (``None`` for an edit written before edits kept their time)."""
        branch = self._branch(branch_name)
        found: list[tuple[int, float | None]] = []
        for holder, limit in branch.chain():
            found.extend((seq, self._edit_times.get((holder.name, seq))) for seq, _ in holder.edits.get(message_id, ()) if seq <= limit)
        return sorted(found)  # along one line of branches, sequences order the edits

    def edit_count(self, branch_name: str) -> int:
        return len(self._branch(branch_name).edit_log)

    def edits_in_lineage(self, branch_name: str, *, erasures: bool = True) -> int:
        """How many edits the branch and its ancestors hold (an ancestor's after the fork point
        too): 0 means no message the branch shows was ever edited. With ``erasures`` (the
        default) a message erased counts as an edit of each branch that showed it; without, it
        does not."""
        branch = self._branch(branch_name)
        lineage = [branch, *(ancestor for ancestor, *_ in branch.ancestors)]
        return sum(len(holder.edit_log) - (0 if erasures else holder.erasures_logged) for holder in lineage)

    def edits_since(self, branch_name: str, start: int) -> list[str]:
        """Ids of messages edited on this branch, in order, from the ``start``-th edit on."""
        return self._branch(branch_name).edit_log[start:]

    def read_bodies_with(self, read: Callable[[Sequence[int]], Mapping[int, str]], cache: int = DEFAULT_BODY_CACHE) -> None:
        """Before :meth:`replay`: the journal can read message bodies by record id (synchronously,
        from committed records), so a replay may leave a message's body out (``None``) when it
        names no reader (a journal's rows say so: see ``store/_sqlite.py``). Such a body is read
        when the message is, and at most ``cache`` messages read that way stay decoded."""
        self._read_bodies = read
        self.body_cache = cache

    # -- messages that stay in the database ----------------------------------------------------

    def read_rows_from(self, rows: StoredRows, cache: int = DEFAULT_BODY_CACHE) -> None:
        """Before :meth:`replay`, on an empty model: its messages stay in the database, read from
        ``rows`` when they are (at most ``cache`` of them kept decoded, besides those written here
        and not yet committed). The open then replays every record but the messages, and ends
        with :meth:`end_stored_open`. A message's place on its branch follows from its sequence:
        each record of a branch takes the branch's next sequence."""
        self._rows = rows
        self._states_whole = False
        self.disclosure_log.read_from(rows.disclosure_page, rows.disclosures_holding)
        self.body_cache = cache
        self.audience_bits = audience_bits_for(cache)
        self._gap_blocks = GapBlocks(rows.gap_sequences, lambda: self.next_id, self.audience_bits)
        self._branches = {"main": Branch("main", None, 0, gaps=self._gap_blocks)}
        self._opening = []

    @property
    def gap_blocks_read(self) -> int:
        """Blocks of gaps read back from the database since the open (``StoreStatistics``)."""
        return 0 if self._gap_blocks is None else self._gap_blocks.blocks_read

    @property
    def gap_bits(self) -> int:
        """How many bits of a sequence number a block of gaps spans (:meth:`count_gaps`)."""
        return self.audience_bits

    def count_gaps(self, counts: Iterable[Sequence[Any]], next_id: int) -> None:
        """Between :meth:`read_rows_from` and the replay of the records an open reads: the next
        record id, and how many records other than messages that take a branch's sequence
        (edits, states: none of which the open reads) each block of ``1 << gap_bits`` sequences
        of each branch holds, as ``(branch, block, count)``; a branch the open makes takes its
        own when its record is replayed."""
        self.next_id = max(self.next_id, next_id)
        pending: dict[str, list[tuple[int, int]]] = {}
        for name, number, count in counts:
            pending.setdefault(str(name), []).append((int(number), int(count)))
        self._branches["main"].count_gaps(pending.pop("main", ()))
        self._gap_counts = pending

    def end_stored_open(
        self,
        heads: Mapping[str, int],
        audience: Sequence[tuple[str, int, Seers | None, int]],
        next_id: int,
        *,
        disclosed: Iterable[Sequence[object]] = (),
    ) -> None:
        """End an open begun by :meth:`read_rows_from`: each branch's head (the sequence of its
        newest record); how many messages whose body may name a reader (a superset is safe: a
        view reads each such block's messages when a count does not tell) each block of each
        branch holds (``sequence >> audience_bits``) by who sees something of them when their
        body says (store/_seers.py), else ``None``; the next record id; and the rows of the
        table of the runs of ids each ``(namespace, reader, via)`` was shown, which the open read
        instead of the disclosure records (store/_disclosure.py). Then replays the erasures the
        open held back."""
        for name, head in heads.items():
            known = self._branches.get(name)
            if known is not None:
                known.end_open(head)
        for name, number, seers, count in sorted(audience, key=itemgetter(0, 1)):  # blocks made in order
            branch = self._branches.get(name)
            if branch is None or count <= 0:
                continue
            block = branch.audience.get(number)
            if block is None:
                block = branch.audience[number] = AudienceBlock(loaded=False)
            key = self._shared_seers(seers)
            block.counts[key] = block.counts.get(key, 0) + count
            self._note_names(branch, None if key is None else key.names)
        for branch in self._branches.values():
            if branch.audience or any(ancestor.audience for ancestor, *_ in branch.ancestors):
                branch.may_hold_audience = True
        self.next_id = max(self.next_id, next_id)
        self._committed_to = self.next_id - 1
        self._gap_counts = {}  # of branches no record made (ignored, as their records are)
        self.disclosure_log.take_runs(disclosed, self._committed_to)
        held, self._opening = self._opening or [], None
        for record_id, body in held:
            parsed = parse_erasure(body)
            if parsed is None:
                log.warning("record %s is an erasure record that cannot be read; ignored", record_id)
            else:
                self.apply_erasure(*parsed)

    def messages_in_memory(self) -> int:
        """How many messages the model holds decoded or as text (``StoreStatistics``): on a store
        that reads its messages back, the cache and the messages not yet committed; otherwise
        every message held (counted, so not for a hot path)."""
        if self._rows is not None:
            return sum(len(branch.entries) for branch in self._branches.values())
        return sum(1 for branch in self._branches.values() for entry in branch.own if entry is not None)

    def state_keys_in_memory(self) -> int:
        """How many state keys the model holds versions of, on every branch together (``StoreStatistics``)."""
        return self._state_keys_held

    def state_values_in_memory(self) -> int:
        """How many state values the model holds decoded (``StoreStatistics``): on a store that
        reads its messages back, the cache and the values written here and not yet committed;
        otherwise every version held (counted, so not for a hot path)."""
        if self._rows is not None:
            return len(self._state_cache) + len(self._states_pinned)
        return sum(len(versions) for branch in self._branches.values() for versions in branch.states.values())

    @property
    def holds_records(self) -> bool:
        """Whether any record was replayed or written into the model."""
        return self.next_id > 1

    @property
    def _reads_back(self) -> bool:
        return self._rows is not None or self._read_bodies is not None

    def committed(self, record_id: int) -> None:
        """Every record up to ``record_id`` is committed: the messages written here up to it may
        leave memory (they can be read back)."""
        if record_id <= self._committed_to:
            return
        before, self._committed_to = self._committed_to, record_id
        self.disclosure_log.committed(record_id)
        if self._states_pinned:
            for committed in [i for i in self._states_pinned if i <= record_id]:
                value, length, _key = self._states_pinned.pop(committed)
                self._cache_state(committed, value, length)
        if self._gap_blocks is not None:
            self._gap_blocks.committed(record_id)
        if self._state_keys_held > self.state_keys_bound and self._rows is not None:
            self._forget_state_versions(before)
        if self._pinned:
            moved = [i for i in self._pinned if i <= record_id]
            for pinned in moved:
                self._loaded[pinned] = self._pinned.pop(pinned)
            # The write that committed them answers with them: a batch larger than the cache
            # stays until the next read or write lets it go.
            self._evict(keep=len(moved))

    def _keep(self, record_id: int, branch: Branch, index: int) -> None:
        """A message of a stored branch now in ``entries``: kept until committed, then cached."""
        if record_id > self._committed_to:
            self._pinned[record_id] = (branch, index)
            self._evict()
            return
        self._loaded[record_id] = (branch, index)
        self._loaded.move_to_end(record_id)
        self._evict()

    def _replay_stored_message(self, branch: Branch, record_id: int, seq: int, body: str | None) -> None:
        index = branch.add_message(seq)
        if body is None or body_may_hold_audience(body):  # no body: as if it may name a reader
            branch.may_hold_audience = True
            self._note_audience(branch, index, seq, None, written=False)
            self._note_names(branch, None if body is None else body_names(body))
        if body is not None:  # kept as text until read (an erasure replayed later may void it)
            branch.entries[index] = (record_id, body)
            self._keep(record_id, branch, index)

    def _stored_base(self, owner: Branch, index: int) -> Message:
        entry = owner.entries.get(index)
        if entry is None:
            self._fetch_stored(self._around(owner, index))
            entry = owner.entries[index]
        message_id = entry.id if isinstance(entry, Message) else str(entry[0])
        if self._erased and message_id in self._erased:
            stone = self._stones.get(message_id)
            if stone is None:
                stone = self._stones[message_id] = self._tombstone_message(int(message_id), owner.seq_of(index))
            if entry is not stone:
                owner.entries[index] = stone
            return stone
        if not isinstance(entry, Message):
            entry = owner.entries[index] = self._decoded(entry[0], owner.seq_of(index), entry[1])
        return entry

    def _fetch_stored(self, places: Sequence[tuple[Branch, int]]) -> None:
        """Read the messages at ``places`` from the database, a range of sequences of one branch
        a query, keeping them as text until decoded; then let the oldest read go beyond the
        cache's size."""
        assert self._rows is not None
        by_owner: dict[str, tuple[Branch, list[int]]] = {}
        for owner, index in places:
            by_owner.setdefault(owner.name, (owner, []))[1].append(index)
        for owner, indexes in by_owner.values():
            indexes = sorted(set(indexes))
            first = 0
            while first < len(indexes):
                last = first
                while last + 1 < len(indexes) and indexes[last + 1] - indexes[first] < FETCH_BATCH:
                    last += 1
                run = indexes[first : last + 1]
                rows = self._rows.message_rows(owner.name, owner.seq_of(run[0]), owner.seq_of(run[-1]), True)
                self.message_queries += 1
                found = {seq: (record_id, body) for record_id, seq, body in rows}
                for index in run:
                    seq = owner.seq_of(index)
                    row = found.get(seq)
                    if row is None:
                        if index in owner.entries:  # written here, not yet committed
                            continue
                        raise StoreFailedError(f"the message at sequence {seq} of branch {owner.name!r} is missing from the store")
                    record_id, body = row
                    self.messages_read += 1
                    owner.entries[index] = (record_id, body if type(body) is str else "")  # not text: read fail-closed
                    if record_id not in self._pinned:
                        self._loaded[record_id] = (owner, index)
                        self._loaded.move_to_end(record_id)
                first = last + 1
        self._evict()

    def _stored_id(self, owner: Branch, index: int) -> int:
        """The record id of a stored branch's ``index``-th message, from a page of ids read at once."""
        assert self._rows is not None
        page = index // ID_PAGE
        ids = self._id_pages.get((owner.name, page))
        start = page * ID_PAGE
        if ids is None or index - start >= len(ids):
            stop = min(start + ID_PAGE, owner.count)
            rows = self._rows.message_rows(owner.name, owner.seq_of(start), owner.seq_of(stop - 1), False)
            found = {seq: record_id for record_id, seq, _body in rows}
            ids = array("q")
            for position in range(start, stop):
                record_id = found.get(owner.seq_of(position))
                if record_id is None:
                    entry = owner.entries.get(position)
                    if entry is None:
                        if position <= index:
                            raise StoreFailedError(
                                f"the message at sequence {owner.seq_of(position)} of branch {owner.name!r} is missing from the store"
                            )
                        break
                    record_id = int(entry.id) if isinstance(entry, Message) else entry[0]
                ids.append(record_id)
            self._id_pages[(owner.name, page)] = ids
            while len(self._id_pages) > ID_PAGES:
                self._id_pages.popitem(last=False)
        else:
            self._id_pages.move_to_end((owner.name, page))
        return ids[index - start]

    def _place(self, message_id: str) -> tuple[Branch, int] | None:
        """The branch holding ``message_id`` and its index there, or ``None``."""
        record_id = record_of(message_id)
        return None if record_id is None else self._place_record(record_id)

    def _place_record(self, record_id: int) -> tuple[Branch, int] | None:
        if self._rows is None:
            return self._owner.of_record(record_id)
        found = self._pinned.get(record_id) or self._loaded.get(record_id)
        if found is not None:
            return found
        return self._places([record_id]).get(record_id)

    def _places(self, record_ids: Sequence[int]) -> dict[int, tuple[Branch, int]]:
        """The places of the messages among ``record_ids``, by record id."""
        if self._rows is None:
            return {i: place for i in record_ids if (place := self._owner.of_record(i)) is not None}
        found: dict[int, tuple[Branch, int]] = {}
        asked: list[int] = []
        for record_id in record_ids:
            known = self._pinned.get(record_id) or self._loaded.get(record_id)
            if known is not None:
                found[record_id] = known
            else:
                asked.append(record_id)
        if asked:
            for record_id, name, seq in self._rows.message_places(asked):
                branch = self._branches.get(name)
                index = None if branch is None else branch.index_of_seq(seq)
                if branch is not None and index is not None:
                    found[record_id] = (branch, index)
        return found

    def _base(self, owner: Branch, index: int) -> Message:
        if owner.stored:
            return self._stored_base(owner, index)
        entry = owner.own[index]
        if entry is None or (isinstance(entry, str) and self._erased):
            if self._erased and str(owner.own_ids[index]) in self._erased:
                entry = owner.own[index] = self._tombstone_message(owner.own_ids[index], owner.own_seqs[index])
                return entry
        if entry is None:
            self._fetch(self._around(owner, index))
            entry = owner.own[index]
            assert entry is not None
        if isinstance(entry, str):
            entry = owner.own[index] = self._decoded(owner.own_ids[index], owner.own_seqs[index], entry)
        return entry

    def _decoded(self, record_id: int, seq: int, text: str) -> Message:
        """A message body read back, decoded fail-closed, its damage noted (:meth:`damaged`)."""
        message = decode_message(record_id, seq, text)
        if unsafe_content(message.content):
            self._note_damaged(message.content, text)
        return message

    def _fetch(self, places: Sequence[tuple[Branch, int]]) -> None:
        """Read the bodies of the messages at ``places`` (each left out at open) from the
        journal, in batches, keeping them as text until decoded; then let the oldest read go
        beyond the cache's size."""
        if self._rows is not None:
            self._fetch_stored(places)
            return
        assert self._read_bodies is not None
        for first in range(0, len(places), FETCH_BATCH):
            batch = places[first : first + FETCH_BATCH]
            bodies = self._read_bodies([owner.own_ids[index] for owner, index in batch])
            self.message_queries += 1
            for owner, index in batch:
                record_id = owner.own_ids[index]
                body = bodies.get(record_id)
                if body is None:  # gone from the database meanwhile: read it fail-closed
                    body = ""
                owner.own[index] = body
                self.messages_read += 1
                self._loaded[record_id] = (owner, index)
                self._loaded.move_to_end(record_id)
        self._evict()

    def _around(self, owner: Branch, index: int) -> list[tuple[Branch, int]]:
        """What to read for a miss of the cache at ``index`` of ``owner``: that message, and the
        neighbours not held that a walk reading them one by one will reach next
        (:class:`ReadAhead`), at most a quarter of the cache (so what it reads stays cached
        until reached) and ``READ_AHEAD``."""
        span = self._read_ahead.plan(owner.name, index, min(READ_AHEAD, self.body_cache // 4))
        places = [(owner, index)]
        for other in range(max(span.start, 0), min(span.stop, owner.own_count())):
            if other == index or not self._lacks(owner, other):
                continue
            if not owner.stored and str(owner.own_ids[other]) in self._erased:
                continue  # read as its tombstone, with no body
            places.append((owner, other))
        return places

    def _evict(self, keep: int = 0) -> None:
        """Let the messages read longest ago go, down to the cache's size (or the newest
        ``keep``, when more)."""
        limit = max(self.body_cache, keep)
        while len(self._loaded) > limit:
            _record_id, (owner, index) = self._loaded.popitem(last=False)
            if owner.stored:
                owner.entries.pop(index, None)
            else:
                owner.own[index] = None

    @staticmethod
    def _lacks(owner: Branch, index: int) -> bool:
        """Whether the message at ``index`` of ``owner`` must be read from the database."""
        return index not in owner.entries if owner.stored else owner.own[index] is None

    def prefetch(self, branch_name: str, start: int, stop: int) -> None:
        """Read in one go the bodies a read of positions ``start`` to ``stop`` will need (those
        left in the database), instead of one query a message."""
        if not self._reads_back:
            return
        branch = self._branch(branch_name)
        start, stop, _ = slice(start, stop).indices(branch.base_count + branch.own_count())
        missing: list[tuple[Branch, int]] = []
        for position in range(start, stop):
            owner, index = branch.locate(position)
            if self._lacks(owner, index):
                missing.append((owner, index))
        if len(missing) == 1:  # a read of one message, which may walk the branch
            self._fetch(self._around(*missing[0]))
        elif missing:
            self._fetch(missing)

    def _resolve(self, branch: Branch, base: Message) -> Message:
        if base.id not in branch.edited_ids or base.id in self._erased:
            return base
        cached = branch.resolved.get(base.id)
        if cached is not None:
            return cached
        for holder, limit in branch.chain():
            versions = holder.edits.get(base.id)
            if versions:
                found = latest(versions, limit)
                if found is not None:
                    seq, content = found
                    if isinstance(content, StoredEdit):
                        stored_edit = content
                        content = decode_edit(stored_edit.record_id, stored_edit.body)
                        versions[versions.index(found)] = (seq, content)
                        if unsafe_content(content):
                            self._note_damaged(content, stored_edit.body)
                    resolved = edited_version(base, content)
                    branch.resolved[base.id] = resolved
                    return resolved
        return base

    def at(self, branch_name: str, position: int) -> Message:
        """The message at ``position`` (0 = oldest) as this branch sees it."""
        branch = self._branch(branch_name)
        return self._at(branch, position)

    def _at(self, branch: Branch, position: int) -> Message:
        if position < 0:
            position += branch.base_count + branch.own_count()
        return self._resolve(branch, self._base(*branch.locate(position)))

    def id_at(self, branch_name: str, position: int) -> str:
        """The id of the message at ``position``, without decoding it."""
        branch = self._branch(branch_name)
        if position < 0:
            position += branch.base_count + branch.own_count()
        owner, index = branch.locate(position)
        if not owner.stored:
            return str(owner.own_ids[index])
        entry = owner.entries.get(index)
        if entry is None:
            return str(self._stored_id(owner, index))
        return entry.id if isinstance(entry, Message) else str(entry[0])

    def slice(self, branch_name: str, start: int, stop: int | None = None) -> list[Message]:
        """Messages at positions ``start`` (inclusive) to ``stop`` (exclusive), oldest first."""
        branch = self._branch(branch_name)
        total = branch.base_count + branch.own_count()
        check_int(start, "start")
        check_int(stop, "stop", optional=True)
        start, stop, _ = slice(start, stop).indices(total)
        if not self._reads_back:
            return [self._at(branch, i) for i in range(start, stop)]
        out: list[Message] = []
        for first in range(start, stop, FETCH_BATCH):  # a batch of bodies read, then decoded
            last = min(stop, first + FETCH_BATCH)
            self.prefetch(branch_name, first, last)
            out.extend(self._at(branch, i) for i in range(first, last))
        return out

    def position_of(self, branch_name: str, message_id: str) -> int | None:
        """Where ``message_id`` stands on this branch, or ``None`` if it is not visible there."""
        branch = self._branch(branch_name)
        found = self._place(check_message_id(message_id))
        if found is None:
            return None
        owner, index = found
        if owner is branch:
            return branch.base_count + index
        slot = branch.ancestor_index.get(owner.name)
        if slot is None:
            return None
        holder, _limit, count, offset = branch.ancestors[slot]
        if holder is not owner or index >= count:
            return None
        return offset + index

    def get(self, branch_name: str, message_id: str) -> Message | None:
        position = self.position_of(branch_name, message_id)
        return None if position is None else self.at(branch_name, position)

    # -- state reads ----------------------------------------------------------------------

    def _state_version(self, branch_name: str, key: str, sequence: float = float("inf")) -> tuple[int, int, Any] | None:
        """The newest version of ``key`` visible on this branch up to ``sequence``: its sequence,
        record id and value as held."""
        branch = self._branch(branch_name)
        if key not in self._state_keys_read and not self._holds_keys_under(key):
            # The versions a branch holds of a key it has not read are its newest (those written
            # or taken in since the open, or since its versions were let go): the newest of them
            # up to ``sequence`` is the answer, if one is; else the database's.
            own = branch.states.get(key)
            found = latest(own, sequence) if own else None
            if found is not None:
                return found
            self._read_state_keys((key,))
        for holder, limit in branch.chain():
            versions = holder.states.get(key)
            if versions:
                found = latest(versions, min(limit, sequence))
                if found is not None:
                    return found
        return None

    def get_state(self, branch_name: str, key: str) -> Any:
        """The newest value under ``key`` visible on this branch, ``MISSING`` or ``UNREADABLE``."""
        found = self._state_version(branch_name, key)
        return MISSING if found is None else self._values_of([(key, found[1], found[2])])[0]

    # -- state keys read back ------------------------------------------------------------------

    def _holds_keys_under(self, prefix: str) -> bool:
        """Whether the model holds the versions of every key starting with ``prefix`` (of every
        key, or of every key under a prefix it read): no read of the database can add one."""
        return self._states_whole or any(prefix.startswith(p) for p in self._state_prefixes)

    def _read_state_keys(self, keys: Iterable[str]) -> None:
        """Read the versions of those of ``keys`` whose versions the model has not read yet. A
        key found is known from then on; of those not found, the newest ``STATE_CACHE`` asked for
        are remembered (a key asked for once and never written costs nothing lasting)."""
        missing = self._state_keys_missing
        wanted = []
        for key in dict.fromkeys(keys):
            if key in self._state_keys_read or self._holds_keys_under(key):
                continue
            if key in missing:
                missing.move_to_end(key)
                continue
            wanted.append(key)
        if not wanted:
            return
        assert self._rows is not None
        rows = self._rows.state_versions(self.next_id, keys=wanted)
        self._take_state_versions(rows)
        found = {row[3] for row in rows}
        for key in wanted:
            if key in found:
                self._state_keys_read.add(key)
            else:
                missing[key] = None
        while len(missing) > STATE_CACHE:
            missing.popitem(last=False)

    def _read_states_where(self, *, prefix: str = "", suffix: str = "", containing: str = "") -> None:
        """Read the versions of every key that starts with ``prefix`` (every key, for ``""``),
        ends with ``suffix`` or contains ``containing`` (the one given), unless read already."""
        if self._states_whole:
            return
        assert self._rows is not None
        if suffix or containing:
            pattern = ("suffix", suffix) if suffix else ("containing", containing)
            if pattern in self._state_patterns:
                return
            rows = self._rows.state_versions(self.next_id, suffix=suffix or None, containing=containing or None)
            self._take_state_versions(rows)
            self._state_keys_read.update(row[3] for row in rows)
            self._state_patterns.add(pattern)
            return
        if self._holds_keys_under(prefix):
            return
        self._take_state_versions(self._rows.state_versions(self.next_id, prefix=prefix or None))
        if prefix:
            self._state_prefixes.append(prefix)
        else:
            self._states_whole = True

    def _take_state_versions(self, rows: Iterable[tuple[int, str, int, str, bool]]) -> None:
        """Take in state versions read back (``(id, branch, seq, key, blanked)``; those already
        held are left as they are), each in its place by sequence, its value left in the database."""
        for record_id, branch_name, seq, key, blanked in rows:
            branch = self._branches.get(branch_name)
            if branch is None:
                continue
            self.state_versions_read += 1
            versions = self._versions(branch, key)
            if any(version[1] == record_id for version in versions):
                continue
            version = (seq, record_id, None if blanked else _IN_STORE)
            if blanked:
                self._nulled_states.add(record_id)
            if not versions or versions[-1][0] < seq:
                versions.append(version)
            else:
                versions.insert(bisect_left([v[0] for v in versions], seq), version)

    def _versions(self, branch: Branch, key: str) -> list[tuple[int, int, Any]]:
        """The versions of ``key`` ``branch`` holds, a list made (and counted) when it holds none."""
        versions = branch.states.get(key)
        if versions is None:
            versions = branch.states[key] = []
            self._state_keys_held += 1
        return versions

    def _forget_state_versions(self, through: int) -> None:
        """Let go of the versions of every state key whose versions are all of records up to
        ``through`` (committed before the commit that called: what it committed, the likeliest
        to be read next, and what waits for a commit stay), and of every claim to hold the keys
        under a prefix or of a pattern: a read of them reads them again (from the index of state
        records, as an open leaves them). Only on a model whose messages stay in the database,
        between reads."""
        held = 0
        for branch in self._branches.values():
            states = branch.states
            for key in [k for k, versions in states.items() if all(v[1] <= through for v in versions)]:
                del states[key]
            held += len(states)
        self._state_keys_held = held
        self._states_whole = False
        self._state_prefixes.clear()
        self._state_patterns.clear()
        self._state_keys_read.clear()

    def _values_of(self, versions: Sequence[tuple[str, int, Any]], *, keep: bool = True) -> list[Any]:
        """The values of these ``(key, record id, value as held)`` state versions: those the open
        left in the database are read in batches, and, when ``keep``, the newest read stay
        decoded (at most ``STATE_CACHE``)."""
        values = [value for _key, _record_id, value in versions]
        wanted: dict[int, list[int]] = {}
        for index, (_key, record_id, value) in enumerate(versions):
            if value is not _IN_STORE:
                continue
            if record_id in self._states_pinned:
                values[index] = self._states_pinned[record_id][0]
            elif record_id in self._state_cache:
                self._state_cache.move_to_end(record_id)
                values[index] = self._state_cache[record_id][0]
            else:
                wanted.setdefault(record_id, []).append(index)
        if wanted:
            refs = [(record_id, versions[indexes[0]][0]) for record_id, indexes in wanted.items()]
            for record_id, value, size in self._read_states(refs):
                for index in wanted[record_id]:
                    values[index] = value
                if keep:
                    self._cache_state(record_id, value, size)
        return values

    def _cache_state(self, record_id: int, value: Any, size: int) -> None:
        """Keep a state value decoded (``size``: its JSON's length), as the newest of the cache:
        at most ``STATE_CACHE`` values of at most ``STATE_CACHE_CHARACTERS`` together, the
        newest kept whatever its size."""
        self._uncache_state(record_id)
        cache = self._state_cache
        cache[record_id] = (value, size)
        self._state_cache_characters += size
        while len(cache) > 1 and (len(cache) > STATE_CACHE or self._state_cache_characters > STATE_CACHE_CHARACTERS):
            _record_id, (_value, gone) = cache.popitem(last=False)
            self._state_cache_characters -= gone

    def _uncache_state(self, record_id: int) -> None:
        """Let a state value go from the cache, if it is there."""
        held = self._state_cache.pop(record_id, None)
        if held is not None:
            self._state_cache_characters -= held[1]

    def _read_states(self, refs: Sequence[tuple[int, str]]) -> Iterator[tuple[int, Any, int]]:
        """``(record id, value, length of its JSON)`` of each ``(record id, key)`` state record the
        open left in the database, read from it a batch at a time and decoded fail-closed
        (``UNREADABLE``, logged)."""
        assert self._rows is not None
        for first in range(0, len(refs), FETCH_BATCH):
            batch = refs[first : first + FETCH_BATCH]
            bodies = self._rows.record_bodies([record_id for record_id, _key in batch])
            for record_id, key in batch:
                self.state_values_read += 1
                body = bodies.get(record_id)
                if body is None:
                    log.warning("record %s: state %r could not be read back; read as unreadable", record_id, key)
                    yield record_id, UNREADABLE, 0
                else:
                    yield record_id, _state_value(record_id, key, body), len(body)

    def state_record_id(self, branch_name: str, key: str) -> int | None:
        """The record id of the value under ``key`` visible on this branch, or ``None``."""
        found = self._state_version(branch_name, key)
        return None if found is None else found[1]

    def report(self, record_id: int | None, problem: str) -> None:
        """Report malformed data once per record: logged with its record id."""
        marker = (record_id, problem)
        if marker in self._reports:
            return
        self._reports.add(marker)
        log.warning("record %s holds malformed data, read fail-closed: %s", record_id, problem)

    def state_sequence_at(self, branch_name: str, key: str, sequence: float = float("inf")) -> int | None:
        """The sequence of the value under ``key`` the branch saw at ``sequence`` (its newest by
        default), or ``None``. On a child branch, above its fork point means written there."""
        found = self._state_version(branch_name, key, sequence)
        return None if found is None else found[0]

    def get_state_at(self, branch_name: str, key: str, sequence: int) -> Any:
        """The value under ``key`` as the branch saw it at ``sequence``."""
        found = self._state_version(branch_name, key, sequence)
        return MISSING if found is None else self._values_of([(key, found[1], found[2])])[0]

    def strategy_note_at(
        self, branch_name: str, namespace: str, sequence: float = float("inf"), before: float = float("inf")
    ) -> tuple[int, Any] | None:
        """The newest strategy note (store/_notes.py) of ``namespace`` written on this branch
        itself, from a sequence at most ``sequence`` and as a record older than ``before`` (a
        record id): ``(at, value)``, or ``None``."""
        notes = self._strategy_notes.get(branch_name, {}).get(namespace)
        if notes:
            for at, record_id, value in reversed(notes):
                if at <= sequence and record_id < before:
                    return at, value
        return None

    def branch_record_id(self, name: str) -> int:
        """The id of the record that made the branch (0 for ``main``)."""
        return self._branch(name).record_id

    def noted_namespaces(self, branch_name: str) -> set[str]:
        """The namespaces with a strategy note this branch sees: its own, or an ancestor's from
        at most the fork point and older than the fork."""
        found: set[str] = set()
        branch = self._branch(branch_name)
        limit: float = float("inf")
        before: float = float("inf")
        while True:
            for namespace, notes in self._strategy_notes.get(branch.name, {}).items():
                if any(at <= limit and record_id < before for at, record_id, _value in notes):
                    found.add(namespace)
            if branch.parent is None:
                return found
            limit, before, branch = branch.fork_sequence, branch.record_id, branch.parent

    def state_keys_containing(self, branch_name: str, text: str) -> list[str]:
        """Every key holding ``text`` that has a record visible on this branch, sorted."""
        self._read_states_where(containing=text)  # every key, for no text
        return sorted(k for k in self._known_keys(branch_name) if text in k and self._state_version(branch_name, k) is not None)

    def state_keys_ending(self, branch_name: str, suffix: str) -> list[str]:
        """Every key ending in ``suffix`` that has a record visible on this branch, sorted."""
        self._read_states_where(suffix=suffix)  # every key, for no suffix
        return sorted(k for k in self._known_keys(branch_name) if k.endswith(suffix) and self._state_version(branch_name, k) is not None)

    def _known_keys(self, branch_name: str) -> Collection[str]:
        """Every key some branch this one sees (itself or an ancestor) holds a version of, visible or not."""
        branch = self._branch(branch_name)
        if not branch.ancestors:
            return branch.states.keys()
        known: set[str] = set()
        for holder, _limit in branch.chain():
            known.update(holder.states)
        return known

    def state_keys(self, branch_name: str, prefix: str = "") -> list[str]:
        """Every key starting with ``prefix`` that has a record visible on this branch, sorted."""
        self._branch(branch_name)
        check_str(prefix, "prefix")
        self._read_states_where(prefix=prefix)
        found = []
        for key in self._known_keys(branch_name):
            if key.startswith(prefix) and self._state_version(branch_name, key) is not None:
                found.append(key)
        found.sort()
        return found

    def state_sequences(self, branch_name: str, prefix: str = "") -> dict[str, int]:
        """``{key: sequence}`` for every key starting with ``prefix`` that has a record visible on
        this branch: the sequence its visible record was written at; reads no value."""
        branch = self._branch(branch_name)
        check_str(prefix, "prefix")
        if not self._holds_keys_under(prefix):
            return self._read_state_sequences(branch_name, prefix)
        if not branch.ancestors:  # every version is its own, in sequence order: the last is visible
            return {key: versions[-1][0] for key, versions in branch.states.items() if versions and key.startswith(prefix)}
        found = {}
        for key in self._known_keys(branch_name):
            if key.startswith(prefix):
                version = self._state_version(branch_name, key)
                if version is not None:
                    found[key] = version[0]
        return found

    def state_sequences_after(self, branch_name: str, prefix: str, sequence: int) -> tuple[int, dict[str, int]]:
        """How many keys starting with ``prefix`` have their visible record on this branch from
        at most ``sequence``, and ``{key: sequence}`` of those whose visible record was written
        after it; reads no value. On a branch with no ancestors whose keys the model has not
        read, counted in the database, a row for each key written after ``sequence`` alone."""
        branch = self._branch(branch_name)
        check_str(prefix, "prefix")
        if not self._holds_keys_under(prefix) and prefix and not branch.ancestors:
            assert self._rows is not None
            count, after = self._rows.state_sequences_after(self.next_id, branch_name, prefix, sequence)
            self.state_versions_read += len(after)
            return count, dict(after)
        found = self.state_sequences(branch_name, prefix)
        return sum(1 for seq in found.values() if seq <= sequence), {k: seq for k, seq in found.items() if seq > sequence}

    def _read_state_sequences(self, branch_name: str, prefix: str) -> dict[str, int]:
        """:meth:`state_sequences` read from the database (every version under ``prefix`` the
        model has, that is below its next id), keeping none of them."""
        assert self._rows is not None
        rows = self._rows.state_versions(self.next_id, prefix=prefix or None, blanked=False)
        self.state_versions_read += len(rows)
        places: dict[str, dict[str, int]] = {}  # key -> branch -> its newest sequence there the branch sees
        chain = list(self._branch(branch_name).chain())
        limits = {holder.name: limit for holder, limit in chain}
        for _record_id, written_on, seq, key, _blanked in rows:
            limit = limits.get(written_on)
            if limit is not None and seq <= limit:
                held = places.setdefault(key, {})
                held[written_on] = max(seq, held.get(written_on, seq))
        found = {}
        for key, held in places.items():
            for holder, _limit in chain:  # the branch's own version first, then its ancestors'
                if holder.name in held:
                    found[key] = held[holder.name]
                    break
        return found

    def get_states(self, branch_name: str, keys: Iterable[str]) -> dict[str, Any]:
        """``{key: value}`` for each of ``keys`` with a record visible on this branch (the others
        left out), the values left in the database read in batches and not kept (a read of many
        values, as a strategy's load, would only push out those read one by one)."""
        self._branch(branch_name)
        keys = list(keys)
        for key in keys:
            check_str(key, "key")
        if not self._states_whole:
            self._read_state_keys(keys)  # together, before each is looked up
        versions = []
        for key in keys:
            found = self._state_version(branch_name, key)
            if found is not None:
                versions.append((key, found[1], found[2]))
        values = self._values_of(versions, keep=False)
        return {key: value for (key, _record_id, _held), value in zip(versions, values, strict=True)}

    def state_keys_holding(self, branch_name: str, keys: Iterable[str], words: Sequence[str]) -> list[str]:
        """Those of ``keys`` (in their order) with a record visible on this branch whose value may
        hold every one of ``words`` (case-folded words, as a search's): every key whose value is
        held decoded, and of those left in the database the ones whose stored text holds each
        ASCII word in any case, or holds any character past ASCII (whose case-folding a database
        does not do as a search does). A superset of the keys whose values hold the words; reads
        no value into memory."""
        self._branch(branch_name)
        narrowing = tuple(dict.fromkeys(w for w in words if w.isascii() and w))
        keys = list(keys)
        for key in keys:
            check_str(key, "key")
        if not self._states_whole:
            self._read_state_keys(keys)
        found: list[tuple[str, int | None]] = []  # key, and the record to ask about (None: kept)
        for key in keys:
            version = self._state_version(branch_name, key)
            if version is None:
                continue
            _seq, record_id, value = version
            asking = value is _IN_STORE and narrowing and record_id not in self._state_cache and record_id not in self._states_pinned
            found.append((key, record_id if asking else None))
        asked = [record_id for _key, record_id in found if record_id is not None]
        if not asked:
            return [key for key, _record_id in found]
        assert self._rows is not None
        holding: set[int] = set()
        for first in range(0, len(asked), FETCH_BATCH):
            holding.update(self._rows.records_holding(asked[first : first + FETCH_BATCH], narrowing))
        return [key for key, record_id in found if record_id is None or record_id in holding]

    def state_keys_matching(self, branch_name: str, prefix: str, words: Sequence[str]) -> list[str] | None:
        """The keys starting with ``prefix`` whose record visible on this branch may hold every
        one of ``words`` (a search's words: case-folded, at least one; a superset), sorted,
        found through the search index: it reads the records the index says may hold them, the
        state records under ``prefix`` it has not reached yet, and the versions of the keys
        those name, never every key under ``prefix``. ``None`` when the store cannot answer so
        (no index, or one made before it held state records; a store not read from a
        database): the caller then lists the keys (:meth:`state_keys_holding`)."""
        self._branch(branch_name)
        check_str(prefix, "prefix")
        words = list(words)
        upper = prefix_end(prefix) if prefix else None
        if self._rows is None or upper is None or not words:
            return None
        found = self._rows.states_matching(prefix, upper, words)
        if found is None:
            return None
        indexed, unreached = found
        candidates = {record_id: key for record_id, key in indexed}
        for record_id, key, body in unreached:
            try:
                value = read_whole_json(body)
            except ValueError:  # unreadable: holds no words (reported where it is read)
                continue
            if holds_every(state_text(value), words):
                candidates[record_id] = key
        for record_id, (value, _length, key) in self._states_pinned.items():  # written here, not committed yet
            if key.startswith(prefix) and holds_every(state_text(value), words):
                candidates[record_id] = key
        keys = sorted(set(candidates.values()))
        if not self._states_whole:
            self._read_state_keys(keys)
        matching = []
        for key in keys:
            version = self._state_version(branch_name, key)
            if version is not None and candidates.get(version[1]) == key:
                matching.append(key)
        return matching

    def state_items(self, branch_name: str, prefix: str = "") -> dict[str, Any]:
        """``{key: value}`` for every key under ``prefix`` visible on this branch."""
        return self.get_states(branch_name, self.state_keys(branch_name, prefix))

    # -- erasure (store/_erasure.py) ------------------------------------------------------------

    @property
    def erasure_count(self) -> int:
        """How many erasures the model holds (a manager restarts its strategy when it grows)."""
        return len(self._erasures)

    def is_erased(self, message_id: str) -> bool:
        return message_id in self._erased

    def any_erased(self, message_ids: Iterable[str]) -> bool:
        """Whether some message of ``message_ids`` was erased. Costs the runs of a
        :class:`~asides.MessageIds` (a summary's), each a binary search over the runs of the
        erased ids, never the number of ids they hold; one step an id for any other iterable."""
        if not self._erased:
            return False
        held = as_message_ids(message_ids)
        if not held.numeric:
            return any(i in self._erased for i in held)
        return any(self._erased_runs.overlaps(first, count) for first, count in held.runs())

    def erased_positions(self, branch_name: str) -> list[int]:
        """The positions on this branch of its erased messages, sorted. Costs the erasures, never
        the branch's length."""
        found = (self.position_of(branch_name, message_id) for message_id in self._erased)
        return sorted(p for p in found if p is not None)

    def tombstone(self, message_id: str) -> Tombstone | None:
        """What remains of an erased message, or ``None`` when it was not erased."""
        return self._erased.get(message_id)

    def erasures(self) -> tuple[Erasure, ...]:
        """Every erasure, oldest first."""
        return tuple(self._erasures)

    def check_not_derived(self, states: Mapping[str, Any]) -> None:
        """Refuse (``MessageErasedError``) state records whose provenance names an erased message:
        a unit that read a message before its erasure must not store what it made of it."""
        if not self._erased:
            return
        for key, value in states.items():
            found = derived_from(value, self._erased)
            if found:
                raise MessageErasedError(found, key)

    def _tombstone_message(self, record_id: int, seq: int) -> Message:
        stone = self._erased[str(record_id)]
        meta = {"asides_erased": {"at": stone.erased_at, "reason": stone.reason, "erasure": stone.erasure}}
        return Message(str(record_id), seq, "", (), MappingProxyType(meta), 0.0)

    def message_ids(self) -> list[str]:
        """The id of every message of the store that is not erased, in record order."""
        if self._rows is not None:
            numbers = sorted({*self._rows.all_message_ids(), *self._pinned})
        else:
            numbers = sorted(i for b in self._branches.values() for i in b.own_ids)
        return [i for i in map(str, numbers) if i not in self._erased]

    def message_pages(self, size: int = FETCH_BATCH) -> Iterator[list[Message]]:
        """Every message of the store that is not erased, as its own branch stored it (its newest
        edits aside), in record order, ``size`` at a time: what a walk of the whole store holds at
        once is one page (on a store that reads its messages back, read from the database a page
        a query, and decoded without entering the cache)."""
        if self._rows is None:
            ids = self.message_ids()
            for first in range(0, len(ids), size):
                held = [self.stored_message(message_id) for message_id in ids[first : first + size]]
                yield [message for message in held if message is not None]
            return
        after = 0
        while True:
            rows = self._rows.message_page(after, size)
            page: list[Message] = []
            for record_id, branch_name, seq, body in rows:
                if record_id > self._committed_to:  # committed, not yet taken in: not this model's yet
                    break
                if str(record_id) in self._erased or branch_name not in self._branches:
                    continue
                known = self._loaded.get(record_id)
                if known is not None:
                    page.append(self._base(*known))
                else:  # read for the walk alone: neither cached nor noted
                    page.append(decode_message(record_id, seq, body if body is not None else ""))
            if page:
                yield page
            if len(rows) < size or rows[-1][0] >= self._committed_to:
                break
            after = rows[-1][0]
        pending = [self._base(*self._pinned[i]) for i in sorted(self._pinned) if str(i) not in self._erased]
        if pending:
            yield pending

    def stored_message(self, message_id: str) -> Message | None:
        """A message as its own branch stored it (its newest edits aside), wherever it is."""
        found = self._place(message_id)
        return None if found is None else self._base(*found)

    def messages_holding(self, record_ids: range, words: Sequence[str]) -> frozenset[int]:
        """The ids of the message records among ``record_ids`` whose stored text (any block,
        whoever it is for) holds every one of ``words``: what a search reads of the records its
        index has not reached. Reads the bodies it lacks in batches; costs the records asked."""
        found: set[int] = set()
        for first in range(record_ids.start, record_ids.stop, FETCH_BATCH):
            batch = range(first, min(record_ids.stop, first + FETCH_BATCH))
            places = list(self._places(batch).values())
            if self._reads_back:
                lacking = [place for place in places if self._lacks(*place)]
                if lacking:
                    self._fetch(lacking)
            for record_id in batch:
                message = self.message_record(record_id)
                if message is not None and not self.is_erased(message.id) and holds_every(searchable_text(message.content), words):
                    found.add(record_id)
        return frozenset(found)

    def message_record(self, record_id: int) -> Message | None:
        """:meth:`stored_message` by record id (``None``: no message has it)."""
        found = self._place_record(record_id)
        if found is None:
            return None
        if found[0].stored:
            return self._base(*found)
        entry = found[0].own[found[1]]
        return entry if type(entry) is Message else self._base(*found)

    def plan_erasure(
        self, message_ids: Sequence[str], reason: str, at: float, rewrites: Sequence[str] = ()
    ) -> tuple[Erasure, str, tuple[int, ...]] | None:
        """The erasure of ``message_ids`` against the model as it is: the erasure, its record's
        body, and the record ids of the state records it overwrites. ``None`` when every one of them was
        erased already (erasing again does nothing). Refuses unknown ids
        (``UnknownMessagesError``, naming them), changing nothing."""
        unknown = [m for m in message_ids if not isinstance(m, str) or self._place(m) is None]
        if unknown:
            raise UnknownMessagesError([str(m) for m in unknown])
        new = [m for m in dict.fromkeys(message_ids) if m not in self._erased]
        if not new:
            return None
        targets = set(new)
        states: list[int] = []
        summaries: set[tuple[str, str]] = set()
        copies = 0
        derived: list[tuple[str, str, int]] = []  # (branch, key, record id) of each version made from them
        left: dict[int, tuple[str, str]] = {}  # (branch, key) of each version the open left in the database
        streamed: set[int] = set()
        if not self._states_whole:  # every state record in the database, a page at a time, none kept
            assert self._rows is not None
            after = 0
            while True:
                page = self._rows.state_record_page(after, self.next_id, ERASURE_PAGE)
                for record_id, branch_name, key, body in page:
                    streamed.add(record_id)
                    self.state_values_read += 1
                    if derived_from(_state_value(record_id, key, body), targets):
                        derived.append((branch_name, key, record_id))
                if len(page) < ERASURE_PAGE:
                    break
                after = page[-1][0]
        for branch in self._branches.values():
            for key, versions in branch.states.items():
                for _seq, record_id, value in versions:
                    if record_id in streamed:
                        continue
                    if value is _IN_STORE:  # written here and not yet committed, or cached: as held
                        value = self._states_pinned.get(record_id, self._state_cache.get(record_id, (_IN_STORE, 0)))[0]
                    if value is _IN_STORE:
                        left[record_id] = (branch.name, key)
                    elif derived_from(value, targets):
                        derived.append((branch.name, key, record_id))
        if left:  # streamed from the database, a batch at a time, none of them kept
            for record_id, value, _size in self._read_states([(record_id, key) for record_id, (_branch, key) in left.items()]):
                if derived_from(value, targets):
                    derived.append((*left[record_id], record_id))
        for branch_name, key, record_id in derived:
            states.append(record_id)
            if _is_summary(key):
                summaries.add((branch_name, key))
            if any(rule(key) for rule in _COPY_RULES):
                copies += 1
        states.sort()
        edits = sum(len(branch.edits.get(m, ())) for branch in self._branches.values() for m in new)
        number = len(self._erasures) + 1
        receipt = {"versions": edits, "copies": copies, "index": len(new) + edits, "rewrites": list(rewrites)}
        erasure = Erasure(number, tuple(new), len(summaries), len(states), reason, at, edits, copies, len(new) + edits, tuple(rewrites))
        return erasure, erasure_body(number, new, states, reason, at, len(summaries), receipt), tuple(states)

    def apply_erasure(self, erasure: Erasure, states: Sequence[int]) -> None:
        """Take an erasure into memory (a local one once planned, or one replayed): its messages
        become tombstones on every branch that sees them (views hear of each as of an edit, and
        leave it out), their edits and the state records it names lose their content. Cannot fail."""
        if erasure.number <= len(self._erasures):
            return  # replayed twice (a catch-up after a local commit)
        self._erasures.append(erasure)
        for message_id in erasure.message_ids:
            self._erased[message_id] = Tombstone(message_id, erasure.at, erasure.reason, erasure.number)
            if (number := key_number(message_id)) is not None:
                self._erased_runs.add(number, 1)
            found = self._place(message_id)
            if found is None:
                continue
            owner, index = found
            stone = self._tombstone_message(int(message_id), owner.seq_of(index))
            if owner.stored:
                owner.entries[index] = self._stones[message_id] = stone
                self._keep(int(message_id), owner, index)
            else:
                owner.own[index] = stone
            for branch in self._branches.values():
                if branch.edits.get(message_id):
                    branch.edits[message_id] = [(seq, ()) for seq, _ in branch.edits[message_id]]
                if self.position_of(branch.name, message_id) is None:
                    continue
                # Views of the branch take their maintained path and hear of it as of an edit.
                branch.may_hold_audience = True
                branch.edit_log.append(message_id)
                branch.erasures_logged += 1
                branch.edited_ids.add(message_id)
                branch.resolved[message_id] = stone
        pending = set(states) - self._nulled_states
        if pending:
            for branch in self._branches.values():
                for versions in branch.states.values():
                    for index, (seq, record_id, _value) in enumerate(versions):
                        if record_id in pending:
                            versions[index] = (seq, record_id, None)
                            self._nulled_states.add(record_id)
                            self._uncache_state(record_id)
                            self._states_pinned.pop(record_id, None)
