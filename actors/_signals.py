"""A version that only grows, and a way to wait until it grows: how the runtime and the namespace
actors publish what changed instead of calling each other.

The runtime keeps one :class:`Signal` per branch (raised by every write on the branch, in constant
time however many managers are open); a drain waits on it when it has nothing to do. Each actor
keeps one for its claim (the claim *generation*): a drain started under generation ``g`` stops when
it changes.
"""

from __future__ import annotations

import anyio

__all__ = ["Signal"]


class Signal:
    """A version that only grows. :meth:`raise_` costs the same however many tasks wait."""

    __slots__ = ("_version", "_event")

    def __init__(self) -> None:
        self._version = 0
        self._event: anyio.Event | None = None

    @property
    def version(self) -> int:
        return self._version

    def raise_(self) -> None:
        self._version += 1
        event, self._event = self._event, None
        if event is not None:
            event.set()

    async def wait_beyond(self, version: int) -> None:
        """Return once the version is greater than ``version`` (at once if it already is)."""
        while self._version <= version:
            if self._event is None:
                self._event = anyio.Event()
            await self._event.wait()
