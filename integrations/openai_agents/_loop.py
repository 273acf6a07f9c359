"""Running a session's work in the event loop its runtime lives in, from any loop or thread.

The OpenAI Agents SDK calls a session from wherever it runs: an asyncio loop in any thread, the
loop ``Runner.run_sync`` starts and stops, one ``asyncio.run`` after another. The rules are the
ones every integration uses (``asides/integrations/_loop.py``): called on the loop's own thread a
call simply awaits; from anywhere else it hops into the runtime's loop without blocking it, and a
caller cancelled while it waits stops waiting, while work already started finishes there (a
write, ``add_items``, finishes so on the loop's own thread too: ``LoopHandle.finish``). Here a
call into a loop that no longer runs raises :class:`SessionClosedError`.
"""

from __future__ import annotations

from .._loop import LoopHandle, RuntimeClosedError, Spawn, wait_future

__all__ = ["LoopHandle", "SessionClosedError", "session_loop", "wait_future"]


class SessionClosedError(RuntimeClosedError):
    """A session was used after ``close()``, or after the runtime it works in closed."""


def session_loop(spawn: Spawn) -> LoopHandle:
    """The loop this is called in, as a session uses it: a call into it once it no longer runs
    raises :class:`SessionClosedError`. ``spawn`` starts a task in a task group of it."""
    return LoopHandle.here(spawn, closed=SessionClosedError)
