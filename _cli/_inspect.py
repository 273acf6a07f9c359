"""``asides inspect PATH``: a store's branches, namespaces, reader records, floors, strategies and
summary counts, as a table or as JSON. Reads the store read-only; unreadable records are shown,
never dropped (read fail-closed)."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

import trio

from .._inspection._pending import pending_lines, pending_upkeep
from .._inspection._records import RECORDED
from .._inspection._report import describe_store, namespace_lease_holders
from ._common import EXIT_OK, console, dumps, reading_runtime

__all__ = ["cmd_inspect"]


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
