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
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Final

import attrs

from ._message_ids import IdRuns, numbered_runs

__all__ = ["DISCLOSURE", "VIAS", "Disclosure", "DisclosureLog", "DisclosureRecord", "IdRuns", "disclosure_body"]

#: The kind of a disclosure record.
DISCLOSURE: Final = "disclosure"
#: The ways a message is disclosed.
VIAS: Final = ("compile", "preview", "compression", "search")


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


class DisclosureLog:
    """Every disclosure record of a store, in memory, with the ids each ``(namespace, reader,
    via)`` was shown.

    A record costs a few dozen bytes, not an object's few hundred: its id, time, the index of
    its ``(namespace, reader, branch, via)`` among the distinct ones, and its runs are kept in
    arrays, and a record is made an object again only when it is read."""

    def __init__(self) -> None:
        self._record_ids = array("q")
        self._ats = array("d")
        self._whos = array("I")  # index into ``_who`` of each record's (namespace, reader, branch, via)
        self._who: list[tuple[str, str | None, str, str]] = []
        self._who_index: dict[tuple[str, str | None, str, str], int] = {}
        self._runs = array("q")  # every record's runs, one after the other
        self._run_ends = array("q")  # where each record's runs end in ``_runs``
        self._seen: dict[tuple[str, str | None, str], IdRuns] = {}

    def __len__(self) -> int:
        return len(self._record_ids)

    def _record(self, index: int) -> _Record:
        namespace, reader, branch, via = self._who[self._whos[index]]
        runs = tuple(self._runs[self._runs_start(index) : self._run_ends[index]])
        return _Record(self._record_ids[index], namespace, reader, branch, via, self._ats[index], runs)

    def _runs_start(self, index: int) -> int:
        return self._run_ends[index - 1] if index else 0

    def _all(self) -> Iterator[_Record]:
        return (self._record(i) for i in range(len(self._record_ids)))

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
        try:
            value = json.loads(body)
            namespace, reader, branch, via, at, runs = (value[k] for k in ("ns", "r", "b", "v", "at", "ids"))
        except (ValueError, KeyError, TypeError):
            return False
        if (
            not isinstance(namespace, str)
            or not (reader is None or isinstance(reader, str))
            or not isinstance(branch, str)
            or via not in VIAS
            or not isinstance(at, (int, float))
            or not isinstance(runs, list)
            or not all(type(r) is int and 0 <= r < 2**62 for r in runs)  # a run's end fits a 64-bit array
        ):
            return False
        who = (namespace, reader, branch, via)
        found = self._who_index.get(who)
        if found is None:
            found = self._who_index[who] = len(self._who)
            self._who.append(who)
        self._record_ids.append(record_id)
        self._ats.append(float(at))
        self._whos.append(found)
        self._runs.extend(runs[: len(runs) // 2 * 2])
        self._run_ends.append(len(self._runs))
        seen = self._seen.get((namespace, reader, via))
        if seen is None:
            seen = self._seen[(namespace, reader, via)] = IdRuns()
        for i in range(0, len(runs) - 1, 2):
            seen.add(runs[i], runs[i + 1])
        return True

    def records(self) -> tuple[DisclosureRecord, ...]:
        """Every disclosure record as written, in record order (what ``asides audit --export``
        writes)."""
        return tuple(
            DisclosureRecord(r.record_id, r.namespace, r.reader, r.branch, r.via, r.at, tuple(str(i) for i in r.ids()))
            for r in self._all()
        )

    def for_message(self, message_id: str) -> tuple[Disclosure, ...]:
        """Every disclosure of one message, oldest first."""
        if not message_id.isdigit():
            return ()
        value = int(message_id)
        runs, ends = self._runs, self._run_ends
        return tuple(  # an object made only for a record that holds it
            self._record(i).disclosures(value)
            for i in range(len(self._record_ids))
            if _runs_hold(runs, self._runs_start(i), ends[i], value)
        )

    def for_reader(self, reader: str | None) -> tuple[Disclosure, ...]:
        """Everything ``reader`` was shown, oldest first (one disclosure per message and way)."""
        hers = {i for i, who in enumerate(self._who) if who[1] == reader}
        return tuple(
            r.disclosures(value)
            for r in (self._record(i) for i in range(len(self._record_ids)) if self._whos[i] in hers)
            for value in r.ids()
        )
