"""``asides audit``: who was shown a message, and what a reader was shown.

``asides audit STORE MESSAGE_ID [--json]`` prints every disclosure of one message (the reader,
namespace, branch, way, time: ``Runtime.disclosures``) and whether and why it was erased.
``asides audit STORE --reader NAME [--json]`` prints every disclosure to that reader, counting
the messages apart from the disclosures (a message shown to it by a compile and by a preview, or
in two namespaces, is one message and two disclosures). Opens the store read-only.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

import trio

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
    audit.add_argument("path", metavar="STORE", help="the store file (or postgresql:// URL)")
    audit.add_argument("message", nargs="?", metavar="MESSAGE_ID", help="the message to audit")
    audit.add_argument("--reader", "-r", metavar="NAME", help="list what this reader was shown instead")
    audit.add_argument("--json", action="store_true", help="print JSON for scripts")
    audit.set_defaults(run=cmd_audit)


def _when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _row(d: Disclosure) -> dict[str, Any]:
    return {"message_id": d.message_id, "reader": d.reader, "namespace": d.namespace, "branch": d.branch, "via": d.via, "at": d.at}


def cmd_audit(args: argparse.Namespace) -> int:
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
