"""Disclosures: which messages each compile, preview, compression request and search showed, and to whom.

Pure logic, no I/O. A disclosure record (kind ``disclosure``, on the audit branch ``""`` like an
erasure record, its sequence its record id) says that the messages it names were shown through
``via`` (``"compile"``, ``"preview"``, ``"compression"``, ``"search"``) to ``reader`` (``None``: no reader) of
``namespace`` on ``branch`` at ``at``. It holds ids, never content, and outlives an erasure of
those messages.

Only what is new is recorded: for each ``(namespace, reader, via)`` the model keeps the message
ids already disclosed that way, as runs of consecutive ids (:class:`IdRuns`: its size follows
how scattered they are, never how high the ids go), and a record names only ids not in it. So
a compile after one new message writes one record naming one id. Ids are written as runs,
``[first, count, first, count, ...]``, so a first compile of 20,000 messages costs a few dozen
bytes, not 20,000 ids.

A store that reads its messages back keeps no disclosure record in memory: the database keeps,
beside the log, the runs each ``(namespace, reader, via)`` was shown (a table its triggers fill
from each disclosure record written), which an open reads instead of the records, and which is
compacted (its runs merged) whenever it holds more than twice the runs merged, plus
:data:`COMPACTION_SLACK`; an audit reads the records from the database: those that name a
message through an index of each record's runs as intervals, the others a page at a time.
"""

from __future__ import annotations

import json
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain
from typing import Final

import attrs

from ._message_ids import IdRuns, numbered_runs

__all__ = [
    "COMPACTION_SLACK",
    "DISCLOSURE",
    "VIAS",
    "Disclosure",
    "DisclosureLog",
    "DisclosureRecord",
    "DisclosedRun",
    "IdRuns",
    "disclosure_body",
    "merged_runs",
]

#: The kind of a disclosure record.
DISCLOSURE: Final = "disclosure"
#: The ways a message is disclosed.
VIAS: Final = ("compile", "preview", "compression", "search")
#: Runs the database's table of disclosed runs may hold beyond twice its runs merged before it
#: is compacted.
COMPACTION_SLACK: Final = 1024
#: Disclosure records an audit reads from the database at once.
AUDIT_PAGE: Final = 2000

#: A row of the database's table of disclosed runs: ``(namespace, reader, via, first, stop)``,
#: the ids ``first`` ... ``stop - 1`` shown to ``reader`` of ``namespace`` through ``via``.
DisclosedRun = tuple[str, "str | None", str, int, int]


@attrs.frozen
class Disclosure:
    """One message shown to ``reader`` (``None``: a manager compiling for no reader) of
    ``namespace`` on ``branch``, through ``via``, at ``at`` (seconds since the epoch)."""

    message_id: str
    reader: str | None
    namespace: str
    branch: str
    via: str
    at: float


@attrs.frozen
class DisclosureRecord:
    """One disclosure record: the messages one compile, preview, search or compression request
    newly showed to ``reader`` of ``namespace`` on ``branch`` through ``via`` at ``at``."""

    record_id: int
    namespace: str
    reader: str | None
    branch: str
    via: str
    at: float
    message_ids: tuple[str, ...]


@attrs.frozen
class _Record:
    record_id: int
    namespace: str
    reader: str | None
    branch: str
    via: str
    at: float
    runs: tuple[int, ...]

    def ids(self) -> Iterable[int]:
        runs = self.runs
        for i in range(0, len(runs) - 1, 2):
            yield from range(runs[i], runs[i] + runs[i + 1])

    def holds(self, message_id: int) -> bool:
        return _runs_hold(self.runs, 0, len(self.runs), message_id)

    def disclosures(self, message_id: int) -> Disclosure:
        return Disclosure(str(message_id), self.reader, self.namespace, self.branch, self.via, self.at)


def _runs_hold(runs: Sequence[int], first: int, end: int, message_id: int) -> bool:
    """Whether the runs ``runs[first:end]`` (``[start, count, ...]``) hold ``message_id``."""
    return any(runs[i] <= message_id < runs[i] + runs[i + 1] for i in range(first, end - 1, 2))


def _flat(runs: Iterable[tuple[int, int]]) -> list[int]:
    """``(first, count)`` runs, sorted, as ``[first, count, first, count, ...]``, merging runs that
    meet."""
    flat: list[int] = []
    for first, count in sorted(runs):
        if flat and flat[-2] + flat[-1] == first:
            flat[-1] += count
        else:
            flat.extend((first, count))
    return flat


def disclosure_body(namespace: str, reader: str | None, branch: str, via: str, at: float, runs: Iterable[tuple[int, int]]) -> str:
    """A disclosure record naming the ids of ``runs`` (``(first, count)`` each)."""
    return json.dumps(
        {"ns": namespace, "r": reader, "b": branch, "v": via, "at": round(at, 3), "ids": _flat(runs)},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _who_of(namespace: object, reader: object, via: object) -> tuple[str, str | None, str] | None:
    """``(namespace, reader, via)`` when they are what a disclosure names, else ``None``."""
    if isinstance(namespace, str) and (reader is None or isinstance(reader, str)) and via in VIAS:
        return namespace, reader, str(via)
    return None


def _parse(record_id: int, body: str) -> _Record | None:
    """A disclosure record's body read, or ``None`` when it is not one a store writes."""
    try:
        value = json.loads(body)
        namespace, reader, branch, via, at, runs = (value[k] for k in ("ns", "r", "b", "v", "at", "ids"))
    except (ValueError, KeyError, TypeError):
        return None
    if (
        _who_of(namespace, reader, via) is None
        or not isinstance(branch, str)
        or not isinstance(at, (int, float))
        or isinstance(at, bool)
        or not isinstance(runs, list)
        or not all(type(r) is int and 0 <= r < 2**62 for r in runs)  # a run's end fits a 64-bit array
    ):
        return None
    return _Record(record_id, namespace, reader, branch, via, float(at), tuple(runs[: len(runs) // 2 * 2]))


def _run_of(row: Sequence[object]) -> DisclosedRun | None:
    """A row of the table of disclosed runs, or ``None`` when it is not one a store writes."""
    if len(row) != 5:
        return None
    namespace, reader, via, first, stop = row
    who = _who_of(namespace, reader, via)
    if who is None or type(first) is not int or type(stop) is not int or not 0 <= first < stop < 2**62:
        return None
    return (*who, first, stop)


def merged_runs(rows: Iterable[Sequence[object]]) -> list[DisclosedRun]:
    """The runs of the table of disclosed runs merged: the same ids for each ``(namespace,
    reader, via)``, in as few runs as they allow. A row that is not one a store writes is left
    out."""
    seen: dict[tuple[str, str | None, str], IdRuns] = {}
    for row in rows:
        run = _run_of(row)
        if run is not None:
            namespace, reader, via, first, stop = run
            seen.setdefault((namespace, reader, via), IdRuns()).add(first, stop - first)
    return [(*who, start, end) for who, runs in seen.items() for start, end in runs.runs()]


class DisclosureLog:
    """The ids each ``(namespace, reader, via)`` was shown, and the disclosure records of a
    store.

    On a store that holds its records in memory, every record is kept: a record costs a few
    dozen bytes, not an object's few hundred (its id, time, the index of its ``(namespace,
    reader, branch, via)`` among the distinct ones, and its runs, in arrays), and is made an
    object again only when it is read. On a store that reads its messages back
    (:meth:`read_from`), only the records not yet committed are kept; the open takes the ids
    shown from the database's table of disclosed runs (:meth:`take_runs`), and an audit reads
    the committed records from the database: those that may name one message in one read, the
    others a page at a time."""

    def __init__(self) -> None:
        self._record_ids = array("q")
        self._ats = array("d")
        self._whos = array("I")  # index into ``_who`` of each record's (namespace, reader, branch, via)
        self._who: list[tuple[str, str | None, str, str]] = []
        self._who_index: dict[tuple[str, str | None, str, str], int] = {}
        self._runs = array("q")  # every record's runs, one after the other
        self._run_ends = array("q")  # where each record's runs end in ``_runs``
        self._seen: dict[tuple[str, str | None, str], IdRuns] = {}
        self._seen_runs = 0  # the runs of every ``_seen`` together (``_see``)
        # Where committed records are read (``read_from``), and the newest record committed.
        self._page: Callable[[int, int], Sequence[tuple[int, str]]] | None = None
        self._holding: Callable[[int], Sequence[tuple[int, str]]] | None = None
        self._committed_to = 0
        # How many rows the database's table of disclosed runs holds, as far as this log knows,
        # and how many it held when a merge of them last failed.
        self._table_runs = 0
        self._failed_at = -COMPACTION_SLACK
        #: Rows of that table the open read (``take_runs``), and the records read back from the
        #: database for audits.
        self.runs_read_at_open = 0
        self.records_read = 0

    def __len__(self) -> int:
        """How many disclosure records it keeps in memory."""
        return len(self._record_ids)

    # -- where the records are ----------------------------------------------------------------

    def read_from(
        self, page: Callable[[int, int], Sequence[tuple[int, str]]], holding: Callable[[int], Sequence[tuple[int, str]]]
    ) -> None:
        """Before any record is taken in: the committed records stay in the database, read by
        ``page(after, limit)`` (``(id, body)`` of the first ``limit`` disclosure records with ids
        above ``after``, in id order) when an audit asks, and by ``holding(message_id)`` (those
        some run of which may hold the id, at least, in id order) when an audit of one message
        does."""
        self._page, self._holding = page, holding

    def take_runs(self, rows: Iterable[Sequence[object]], committed_to: int) -> None:
        """At an open that reads the messages back: the rows of the table of disclosed runs
        (``(namespace, reader, via, first, stop)``), every record up to ``committed_to`` being
        committed. A row that is not one a store writes is left out."""
        self._committed_to = max(self._committed_to, committed_to)
        for row in rows:
            self._table_runs += 1
            self.runs_read_at_open += 1
            run = _run_of(row)
            if run is not None:
                namespace, reader, via, first, stop = run
                self._see((namespace, reader, via), ((first, stop - first),))

    def committed(self, record_id: int) -> None:
        """Every record up to ``record_id`` is committed: on a store that reads them back, they
        leave memory."""
        self._committed_to = max(self._committed_to, record_id)
        if self._page is None or not self._record_ids or self._record_ids[0] > record_id:
            return
        count = bisect_right(self._record_ids, record_id)
        cut = self._run_ends[count - 1]
        del self._record_ids[:count], self._ats[:count], self._whos[:count], self._runs[:cut]
        self._run_ends = array("q", (end - cut for end in self._run_ends[count:]))

    def compaction_due(self) -> bool:
        """Whether the table of disclosed runs holds more than twice its runs merged, plus
        :data:`COMPACTION_SLACK` (as far as this log knows), and :data:`COMPACTION_SLACK` more
        than when a merge last failed."""
        if self._table_runs <= self._failed_at + COMPACTION_SLACK:
            return False
        return self._table_runs > 2 * self._seen_runs + COMPACTION_SLACK

    def compacted(self, deleted: int, written: int) -> None:
        """A merge of the table of disclosed runs deleted ``deleted`` rows and wrote ``written``."""
        self._table_runs += written - deleted

    def compaction_failed(self) -> None:
        """A merge of the table of disclosed runs failed: the next is due once the table grew
        by :data:`COMPACTION_SLACK` rows."""
        self._failed_at = self._table_runs

    # -- taking records in --------------------------------------------------------------------

    def _see(self, who: tuple[str, str | None, str], runs: Iterable[tuple[int, int]]) -> None:
        """``who`` was shown the ids of ``runs`` (``(first, count)`` each)."""
        seen = self._seen.get(who)
        if seen is None:
            seen = self._seen[who] = IdRuns()
        before = len(seen)
        for first, count in runs:
            seen.add(first, count)
        self._seen_runs += len(seen) - before

    def new_runs(self, namespace: str, reader: str | None, via: str, message_ids: Iterable[str]) -> list[tuple[int, int]]:
        """The ids among ``message_ids`` not disclosed to ``reader`` of ``namespace`` through
        ``via`` before, each once, as ``(first, count)`` runs in order. Costs the runs of the ids
        given (a summary's :class:`~asides.MessageIds` is a few whatever it covers), not their
        number."""
        seen = self._seen.get((namespace, reader, via))
        given = numbered_runs(message_ids)
        if seen is None:
            return given
        return [run for first, count in given for run in seen.missing(first, count)]

    def add(self, record_id: int, body: str) -> bool:
        """Take a disclosure record in (written here, or replayed); whether it could be read."""
        record = _parse(record_id, body)
        if record is None:
            return False
        runs = record.runs
        self._table_runs += len(runs) // 2  # the rows the database's triggers make of it
        self._see((record.namespace, record.reader, record.via), zip(runs[::2], runs[1::2], strict=True))
        if self._page is not None and record_id <= self._committed_to:
            return True  # committed: read back when asked
        who = (record.namespace, record.reader, record.branch, record.via)
        found = self._who_index.get(who)
        if found is None:
            found = self._who_index[who] = len(self._who)
            self._who.append(who)
        self._record_ids.append(record_id)
        self._ats.append(record.at)
        self._whos.append(found)
        self._runs.extend(runs)
        self._run_ends.append(len(self._runs))
        return True

    # -- reading them -------------------------------------------------------------------------

    def _record(self, index: int) -> _Record:
        namespace, reader, branch, via = self._who[self._whos[index]]
        runs = tuple(self._runs[self._runs_start(index) : self._run_ends[index]])
        return _Record(self._record_ids[index], namespace, reader, branch, via, self._ats[index], runs)

    def _runs_start(self, index: int) -> int:
        return self._run_ends[index - 1] if index else 0

    def _read_back(self) -> Iterator[_Record]:
        """On a store that reads them back, the committed records, in record order, read from the
        database a page at a time (every kept record is newer); otherwise nothing."""
        if self._page is None:
            return
        through, after = self._committed_to, 0
        while after < through:
            rows = self._page(after, AUDIT_PAGE)
            self.records_read += len(rows)
            for record_id, body in rows:
                if record_id > through:
                    return
                record = _parse(record_id, body) if type(body) is str else None
                if record is not None:
                    yield record
            if len(rows) < AUDIT_PAGE:
                return
            after = rows[-1][0]

    def _all(self) -> Iterator[_Record]:
        yield from self._read_back()
        for index in range(len(self._record_ids)):
            yield self._record(index)

    def records(self) -> tuple[DisclosureRecord, ...]:
        """Every disclosure record as written, in record order (what ``asides audit --export``
        writes)."""
        return tuple(
            DisclosureRecord(r.record_id, r.namespace, r.reader, r.branch, r.via, r.at, tuple(str(i) for i in r.ids()))
            for r in self._all()
        )

    def for_message(self, message_id: str) -> tuple[Disclosure, ...]:
        """Every disclosure of one message, oldest first."""
        if not (message_id.isascii() and message_id.isdigit()):
            return ()
        value = int(message_id)
        found: list[Disclosure] = []
        if self._holding is not None and value < 2**62:  # no run reaches further
            through = self._committed_to
            rows = self._holding(value)
            self.records_read += len(rows)
            read = (_parse(i, body) for i, body in rows if i <= through and type(body) is str)
            found.extend(r.disclosures(value) for r in read if r is not None and r.holds(value))
        runs, ends = self._runs, self._run_ends
        found.extend(  # an object made only for a kept record that holds it
            self._record(i).disclosures(value)
            for i in range(len(self._record_ids))
            if _runs_hold(runs, self._runs_start(i), ends[i], value)
        )
        return tuple(found)

    def for_reader(self, reader: str | None) -> tuple[Disclosure, ...]:
        """Everything ``reader`` was shown, oldest first (one disclosure per message and way)."""
        hers = {i for i, who in enumerate(self._who) if who[1] == reader}
        kept = (self._record(i) for i in range(len(self._record_ids)) if self._whos[i] in hers)
        return tuple(r.disclosures(value) for r in chain((r for r in self._read_back() if r.reader == reader), kept) for value in r.ids())
