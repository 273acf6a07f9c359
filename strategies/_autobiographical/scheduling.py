"""Which unit of work comes next, and what is waiting, in words.

Work comes in units, one at a time per namespace and branch, in this order of priority:

1. :class:`CloseChunks`: record every chunk the frontier walk has cut (a *close*);
2. :class:`CompressChunk`: a level-1 summary of the oldest queued chunk (closed, no summary, not
   held back, not failed);
3. :class:`MergeSummaries` (with ``hierarchical``): the oldest run of ``merge_threshold``
   adjacent summaries of one level into one summary of the next level, lowest level first;
4. :class:`CloseTrailing` (Knowledge only): close the trailing open chunk when nothing else waits.

A unit whose answers were rejected ``l1_attempt_limit`` (``merge_attempt_limit``) times has
failed: it is never scheduled again; :func:`describe_failed` says which failed, and why.

Texts name messages by their place in the reader's view, counted from 1 (``messages 470–476``),
so a person can find them in ``asides inspect`` or a compile.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

import attrs

from ...store._message_ids import MessageIds
from ...store._views import MessageView
from .tracking import Tracker

__all__ = [
    "CloseChunks",
    "CloseTrailing",
    "CompressChunk",
    "MergeSummaries",
    "Unit",
    "ScheduleOptions",
    "queued",
    "pending_chunks",
    "merge_group",
    "pending_merges",
    "next_unit",
    "describe_waiting",
    "failed_units",
    "describe_failed",
    "where",
]


@attrs.frozen(slots=True)
class CloseChunks:
    """Record every chunk the frontier walk has cut."""


@attrs.frozen(slots=True)
class CloseTrailing:
    """Close the trailing open chunk as it stands (Knowledge)."""


@attrs.frozen(slots=True)
class CompressChunk:
    """Write the level-1 summary of one chunk."""

    chunk_id: str


@attrs.frozen(slots=True)
class MergeSummaries:
    """Merge a run of level-``level`` summaries into one of level ``level + 1``."""

    level: int
    group: tuple[str, ...]


Unit = CloseChunks | CompressChunk | MergeSummaries | CloseTrailing


class ScheduleOptions(Protocol):
    """The strategy options scheduling reads."""

    holdback_chunks: int
    merge_threshold: int
    hierarchical: bool
    closes_trailing_chunk: bool


def queued(tracker: Tracker, holdback: int) -> list[str]:
    """Chunks waiting for a level-1 summary, oldest first: closed, unsummarised, not failed, and
    not among the ``holdback`` newest chunks."""
    memory = tracker.memory
    held = memory.newest_by_last(holdback)
    waiting = [c for c in tracker.unsummarised if c not in held and not memory.failed(c)]
    waiting.sort(key=lambda c: memory.chunks[c].first_sequence)
    return waiting


def pending_chunks(tracker: Tracker, holdback: int) -> int:
    """Chunks queued for a level-1 summary plus chunks the walk has cut but not recorded."""
    return len(queued(tracker, holdback)) + len(tracker.walk.closable)


def merge_group(tracker: Tracker, level: int, threshold: int) -> list[str] | None:
    """The first run of ``threshold`` adjacent level-``level`` summaries nobody merged yet, or
    ``None``. Adjacent means each one's first chunk directly follows the previous one's last chunk
    among all closed chunks; members of a failed merge at this level never count."""
    failed = tracker.failed_members.get(level, set())
    candidates = {s for s in tracker.roots.get(level, ()) if s not in failed}
    if len(candidates) < threshold:
        return None
    run: list[str] = []
    for item, is_summary in tracker.frontier_in_order():
        if is_summary and item in candidates:
            run.append(item)
            if len(run) >= threshold:
                return run
        else:
            run = []
    return None


def pending_merges(tracker: Tracker, options: ScheduleOptions) -> Iterator[MergeSummaries]:
    """The merge due at each level, lowest level first (none without ``hierarchical``)."""
    if not options.hierarchical:
        return
    for level in tracker.levels():
        group = merge_group(tracker, level, options.merge_threshold)
        if group is not None:
            yield MergeSummaries(level, tuple(group))


def next_unit(tracker: Tracker, options: ScheduleOptions) -> Unit | None:
    """The unit to run next, or ``None`` when nothing waits (see the module docstring)."""
    if tracker.walk.closable:
        return CloseChunks()
    waiting = queued(tracker, options.holdback_chunks)
    if waiting:
        return CompressChunk(waiting[0])
    merge = next(pending_merges(tracker, options), None)
    if merge is not None:
        return merge
    if options.closes_trailing_chunk and tracker.walk.trailing_closable():
        return CloseTrailing()
    return None


# -- in words ------------------------------------------------------------------------------------


def where(view: MessageView | None, message_ids: Sequence[str]) -> str:
    """``messages 470–476``: the first and last of these messages that the view holds, counted
    from 1 in the view; ``message 12`` for one; ``messages no longer in view`` for none."""
    if view is None or not message_ids:
        return "messages no longer in view"
    first = next((p for p in map(view.position_of, message_ids) if p is not None), None)
    if first is None:
        return "messages no longer in view"
    last = next(p for p in map(view.position_of, reversed(message_ids)) if p is not None)
    return f"message {first + 1}" if first == last else f"messages {first + 1}–{last + 1}"


def _and_later(count: int) -> str:
    return "" if count == 0 else f" and {count} later stretch{'es' if count != 1 else ''}"


def _stretches_to_compress(tracker: Tracker, holdback: int) -> tuple[list[Sequence[str]], list[Sequence[str]]]:
    """The stretches that will be summarised once the pending closes are done, oldest first, and
    the ones closing but then held back."""
    memory = tracker.memory
    closing = [(c[-1].sequence, c[0].id, tuple(m.id for m in c), c[0].sequence) for c in tracker.walk.closable]
    newest = sorted([(last, chunk_id) for last, chunk_id in memory.by_last[-holdback:]] + [(c[0], c[1]) for c in closing])
    held = {chunk_id for _last, chunk_id in newest[len(newest) - holdback :]} if holdback else set()
    closed = [
        (memory.chunks[c].first_sequence, memory.chunks[c].message_ids)
        for c in tracker.unsummarised
        if c not in held and not memory.failed(c)
    ]
    waiting = sorted(closed + [(first, ids) for _last, chunk_id, ids, first in closing if chunk_id not in held])
    kept: list[Sequence[str]] = [ids for _last, chunk_id, ids, _first in closing if chunk_id in held]
    return [ids for _first, ids in waiting], kept


def describe_waiting(tracker: Tracker, options: ScheduleOptions) -> str:
    """What is waiting, in words, for a strategy that is not ready and has no request out, e.g.
    ``messages 1–40 and 2 later stretches to compress; 6 memories of messages 1–120 to merge``."""
    view = tracker.view
    parts: list[str] = []
    waiting, kept = _stretches_to_compress(tracker, options.holdback_chunks)
    if waiting:
        parts.append(f"{where(view, waiting[0])}{_and_later(len(waiting) - 1)} to compress")
    elif kept:
        parts.append(f"{where(view, kept[0])}{_and_later(len(kept) - 1)} to set aside for later compression")
    for merge in pending_merges(tracker, options):
        members = [tracker.memory.summaries[s].summary for s in merge.group]
        span = where(view, MessageIds.concat((members[0].message_ids, members[-1].message_ids)))
        parts.append(f"{len(members)} memories of {span} to merge")
    if not parts and options.closes_trailing_chunk and tracker.walk.trailing_closable():
        parts.append(f"{where(view, [m.id for m in tracker.walk.running])} to compress")
    return "; ".join(parts) or "background work pending"


def failed_units(tracker: Tracker) -> frozenset[str]:
    """The units that have failed for good (at their attempt limit): the keys of chunks that
    still stand without a summary, and of merge groups."""
    memory = tracker.memory
    return frozenset(
        key
        for key, attempts in memory.attempts.items()
        if attempts.failed and (key.startswith("merge:") or (key in memory.chunks and key not in memory.l1_of))
    )


def _rejected(reasons: list[str]) -> str:
    distinct = list(dict.fromkeys(r for r in reasons if r))
    return "the model's answers were rejected" + (f" ({'; '.join(distinct)})" if distinct else "")


def describe_failed(tracker: Tracker, units: frozenset[str] | None = None) -> str | None:
    """The failed ``units`` (default: all of them) in words, with why, e.g. ``3 stretches could
    not be compressed: the model's answers were rejected (stop_reason 'stop' is not
    'end_turn')``; ``None`` when there are none."""
    attempts = tracker.memory.attempts
    keys = sorted(failed_units(tracker) if units is None else units)
    chunks = [attempts[k].reason for k in keys if not k.startswith("merge:")]
    merges = [attempts[k].reason for k in keys if k.startswith("merge:")]
    parts = []
    if chunks:
        parts.append(f"{len(chunks)} stretch{'es' if len(chunks) != 1 else ''} could not be compressed: {_rejected(chunks)}")
    if merges:
        groups = f"{len(merges)} group{'s' if len(merges) != 1 else ''}"
        parts.append(f"{groups} of memories could not be merged: {_rejected(merges)}")
    return "; ".join(parts) or None
