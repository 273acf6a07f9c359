"""``asides mcp``: an MCP server over one store, for one reader (docs/mcp.md).

:func:`reader_manager` opens the runtime and the one manager a server answers with: the
namespace opened for the reader (which claims it, so another reader is refused with
``ReaderClaimError``), with the strategy the namespace records, else passthrough. :func:`serve_stdio`
speaks MCP on this process's stdin and stdout; :func:`serve_http` on streamable HTTP, behind a
bearer token (``_http``). Both run under Trio (anyio), stop when ``shutdown_trigger`` returns or
the client goes, and close the manager and the runtime before they return. Needs the ``mcp``
extra (the MCP SDK); the server's tools are in ``_tools``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..actors._manager import ContextManager

__all__ = ["reader_manager", "serve_http", "serve_stdio"]


@asynccontextmanager
async def reader_manager(path: str, namespace: str, reader: str) -> AsyncIterator[ContextManager]:
    """The manager of ``namespace`` for ``reader`` over the store at ``path`` (a file, created when
    missing, or a ``postgresql://`` URL), in a runtime of its own, for the block. The strategy is
    the one the namespace records on ``main`` when this version can build it, else passthrough;
    the runtime has no compression model, so a compressing strategy's new work waits for a host
    that has one. Raises what opening the store or the namespace raises (``StoreLockedError``
    for a file another process holds, ``ReaderClaimError`` for a namespace another reader claims)."""
    from .._inspection._preview import STRATEGIES, rebuild_strategy
    from ..actors._runtime import open_runtime
    from ..strategies import PassthroughStrategy

    async with open_runtime(path) as rt:
        recorded = rt.recorded_strategy(namespace)
        strategy = (
            rebuild_strategy(recorded.name, recorded.options).strategy
            if recorded is not None and recorded.name in STRATEGIES
            else PassthroughStrategy()
        )
        manager = await rt.open_manager(namespace, strategy=strategy, view_reader=reader)
        try:
            yield manager
        finally:
            await manager.aclose()


async def serve_stdio(
    manager: ContextManager,
    *,
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Answer MCP on stdin and stdout for ``manager``'s reader until the client closes stdin or
    ``shutdown_trigger`` returns. Writes nothing else to stdout: it is the protocol."""
    import anyio

    from ._tools import make_server

    server = make_server(manager)
    async with anyio.create_task_group() as tasks:
        if shutdown_trigger is not None:

            async def stop_when_triggered() -> None:
                await shutdown_trigger()
                tasks.cancel_scope.cancel()

            tasks.start_soon(stop_when_triggered)
        await server.run_stdio_async()
        tasks.cancel_scope.cancel()


async def serve_http(
    manager: ContextManager,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str,
    on_ready: Callable[[str], None],
    shutdown_trigger: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Answer MCP on streamable HTTP at ``http://host:port/mcp`` for ``manager``'s reader until
    ``shutdown_trigger`` returns (or the task is cancelled); calls ``on_ready`` with that URL once
    it listens. Every request must carry ``Authorization: Bearer <token>`` (else 401), and a
    ``Host`` header that names the server (else 421; ``_http``). Raises what binding raises (a port
    in use) before it listens. Refuses no ``host``: the CLI allows loopback alone."""
    from ._http import serve_app
    from ._tools import make_server

    server = make_server(manager)
    await serve_app(server, host=host, port=port, token=token, on_ready=on_ready, shutdown_trigger=shutdown_trigger)
