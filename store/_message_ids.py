"""Message ids in order, held as runs of consecutive ids: the provenance of a summary or a chunk.

A summary names every message it covers. Listing them costs memory and record bytes in
proportion to the history it covers (a memory of a year covers most of it); the ids a store
issues are canonical decimal numbers, and the messages a summary covers are mostly consecutive,
so :class:`MessageIds` holds them as runs ``(first, count)``: its size follows how many gaps
there are, never how many ids. Ids that are not canonical numbers are held as they are.

In a record the runs are written ``"message_runs": [[first, count], ...]`` beside no
``"message_ids"`` list; :func:`ids_from_record` reads either, and :func:`record_names` answers
which of some ids a record's runs name without listing them.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any, Final, overload

from .._deprecate import warn_deprecated
from ._key_numbers import key_number

__all__ = ["RUNS_FIELD", "IdRuns", "MessageIds", "as_message_ids", "numbered_runs", "ids_from_record", "record_names"]

#: The field a record holds its provenance in as runs.
RUNS_FIELD: Final = "message_runs"


class MessageIds(Sequence[str]):
    """The ids of some messages, in order, as an immutable sequence of ``str``: ``len()`` costs
    nothing, indexing costs O(log runs) and ``in`` O(runs), iterating makes one string at a time,
    and a slice is a tuple. It equals a tuple or list of the same ids and hashes as that tuple
    does; ``tuple(ids)`` lists them, and ``+`` (a tuple's, kept for what used to be one) warns.
    Built from any iterable of ids; ``MessageIds.concat`` joins several."""

    __slots__ = ("_hash", "_len", "_offsets", "_other", "_starts")

    _starts: array[int]
    _offsets: array[int]
    _other: tuple[str, ...] | None

    def __init__(self, ids: Iterable[str] = ()) -> None:
        listed = ids if isinstance(ids, (list, tuple)) else list(ids)
        numbers = _numbers(listed)
        if numbers is None:
            self._set(None, None, tuple(listed))
            return
        starts, offsets = array("q"), array("q")
        count = len(numbers)
        if count and numbers[-1] - numbers[0] == count - 1 and numbers == array("q", range(numbers[0], numbers[-1] + 1)):
            starts.append(numbers[0])  # consecutive, as most are: one run
            offsets.append(0)
            self._set(starts, offsets, None, count)
            return
        count = 0
        for number in numbers:
            if count and number == starts[-1] + (count - offsets[-1]):
                count += 1
                continue
            starts.append(number)
            offsets.append(count)
            count += 1
        self._set(starts, offsets, None, count)

    def _set(self, starts: array[int] | None, offsets: array[int] | None, other: tuple[str, ...] | None, length: int = 0) -> None:
        self._starts = starts if starts is not None else array("q")
        self._offsets = offsets if offsets is not None else array("q")
        self._other = other
        self._len = len(other) if other is not None else length
        self._hash: int | None = None

    @classmethod
    def from_runs(cls, runs: Iterable[tuple[int, int]]) -> MessageIds:
        """The ids ``first ... first + count - 1`` of each run in turn (each count positive, each
        first non-negative)."""
        ids = cls.__new__(cls)
        starts, offsets = array("q"), array("q")
        total = 0
        for first, count in runs:
            if first < 0 or count <= 0:
                raise ValueError(f"not a run of message ids: ({first}, {count})")
            if total and first == starts[-1] + (total - offsets[-1]):
                total += count
                continue
            starts.append(first)
            offsets.append(total)
            total += count
        ids._set(starts, offsets, None, total)
        return ids

    @classmethod
    def concat(cls, parts: Iterable[Sequence[str]]) -> MessageIds:
        """The ids of ``parts``, one after another."""
        held = [as_message_ids(part) for part in parts]
        if any(part._other is not None for part in held):
            return cls(i for part in held for i in part)
        return cls.from_runs(run for part in held for run in part.runs())

    @classmethod
    def union(cls, parts: Iterable[Iterable[str]]) -> MessageIds:
        """The ids of ``parts``, each once: in id order when every one is a canonical number
        (costing the runs of the parts, not their ids), else in the order they first appear."""
        held = [as_message_ids(part) for part in parts]
        if all(part.numeric for part in held):
            return cls.from_runs(_merged([run for part in held for run in part.runs()]))
        return cls(dict.fromkeys(i for part in held for i in part))

    def runs(self) -> list[tuple[int, int]]:
        """``(first, count)`` for each run, in order; empty when an id is not a canonical number
        (see :meth:`numeric`)."""
        if self._other is not None or not self._starts:
            return []
        ends = [*self._offsets[1:], self._len]
        return [(start, end - offset) for start, offset, end in zip(self._starts, self._offsets, ends, strict=True)]

    @property
    def numeric(self) -> bool:
        """Whether every id is a canonical decimal number (so :meth:`runs` holds them all)."""
        return self._other is None

    def to_record(self) -> dict[str, Any]:
        """The record fields that hold these ids: ``message_runs`` when they are numbers, else the
        ``message_ids`` list."""
        if self._other is not None:
            return {"message_ids": list(self._other)}
        return {RUNS_FIELD: [[first, count] for first, count in self.runs()]}

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._len)))
        if self._other is not None:
            return self._other[index]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("MessageIds index out of range")
        run = bisect_right(self._offsets, index) - 1
        return str(self._starts[run] + index - self._offsets[run])

    def __iter__(self) -> Iterator[str]:
        if self._other is not None:
            yield from self._other
            return
        for first, count in self.runs():
            for number in range(first, first + count):
                yield str(number)

    def __reversed__(self) -> Iterator[str]:
        if self._other is not None:
            yield from reversed(self._other)
            return
        for first, count in reversed(self.runs()):
            for number in range(first + count - 1, first - 1, -1):
                yield str(number)

    def __contains__(self, value: object) -> bool:
        if self._other is not None:
            return value in self._other
        number = key_number(value) if isinstance(value, str) else None
        if number is None:
            return False
        return any(first <= number < first + count for first, count in self.runs())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MessageIds):
            if self._other is not None or other._other is not None:
                return tuple(self) == tuple(other)
            return self._len == other._len and self._starts == other._starts and self._offsets == other._offsets
        if isinstance(other, (tuple, list)):
            return len(other) == self._len and all(a == b for a, b in zip(self, other, strict=False))
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self))
        return self._hash

    def __add__(self, other: Any) -> tuple[str, ...]:
        _warn_added("summary.message_ids + ...", "tuple(summary.message_ids) + ...")
        return tuple(self) + tuple(other)

    def __radd__(self, other: Any) -> tuple[str, ...]:
        _warn_added("... + summary.message_ids", "... + tuple(summary.message_ids)")
        return tuple(other) + tuple(self)

    def __repr__(self) -> str:
        if self._len <= 8:
            return f"MessageIds({tuple(self)!r})"
        return f"MessageIds(<{self._len} ids, {self[0]!r} to {self[-1]!r}, in {max(1, len(self._starts))} runs>)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (MessageIds, (tuple(self),))


class IdRuns:
    """A set of non-negative integers held as sorted, disjoint runs ``[start, end)``: membership
    in O(log runs), and memory in O(runs) whatever the values (a bitmap would cost a bit for every
    value below the largest)."""

    __slots__ = ("_ends", "_starts")

    def __init__(self) -> None:
        # arrays, not lists: 16 bytes a run, where a list's int objects cost about 70
        self._starts = array("q")
        self._ends = array("q")

    def __contains__(self, value: int) -> bool:
        index = bisect_right(self._starts, value) - 1
        return index >= 0 and value < self._ends[index]

    def __len__(self) -> int:
        """How many runs it holds."""
        return len(self._starts)

    def runs(self) -> Iterator[tuple[int, int]]:
        """Each run as ``(start, end)``, in order."""
        return zip(self._starts, self._ends, strict=True)

    def add(self, first: int, count: int) -> None:
        """Add ``first`` ... ``first + count - 1``, merging the runs it meets or touches."""
        if count <= 0:
            return
        end = first + count
        starts, ends = self._starts, self._ends
        low = bisect_left(ends, first)  # the first run that ends at or after ``first``
        high = bisect_right(starts, end)  # past the last run that starts at or before ``end``
        if low == high:
            starts.insert(low, first)
            ends.insert(low, end)
            return
        starts[low:high] = array("q", (min(first, starts[low]),))
        ends[low:high] = array("q", (max(end, ends[high - 1]),))

    def missing(self, first: int, count: int) -> list[tuple[int, int]]:
        """The runs of ``first`` ... ``first + count - 1`` it does not hold, in order."""
        starts, ends = self._starts, self._ends
        out: list[tuple[int, int]] = []
        at, end = first, first + count
        index = max(bisect_right(starts, first) - 1, 0)
        while at < end:
            if index < len(starts) and starts[index] <= at:
                at = max(at, ends[index])  # held up to there
                index += 1
                continue
            stop = min(end, starts[index]) if index < len(starts) else end
            out.append((at, stop - at))
            at = stop
        return out

    def overlaps(self, first: int, count: int) -> bool:
        """Whether any of ``first`` ... ``first + count - 1`` is held."""
        index = bisect_right(self._starts, first + count - 1) - 1
        return count > 0 and index >= 0 and self._ends[index] > first


def _warn_added(thing: str, instead: str) -> None:
    warn_deprecated(thing, "0.2.0", instead=instead, because="a summary's message_ids is a MessageIds, not a tuple", stacklevel=3)


def _numbers(ids: Sequence[object]) -> array[int] | None:
    """``ids`` as the numbers they spell when every one is a canonical decimal number (as
    :func:`~asides.store._key_numbers.key_number` reads one), else ``None``."""
    try:
        numbers = array("q", map(int, ids))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return None
    if numbers and min(numbers) < 0 or list(map(str, numbers)) != list(ids):
        return None  # a sign, a space, a leading zero, other digits, or not a str
    return numbers


def numbered_runs(ids: Iterable[str]) -> list[tuple[int, int]]:
    """The runs of the ids among ``ids`` that are canonical numbers, sorted, merged where they
    meet or overlap: each id once, whatever ``ids`` repeats; costs the runs of a
    :class:`MessageIds` (its gaps), or one step an id for any other iterable."""
    held = as_message_ids(ids)
    return _merged(held.runs() if held.numeric else [(n, 1) for n in map(_number, held) if n is not None])


def _merged(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``(first, count)`` runs sorted, merged where they meet or overlap."""
    merged: list[tuple[int, int]] = []
    for first, count in sorted(pairs):
        if merged and first <= merged[-1][0] + merged[-1][1]:
            start, length = merged[-1]
            merged[-1] = (start, max(length, first + count - start))
        else:
            merged.append((first, count))
    return merged


def _number(message_id: str) -> int | None:
    return key_number(message_id) if isinstance(message_id, str) else None


def as_message_ids(value: Iterable[str]) -> MessageIds:
    """``value`` as :class:`MessageIds` (itself when it is one)."""
    return value if isinstance(value, MessageIds) else MessageIds(value)


def ids_from_record(value: dict[str, Any]) -> MessageIds | None:
    """The ids a record's provenance names: its ``message_runs`` (pairs of non-negative ``first``
    and positive ``count``) or else its ``message_ids`` (non-empty strings); ``None`` when neither
    is well formed or they name no id."""
    runs = value.get(RUNS_FIELD)
    if runs is not None:
        if not isinstance(runs, list) or not runs:
            return None
        pairs: list[tuple[int, int]] = []
        for run in runs:
            if not (isinstance(run, list) and len(run) == 2 and all(_count(v) for v in run) and run[1] > 0):
                return None
            pairs.append((run[0], run[1]))
        return MessageIds.from_runs(pairs)
    ids = value.get("message_ids")
    if not isinstance(ids, list) or not ids:
        return None
    listed = MessageIds(ids)
    return listed if listed.numeric or all(isinstance(v, str) and v for v in ids) else None


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def record_names(runs: object, ids: Collection[str]) -> set[str]:
    """Which of ``ids`` a record's ``message_runs`` value names (empty when it is not a list of
    runs); costs the fewer of the ids and the runs' ids, run by run."""
    found: set[str] = set()
    if not isinstance(runs, list):
        return found
    for run in runs:
        if not (isinstance(run, list) and len(run) == 2 and all(_count(v) for v in run)):
            continue
        first, count = run
        if count <= len(ids):
            found.update(m for m in map(str, range(first, first + count)) if m in ids)
        else:
            found.update(m for m in ids if (n := key_number(m)) is not None and first <= n < first + count)
    return found
