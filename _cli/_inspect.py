"""``asides inspect PATH``: a store's branches, namespaces, reader records, floors, strategies and
summary counts, as a table or as JSON. Reads the store read-only; unreadable records are shown,
never dropped (read fail-closed)."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import trio

from ..actors._lease import lease_holders
from ..actors._records import FLOOR_KEY, LEASE_KEY, READER_KEY, is_floor_record, is_reader_record, own_record
from ..actors._runtime import Runtime
from ..store._blocks import decode_stored_content, has_audience
from ..store._model import UNREADABLE, LogModel
from ..store._views import reader_view
from ..strategies._autobiographical.records import decode_attempts, decode_chunk, decode_summary
from ..strategies._base import STRATEGY_KEY
from ..strategies._recorded import read_strategy_record, recorded_strategy
from ._common import EXIT_OK, console, dumps, is_shared, reading_runtime
from ._pending import pending_lines, pending_upkeep

__all__ = [
    "INFERRED",
    "NAME_ONLY",
    "RECORDED",
    "FoundStrategy",
    "MessageCounts",
    "cmd_inspect",
    "describe_store",
    "find_strategy",
    "namespace_lease_holders",
    "namespaces_on",
    "split_state_key",
]

_KINDS = ("autobiographical", "knowledge", "windowed-passthrough")
_KIND_KEY = re.compile(r"^(?P<ns>.+)/(?P<kind>autobiographical|knowledge|windowed-passthrough)/(?P<rest>[^/]+(?:/[^/]+)?)$")


def split_state_key(key: str) -> tuple[str, str] | None:
    """``(namespace, tail)`` of a state key, or ``None`` for a key no namespace owns."""
    owned = own_record(key)
    if owned is not None:
        return owned
    found = _KIND_KEY.match(key)
    if found:
        return found["ns"], f"{found['kind']}/{found['rest']}"
    return None


def namespaces_on(model: LogModel, branch: str) -> set[str]:
    """Every namespace ``branch`` sees a record of: a state record it owns, or a strategy note
    (an open that claimed nothing and wrote nothing else has only that)."""
    return {split[0] for key in model.state_keys(branch) if (split := split_state_key(key))} | model.noted_namespaces(branch)


def _json_safe(value: Any) -> Any:
    return None if value is UNREADABLE else value


def _non_negative_int(value: Any) -> bool:
    return is_floor_record(value)  # the floor's rule; a head start or an anchor is the same shape


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


def find_strategy(records: Mapping[str, Any], recorded_value: Any) -> FoundStrategy:
    """The strategy a namespace runs: what the record in force holds (``recorded_value``, from
    ``strategies._recorded.recorded_strategy``); else, inferred from its records (``{tail:
    value}``), ``autobiographical`` or ``knowledge`` by their records, ``windowed-passthrough``
    for an anchor, else ``passthrough``."""
    recorded = read_strategy_record(recorded_value)
    if recorded is not None:
        return FoundStrategy(recorded.name, recorded.options, NAME_ONLY if recorded.options is None else RECORDED)
    kinds = {tail.split("/", 1)[0] for tail in records}
    for kind in _KINDS:
        if kind in kinds:
            return FoundStrategy(kind, None, INFERRED)
    return FoundStrategy("passthrough", None, INFERRED)


class MessageCounts:
    """The two counts of the report that read every message of a branch: how many have a block
    with an audience, and how many a reader sees anything of. This one counts afresh each time;
    ``asides serve`` passes one that keeps its counts up to date as the log grows."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def with_audience(self, branch: str) -> int:
        return sum(1 for m in self.store.messages(branch) if has_audience(m.content))

    def visible(self, branch: str, reader: str | None) -> int:
        return sum(1 for message in self.store.messages(branch) if reader_view(message, reader)[0] is not None)


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
        if _non_negative_int(value):
            floor = value
        else:
            bad(FLOOR_KEY, "not a non-negative integer" if value is not UNREADABLE else "not JSON")
    summaries = {"L1": 0, "L2": 0, "L3": 0}
    chunks = 0
    context_entries = 0
    anchor: int | None = None
    head_start: int | None = None
    for tail in sorted(records):
        value = records[tail]
        if tail in (READER_KEY, FLOOR_KEY, LEASE_KEY):
            continue  # a lease record (written by earlier versions) is ignored, never judged
        if tail == STRATEGY_KEY:
            if read_strategy_record(value) is None:
                bad(tail, "not a strategy record" if value is not UNREADABLE else "not JSON")
            continue
        if value is UNREADABLE:
            bad(tail, "not JSON")
            continue
        if tail.startswith("context/"):
            if value is None:
                continue  # an entry an edit dropped (the reader no longer sees its message)
            if not isinstance(value, dict):
                bad(tail, "a context entry must be a JSON object")
                continue
            _content, problems = decode_stored_content(value.get("content"))
            if problems:
                bad(tail, "; ".join(problems))
            context_entries += 1
            continue
        kind, rest = tail.split("/", 1)
        if kind == "windowed-passthrough":
            if rest == "anchor" and _non_negative_int(value):
                anchor = value
            else:
                bad(tail, "not a windowed anchor (a non-negative integer under windowed-passthrough/anchor)")
            continue
        section, _, item = rest.partition("/")
        if section == "summary" and item:
            record = decode_summary(item, value)
            if record is None:
                bad(tail, "not a well-formed summary record")
            else:
                summaries[f"L{record.level}"] = summaries.get(f"L{record.level}", 0) + 1  # levels go on past 3
        elif section == "chunk" and item:
            if decode_chunk(item, value) is None:
                bad(tail, "not a well-formed chunk record")
            else:
                chunks += 1
        elif section == "attempts" and item:
            if decode_attempts(value) is None:
                bad(tail, "not a well-formed attempts record")
        elif rest == "head-start":
            if _non_negative_int(value):
                head_start = value
            else:
                bad(tail, "not a sequence number")
        else:
            bad(tail, f"a {kind} record asides does not know")

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
        "strategy_records": sorted({t.split("/", 1)[0] for t in records if t.split("/", 1)[0] in _KINDS}),
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
    model = rt.store.model
    namespaces = {(info.name, namespace) for info in rt.list_branches() for namespace in namespaces_on(model, info.name)}
    return await lease_holders(rt.store, namespaces)


def describe_store(
    rt: Runtime,
    path: str,
    holders: Mapping[tuple[str, str], str] | None = None,
    *,
    counts: MessageCounts | None = None,
    pending: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything ``asides inspect`` reports, as JSON-ready data; ``holders``: who holds each
    namespace's compression lease (:func:`namespace_lease_holders`); ``counts``: see
    :class:`MessageCounts`; ``pending``: the store's pending upkeep (``_pending.pending_upkeep``),
    reported under ``pending`` when given."""
    holders = holders or {}
    store = rt.store
    counts = counts or MessageCounts(store)
    model = store.model
    branches = []
    for info in rt.list_branches():
        grouped: dict[str, dict[str, Any]] = {}
        other: list[dict[str, Any]] = []
        for key in model.state_keys(info.name):
            value = model.get_state(info.name, key)
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
    # a shared store is shown as the store shows itself (without its password)
    report: dict[str, Any] = {"store": store.path if is_shared(path) else os.path.abspath(path), "branches": branches}
    if pending is not None:
        report["pending"] = pending
    return report


def _print_inspection(report: dict[str, Any]) -> None:
    """The report as tables. Nothing is cut: a cell too wide for the terminal folds onto more
    lines, and output that is not a terminal is as wide as its content (see ``console``)."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    out = console(fit_content=True)

    def table(title: str, columns: Iterable[str], left: Iterable[str]) -> Table:
        made = Table(title=Text(title), box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
        lefts = set(left)
        for column in columns:
            made.add_column(column, justify="left" if column in lefts else "right", no_wrap=False, overflow="fold")
        return made

    out.print(Text.assemble(("asides store", "bold"), " ", report["store"]))
    branches = table("Branches", ("branch", "parent", "fork point", "head", "messages", "with audience"), ("branch", "parent"))
    for branch in report["branches"]:
        branches.add_row(
            Text(branch["name"]),
            Text(branch["parent"] or "-"),
            "-" if branch["fork_sequence"] is None else str(branch["fork_sequence"]),
            str(branch["head"]),
            str(branch["messages"]),
            str(branch["messages_with_audience"]),
        )
    out.print(branches)
    for branch in report["branches"]:
        any_unreadable = any(ns["unreadable"] for ns in branch["namespaces"])
        columns = ("namespace", "reader", "floor", "strategy", "sees", "memories") + (("bad",) if any_unreadable else ())
        namespaces = table(f"Namespaces on {branch['name']}", columns, ("namespace", "reader", "strategy"))
        for ns in branch["namespaces"]:
            reader = {
                "claimed": Text(ns["reader"] or ""),
                "unclaimed": Text("-"),
                "unreadable": Text("UNREADABLE", style="red"),
            }[ns["reader_status"]]
            row: list[Text | str] = [
                Text(ns["namespace"]),
                reader,
                "-" if ns["narrowing_floor"] is None else str(ns["narrowing_floor"]),
                Text(ns["strategy"] + ("" if ns["strategy_known"] == RECORDED else f" ({ns['strategy_known']})")),
                "?" if ns["visible_messages"] is None else str(ns["visible_messages"]),
                "/".join(str(count) for _level, count in sorted(ns["summaries"].items(), key=lambda kv: int(kv[0][1:]))),
            ]
            if any_unreadable:
                row.append(Text(str(len(ns["unreadable"])), style="red" if ns["unreadable"] else ""))
            namespaces.add_row(*row)
        if not branch["namespaces"]:
            namespaces.add_row("(none recorded)", *[""] * (len(namespaces.columns) - 1))
        out.print(namespaces)
        for ns in branch["namespaces"]:
            for problem in ns["unreadable"]:
                shown = "" if problem["value"] is None else f" ({problem['value']!r})"
                out.print(f"  [red]unreadable[/red] {escape(problem['key'])}: {escape(problem['problem'] + shown)}")
        for record in branch["other_records"]:
            out.print(f"  [yellow]record no namespace owns[/yellow] {escape(record['key'])}: {escape(repr(record['value']))}")
    for line in pending_lines(report.get("pending", [])):
        out.print(Text(line, style="yellow"))
    any_bad = any(ns["unreadable"] for branch in report["branches"] for ns in branch["namespaces"])
    legend = [
        "head: the branch's newest sequence (every record, messages and state alike, takes one)",
        "fork point: the parent's sequence the branch was made at",
        "floor: the narrowing floor, the newest sequence a compression of the namespace has read (an edit may not "
        "narrow who sees a message at or below it)",
        "strategy: as its manager recorded it (at open, set_strategy, derive); (inferred): not recorded (an older "
        "store, or the default passthrough), so read from its other records, and asides compile may differ from "
        "the live compile; (name only): recorded without its options",
        "sees: messages the namespace's reader sees anything of",
        "memories: summary records per level, L1/L2/L3 and up (merged-away included)",
    ]
    if any_bad:
        legend.append("bad: records asides cannot read, listed by key under the table (read fail-closed)")
    out.print(Text("\n".join(legend), style="dim"))


def cmd_inspect(args: argparse.Namespace) -> int:
    async def run() -> dict[str, Any]:
        async with reading_runtime(args.path) as rt:
            return describe_store(rt, args.path, await namespace_lease_holders(rt), pending=await pending_upkeep(rt))

    report = trio.run(run)
    if args.json:
        print(dumps(report))
    else:
        _print_inspection(report)
    return EXIT_OK
