"""A whole store described as JSON-ready data: its branches, their namespaces (reader records,
floors, strategies and what their records hold) and the records no namespace owns. Reads only;
an unreadable record is shown with why, never dropped (read fail-closed). ``asides inspect``
prints it; ``asides serve`` answers with it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..actors._lease import lease_holders
from ..actors._records import CONTEXT, FLOOR_KEY, READER_KEY, is_floor_record, is_reader_record
from ..actors._runtime import Runtime, internal_store
from ..store._blocks import decode_stored_content
from ..store._model import UNREADABLE
from ..store._postgres import is_postgres_url
from ..store._views import Projection, Projections
from ..strategies._base import STRATEGY_KEY
from ..strategies._recorded import read_strategy_record, recorded_strategy
from ._records import find_strategy, namespaces_on, split_state_key, strategy_records

__all__ = ["MessageCounts", "describe_store", "namespace_lease_holders"]


def _json_safe(value: Any) -> Any:
    return None if value is UNREADABLE else value


class MessageCounts:
    """The report's counts of a branch's messages: how many hold a block with an audience, which
    readers the audiences name, and how many a reader's view holds (the messages it sees
    anything of, as a compile takes them: an erased one is in no view). Each is worked out from
    what the store's model counts by block of messages that may name a reader (the census of
    ``LogModel.audience_census``, and a reader's view as ``store/_views.py`` computes it),
    never by reading every message. The census and each reader's view are kept for the
    object's life and brought up to date with what was written since when asked again:
    ``asides serve`` keeps one across the changes it follows."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._projections = Projections(store.model)
        self._views: dict[tuple[str, str | None], Projection] = {}  # held: the projections keep them weakly
        #: Per branch: the census, and the length, edits and erasures it was taken at.
        self._census: dict[str, tuple[tuple[int, int, int], tuple[int, frozenset[str]]]] = {}

    def _taken(self, branch: str) -> tuple[int, frozenset[str]]:
        model = self.store.model
        now = (model.length(branch), model.edit_count(branch), model.erasure_count)
        known = self._census.get(branch)
        if known is None or known[0] != now:
            known = self._census[branch] = (now, model.audience_census(branch))
        return known[1]

    def with_audience(self, branch: str) -> int:
        """How many messages of ``branch`` hold a block with an audience."""
        return self._taken(branch)[0]

    def readers_named(self, branch: str) -> frozenset[str]:
        """Every reader the audiences of ``branch``'s messages name, as they read now."""
        return self._taken(branch)[1]

    def visible(self, branch: str, reader: str | None) -> int:
        """How many messages the view of ``reader`` (``None``: no reader) on ``branch`` holds."""
        # Asked each time: a reader no audience names reads the view of no reader until one does.
        view = self._views[(branch, reader)] = self._projections.projection(branch, reader, None)
        view.sync()
        return view.read_length()


def _describe_namespace(
    store: Any, branch: str, namespace: str, records: dict[str, Any], counts: MessageCounts, holder: str | None
) -> dict[str, Any]:
    unreadable: list[dict[str, Any]] = []

    def bad(tail: str, problem: str) -> None:
        unreadable.append({"key": f"{namespace}/{tail}", "problem": problem, "value": _json_safe(records[tail])})

    reader: str | None = None
    reader_status = "unclaimed"
    if READER_KEY in records:
        value = records[READER_KEY]
        if is_reader_record(value):
            reader, reader_status = value, "claimed"
        else:
            reader_status = "unreadable"
            bad(READER_KEY, "not a reader's name" if value is not UNREADABLE else "not JSON")
    floor: int | None = None
    if FLOOR_KEY in records:
        value = records[FLOOR_KEY]
        if is_floor_record(value):
            floor = value
        else:
            bad(FLOOR_KEY, "not a non-negative integer" if value is not UNREADABLE else "not JSON")
    problems: list[tuple[str, str]] = []  # (tail, problem) of every other record, reported in key order
    context_entries = 0
    for tail, value in records.items():
        if tail == STRATEGY_KEY:
            if read_strategy_record(value) is None:
                problems.append((tail, "not a strategy record" if value is not UNREADABLE else "not JSON"))
        elif tail.startswith(f"{CONTEXT}/") and value is not None:  # null: an entry an edit dropped
            if value is UNREADABLE:
                problems.append((tail, "not JSON"))
            elif not isinstance(value, dict):
                problems.append((tail, "a context entry must be a JSON object"))
            else:
                context_entries += 1
                _content, found = decode_stored_content(value.get("content"))
                if found:
                    problems.append((tail, "; ".join(found)))
    summaries = {"L1": 0, "L2": 0, "L3": 0}
    chunks = 0
    anchor: int | None = None
    head_start: int | None = None
    owners = strategy_records(records)
    for kind in owners:
        problems += [(tail, "not JSON") for tail in kind.not_json]
        problems += kind.report.unreadable
        for recorded in kind.report.summaries:
            level = f"L{recorded.summary.level}"
            summaries[level] = summaries.get(level, 0) + 1  # levels go on past 3
        chunks += kind.report.chunks
        anchor = kind.report.anchor if kind.report.anchor is not None else anchor
        head_start = kind.report.head_start if kind.report.head_start is not None else head_start
    for tail, problem in sorted(problems):
        bad(tail, problem)

    strategy = find_strategy(records, recorded_strategy(store.model, branch, namespace))
    if reader_status == "unreadable":
        visible: int | None = None  # nothing can tell whose view it holds (read fail-closed)
    else:
        visible = counts.visible(branch, reader)
    return {
        "namespace": namespace,
        "reader": reader,
        "reader_status": reader_status,
        "narrowing_floor": floor,
        "strategy": strategy.name,
        "strategy_known": strategy.how,
        "strategy_options": None if strategy.options is None else dict(strategy.options),
        "compression_lease_holder": holder,
        "strategy_records": [kind.name for kind in owners],
        "visible_messages": visible,
        "summaries": summaries,
        "chunks": chunks,
        "context_entries": context_entries,
        "windowed_anchor": anchor,
        "head_start": head_start,
        "unreadable": unreadable,
    }


async def namespace_lease_holders(rt: Runtime) -> dict[tuple[str, str], str]:
    """Who holds the compression lease of each ``(branch, namespace)`` of the store now, for
    :func:`describe_store` (asked of the database's ``pg_locks`` on a shared store; nothing on
    a store file)."""
    store = internal_store(rt)
    # A generator: a store file asks nothing, so its namespaces are never listed for it.
    namespaces = ((info.name, namespace) for info in rt.list_branches() for namespace in namespaces_on(store.model, info.name))
    return await lease_holders(store, namespaces)


def describe_store(
    rt: Runtime,
    path: str,
    holders: Mapping[tuple[str, str], str] | None = None,
    *,
    counts: MessageCounts | None = None,
    pending: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything ``asides inspect`` reports, as JSON-ready data; ``path``: the store as it was
    named (a store file is reported by its absolute path, a shared store as the store shows
    itself, without its password); ``holders``: who holds each namespace's compression lease
    (:func:`namespace_lease_holders`); ``counts``: see :class:`MessageCounts`; ``pending``: the
    store's pending upkeep (``_pending.pending_upkeep``), reported under ``pending`` when given."""
    holders = holders or {}
    store = internal_store(rt)
    counts = counts or MessageCounts(store)
    model = store.model
    branches = []
    for info in rt.list_branches():
        grouped: dict[str, dict[str, Any]] = {}
        other: list[dict[str, Any]] = []
        for key, value in model.get_states(info.name, model.state_keys(info.name)).items():  # read together
            split = split_state_key(key)
            if split is None:
                other.append({"key": key, "value": _json_safe(value)})
                continue
            namespace, tail = split
            grouped.setdefault(namespace, {})[tail] = value
        for namespace in model.noted_namespaces(info.name):  # a strategy note and no record yet
            grouped.setdefault(namespace, {})
        meta = model.branch_meta(info.name)
        derivation = meta.get("derivation") if isinstance(meta, dict) else None
        branches.append(
            {
                "name": info.name,
                "parent": info.parent,
                "fork_sequence": info.fork_sequence if info.parent is not None else None,
                "head": info.head,
                "messages": store.length(info.name),
                "messages_with_audience": counts.with_audience(info.name),
                "derivation": derivation if isinstance(derivation, dict) else None,
                "namespaces": [
                    _describe_namespace(store, info.name, ns, records, counts, holders.get((info.name, ns)))
                    for ns, records in sorted(grouped.items())
                ],
                "other_records": other,
            }
        )
    report: dict[str, Any] = {"store": store.path if is_postgres_url(path) else os.path.abspath(path), "branches": branches}
    if pending is not None:
        report["pending"] = pending
    return report
