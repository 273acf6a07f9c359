"""Which addresses ``asides serve`` listens on, and which ``Host`` headers it answers.

:func:`is_loopback` says whether an address reaches this machine alone (the CLI refuses any
other unless ``--allow-remote`` is given). :class:`ServedHosts` says whether a request's ``Host``
header names the inspector as it is served: a page of another site that a DNS record points at
the inspector's address (DNS rebinding) names that site, and is refused. Needs nothing beyond
the standard library, so the CLI can check ``--host`` before it imports the server.
"""

from __future__ import annotations

import ipaddress
import socket

__all__ = ["LOOPBACK_NAMES", "ServedHosts", "host_in_url", "is_loopback", "is_wildcard"]

#: The names a browser gives this machine's loopback interface in a ``Host`` header.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is this machine's loopback interface only."""
    if host.lower() == "localhost":
        return True
    address = _address(host)
    return address is not None and address.is_loopback


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is every address of the machine (``0.0.0.0``, ``::``, or empty)."""
    if host == "":
        return True
    address = _address(host)
    return address is not None and address.is_unspecified


def host_in_url(host: str) -> str:
    """``host`` as a URL or a ``Host`` header writes it (an IPv6 address in brackets), lower case."""
    host = host.lower()
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _split(header: str) -> tuple[str, int] | None:
    """A ``Host`` header's name (lower case, an IPv6 address in brackets) and port (80 when it
    gives none); ``None`` when it is not one."""
    header = header.strip().lower()
    if header.startswith("["):
        name, bracket, rest = header.partition("]")
        name += bracket
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else ""
    else:
        name, _, port_text = header.partition(":")
    if not name:
        return None
    if not port_text:
        return name, 80
    if not port_text.isascii() or not port_text.isdigit():
        return None
    return name, int(port_text)


class ServedHosts:
    """The ``Host`` headers an inspector listening on ``host`` answers: that host, on the port it
    listens on. Listening on loopback, the loopback names (``127.0.0.1``, ``localhost``,
    ``[::1]``) are fine too. Listening on every address (``0.0.0.0``, ``::``), so are the
    loopback names, the machine's host name, and the address the request came in on."""

    def __init__(self, host: str) -> None:
        self.wildcard = is_wildcard(host)
        self.names = {host_in_url(host)}
        if self.wildcard or is_loopback(host):
            self.names.update(LOOPBACK_NAMES)
        if self.wildcard:
            self.names.add(socket.gethostname().lower())

    def port_named(self, header: str | None, server: tuple[str, int | None] | None) -> int | None:
        """The port a request with ``Host: header``, that came in on the local address ``server``
        (the ASGI scope's ``server``), came to when that header names the inspector; ``None``
        when it does not."""
        if header is None or server is None or server[1] is None:
            return None
        split = _split(header)
        if split is None or split[1] != server[1]:
            return None
        name = split[0]
        return split[1] if name in self.names or (self.wildcard and name == host_in_url(server[0])) else None
