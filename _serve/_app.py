"""The ASGI application of ``asides serve`` (Starlette): the page, its static files, the JSON API
under ``/api/`` and the live stream of changes (server-sent events, ``/api/events``).

**The host.** A request whose ``Host`` header does not name the inspector as it is served (its
host and port; the loopback names too when it serves loopback: :class:`ServedHosts`) gets 421
and nothing else, whatever token it carries: a page of another site that a DNS record points
at the inspector's address names that site.

**The token.** Every request to the API must carry the access token: as the ``token`` query
parameter or the ``X-Asides-Token`` header. The page (``/`` and its static files) takes the
token too, or the page cookie that a load of the page with the token sets. That cookie is named
after the port (``asides_page_<port>``, so two inspectors on one host do not replace each
other's) and does not hold the token: it holds a key derived from it that opens the page's own
files and no data, so the browser may send it to every service on the host and none of them
learns the token or can read the store with it. The page keeps the token in the tab's
``sessionStorage`` (which the browser keeps apart per port) and sends it with each API request.
Tokens are compared in constant time. A request without what it needs gets 403 and no data:
not the page, not a static file, not an error that tells anything about the store.

**Read-only.** Only ``GET`` (and ``HEAD``) are routed; the runtime underneath is read-only, so
nothing a client sends can make the server write to the store. The static files are read from
the package once, at start, and served by fixed routes: no request names a file.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..actors._runtime import internal_store
from ..store._errors import AsidesError, InvalidArgumentError
from . import _data, _pictures
from ._hosts import ServedHosts
from ._snapshots import Snapshots

__all__ = ["COOKIE_PREFIX", "cookie_name", "make_app"]

#: The page cookie's name is this and the port it is served on (:func:`cookie_name`).
COOKIE_PREFIX = "asides_page_"
HEADER = "x-asides-token"
#: Seconds between the keep-alive comments of the event stream.
HEARTBEAT = 15.0

_SECURITY_HEADERS = [
    (b"cache-control", b"no-store"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
]


def cookie_name(port: int) -> str:
    """The name of the page cookie of the inspector served on ``port``."""
    return f"{COOKIE_PREFIX}{port}"


def _static(name: str) -> bytes:
    return resources.files(__package__).joinpath("static", name).read_bytes()


def _is_page(path: str) -> bool:
    """Whether ``path`` is the page or one of its static files (what the page cookie opens)."""
    return path == "/" or path.startswith("/static/")


class TokenGate:
    """ASGI middleware: 421 for a request whose ``Host`` names another site; 403 for every
    request without the token (or, for the page and its files, the page cookie); sets the page
    cookie when the page was loaded with the token; adds the security headers to every response."""

    def __init__(self, app: ASGIApp, token: str, hosts: ServedHosts) -> None:
        self.app = app
        self.token = token.encode("utf-8")
        self.hosts = hosts
        #: What the page cookie holds: derived from the token, and no way back to it.
        self.page_key = hmac.new(self.token, b"asides serve: the page and its files", hashlib.sha256).hexdigest().encode("ascii")

    def _check(self, scope: Scope, port: int) -> tuple[bool, bool]:
        """Whether the request may go on, and whether to set the page cookie."""
        request = Request(scope)
        query = request.query_params.get("token")
        if query is not None:
            allowed = hmac.compare_digest(query.encode("utf-8"), self.token)
            return allowed, allowed and scope["path"] == "/"
        header = request.headers.get(HEADER)
        if header is not None:
            return hmac.compare_digest(header.encode("utf-8"), self.token), False
        cookie = request.cookies.get(cookie_name(port))
        return cookie is not None and _is_page(scope["path"]) and hmac.compare_digest(cookie.encode("utf-8"), self.page_key), False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # no websockets here
        port = self.hosts.port_named(Headers(scope=scope).get("host"), scope.get("server"))
        allowed, set_cookie = self._check(scope, port) if port is not None else (False, False)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", [])) + _SECURITY_HEADERS
                if set_cookie:
                    cookie = f"{cookie_name(port or 0)}={self.page_key.decode('ascii')}; Path=/; HttpOnly; SameSite=Strict"
                    headers.append((b"set-cookie", cookie.encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        if port is None:
            refused = PlainTextResponse(
                "421 misdirected request: the Host header does not name this inspector (use the address asides serve printed)\n",
                status_code=421,
            )
            await refused(scope, receive, send_with_headers)
            return
        if not allowed:
            refused = PlainTextResponse("403 forbidden: this page needs the access token that asides serve printed\n", status_code=403)
            await refused(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)


def _json(value: Any, status: int = 200) -> Response:
    return JSONResponse(value, status_code=status)


def _answer(work: Callable[[Request], Awaitable[Any]]) -> Callable[[Request], Awaitable[Response]]:
    """A route answering ``work``'s data as JSON, and a refusal as ``{"error", "path"}`` with
    its status (400 for a malformed parameter, 404 for an unknown name)."""

    async def endpoint(request: Request) -> Response:
        try:
            return _json(await work(request))
        except _data.RequestError as exc:
            return _json({"error": str(exc), "path": exc.path}, exc.status)
        except InvalidArgumentError as exc:
            return _json({"error": str(exc), "path": exc.path}, 400)
        except AsidesError as exc:
            return _json({"error": str(exc)}, 500)

    return endpoint


def make_app(snapshots: Snapshots, token: str, *, store_label: str, host: str = "127.0.0.1") -> ASGIApp:
    """The inspector's ASGI app over ``snapshots``, served on ``host``, behind the token gate."""
    page = {name: _static(name) for name in ("index.html", "app.js", "pictures.js", "style.css")}
    script = "text/javascript; charset=utf-8"
    kinds = {"index.html": "text/html; charset=utf-8", "app.js": script, "pictures.js": script, "style.css": "text/css; charset=utf-8"}

    def static(name: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(_request: Request) -> Response:
            return Response(page[name], media_type=kinds[name])

        return endpoint

    def query(request: Request, name: str) -> str | None:
        return request.query_params.get(name)

    async def status(_request: Request) -> Any:
        async with snapshots.borrow() as snap:
            return {
                "store": store_label,
                "version": snap.version,
                "changes": snapshots.changed.version,
                "erasures": internal_store(snap.runtime).model.erasure_count,
                "compile_defaults": _data.COMPILE_DEFAULTS,
            }

    async def namespaces(_request: Request) -> Any:
        async with snapshots.borrow() as snap:
            return await _data.namespaces(snap)

    async def readers(request: Request) -> Any:
        async with snapshots.borrow() as snap:
            branch = _data.branch_of(snap, query(request, "branch"))
            return {"branch": branch, "readers": _data.known_readers(snap, branch)}

    async def messages(request: Request) -> Any:
        async with snapshots.borrow() as snap:
            if query(request, "ids") is not None:
                return _data.messages_by_id(
                    snap, branch=query(request, "branch"), ids=query(request, "ids"), reader=query(request, "reader")
                )
            return _data.messages_page(
                snap,
                branch=query(request, "branch"),
                after=query(request, "after"),
                limit=query(request, "limit"),
                participant=query(request, "participant"),
                reader=query(request, "reader"),
                private=query(request, "private"),
            )

    async def compare(request: Request) -> Any:
        async with snapshots.borrow() as snap:
            return _data.compare_page(
                snap,
                branch=query(request, "branch"),
                readers=query(request, "readers"),
                after=query(request, "after"),
                limit=query(request, "limit"),
            )

    async def view(request: Request) -> Any:
        async with snapshots.borrow() as snap:
            return await _data.view(
                snap,
                branch=query(request, "branch"),
                reader=query(request, "reader"),
                namespace=query(request, "namespace"),
                max_tokens=query(request, "max_tokens"),
                reserve=query(request, "reserve"),
            )

    async def memories(request: Request) -> Any:
        async with snapshots.borrow() as snap:
            return _data.memories(snap, branch=query(request, "branch"), namespace=query(request, "namespace"))

    async def erasures(request: Request) -> Any:
        async with snapshots.borrow() as snap:
            return _data.erasures(snap, after=query(request, "after"))

    async def disclosures(request: Request) -> Any:
        async with snapshots.borrow() as snap:
            return _data.audit(snap, message=query(request, "message"))

    async def compiles(request: Request) -> Any:
        async with snapshots.borrow() as snap:
            return await _pictures.compiles(
                snap,
                branch=query(request, "branch"),
                reader=query(request, "reader"),
                namespace=query(request, "namespace"),
                limit=query(request, "limit"),
            )

    async def life(request: Request) -> Any:
        async with snapshots.borrow() as snap:
            return await _pictures.life(snap, branch=query(request, "branch"), message=query(request, "message"))

    async def visibility(request: Request) -> Any:
        async with snapshots.borrow() as snap:
            return _pictures.visibility(snap, branch=query(request, "branch"))

    async def search(request: Request) -> Any:
        async with snapshots.borrow() as snap:
            return await _pictures.search(
                snap,
                branch=query(request, "branch"),
                reader=query(request, "reader"),
                query=query(request, "q"),
                namespace=query(request, "namespace"),
                limit=query(request, "limit"),
            )

    async def events(_request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            seen = snapshots.changed.version
            yield f"event: hello\ndata: {json.dumps({'changes': seen})}\n\n"
            while True:
                with anyio.move_on_after(HEARTBEAT):
                    await snapshots.changed.wait_beyond(seen)
                if snapshots.changed.version == seen:
                    yield ": keep-alive\n\n"
                    continue
                seen = snapshots.changed.version
                yield f"event: change\ndata: {json.dumps({'changes': seen})}\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    routes = [
        Route("/", static("index.html"), methods=["GET"]),
        Route("/static/app.js", static("app.js"), methods=["GET"]),
        Route("/static/pictures.js", static("pictures.js"), methods=["GET"]),
        Route("/static/style.css", static("style.css"), methods=["GET"]),
        Route("/api/status", _answer(status), methods=["GET"]),
        Route("/api/namespaces", _answer(namespaces), methods=["GET"]),
        Route("/api/readers", _answer(readers), methods=["GET"]),
        Route("/api/messages", _answer(messages), methods=["GET"]),
        Route("/api/compare", _answer(compare), methods=["GET"]),
        Route("/api/view", _answer(view), methods=["GET"]),
        Route("/api/memories", _answer(memories), methods=["GET"]),
        Route("/api/disclosures", _answer(disclosures), methods=["GET"]),
        Route("/api/erasures", _answer(erasures), methods=["GET"]),
        Route("/api/compiles", _answer(compiles), methods=["GET"]),
        Route("/api/life", _answer(life), methods=["GET"]),
        Route("/api/visibility", _answer(visibility), methods=["GET"]),
        Route("/api/search", _answer(search), methods=["GET"]),
        Route("/api/events", events, methods=["GET"]),
    ]
    return TokenGate(Starlette(routes=routes), token, ServedHosts(host))
