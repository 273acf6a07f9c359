"""The messages a namespace actor receives, and the signals it and the runtime publish.

A namespace actor handles one request at a time, in order. Each request names what it is for
(:class:`Claim`, :class:`StartStrategy`, :class:`Compile`, :class:`Edit`, :class:`Unit`, ...).
A *command* carries its work, and the actor runs it in its own task and replies with the outcome
(compiles, claims, strategy starts, edits, context-log entries, moves): so every strategy call
serving them runs in the actor's task, whichever manager or task asked. A *grant* (a unit of
background work, a head-window reset: work that sends a model request) gives the requester the
turn, and the actor waits until it is released, the work running in the requester's own task so
that the request never runs in the actor's. A requester that gives up before the actor takes its
request is skipped. While a turn is
held, only the holder may change what the actor owns (the reader claim, the narrowing floor,
the namespace's strategy state); the actor enforces that with an assertion.

Two signals replace calls between objects:

* :class:`Signal` — a version that only grows, and a way to wait until it grows. The runtime keeps
  one per branch (raised by every write on the branch, in constant time however many managers
  are open); a drain waits on it when it has nothing to do. Each actor keeps one for its claim
  (the claim *generation*): a drain started under generation ``g`` stops when it changes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import anyio

__all__ = [
    "Claim",
    "Compile",
    "ContextEntryWrite",
    "Edit",
    "HeadReset",
    "Move",
    "Signal",
    "StartStrategy",
    "TurnRequest",
    "Unit",
    "Wake",
]


class TurnRequest:
    """A request for the actor's turn; subclasses say what the turn is for.

    Sent by ``NamespaceActor.turn`` it is a *grant*: the actor sets ``granted`` and waits for
    ``released`` while the requester works in its own task. Sent by ``NamespaceActor.execute``
    it is a *command*: it carries its ``work``, which the actor runs in its own task, and the
    actor sets ``granted`` once the work ended, with its ``result`` or ``error``."""

    purpose: ClassVar[str] = "work"
    __slots__ = ("granted", "released", "abandoned", "work", "taken", "completed", "result", "error", "scope")

    def __init__(self) -> None:
        self.granted = anyio.Event()
        self.released = anyio.Event()
        self.abandoned = False
        self.work: Callable[[], Awaitable[Any]] | None = None
        self.taken = False  # a command the actor began to run (its requester may no longer abandon it)
        self.completed = False  # a command whose work returned
        self.result: Any = None
        self.error: BaseException | None = None
        self.scope: anyio.CancelScope | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.purpose}>"


class Claim(TurnRequest):
    purpose = "a reader claim"
    __slots__ = ()


class StartStrategy(TurnRequest):
    purpose = "a strategy start"
    __slots__ = ()


class Compile(TurnRequest):
    purpose = "a compile"
    __slots__ = ()


class Edit(TurnRequest):
    purpose = "an edit"
    __slots__ = ()


class Unit(TurnRequest):
    purpose = "a unit of background work"
    __slots__ = ()


class ContextEntryWrite(TurnRequest):
    purpose = "a context-log entry"
    __slots__ = ()


class HeadReset(TurnRequest):
    purpose = "a head-window reset"
    __slots__ = ()


class Move(TurnRequest):
    purpose = "a move (fork, switch or strategy change)"
    __slots__ = ()


class Wake(TurnRequest):
    """Not a request: it wakes the actor's loop to look whether nothing uses the actor any more
    (it is skipped as an abandoned request is, and granted nothing)."""

    purpose = "a wake-up"
    __slots__ = ()

    def __init__(self) -> None:  # no events: it is never granted
        self.abandoned = True


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
