"""The messages a namespace actor receives, and the signals it and the runtime publish.

A namespace actor handles one command at a time, in order. Each command names what it is for
(:class:`Claim`, :class:`StartStrategy`, :class:`Compile`, :class:`Edit`, :class:`Unit`,
:class:`StoreChanged`, ...) and carries its work; the actor runs the work in its own task and
replies with the outcome: so every strategy call serving it runs in the actor's task, whichever
manager or task asked. A model request is never a command's work: it goes out between two
commands, from the drain's or the caller's task. A requester that gives up before the actor
takes its command is skipped. Only a command's work (the actor's *turn*) may change what the
actor owns (the reader claim, the narrowing floor, the namespace's strategy state); the actor
enforces that with an assertion.

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
    "ModelRequest",
    "Move",
    "Signal",
    "StartStrategy",
    "StoreChanged",
    "TurnRequest",
    "Unit",
    "Wake",
]


class TurnRequest:
    """A command for the actor; subclasses say what it is for. Sent by
    ``NamespaceActor.execute`` (or, answered to no one, ``NamespaceActor.store_changed``), it
    carries its ``work``, which the actor runs in its own task; the actor sets ``granted`` once
    the work ended, with its ``result`` or ``error``."""

    purpose: ClassVar[str] = "work"
    __slots__ = ("granted", "abandoned", "work", "taken", "completed", "result", "error", "scope")

    def __init__(self) -> None:
        self.granted = anyio.Event()
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


class ModelRequest(TurnRequest):
    """A step of a model request made through ``ctx.model`` from outside the actor's task: the
    request leaving, or its answer coming back."""

    purpose = "a compression request"
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


class StoreChanged(TurnRequest):
    """The store holds a write touching the namespace (its reader record or floor, or strategy
    state another process wrote): sent by the runtime's store listener, answered to no one."""

    purpose = "following the store"
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
