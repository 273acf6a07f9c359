"""A store's state records read by namespace, as a reader without the host reads them.

A state key is ``<namespace>/<tail>``, and a namespace may hold ``/``, so where it ends is told
by the tail: a namespace's own record (``actors._records.own_record``), or a record a built-in
strategy says is spelled as one of its own (``DescribesRecords.owns_record``). A key neither
claims belongs to no namespace. The strategy a namespace runs is the record in force
(``strategies._recorded``); where none is readable, it is inferred from the strategies whose
records the namespace holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs

from ..actors._records import own_record
from ..store._model import UNREADABLE, LogModel
from ..strategies import AutobiographicalStrategy, KnowledgeStrategy, WindowedPassthroughStrategy
from ..strategies._capabilities import DescribesRecords, RecordedSummary, RecordsReport
from ..strategies._recorded import read_strategy_record, recorded_strategy

__all__ = [
    "DESCRIBERS",
    "INFERRED",
    "NAME_ONLY",
    "RECORDED",
    "FoundStrategy",
    "StrategyRecords",
    "find_strategy",
    "namespace_strategy",
    "namespace_records",
    "namespace_tails",
    "namespaces_on",
    "recorded_summaries",
    "split_state_key",
    "strategy_records",
]

#: The built-in strategies whose records a store may hold, in the order a namespace's strategy
#: is inferred from its records (:func:`find_strategy`: the first whose records it holds).
DESCRIBERS: tuple[DescribesRecords, ...] = (AutobiographicalStrategy(), KnowledgeStrategy(), WindowedPassthroughStrategy())
_OWNS_RECORD = tuple(describer.owns_record for describer in DESCRIBERS)


def split_state_key(key: str) -> tuple[str, str] | None:
    """``(namespace, tail)`` of a state key, or ``None`` for a key no namespace owns. Where a key
    could be cut more than one way, the namespace is the longest that leaves a tail of a
    strategy's record."""
    owned = own_record(key)
    if owned is not None:
        return owned
    cut = len(key)
    while (cut := key.rfind("/", 0, cut)) > 0:  # the shortest tail first; a namespace is never empty
        tail = key[cut + 1 :]
        for owns in _OWNS_RECORD:  # a loop, not any() over a generator: this runs for every key listed
            if owns(tail):
                return key[:cut], tail
    return None


def namespaces_on(model: LogModel, branch: str) -> set[str]:
    """Every namespace ``branch`` sees a record of: a state record it owns, or a strategy note
    (an open that claimed nothing and wrote nothing else has only that)."""
    return {split[0] for key in model.state_keys(branch) if (split := split_state_key(key))} | model.noted_namespaces(branch)


def namespace_tails(model: LogModel, branch: str, namespace: str) -> Iterator[tuple[str, str]]:
    """``(key, tail)`` of every record of ``namespace`` that ``branch`` sees, in key order; a
    generator, which reads nothing until it is iterated."""
    for key in model.state_keys(branch, f"{namespace}/"):  # a longer namespace's keys too: the cut tells
        split = split_state_key(key)
        if split is not None and split[0] == namespace:
            yield key, split[1]


def namespace_records(model: LogModel, branch: str, namespace: str) -> dict[str, Any]:
    """``{tail: value}`` of every record of ``namespace`` that ``branch`` sees (values as stored:
    ``UNREADABLE`` for one that is not JSON)."""
    tails = dict(namespace_tails(model, branch, namespace))
    return {tails[key]: value for key, value in model.get_states(branch, tails).items()}  # read together, not one by one


@attrs.frozen
class StrategyRecords:
    """One built-in strategy's records of a namespace: its ``name``, what they hold
    (``report``), and the tails of those that are not JSON (``not_json``), which it is not
    handed."""

    name: str
    report: RecordsReport
    not_json: tuple[str, ...]


def strategy_records(records: Mapping[str, Any]) -> list[StrategyRecords]:
    """Each built-in strategy that owns any of a namespace's ``records`` (``{tail: value}``),
    with what its records hold, in the order of their names."""
    found = []
    for describer in sorted(DESCRIBERS, key=lambda d: d.name):
        mine = {tail: value for tail, value in records.items() if describer.owns_record(tail)}
        if not mine:
            continue
        readable = {tail: value for tail, value in mine.items() if value is not UNREADABLE}
        not_json = tuple(sorted(tail for tail in mine if tail not in readable))
        found.append(StrategyRecords(describer.name, describer.describe_records(readable), not_json))
    return found


def recorded_summaries(records: Mapping[str, Any]) -> list[RecordedSummary]:
    """Every well-formed summary record among a namespace's ``records`` (``{tail: value}``),
    merged away or not, of every built-in strategy that keeps summaries."""
    return [summary for found in strategy_records(records) for summary in found.report.summaries]


#: How ``asides`` knows a namespace's strategy (see :func:`find_strategy`).
RECORDED, NAME_ONLY, INFERRED = "recorded", "name only", "inferred"


@attrs.frozen
class FoundStrategy:
    """A namespace's strategy as its records tell it: ``name``, ``options`` (``None`` when not
    recorded) and ``how`` it is known: ``recorded`` (name and options, written when a manager
    opened the namespace or started the strategy), ``name only`` (a record from before options
    were recorded, or a strategy that records none), or ``inferred`` (no readable record: guessed
    from the namespace's other records)."""

    name: str
    options: Mapping[str, Any] | None
    how: str


def find_strategy(tails: Iterable[str], recorded_value: Any) -> FoundStrategy:
    """The strategy a namespace runs: what the record in force holds (``recorded_value``, from
    ``strategies._recorded.recorded_strategy``); else, inferred from the tails of its records
    (a mapping by tail will do; a generator is read only then): the first of
    :data:`DESCRIBERS` that owns one of them, else ``passthrough``."""
    recorded = read_strategy_record(recorded_value)
    if recorded is not None:
        return FoundStrategy(recorded.name, recorded.options, NAME_ONLY if recorded.options is None else RECORDED)
    records = list(tails)
    for describer in DESCRIBERS:
        if any(describer.owns_record(tail) for tail in records):
            return FoundStrategy(describer.name, None, INFERRED)
    return FoundStrategy("passthrough", None, INFERRED)


def namespace_strategy(model: LogModel, branch: str, namespace: str) -> FoundStrategy:
    """:func:`find_strategy` of ``namespace`` on ``branch``: the keys of its records are read only
    when no record in force says."""
    tails = (tail for _key, tail in namespace_tails(model, branch, namespace))
    return find_strategy(tails, recorded_strategy(model, branch, namespace))
