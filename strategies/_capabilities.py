"""What a strategy may offer beyond :class:`~._base.ContextStrategy`, one small protocol each.

The runtime asks ``isinstance(strategy, ShardsMessages)`` and so on (each protocol is
``runtime_checkable``; the check looks for the members by name, so a strategy offers a capability
by defining its methods, with no base class to inherit):

* :class:`ShardsMessages`: ``shard_message``, to store a long message as several shards;
* :class:`DescribesPendingWork`: ``pending_work()``, its background work in words;
* :class:`ReadsSummaries`: ``search_summaries``, ``get_summaries_in_range``, ``get_summary``;
* :class:`HasHeadWindow`: ``transition_text`` and ``start_head_at``, for ``reset_head_window``;
* :class:`HasEstimator`: ``estimator``, the token estimate a compile's injections are priced with;
* :class:`ReportsFailedUnits`: ``failed_units`` and ``describe_failed``, the units of work that
  failed for good, and why (``pending_work()`` and ``drain()`` report them);
* :class:`FollowsStoredState`: ``follow_stored_state``, to take in state records another process
  wrote (on a shared store) before the runtime asks it whether work waits;
* :class:`DescribesRecords`: ``owns_record`` and ``describe_records``, to tell its records among
  a namespace's and say what they hold (:class:`RecordsReport`), for readers of a store that run
  no strategy (``asides inspect``, ``asides compile``, ``asides serve``). Not public: the
  built-in strategies offer it, so nothing outside the strategies layer spells their keys.

One capability is a flag, as ``marks_compression_reads`` is: ``has_background_work = False``
says the strategy never has background work (ready always, ``tick`` does nothing), so the
runtime starts no drain for it (:func:`has_background_work` asks it; a strategy without the
attribute may have some). ``NoBackgroundWork`` (``strategies._passthrough``) sets it, and
subclassing it keeps working as before.

:class:`Summary` is what :class:`ReadsSummaries` returns (and ``ContextManager``'s summary reads).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from ..store._blocks import ContentBlock
from ..store._message_ids import MessageIds, as_message_ids
from ._base import StrategyContext
from ._tokens import Estimator

__all__ = [
    "DescribesRecords",
    "RecordedSummary",
    "RecordsReport",
    "ShardsMessages",
    "DescribesPendingWork",
    "ReadsSummaries",
    "HasHeadWindow",
    "HasEstimator",
    "FollowsStoredState",
    "ReportsFailedUnits",
    "Summary",
    "has_background_work",
]


@attrs.frozen(slots=True)
class Summary:
    """A summary as hosts read it: ``id`` is ``L<level>-<n>`` (``n`` counts every summary this
    namespace wrote on the branch, all levels together); level 1 summarises one chunk, level k+1
    merges a run of level-k summaries. ``message_ids`` are every message it covers, in order (a
    :class:`~asides.MessageIds`, made from any iterable of ids: its size follows the gaps between
    them, not their number), and the sequences are the oldest and newest of theirs."""

    id: str
    level: int
    text: str
    message_ids: MessageIds = attrs.field(converter=as_message_ids)
    first_sequence: int
    last_sequence: int


@attrs.frozen(slots=True)
class RecordedSummary:
    """A summary record as a reader of the store finds it: the summary, and the ids of the
    summaries it merged (``children``; none at level 1)."""

    summary: Summary
    children: tuple[str, ...] = ()


@attrs.frozen(slots=True)
class RecordsReport:
    """What a strategy's records of one namespace on one branch hold
    (:meth:`DescribesRecords.describe_records`): every well-formed summary record, merged away
    or not (``summaries``), how many well-formed chunk records (``chunks``), the sequence a
    window starts at (``anchor``) and the sequence a head window starts at (``head_start``),
    ``None`` where none is recorded, and ``(tail, problem)`` for each record it cannot read
    (``unreadable``). Both sequences of records are in the order of their keys."""

    summaries: tuple[RecordedSummary, ...] = ()
    chunks: int = 0
    anchor: int | None = None
    head_start: int | None = None
    unreadable: tuple[tuple[str, str], ...] = ()


def owns_under(prefix: str, tail: str) -> bool:
    """Whether ``tail`` is spelled as a record under ``prefix``: ``<prefix>/`` and then one or two
    non-empty segments (the shape of every built-in strategy's record keys)."""
    head, _, rest = tail.partition("/")
    segments = rest.split("/")
    return head == prefix and len(segments) <= 2 and all(segments)


def has_background_work(strategy: object) -> bool:
    """Whether ``strategy`` may have background work (a drain runs for it): true unless it says
    ``has_background_work = False`` (see the module docstring)."""
    return getattr(strategy, "has_background_work", True) is not False


@runtime_checkable
class ShardsMessages(Protocol):
    """A strategy that may store a long message as several shards."""

    def shard_message(
        self, participant: str, content: Sequence[ContentBlock], metadata: Mapping[str, Any] | None
    ) -> Sequence[tuple[str, tuple[ContentBlock, ...], Mapping[str, Any]]] | None:
        """``(participant, content, metadata)`` per shard, oldest first; ``None`` to store the
        message whole. Never called for a message with an audience block."""
        ...


@runtime_checkable
class DescribesPendingWork(Protocol):
    """A strategy that can say what background work waits."""

    def pending_work(self) -> str | None:
        """One line of words, or ``None`` exactly when the strategy is ready."""
        ...


@runtime_checkable
class ReadsSummaries(Protocol):
    """A strategy that keeps summaries a host may read."""

    def search_summaries(self, pattern: str | re.Pattern[str], *, limit: int = 50) -> tuple[Summary, ...]:
        """Summaries nobody merged that match ``pattern``, most matches first, then newest."""
        ...

    def get_summaries_in_range(self, start: int | None = None, end: int | None = None) -> tuple[Summary, ...]:
        """Every summary, merged or not, overlapping the sequences [start, end]."""
        ...

    def get_summary(self, summary_id: str) -> Summary | None:
        """The summary with that id, or ``None``."""
        ...


@runtime_checkable
class FindsSummaries(Protocol):
    """A strategy that can narrow its summaries by the words a search looks for, without
    reading every summary's text (a manager's search uses it where a strategy has it)."""

    def summaries_holding(self, words: Sequence[str]) -> tuple[Summary, ...]:
        """Every summary, merged or not, that may hold every one of ``words`` (case-folded): a
        superset, each with its text."""
        ...


@runtime_checkable
class HasHeadWindow(Protocol):
    """A strategy with a head window that a topic transition can move."""

    async def transition_text(self, ctx: StrategyContext) -> str:
        """A transition note written from what the head and the summaries hold."""
        ...

    async def start_head_at(self, ctx: StrategyContext, sequence: int) -> None:
        """Start the head window at the message with this sequence."""
        ...


@runtime_checkable
class HasEstimator(Protocol):
    """A strategy that prices content with its own token estimate."""

    @property
    def estimator(self) -> Estimator:
        """The estimate of one message's content, in tokens."""
        ...


@runtime_checkable
class FollowsStoredState(Protocol):
    """A strategy that keeps its records' meaning in memory and can bring it up to date.

    On a shared store another process may write the namespace's records (the one holding its
    compression lease). The runtime lists them in ``ctx.state.written_since`` as it hears of
    them, and calls this (in the namespace actor's turn) before it asks ``is_ready`` while
    another process compresses; a strategy that reads ``written_since`` before each compile and
    unit needs nothing else."""

    def follow_stored_state(self, ctx: StrategyContext) -> None:
        """Take in the namespace's records written since the strategy last looked; write nothing."""
        ...


@runtime_checkable
class ReportsFailedUnits(Protocol):
    """A strategy whose units of work may fail for good (a unit whose answers were rejected up
    to its attempt limit), and that says which and why."""

    def failed_units(self) -> frozenset[str]:
        """The keys of the units that have failed (opaque; compared between two calls)."""
        ...

    def describe_failed(self, units: frozenset[str] | None = None) -> str | None:
        """Those units (default: every failed one) in words, with the reason; ``None`` for none."""
        ...


@runtime_checkable
class DescribesRecords(Protocol):
    """A strategy that can tell its own records among a namespace's and say what they hold, for
    readers of a store that run no strategy. A record's *tail* is its state key less
    ``<namespace>/``."""

    name: str

    def owns_record(self, tail: str) -> bool:
        """Whether ``tail`` is spelled as one of this strategy's records, readable or not, and
        whatever strategy the namespace runs now."""
        ...

    def describe_records(self, records: Mapping[str, Any]) -> RecordsReport:
        """What ``records`` hold: ``{tail: value}``, each tail one it owns, each value as JSON
        holds it (``None`` for a record an erasure emptied; a record that is not JSON is not
        handed over). Every record is either counted or reported unreadable; none is written."""
        ...
