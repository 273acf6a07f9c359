"""``asides serve STORE``: a local, read-only web inspector of the store (docs/serve.md).

It opens the store read-only (as the other reading commands do: it never writes and never
creates a file), binds 127.0.0.1 unless ``--host`` says otherwise, makes a random access token
per start unless ``--token`` gives one, and prints the URL with the token. A ``--host`` other
machines can reach is bad usage (exit 2) unless ``--allow-remote`` is given too, and then it
warns. A store that cannot be opened, or a port in use, is refused in one line before anything
listens (exit 1). Needs the ``serve`` extra.
"""

from __future__ import annotations

import argparse
import errno
import secrets
import signal
import sys
from collections.abc import Awaitable, Callable

import trio

from ..store._groups import collapse
from ._common import EXIT_INTERRUPTED, CliError, UsageError, check_store_file, is_shared

__all__ = ["add_serve_command", "check_token", "cmd_serve", "new_token", "port_number", "run_until_interrupted"]


def port_number(text: str) -> int:
    """``--port``'s type: a port number, 0 (a free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (0 to 65535; 0 picks a free one)")
    return value


def add_serve_command(commands: argparse._SubParsersAction[argparse.ArgumentParser], epilog: str) -> None:
    """Add ``serve`` to the command table."""
    serve = commands.add_parser(
        "serve",
        help="a local, read-only web inspector: who sees what, side by side, live",
        description="Serve a web page that shows the store: branches and namespaces, the log with who may see each "
        "block, two readers' views side by side, a compile with its provenance, the memories and the audit of a "
        "message, updated live while a host writes. Opens the store read-only. Every request needs the access token "
        "printed with the URL. Needs the serve extra (pip install 'asides[serve]').",
        epilog=epilog,
    )
    serve.add_argument("path", metavar="STORE", help="the store file, or a postgresql:// URL")
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only; another needs --allow-remote)",
    )
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other machines can reach (the page shows private lines, over plain HTTP)",
    )
    serve.add_argument("--port", type=port_number, default=8077, help="the port (default: 8077; 0 picks a free one)")
    serve.add_argument("--token", default=None, help="the access token (default: a new random one each start)")
    serve.set_defaults(run=cmd_serve)


def new_token() -> str:
    """A new random access token (for a start without ``--token``)."""
    return secrets.token_urlsafe(24)


def check_token(token: str) -> None:
    """Refuse (bad usage) a ``--token`` shorter than 8 characters or with any character that a
    URL would have to escape."""
    if len(token) < 8 or not all(c.isascii() and (c.isalnum() or c in "-_.~") for c in token):
        raise UsageError("--token must be at least 8 characters of letters, digits and -_.~ (it goes in a URL)")


def _check_host(host: str, allow_remote: bool) -> str | None:
    """Refuse a ``host`` other machines can reach unless ``allow_remote``; the warning to print
    when it is allowed (``None`` for loopback)."""
    from .._serve._hosts import is_loopback  # the server's package is imported only by this command

    if is_loopback(host):
        return None
    if not allow_remote:
        raise UsageError(
            f"--host {host!r} is not this machine's loopback address: other machines could reach the inspector, "
            "which shows every private line; give --allow-remote as well to mean it"
        )
    return (
        f"listening on {host!r}, which other machines can reach: whoever has the URL (with its token) can read every "
        "private line of the store, and the traffic is plain HTTP, not encrypted"
    )


def cmd_serve(args: argparse.Namespace) -> int:
    warning = _check_host(args.host, args.allow_remote)
    try:
        import hypercorn  # noqa: F401
        import starlette  # noqa: F401
    except ImportError:
        raise CliError("asides serve needs the serve extra: pip install 'asides[serve]'") from None
    from .._serve import run_inspector

    token = args.token if args.token is not None else new_token()
    check_token(token)
    if is_shared(args.path):
        from ..store._postgres import redact_url

        label = redact_url(args.path)
    else:
        check_store_file(args.path)
        label = args.path

    def ready(url: str) -> None:
        print(f"asides serve: {label} (read-only), at", flush=True)
        print(url, flush=True)
        print("The page shows private lines: the URL is a secret. Ctrl-C stops.", file=sys.stderr, flush=True)

    if warning is not None:
        print(f"asides: warning: {warning}", file=sys.stderr, flush=True)
    interrupted = run_until_interrupted(
        lambda until_interrupted: run_inspector(
            args.path,
            host=args.host,
            port=args.port,
            token=token,
            store_label=label,
            on_ready=ready,
            shutdown_trigger=until_interrupted,
        ),
        host=args.host,
        port=args.port,
        what="another inspector or service",
    )
    if interrupted:
        print("asides: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def run_until_interrupted(
    serve: Callable[[Callable[[], Awaitable[None]]], Awaitable[None]], *, host: str, port: int, what: str
) -> bool:
    """Run ``serve(shutdown_trigger)`` under Trio until it returns; whether it stopped because
    of Ctrl-C (SIGINT) or SIGTERM. A signal is a shutdown request, not an exception thrown into
    whichever task runs: ``shutdown_trigger`` returns, the server stops its connections, and the
    command exits 130. A port in use is refused in one line (``what`` names who may hold it)."""
    interrupted = trio.Event()

    async def until_interrupted() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                interrupted.set()
                return

    try:
        trio.run(lambda: serve(until_interrupted))
    except (OSError, BaseExceptionGroup) as exc:
        inner = collapse(exc) if isinstance(exc, BaseExceptionGroup) else exc
        if isinstance(inner, OSError) and inner.errno == errno.EADDRINUSE:
            raise CliError(f"port {port} on {host} is in use ({what} listens there); try --port 0, which picks a free one") from None
        raise
    return interrupted.is_set()
