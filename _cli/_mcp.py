"""``asides mcp PATH --namespace NS --reader R``: an MCP server for one reader (docs/mcp.md).

It opens the store (a file, created when missing, or a ``postgresql://`` URL) and one manager:
the namespace for the reader, which claims it. Its tools answer for that reader and no other.
On stdio (the default) stdout is the protocol, so everything the command says goes to stderr.
With ``--http`` it serves streamable HTTP on a loopback address alone (another ``--host`` is bad
usage, exit 2), with an access token (``--token``, else a new random one each start) that every
request must carry as ``Authorization: Bearer <token>``; it prints the URL and the token on
stderr once it listens. A store that cannot be opened, a namespace another reader claims, or a
port in use is refused in one line before anything is served (exit 1). Needs the ``mcp`` extra.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable

from ..store._names import name_problem
from ._common import EXIT_INTERRUPTED, EXIT_OK, CliError, UsageError, is_shared
from ._serve import check_token, new_token, port_number, run_until_interrupted

__all__ = ["add_mcp_command", "cmd_mcp"]


def add_mcp_command(commands: argparse._SubParsersAction[argparse.ArgumentParser], epilog: str) -> None:
    """Add ``mcp`` to the command table."""
    mcp = commands.add_parser(
        "mcp",
        help="an MCP server for one reader: search, recall, remember, memories",
        description="Serve the Model Context Protocol for one reader of a namespace: tools to search what the reader may "
        "see, recall its compiled context, remember a line (for the reader alone by default) and list its memories. "
        "It never answers for another reader. Speaks on stdin/stdout (for a client that starts it), or with --http "
        "on streamable HTTP on this machine's loopback address, where every request needs the access token printed "
        "on stderr. Opens the store for writing (a store file is held by this process while it runs; a postgresql:// "
        "store may be served by many). Needs the mcp extra (pip install 'asides[mcp]').",
        epilog=epilog,
    )
    mcp.add_argument("path", metavar="PATH", help="the store file (created if missing), or a postgresql:// URL")
    mcp.add_argument("--namespace", "-n", required=True, metavar="NS", help="the reader's namespace, e.g. agents/ann")
    mcp.add_argument("--reader", "-r", required=True, metavar="R", help="the reader the server answers for (it claims NS)")
    mcp.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="with --http: the loopback address to listen on (default: 127.0.0.1)")
    mcp.add_argument("--port", type=port_number, default=8078, help="with --http: the port (default: 8078; 0 picks a free one)")
    mcp.add_argument("--token", default=None, help="with --http: the access token (default: a new random one each start)")
    mcp.set_defaults(run=cmd_mcp)


def _check_args(args: argparse.Namespace) -> None:
    """Refuse (bad usage) a malformed namespace or reader, an HTTP option without ``--http``, a
    host that is not loopback, and a malformed token."""
    from .._serve._hosts import is_loopback

    problem = name_problem(args.namespace, what="a namespace")
    if problem is not None:
        raise UsageError(f"--namespace must name a namespace: {problem}")
    problem = name_problem(args.reader, what="a reader's name")
    if problem is not None:
        raise UsageError(f"--reader must name a reader: {problem}")
    if not args.http:
        given = [flag for flag, value, default in (("--host", args.host, "127.0.0.1"), ("--port", args.port, 8078)) if value != default]
        if args.token is not None:
            given.append("--token")
        if given:
            raise UsageError(f"{', '.join(given)} only mean something with --http (stdio has no address and trusts its parent)")
        return
    if not is_loopback(args.host):
        raise UsageError(
            f"--host {args.host!r} is not this machine's loopback address: asides mcp serves this machine alone "
            "(the tools read and write a reader's private lines over plain HTTP)"
        )
    if args.token is not None:
        check_token(args.token)


def cmd_mcp(args: argparse.Namespace) -> int:
    _check_args(args)
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise CliError("asides mcp needs the mcp extra: pip install 'asides[mcp]'") from None
    if args.http:
        try:
            import hypercorn  # noqa: F401
        except ImportError:
            raise CliError("asides mcp --http needs hypercorn: pip install 'asides[mcp,serve]'") from None
    from .._mcp import reader_manager, serve_http, serve_stdio
    from .._serve._hosts import host_in_url

    if is_shared(args.path):
        from ..store._postgres import redact_url

        label = redact_url(args.path)
    else:
        label = args.path
    token = args.token if args.token is not None else new_token()
    about = f"reader {args.reader!r} of namespace {args.namespace!r} in {label}"

    def ready(url: str) -> None:
        print(f"asides mcp: serving {about} on streamable HTTP, at", file=sys.stderr, flush=True)
        print(url, file=sys.stderr, flush=True)
        print(f"Every request needs the header 'Authorization: Bearer {token}' (a secret). Ctrl-C stops.", file=sys.stderr, flush=True)

    async def serve(shutdown_trigger: Callable[[], Awaitable[None]]) -> None:
        async with reader_manager(args.path, args.namespace, args.reader) as manager:
            if args.http:
                await serve_http(manager, host=args.host, port=args.port, token=token, on_ready=ready, shutdown_trigger=shutdown_trigger)
            else:
                print(f"asides mcp: serving {about} on stdio", file=sys.stderr, flush=True)
                await serve_stdio(manager, shutdown_trigger=shutdown_trigger)

    interrupted = run_until_interrupted(serve, host=host_in_url(args.host), port=args.port, what="another server")
    if interrupted:
        print("asides: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK
