"""``asides mcp --http``: the server on streamable HTTP, served by hypercorn under Trio, behind a
gate (:class:`BearerGate`).

**The host.** A request whose ``Host`` header does not name the server as it is served (its host
and port; the loopback names too when it serves loopback: ``_serve._hosts.ServedHosts``, the
rule ``asides serve`` keeps) gets 421 and nothing else, whatever token it carries: a page of
another site that a DNS record points at the server's address names that site. The SDK's own
Host and Origin check runs behind it, allowing the same names.

**The token.** Every request must carry ``Authorization: Bearer <token>``, compared in constant
time; one without it gets 401 (with ``WWW-Authenticate: Bearer``) and reaches no MCP handler.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from .._serve._hosts import ServedHosts

__all__ = ["ENDPOINT", "BearerGate", "serve_app"]

#: The path the MCP endpoint is served at.
ENDPOINT = "/mcp"


class BearerGate:
    """ASGI middleware: 421 for a request whose ``Host`` names another site, 401 for one without
    ``Authorization: Bearer <token>``; any other request (and the lifespan) goes on to ``app``."""

    def __init__(self, app: ASGIApp, token: str, hosts: ServedHosts) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websockets here
        headers = Headers(scope=scope)
        if self.hosts.port_named(headers.get("host"), scope.get("server")) is None:
            refused = PlainTextResponse(
                "421 misdirected request: the Host header does not name this server (use the URL asides mcp printed)\n",
                status_code=421,
            )
            await refused(scope, receive, send)
            return
        given = headers.get("authorization", "").encode("utf-8")
        if not hmac.compare_digest(given, self.expected):
            refused = PlainTextResponse(
                "401 unauthorized: send the access token that asides mcp printed, as 'Authorization: Bearer <token>'\n",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def serve_app(
    server: Any,
    *,
    host: str,
    port: int,
    token: str,
    on_ready: Callable[[str], None],
    shutdown_trigger: Callable[[], Awaitable[None]] | None,
) -> None:
    """Serve ``server`` (an ``MCPServer``) at ``http://host:port/mcp`` behind a :class:`BearerGate`
    until ``shutdown_trigger`` returns or the task is cancelled; ``on_ready`` gets the URL once it
    listens (with the port bound, when ``port`` is 0)."""
    import trio
    from hypercorn.config import Config
    from hypercorn.trio import serve
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = ServedHosts(host)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:*" for name in sorted(hosts.names)],
        allowed_origins=[f"http://{name}:*" for name in sorted(hosts.names)],
    )
    app = BearerGate(server.streamable_http_app(streamable_http_path=ENDPOINT, transport_security=security, host=host), token, hosts)
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.loglevel = "WARNING"
    config.graceful_timeout = 1.0
    async with trio.open_nursery() as nursery:

        def listening(task_status: trio.TaskStatus[list[str]]) -> Awaitable[None]:
            return serve(app, config, shutdown_trigger=shutdown_trigger, task_status=task_status)  # type: ignore[arg-type]

        binds: list[str] = await nursery.start(listening)
        on_ready(f"{binds[0].rstrip('/')}{ENDPOINT}")
