"""``asides audit``: who was shown a message, and what a reader was shown.

``asides audit STORE MESSAGE_ID [--json]`` prints every disclosure of one message (the reader,
namespace, branch, way, time: ``Runtime.disclosures``) and whether and why it was erased.
``asides audit STORE --reader NAME [--json]`` prints every disclosure to that reader, counting
the messages apart from the disclosures (a message shown to it by a compile and by a preview, or
in two namespaces, is one message and two disclosures). ``asides audit STORE --export FILE``
writes every disclosure and erasure as a chain of JSON lines (``_inspection/_audit_chain.py``),
and ``asides audit --verify FILE [--store STORE]`` checks one. Opens the store read-only.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

import trio

from .._inspection._audit_chain import check_lines, compare, export_lines
from ..actors._runtime import internal_store
from ..store._disclosure import Disclosure
from ._common import EXIT_OK, CliError, dumps, reading_runtime

__all__ = ["add_audit_parser", "cmd_audit"]


def add_audit_parser(commands: Any, epilog: str) -> None:
    """Add ``audit`` to the command table."""
    audit = commands.add_parser(
        "audit",
        help="who was shown a message (and whether it was erased), or what a reader was shown",
        description="Print who was shown a message, how (compile, preview, search, or a compression request to the model "
        "provider) and when, and whether and why it was erased; or, with --reader, every message that reader was "
        "shown. Records hold ids, never content, and outlive erasure. Opens the store read-only.",
        epilog=epilog,
    )
    audit.add_argument("path", nargs="?", metavar="STORE", help="the store file (or postgresql:// URL)")
    audit.add_argument("message", nargs="?", metavar="MESSAGE_ID", help="the message to audit")
    audit.add_argument("--reader", "-r", metavar="NAME", help="list what this reader was shown instead")
    audit.add_argument(
        "--export", metavar="FILE", help="write every disclosure and erasure as JSON lines, each holding a hash of the one before"
    )
    audit.add_argument("--verify", metavar="FILE", help="check an export's chain of hashes (with --store, against the store too)")
    audit.add_argument("--store", metavar="STORE", help="with --verify: the store the export must match")
    audit.add_argument("--json", action="store_true", help="print JSON for scripts")
    audit.set_defaults(run=cmd_audit)


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _row(d: Disclosure) -> dict[str, Any]:
    return {"message_id": d.message_id, "reader": d.reader, "namespace": d.namespace, "branch": d.branch, "via": d.via, "at": d.at}


def _export_from(rt: Any) -> list[str]:
    store = internal_store(rt)
    anchor = store.audit_anchor
    if anchor is None:
        raise CliError(
            "the store has no audit anchor yet (a store made before this version of asides): open it once for writing "
            "with this version (any host, or asides import --append of nothing) and export again"
        )
    return export_lines(anchor, store.disclosure_records(), store.erasures())


def _export(args: argparse.Namespace) -> int:
    async def run() -> list[str]:
        async with reading_runtime(args.path) as rt:
            return _export_from(rt)

    lines = trio.run(run)
    try:
        with open(args.export, "w", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
    except OSError as exc:
        raise CliError(f"cannot write {args.export!r}: {exc.strerror or exc}") from None
    print(f"wrote {_count(len(lines) - 2, 'event')} to {args.export} (a chain of {len(lines)} lines)")
    return EXIT_OK


def _verify(args: argparse.Namespace) -> int:
    try:
        with open(args.verify, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {args.verify!r}: {getattr(exc, 'strerror', None) or exc}") from None
    if lines and lines[-1] == "":
        lines.pop()
    problem = check_lines(lines)
    if problem is not None:
        raise CliError(f"{args.verify}: {problem}")
    said = f"{args.verify}: the chain holds ({_count(len(lines) - 2, 'event')})"
    if args.store is not None:

        async def run() -> list[str]:
            async with reading_runtime(args.store) as rt:
                return _export_from(rt)

        problem, newer = compare(lines, trio.run(run))
        if problem is not None:
            raise CliError(f"{args.verify}: {problem}")
        said += ", and every event is the store's" + (f"; the store recorded {_count(newer, 'event')} since" if newer else "")
    print(said)
    return EXIT_OK


def cmd_audit(args: argparse.Namespace) -> int:
    if args.verify is not None:
        if args.path is not None or args.message is not None or args.reader is not None or args.export is not None:
            raise CliError("--verify FILE takes no STORE, MESSAGE_ID, --reader or --export (the store goes in --store)", 2)
        return _verify(args)
    if args.path is None:
        raise CliError("give a STORE (or --verify FILE)", 2)
    if args.store is not None:
        raise CliError("--store goes with --verify", 2)
    if args.export is not None:
        if args.message is not None or args.reader is not None:
            raise CliError("--export FILE takes no MESSAGE_ID or --reader", 2)
        return _export(args)
    if (args.message is None) == (args.reader is None):
        raise CliError("give a MESSAGE_ID or --reader NAME (one of them)", 2)

    async def run() -> dict[str, Any]:
        async with reading_runtime(args.path) as rt:
            if args.reader is not None:
                rows = [_row(d) for d in rt.disclosures_to(args.reader)]
                return {"reader": args.reader, "messages": len({row["message_id"] for row in rows}), "disclosures": rows}
            stone = rt.tombstone(args.message)
            if stone is None and internal_store(rt).model.stored_message(args.message) is None:
                raise CliError(f"no message {args.message!r} in {args.path!r}")
            erased = None if stone is None else {"at": stone.erased_at, "reason": stone.reason, "erasure": stone.erasure}
            return {"message_id": args.message, "erased": erased, "disclosures": [_row(d) for d in rt.disclosures(args.message)]}

    report = trio.run(run)
    if args.json:
        print(dumps(report))
        return EXIT_OK
    rows = report["disclosures"]
    if args.reader is not None:
        messages, shown = _count(report["messages"], "message"), _count(len(rows), "disclosure")
        print(f"reader {args.reader!r} was shown {messages} ({shown})" + (":" if rows else ""))
    else:
        erased = report["erased"]
        state = "not erased" if erased is None else f"erased {_when(erased['at'])} ({erased['reason']})"
        print(f"message {args.message}: {state}; shown {len(rows)} time(s)" + (":" if rows else ""))
    for row in rows:
        reader = "(no reader)" if row["reader"] is None else row["reader"]
        print(f"  {_when(row['at'])}  {row['via']:<11}  message {row['message_id']}  to {reader}  in {row['namespace']} on {row['branch']}")
    return EXIT_OK
