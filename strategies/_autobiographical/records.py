"""The autobiographical strategy's records and the memory derived from them.

Records are small JSON values under ``<kind>/...`` in the namespace's state on a branch, each
written once (attempt counts aside):

* ``<kind>/chunk/<first message id>``: ``{"id", "message_runs", "first_sequence", "last_sequence"}``
* ``<kind>/summary/<id>``: ``{"id", "level", "text", "message_runs", "first_sequence",
  "last_sequence"}`` plus ``"chunk"`` (level 1) or ``"children"`` (level 2 and above)

``message_runs`` names the messages a record covers as runs of consecutive ids, ``[[first, count],
...]`` (``store/_message_ids.py``), so a record's size follows the gaps in what it covers, never
how much it covers; a record of ids that are not numbers, or one written before runs were,
lists them in ``message_ids`` instead, and both are read.
* ``<kind>/attempts/<unit key>``: ``{"rejections", "failed", "members"}`` and ``"reason"`` (why
  the newest answer was rejected)
* ``<kind>/head-start``: the sequence of the newest ``[Topic Transition]`` this namespace wrote
* ``<kind>/outline``: what the memory held when it was written (:class:`Outline`), so that an open
  reads the frontier and what was written after the outline instead of every record; written,
  now and then, as the first record of a unit's write. Derived data: an open that cannot trust it
  (missing, malformed, a record it names erased since, a record it does not account for) reads
  every record.

The store counts the summaries an erasure invalidates by :func:`is_summary_key`, which this
module hands it (``store._model.count_summaries_by``) when it is imported, as every import of
asides's strategies does.

Everything else (which messages chunks own, parents, roots, queue) is derived here, in memory,
in O(records) whatever the records cover: ownership is a set of id runs. A malformed record
is reported once and read fail-closed: a broken chunk owns nothing; a broken summary is neither
rendered nor read, so what it covered renders raw and its chunk is queued again. Of the summaries'
texts, a memory loaded from a store holds the frontier's alone (the roots, which a compile shows,
and the summaries they merged, which a merge of them shows) and reads any other when asked for.

The summary counter is not a record of its own: the next ``n`` is one more than the highest
``n`` among this namespace's summary records on the branch (the same value a counter record
would hold, without a second write per summary).
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from ...store._key_numbers import key_number
from ...store._message_ids import IdRuns, MessageIds, as_message_ids, ids_from_record
from ...store._model import count_summaries_by
from .._capabilities import RecordedSummary, RecordsReport
from .._capabilities import Summary as Summary  # its home; imported here by the autobiographical modules

__all__ = [
    "Summary",
    "SummaryRecord",
    "Chunk",
    "Attempts",
    "Memory",
    "Outline",
    "describe_records",
    "is_summary_key",
    "listing_order",
    "load_order",
    "summary_n",
]

log = logging.getLogger("asides.strategies")

_SUMMARY_ID = re.compile(r"^L([1-9][0-9]*)-([0-9]+)$")
#: How many records a load decodes at once.
LOAD_PAGE = 900


def is_summary_key(key: str) -> bool:
    """Whether a state key holds a summary record (``<kind>/summary/<id>``, after its namespace,
    or without it)."""
    return "/summary/" in key


count_summaries_by(is_summary_key)


def summary_n(summary_id: str) -> int | None:
    found = _SUMMARY_ID.match(summary_id)
    return int(found.group(2)) if found else None


@attrs.frozen(slots=True)
class SummaryRecord:
    """A summary record as the strategy holds it: what it covers and links to, and its ``text``,
    or ``None`` when the text is left in the store (:meth:`Memory.read_summaries` reads it)."""

    id: str
    level: int
    message_ids: MessageIds
    first_sequence: int
    last_sequence: int
    text: str | None
    chunk: str | None = None
    children: tuple[str, ...] = ()

    @classmethod
    def of(cls, summary: Summary, *, chunk: str | None = None, children: tuple[str, ...] = ()) -> SummaryRecord:
        """The record of ``summary``, its text held."""
        s = summary
        return cls(s.id, s.level, s.message_ids, s.first_sequence, s.last_sequence, s.text, chunk, children)

    @property
    def n(self) -> int:
        return summary_n(self.id) or 0

    @property
    def summary(self) -> Summary:
        """The summary, for a record that holds its text (as :class:`Memory` keeps its frontier's);
        a record whose text is left in the store is read through :meth:`Memory.read_summaries`
        (``LookupError`` here)."""
        if self.text is None:
            raise LookupError(f"summary {self.id}: its text is left in the store (read it through Memory.read_summaries)")
        return Summary(self.id, self.level, self.text, self.message_ids, self.first_sequence, self.last_sequence)

    def with_text(self, text: str | None) -> SummaryRecord:
        return attrs.evolve(self, text=text)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "level": self.level,
            "text": self.summary.text,
            **self.message_ids.to_record(),
            "first_sequence": self.first_sequence,
            "last_sequence": self.last_sequence,
        }
        if self.chunk is not None:
            out["chunk"] = self.chunk
        else:
            out["children"] = list(self.children)
        return out


@attrs.frozen(slots=True)
class Chunk:
    id: str
    message_ids: MessageIds = attrs.field(converter=as_message_ids)
    first_sequence: int = 0
    last_sequence: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            **self.message_ids.to_record(),
            "first_sequence": self.first_sequence,
            "last_sequence": self.last_sequence,
        }


@attrs.frozen(slots=True)
class Attempts:
    """A unit's rejected answers: how many, whether it has failed, a merge's members, and the
    newest rejection's reason (``""`` in a record written before reasons were kept)."""

    rejections: int = 0
    failed: bool = False
    members: tuple[str, ...] = ()
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {"rejections": self.rejections, "failed": self.failed, "members": list(self.members)}
        if self.reason:
            value["reason"] = self.reason
        return value


@attrs.frozen(slots=True)
class Outline:
    """What a memory held, as of the records written before it: enough to load the frontier
    alone. ``taken`` counts the chunk and summary records the memory had taken in (held, or
    read as none: erased or malformed); ``erasures`` is the store's erasure count the memory was
    loaded at; ``chunks`` the chunks it names, each with its level-1 summary (or ``None``): those
    without a summary, those the roots of level 1 summarise, the newest by last message
    (``newest``, ``(last sequence, id)``) and the newest by first; ``summaries`` the roots and
    the summaries they merged, lowest level first; ``owned`` the ids the chunks own, as
    ``(start, end)`` runs of numbers and ``owned_other`` (any other id); ``chunk_count`` how many
    chunks the memory held."""

    erasures: int
    taken: int
    next_n: int
    chunk_count: int
    owned_count: int
    owned: tuple[tuple[int, int], ...]
    owned_other: tuple[str, ...]
    chunks: tuple[tuple[str, str | None], ...]
    summaries: tuple[str, ...]
    newest: tuple[tuple[int, str], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "erasures": self.erasures,
            "taken": self.taken,
            "next_n": self.next_n,
            "chunk_count": self.chunk_count,
            "owned_count": self.owned_count,
            "owned": [list(run) for run in self.owned],
            "owned_other": list(self.owned_other),
            "chunks": [list(pair) for pair in self.chunks],
            "summaries": list(self.summaries),
            "newest": [list(pair) for pair in self.newest],
        }

    @classmethod
    def from_json(cls, value: object) -> Outline | None:
        """The outline ``value`` holds, or ``None`` for a value of any other shape."""
        if not isinstance(value, dict):
            return None
        counts = [_int(value.get(name)) for name in ("erasures", "taken", "next_n", "chunk_count", "owned_count")]
        owned = _pairs(value.get("owned"), lambda a, b: _int(a) is not None and _int(b) is not None and a < b)
        chunks = _pairs(value.get("chunks"), lambda c, l1: isinstance(c, str) and c != "" and (l1 is None or isinstance(l1, str)))
        newest = _pairs(value.get("newest"), lambda n, c: _int(n) is not None and isinstance(c, str))
        other, summaries = _strings(value.get("owned_other")), _strings(value.get("summaries"))
        if owned is None or chunks is None or newest is None or other is None or summaries is None:
            return None
        erasures, taken, next_n, chunk_count, owned_count = counts
        if erasures is None or taken is None or next_n is None or chunk_count is None or owned_count is None:
            return None
        return cls(erasures, taken, next_n, chunk_count, owned_count, owned, other, chunks, summaries, newest)


def _pairs(value: object, holds: Callable[[Any, Any], bool]) -> tuple[tuple[Any, Any], ...] | None:
    """The pairs a list of two-item lists holds, each one ``holds``; ``None`` for any other value."""
    if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 and holds(*p) for p in value):
        return None
    return tuple((p[0], p[1]) for p in value)


def _strings(value: object) -> tuple[str, ...] | None:
    """The non-empty strings a list holds (maybe none), or ``None`` for any other value."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        return None
    return tuple(value)


def _ids(value: object) -> tuple[str, ...] | None:
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    return None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def decode_chunk(key_id: str, value: object) -> Chunk | None:
    if not isinstance(value, dict):
        return None
    ids = ids_from_record(value)
    first, last = _int(value.get("first_sequence")), _int(value.get("last_sequence"))
    if ids is None or value.get("id") != key_id or ids[0] != key_id or first is None or last is None:
        return None
    return Chunk(key_id, ids, first, last)


def decode_summary(key_id: str, value: object) -> SummaryRecord | None:
    if not isinstance(value, dict) or value.get("id") != key_id:
        return None
    found = _SUMMARY_ID.match(key_id)
    level = value.get("level")
    if found is None or level != int(found.group(1)):
        return None
    text, ids = value.get("text"), ids_from_record(value)
    first, last = _int(value.get("first_sequence")), _int(value.get("last_sequence"))
    if not isinstance(text, str) or not text or ids is None or first is None or last is None:
        return None
    summary = Summary(key_id, level, text, ids, first, last)
    if level == 1:
        chunk = value.get("chunk")
        if not isinstance(chunk, str) or not chunk:
            return None
        return SummaryRecord.of(summary, chunk=chunk)
    children = _ids(value.get("children"))
    if children is None:
        return None
    return SummaryRecord.of(summary, children=children)


def decode_attempts(value: object) -> Attempts | None:
    if not isinstance(value, dict):
        return None
    rejections, failed = _int(value.get("rejections")), value.get("failed")
    members = value.get("members", [])
    if rejections is None or not isinstance(failed, bool) or not isinstance(members, list):
        return None
    reason = value.get("reason", "")
    return Attempts(rejections, failed, tuple(m for m in members if isinstance(m, str)), reason if isinstance(reason, str) else "")


def describe_records(kind: str, records: Mapping[str, Any]) -> RecordsReport:
    """What a namespace's records under ``<kind>/`` hold (``DescribesRecords.describe_records``):
    each is counted (a summary, a chunk, the head start) or reported unreadable; an attempts
    record and the outline are read and not counted; a record of a shape this module does not write is unreadable."""
    summaries: list[RecordedSummary] = []
    chunks = 0
    head_start: int | None = None
    unreadable: list[tuple[str, str]] = []
    for tail in sorted(records):
        value = records[tail]
        rest = tail[len(kind) + 1 :]
        section, _, item = rest.partition("/")
        problem: str | None = None
        if section == "summary" and item:
            record = decode_summary(item, value)
            if record is None:
                problem = "not a well-formed summary record"
            else:
                summaries.append(RecordedSummary(record.summary, record.children))
        elif section == "chunk" and item:
            if decode_chunk(item, value) is None:
                problem = "not a well-formed chunk record"
            else:
                chunks += 1
        elif section == "attempts" and item:
            if decode_attempts(value) is None:
                problem = "not a well-formed attempts record"
        elif rest == "head-start":
            if _int(value) is None:
                problem = "not a sequence number"
            else:
                head_start = value
        elif rest == "outline":
            if value is not None and Outline.from_json(value) is None:
                problem = "not a well-formed outline record"
        else:
            problem = f"a {kind} record asides does not know"
        if problem is not None:
            unreadable.append((tail, problem))
    return RecordsReport(summaries=tuple(summaries), chunks=chunks, head_start=head_start, unreadable=tuple(unreadable))


class Memory:
    """What a namespace's records say, in memory, with the derived links."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.chunks: dict[str, Chunk] = {}
        #: The ids the chunks own, as runs (numbers) and as they are (any other id).
        self._owned_runs = IdRuns()
        self._owned_other: set[str] = set()
        #: How many messages the chunks own, all together.
        self.owned_count = 0
        #: How many chunks it holds (a memory loaded from an outline holds some of them).
        self.chunk_count = 0
        #: How many chunk and summary records it took in, held or read as none (erased, malformed).
        self.taken = 0
        #: Whether it holds the frontier's records alone (loaded from an outline, or let go of
        #: the others when it wrote one: the chunks and summaries :class:`Outline` names, and
        #: every one written after it): a read of any other record reads it (``record_reader``).
        self.partial = False
        self.order: list[str] = []  # chunk ids by first sequence
        self.by_last: list[tuple[int, str]] = []  # (last sequence, chunk id), ascending
        self._loading = False
        self._unsorted = False
        self.summaries: dict[str, SummaryRecord] = {}
        self.l1_of: dict[str, str] = {}
        self.parent: dict[str, str] = {}
        self.attempts: dict[str, Attempts] = {}
        self.head_start: int | None = None
        self.next_n = 1
        #: Counts the chunks and summaries taken in; whatever adds or removes one must count it
        #: (a compile's kept render is valid only while this stays the same).
        self.changes = 0
        self._reported: set[str] = set()
        #: ``(relative key, problem)`` -> None; reports a malformed record (once, with its id).
        self.reporter: Callable[[str, str], None] | None = None
        #: Reads summaries' texts from the store: ``{id: text}`` for the ids whose record it can
        #: read. With one, the memory holds the texts of the frontier alone (the summaries no
        #: summary merged, and the ones they merged, which a merge of them shows) and reads the
        #: others when asked for (:meth:`read_summaries`); without one, every text is held.
        self.text_reader: Callable[[Sequence[str]], Mapping[str, str]] | None = None
        #: ``(summary ids, words)`` -> those ids whose records may hold every word (a superset),
        #: narrowed by the store without reading the texts it leaves out; ``None``: all of them.
        self.text_filter: Callable[[Sequence[str], Sequence[str]], Iterable[str]] | None = None
        #: ``words`` -> the ids of the summary records that may hold every word (a superset),
        #: found by the store's search index without listing the ids; ``None`` when the store
        #: cannot say so (the ids are then listed and narrowed by ``text_filter``).
        self.text_finder: Callable[[Sequence[str]], Sequence[str] | None] | None = None
        #: For a memory loaded from an outline (``partial``): reads whole summary records (``{id:
        #: record}`` for the ids whose record it can read), and lists the ids of every summary
        #: record in the store, so that a read of a summary it does not hold reads that one.
        self.record_reader: Callable[[Sequence[str]], Mapping[str, SummaryRecord]] | None = None
        self.summary_ids: Callable[[], Iterable[str]] | None = None

    # -- loading -----------------------------------------------------------------------------

    def _report(self, key: str, what: str) -> None:
        if self.reporter is not None:
            self.reporter(key, what)
        elif key not in self._reported:
            self._reported.add(key)
            log.warning("record %s is malformed (%s); read fail-closed", key, what)

    def load(self, items: Mapping[str, Any]) -> None:
        """Load every record (relative keys, e.g. ``autobiographical/chunk/12``)."""
        self.load_from(items, lambda keys: items)

    def load_from(self, keys: Iterable[str], read: Callable[[Sequence[str]], Mapping[str, Any]]) -> None:
        """Load the records under ``keys`` (relative), their values read by ``read`` (``{key:
        value}`` for a page of keys; a key it leaves out has no record) a page at a time, so that
        at most a page of values is decoded at once; then read the frontier's texts."""
        ordered = sorted(keys, key=load_order)
        self._loading = True
        try:
            for first in range(0, len(ordered), LOAD_PAGE):
                page = ordered[first : first + LOAD_PAGE]
                values = read(page)
                for key in page:
                    if key not in values:
                        continue
                    self.apply(key, values[key])
        finally:
            self._loading = False
        if self._unsorted:
            self._resort()
        self._hold_frontier_texts()

    def outline(self, erasures: int, newest: int) -> Outline:
        """What it holds, for an open to load the frontier alone (:class:`Outline`), as loaded at
        ``erasures`` erasures; ``newest``: how many of the newest chunks by last message to name."""
        roots = sorted(self.roots(), key=lambda r: (r.level, r.n))
        summaries = [c for r in roots for c in r.children if c in self.summaries] + [r.id for r in roots]
        summaries.sort(key=lambda sid: (self.summaries[sid].level, self.summaries[sid].n))
        newest_pairs = self.by_last[-newest:] if newest else []
        named = {c: None for c in self.chunks if c not in self.l1_of}
        named.update((r.chunk, None) for r in roots if r.chunk is not None)
        named.update((c, None) for _last, c in newest_pairs)
        if self.order:
            named[self.order[-1]] = None
        return Outline(
            erasures=erasures,
            taken=self.taken,
            next_n=self.next_n,
            chunk_count=self.chunk_count,
            owned_count=self.owned_count,
            owned=tuple(self._owned_runs.runs()),
            owned_other=tuple(sorted(self._owned_other)),
            chunks=tuple((c, self.l1_of.get(c)) for c in named),
            summaries=tuple(summaries),
            newest=tuple(newest_pairs),
        )

    def restore(self, outline: Outline, values: Mapping[str, Any]) -> bool:
        """Load the records ``outline`` names, their values in ``values`` (relative keys), into
        this empty memory; ``False`` (the memory then unusable) when one of them is missing or
        does not read as the outline says."""
        prefix = self.kind + "/"
        for chunk_id, l1 in outline.chunks:
            chunk = decode_chunk(chunk_id, values.get(f"{prefix}chunk/{chunk_id}"))
            if chunk is None:
                return False
            self.chunks[chunk_id] = chunk
            self.order.append(chunk_id)
            if l1 is not None:
                self.l1_of[chunk_id] = l1
        self.order.sort(key=lambda c: self.chunks[c].first_sequence)
        for sid in outline.summaries:
            record = decode_summary(sid, values.get(f"{prefix}summary/{sid}"))
            if record is None or sid in self.summaries:
                return False
            if record.chunk is not None:
                if self.l1_of.setdefault(record.chunk, sid) != sid:
                    return False
            self.summaries[sid] = record
            for child in record.children:
                if child in self.summaries:
                    self.parent[child] = sid
        for record in self.roots():  # a root is shown and merged: what it covers must be here
            if record.chunk is not None and record.chunk not in self.chunks:
                return False
            if any(c not in self.summaries for c in record.children):
                return False
        for start, end in outline.owned:
            self._owned_runs.add(start, end - start)
        self._owned_other.update(outline.owned_other)
        self.by_last = sorted(outline.newest)
        if any(c not in self.chunks for _last, c in self.by_last):
            return False
        self.owned_count = outline.owned_count
        self.chunk_count = outline.chunk_count
        self.taken = outline.taken
        self.next_n = outline.next_n
        self.partial = True
        self.changes += 1
        return True

    def bridge(self, adjacent: Callable[[int, int], bool]) -> int:
        """Fill each gap between two runs of the ids the chunks own for which ``adjacent(last id
        before it, first id after it)`` says their messages stand side by side in the view (no
        message of the view takes an id between), so that the runs, and an outline's, are a run
        each stretch of the view the chunks own, not a run each chunk (a live host writes
        records between its messages). Then :meth:`owns` answers as before for the messages of
        a view in the order written alone (an edit may bring a message into the view between
        them): the memory is partial, and a load of every record reads the runs exactly.
        Returns how many gaps it filled."""
        runs = list(self._owned_runs.runs())
        filled = 0
        for (_start, end), (start, _end) in zip(runs, runs[1:], strict=False):
            if adjacent(end - 1, start):
                self._owned_runs.add(end, start - end)
                filled += 1
        if filled:
            self.partial = True
        return filled

    def compact(self, newest: int) -> None:
        """Hold the records an outline of it would name (``newest``: how many of the newest chunks
        by last message), and let the others go, as a memory loaded from that outline holds
        them: it reads any other when asked for (``record_reader``). A memory that cannot read
        records back keeps every one. What it answers does not change."""
        if self.record_reader is None or self.text_reader is None:
            return
        outline = self.outline(0, newest)
        kept_chunks = {chunk_id for chunk_id, _l1 in outline.chunks}
        kept = set(outline.summaries)
        if len(kept_chunks) == len(self.chunks) and len(kept) == len(self.summaries):
            return
        self.chunks = {c: chunk for c, chunk in self.chunks.items() if c in kept_chunks}
        self.order = [c for c in self.order if c in kept_chunks]
        self.summaries = {s: record for s, record in self.summaries.items() if s in kept}
        self.l1_of = {c: s for c, s in self.l1_of.items() if c in kept_chunks or s in kept}
        self.parent = {c: p for c, p in self.parent.items() if c in kept and p in kept}
        self.by_last = list(outline.newest)
        self.partial = True
        self.changes += 1

    def _frontier(self) -> list[str]:
        """The summaries whose texts the memory holds: every root and every summary a root merged."""
        found = []
        for record in self.roots():
            found.append(record.id)
            found.extend(c for c in record.children if c in self.summaries)
        return found

    def _hold_frontier_texts(self) -> None:
        if self.text_reader is None:
            return
        wanted = [sid for sid in self._frontier() if self.summaries[sid].text is None]
        if not wanted:
            return
        texts = self.text_reader(wanted)
        for sid in wanted:
            text = texts.get(sid)
            if text is None:  # cannot be: the load just read the record, and nothing wrote since
                raise LookupError(f"summary {sid}: its text could not be read back from the store")
            self.summaries[sid] = self.summaries[sid].with_text(text)

    def _resort(self) -> None:
        self.order.sort(key=lambda c: self.chunks[c].first_sequence)
        self._unsorted = False

    def apply(self, key: str, value: Any) -> None:
        """Take one record into memory (loading, or catching up with another manager's write)."""
        prefix = self.kind + "/"
        if not key.startswith(prefix):
            return
        rest = key[len(prefix) :]
        if value is None:  # erased with a message it was made from (store/_erasure.py): no record
            if rest.startswith(("chunk/", "summary/")):
                self.taken += 1
            n = summary_n(rest[len("summary/") :]) if rest.startswith("summary/") else None
            if n is not None:
                self.next_n = max(self.next_n, n + 1)  # its id is never used again
            return
        if rest.startswith("chunk/"):
            chunk = decode_chunk(rest[len("chunk/") :], value)
            if chunk is None:
                self._report(key, "not a chunk record")
                self.taken += 1
                return
            self.add_chunk(chunk)
        elif rest.startswith("summary/"):
            record = decode_summary(rest[len("summary/") :], value)
            if record is None:
                self._report(key, "not a summary record")
                self.taken += 1
                n = summary_n(rest[len("summary/") :])
                if n is not None:
                    self.next_n = max(self.next_n, n + 1)
                return
            if self._loading and self.text_reader is not None:
                record = record.with_text(None)  # the frontier's are read once loading is done
            self.add_summary(record)
        elif rest.startswith("attempts/"):
            attempts = decode_attempts(value)
            if attempts is None:
                self._report(key, "not an attempts record")
                return
            self.attempts[rest[len("attempts/") :]] = attempts
        elif rest == "head-start":
            if _int(value) is None:
                self._report(key, "not a sequence")
                return
            self.head_start = value

    # -- changes -----------------------------------------------------------------------------

    def add_chunk(self, chunk: Chunk) -> None:
        if chunk.id in self.chunks:
            return
        self.taken += 1
        if self._overlaps(chunk.message_ids):
            self._report(f"{self.kind}/chunk/{chunk.id}", "overlaps another chunk")
            return
        self.chunks[chunk.id] = chunk
        self.chunk_count += 1
        self.changes += 1
        self.owned_count += len(chunk.message_ids)
        if chunk.message_ids.numeric:
            for first, count in chunk.message_ids.runs():
                self._owned_runs.add(first, count)
        else:
            self._owned_other.update(chunk.message_ids)
        if not self.by_last or self.by_last[-1] < (chunk.last_sequence, chunk.id):
            self.by_last.append((chunk.last_sequence, chunk.id))
        else:
            bisect.insort(self.by_last, (chunk.last_sequence, chunk.id))
        in_order = not self.order or self.chunks[self.order[-1]].first_sequence < chunk.first_sequence
        self.order.append(chunk.id)
        if not in_order:
            if self._loading:
                self._unsorted = True  # sorted once, when loading is done
            else:
                self._resort()

    def add_summary(self, record: SummaryRecord) -> None:
        if record.id in self.summaries:
            return
        self.taken += 1
        self.next_n = max(self.next_n, record.n + 1)
        if record.level == 1:
            if record.chunk not in self.chunks or record.chunk in self.l1_of:
                self._report(f"{self.kind}/summary/{record.id}", "summarises no chunk of this branch")
                return
            self.summaries[record.id] = record
            self.changes += 1
            self.l1_of[record.chunk] = record.id
        else:
            if any(c not in self.summaries or c in self.parent for c in record.children):
                self._report(f"{self.kind}/summary/{record.id}", "merges summaries this branch does not hold")
                return
            self.summaries[record.id] = record
            self.changes += 1
            for child in record.children:
                self.parent[child] = record.id
                if self.text_reader is not None and not self._loading:
                    for grandchild in self.summaries[child].children:  # no longer of the frontier
                        held = self.summaries.get(grandchild)
                        if held is not None and held.text is not None:
                            self.summaries[grandchild] = held.with_text(None)

    def _overlaps(self, ids: MessageIds) -> bool:
        if ids.numeric and not self._owned_other:
            return any(self._owned_runs.overlaps(first, count) for first, count in ids.runs())
        return any(self.owns(m) for m in ids)

    # -- derived -----------------------------------------------------------------------------

    def owns(self, message_id: str) -> bool:
        """Whether a chunk holds this message."""
        number = key_number(message_id)
        return (number is not None and number in self._owned_runs) or message_id in self._owned_other

    def root_of(self, summary_id: str) -> str:
        while summary_id in self.parent:
            summary_id = self.parent[summary_id]
        return summary_id

    def roots(self) -> Iterable[SummaryRecord]:
        return (r for r in self.summaries.values() if r.id not in self.parent)

    def newest_by_last(self, count: int) -> set[str]:
        """The ``count`` chunks whose last message is newest (the held-back ones)."""
        return {chunk_id for _seq, chunk_id in self.by_last[-count:]} if count else set()

    def failed(self, key: str) -> bool:
        found = self.attempts.get(key)
        return bool(found and found.failed)

    def public(self, summary_id: str) -> Summary | None:
        """The summary with that id, its text read from the store when not held; ``None`` when
        there is none, or its record can no longer be read (erased since)."""
        return self.read_summaries([summary_id]).get(summary_id)

    def summaries_holding(self, words: Sequence[str]) -> list[Summary]:
        """Every summary that may hold every one of ``words`` (case-folded, as a search's), each
        with its text: those whose texts are held, and of the others those the store says may
        (a superset; a search matches each exactly), by first sequence, level and number. The
        records whose texts it does not hold are found by the store's search index where it can
        (at the cost of those that may match); otherwise a memory loaded from an outline asks
        the store about every summary record it has."""
        matched = self.text_finder(words) if self.text_finder is not None else None
        if matched is not None:
            texts = [sid for sid, record in self.summaries.items() if record.text is not None]
            found = self.read_summaries(list(dict.fromkeys([*texts, *matched])))
            return sorted(found.values(), key=listing_order)
        listed = self.summary_ids() if self.partial and self.summary_ids is not None else self.summaries
        held: list[str] = []
        left: list[str] = []
        for sid in listed:
            record = self.summaries.get(sid)
            (held if record is not None and record.text is not None else left).append(sid)
        if left and self.text_filter is not None:
            left = list(self.text_filter(left, words))
        found = self.read_summaries(held + left)
        return sorted(found.values(), key=listing_order)

    def summaries_in_range(self, start: int | None, end: int | None) -> list[Summary]:
        """Every summary, merged or not, overlapping the sequences [``start``, ``end``] (``None``:
        unbounded), each with its text, in the order of :meth:`read_in_order`; those no longer
        readable (erased since) left out. A memory loaded from an outline walks down from the
        roots that overlap, reading a level of the records it does not hold at once: what it
        reads follows the summaries in the range (and the children of each), never the others.
        A summary's children cover part of what it covers, so one that does not overlap has no
        descendant that does."""

        def overlaps(record: SummaryRecord) -> bool:
            return (end is None or record.first_sequence <= end) and (start is None or record.last_sequence >= start)

        if not self.partial or self.record_reader is None:
            return self.read_in_order(r for r in self.summaries.values() if overlaps(r))
        found: dict[str, SummaryRecord] = {}
        level = [r for r in self.roots() if overlaps(r)]
        while level:
            wanted: list[str] = []
            for record in level:
                found[record.id] = record
                wanted.extend(c for c in record.children if c not in found)
            unheld = [c for c in wanted if c not in self.summaries]
            read = self.record_reader(unheld) if unheld else {}
            level = [r for c in wanted if (r := self.summaries.get(c) or read.get(c)) is not None and overlaps(r)]
        ordered = sorted(found.values(), key=listing_order)
        missing = [r.id for r in ordered if r.text is None]
        texts = self.text_reader(missing) if missing and self.text_reader is not None else {}
        shown = []
        for record in ordered:
            text = record.text if record.text is not None else texts.get(record.id)
            if text is not None:  # else erased since
                shown.append(record.with_text(text).summary)
        return shown

    def read_in_order(self, records: Iterable[SummaryRecord]) -> list[Summary]:
        """These summaries, each with its text, by first sequence, level and number (the order
        every listing of summaries gives); those no longer readable (erased since) left out."""
        ordered = sorted(records, key=listing_order)
        return list(self.read_summaries([r.id for r in ordered]).values())

    def read_summaries(self, summary_ids: Sequence[str]) -> dict[str, Summary]:
        """``{id: summary}`` for these ids, in their order, the texts not held read from the store
        in one read (and, for a memory loaded from an outline, the records it does not hold); an
        id with no summary, or whose record can no longer be read (erased since), is left out."""
        found: dict[str, Summary] = {}
        left: list[str] = []
        unknown: list[str] = []
        for sid in summary_ids:
            record = self.summaries.get(sid)
            if record is None:
                if self.partial:
                    unknown.append(sid)  # not of the frontier: its record is read
                continue
            if record.text is not None:
                found[sid] = record.summary
            else:
                left.append(sid)
        if unknown and self.record_reader is not None:
            found.update((sid, record.summary) for sid, record in self.record_reader(unknown).items())
        if left and self.text_reader is not None:
            texts = self.text_reader(left)
            for sid in left:
                text = texts.get(sid)
                if text is not None:
                    found[sid] = self.summaries[sid].with_text(text).summary
        return {sid: found[sid] for sid in summary_ids if sid in found}  # in the order asked


def listing_order(summary: Summary | SummaryRecord) -> tuple[int, int, int]:
    """The order every listing of summaries gives: by first sequence, level and number."""
    return summary.first_sequence, summary.level, summary_n(summary.id) or 0


def load_order(key: str) -> tuple[int, int, str]:
    """The order records are taken in: chunks before summaries, and a summary after those it merged."""
    # chunks (by first message id) before summaries; summaries by level then n, so children
    # load before parents
    if "/chunk/" in key:
        chunk_id = key.rsplit("/", 1)[1]
        return (0, key_number(chunk_id) or 0, key)
    if is_summary_key(key):
        summary_id = key.rsplit("/", 1)[1]
        found = _SUMMARY_ID.match(summary_id)
        if found:
            return (1, int(found.group(1)) * 10**9 + int(found.group(2)), key)
        return (1, 0, key)
    return (2, 0, key)
