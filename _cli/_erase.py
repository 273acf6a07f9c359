"""``asides erase``: take messages back from a store, by id or by participant.

``asides erase STORE (--message ID... | --participant NAME) --reason TEXT [--yes] [--json]``
erases the messages (``Runtime.erase`` / ``Runtime.erase_participant``): their content leaves
every branch, every summary and context-log copy made from them, and every file of the store.
On a terminal it asks first, naming how many messages it will erase; elsewhere (a script) it
needs ``--yes``. It prints what was erased: the erasure's number, the message ids, how many
summaries were invalidated.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import trio

from ..actors._runtime import internal_store
from ..store._erasure import Erasure
from ._common import EXIT_OK, CliError, check_store_file, dumps, writing_runtime

__all__ = ["add_erase_parser", "cmd_erase", "erasure_json"]


def add_erase_parser(commands: Any, epilog: str) -> None:
    """Add ``erase`` to the command table."""
    erase = commands.add_parser(
        "erase",
        help="erase messages (by id or participant) from every branch, summary and file",
        description="Erase messages from the store: their content leaves every branch (every edit of them too), "
        "every summary, memory and context-log copy made from them, and every file of the store; what remains is a "
        "tombstone (id, time, reason). Summaries are written again from what remains the next time a host's drain "
        "runs. Asks for confirmation on a terminal; a script passes --yes. Cannot be undone.",
        epilog=epilog,
    )
    erase.add_argument("path", metavar="STORE", help="the store file (or postgresql:// URL)")
    which = erase.add_mutually_exclusive_group(required=True)
    which.add_argument("--message", "-m", nargs="+", metavar="ID", help="the ids of the messages to erase")
    which.add_argument("--participant", "-p", metavar="NAME", help="erase every message this participant wrote")
    erase.add_argument("--reason", required=True, metavar="TEXT", help="why (kept with the erasure's record)")
    erase.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    erase.add_argument("--json", action="store_true", help="print JSON for scripts")
    erase.set_defaults(run=cmd_erase)


def erasure_json(erasure: Erasure) -> dict[str, Any]:
    return {
        "erasure": erasure.number,
        "message_ids": list(erasure.message_ids),
        "summaries_invalidated": erasure.summaries_invalidated,
        "records_invalidated": erasure.records_invalidated,
        "reason": erasure.reason,
        "at": erasure.at,
    }


def _confirm(count: int, path: str, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        raise CliError("erase asks for confirmation on a terminal; in a script, pass --yes")
    answer = input(f"Erase {count} message(s) from {path}? This cannot be undone. [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise CliError("not erased (not confirmed)")


def cmd_erase(args: argparse.Namespace) -> int:
    check_store_file(args.path)  # never creates a store

    async def run() -> Erasure:
        async with writing_runtime(args.path) as rt:
            model = internal_store(rt).model
            if args.participant is not None:
                ids = [m.id for page in model.message_pages() for m in page if m.participant == args.participant]
            else:
                ids = list(args.message)
                unknown = [m for m in ids if model.stored_message(m) is None]
                if unknown:
                    raise CliError(f"no message {', '.join(repr(m) for m in unknown)} in {args.path!r}; nothing was erased")
            pending = [m for m in dict.fromkeys(ids) if not model.is_erased(m)]
            if pending:
                await trio.to_thread.run_sync(_confirm, len(pending), args.path, args.yes)
            if args.participant is not None:
                return await rt.erase_participant(args.participant, reason=args.reason)
            return await rt.erase(ids, reason=args.reason)

    erasure = trio.run(run)
    if args.json:
        print(dumps(erasure_json(erasure)))
    elif not erasure.message_ids:
        print("nothing to erase (no such message left)")
    else:
        print(
            f"erasure {erasure.number}: erased {len(erasure.message_ids)} message(s) "
            f"({', '.join(erasure.message_ids[:20])}{' ...' if len(erasure.message_ids) > 20 else ''}); "
            f"{erasure.summaries_invalidated} summaries invalidated, {erasure.records_invalidated} derived records erased"
        )
    return EXIT_OK
