"""``asides search PATH --reader R [--namespace NS] QUERY``: what reader R would find, one line
per hit (``--json`` for scripts).

An operator's look, as ``asides compile`` is: the store is opened read-only, so nothing is
written and no disclosure is recorded (nothing was shown to R). With ``--namespace`` the
namespace's memories are searched too; without, the namespace that records R on the branch, if
any, else messages alone.
"""

from __future__ import annotations

import argparse
from typing import Any

import attrs
import trio

from .._inspection._preview import STRATEGIES, rebuild_strategy
from .._inspection._records import namespace_strategy
from ..actors._namespace import normalise_namespace
from ..actors._records import reader_keys
from ..actors._runtime import Runtime, internal_store
from ..actors._searching import KINDS, MAX_LIMIT
from ..store._errors import InvalidArgumentError
from ..store._names import name_problem
from ..strategies._passthrough import PassthroughStrategy
from ._common import EXIT_OK, UsageError, dumps, reading_runtime, require_branch

__all__ = ["cmd_search", "PREVIEW_NAMESPACE"]

#: The namespace a search for a reader that no namespace records reads through (held in memory
#: for the read-only open, never recorded).
PREVIEW_NAMESPACE = "asides-search-preview"


def _namespace_for(rt: Runtime, branch: str, reader: str, chosen: str | None) -> tuple[str, Any]:
    """The namespace to search through and its strategy (for its memories)."""
    model = internal_store(rt).model
    if chosen is not None:
        namespace = normalise_namespace(chosen)
    else:
        claiming = sorted(n for n, value in reader_keys(model, branch) if n and value == reader)
        if not claiming:
            return PREVIEW_NAMESPACE, PassthroughStrategy()
        namespace = claiming[0]
    found = namespace_strategy(model, branch, namespace)
    if found.name not in STRATEGIES:
        return namespace, PassthroughStrategy()
    return namespace, rebuild_strategy(found.name, found.options).strategy


async def _search(rt: Runtime, args: argparse.Namespace) -> tuple[str, tuple[Any, ...]]:
    require_branch(rt, args.branch)
    namespace, strategy = _namespace_for(rt, args.branch, args.reader, args.namespace)
    manager = await rt.open_manager(namespace, strategy=strategy, view_reader=args.reader, branch=args.branch)
    try:
        hits = await manager.search(args.query, limit=args.limit, kind=args.kind, participant=args.participant)
    except InvalidArgumentError as exc:
        raise UsageError(str(exc)) from None
    finally:
        await manager.aclose()
    return namespace, hits


def _line(hit: Any) -> str:
    who = f"memory {hit.id} (level {hit.level})" if hit.kind == "memory" else f"#{hit.id} {hit.participant}"
    shown = " ".join(hit.text.split())
    return f"{hit.score:7.3f}  seq {hit.sequence:<6} {who}: {shown}"


def cmd_search(args: argparse.Namespace) -> int:
    args.query = " ".join(args.query)
    problem = name_problem(args.reader, what="a reader's name")
    if problem is not None:
        raise UsageError(f"--reader must name a reader: {problem}")
    if args.namespace is not None and (problem := name_problem(args.namespace, what="a namespace")) is not None:
        raise UsageError(f"--namespace must name a namespace: {problem}")
    if not 1 <= args.limit <= MAX_LIMIT:
        raise UsageError(f"--limit must be from 1 to {MAX_LIMIT}")

    async def run() -> tuple[str, tuple[Any, ...]]:
        async with reading_runtime(args.path) as rt:
            return await _search(rt, args)

    namespace, hits = trio.run(run)
    if args.json:
        about = {"reader": args.reader, "namespace": namespace, "branch": args.branch, "query": args.query}
        print(dumps({**about, "hits": [attrs.asdict(hit) for hit in hits]}))
    elif not hits:
        print(f"# nothing {args.reader!r} may see holds every word of {args.query!r}")
    else:
        for hit in hits:
            print(_line(hit))
    return EXIT_OK


def add_search_command(commands: Any, store_help: str, epilog: str) -> None:
    """Register ``asides search`` with the CLI's subcommands."""
    search = commands.add_parser(
        "search",
        help="what a reader would find",
        description="Search what one reader may see: messages as that reader sees them on the branch (a line "
        "meant for someone else is never matched) and, through its namespace, its memories; best first, one line per "
        "hit. A hit holds every word of the query. Opens the store read-only: nothing is written, and no disclosure "
        "is recorded, since nothing was shown to the reader.",
        epilog=epilog,
    )
    search.add_argument("path", metavar="PATH", help=store_help)
    search.add_argument("query", metavar="QUERY", nargs="+", help="the words to find (every one must be in a hit)")
    search.add_argument("--reader", "-r", required=True, metavar="R", help="search as this reader")
    search.add_argument("--namespace", "-n", metavar="NS", help="the reader's namespace (default: the one recording R)")
    search.add_argument("--branch", "-b", default="main", metavar="B", help="the branch (default: main)")
    search.add_argument("--limit", type=int, default=10, metavar="N", help=f"hits at most (1 to {MAX_LIMIT}, default: 10)")
    search.add_argument("--kind", choices=KINDS, help="only messages, or only memories")
    search.add_argument("--participant", metavar="P", help="only messages P wrote")
    search.add_argument("--json", action="store_true", help="print JSON for scripts")
    search.set_defaults(run=cmd_search)
